"""Global coalescing: sectors and lines of one warp access."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab.memory.coalescing import CoalescingError, sectors, sectors_trace

T = range(32)


@pytest.mark.parametrize("addrs,width,n_sec,n_lines", [
    ([4 * t for t in T], 4, 4, 1),            # contiguous float: 4 sectors, 1 line, 100 %
    ([4 * t + 64 for t in T], 4, 4, 2),       # offset by 64 B: still 4 sectors, now 2 lines
    ([4 + 4 * t for t in T], 4, 5, 2),        # misaligned start by one element: 5 sectors
    ([8 * t for t in T], 4, 8, 2),            # stride 2: half of every sector wasted
    ([128 * t for t in T], 4, 32, 32),        # stride 32 floats: one sector (and line) per lane
    ([0] * 32, 4, 1, 1),                      # broadcast
    ([16 * t for t in T], 16, 16, 4),         # float4: 512 B
    ([2 * t for t in T], 2, 2, 1),            # half: 64 B
    ([t for t in T], 1, 1, 1),
])
def test_examples(addrs, width, n_sec, n_lines):
    s = sectors(addrs, width)
    assert (s, s.lines) == (n_sec, n_lines)
    assert s.moved_bytes == 32 * n_sec
    tr = sectors_trace(np.array([addrs]), width)
    assert (tr["sectors"][0], tr["lines"][0]) == (n_sec, n_lines)


def test_efficiency_and_breakdown():
    s = sectors([8 * t for t in T], 4)
    assert s.efficiency == 0.5 and s.ideal == 4 and s.requested_bytes == 128
    assert s.sectors_per_line == {0: 4, 1: 4}
    assert sectors([0] * 32).efficiency == 4 / 32
    assert sectors([4 * t if t < 8 else None for t in T]) == 1
    assert sectors([None] * 32) == 0 and sectors([None] * 32).efficiency == 0.0
    assert sectors([4 * t for t in T], active=[t < 8 for t in T]) == 1


@settings(max_examples=200)
@given(raw=st.lists(st.one_of(st.none(), st.integers(0, 1 << 16)), min_size=32, max_size=32),
       width=st.sampled_from([1, 2, 4, 8, 16]))
def test_properties(raw, width):
    addrs = [None if a is None else a * width for a in raw]
    s = sectors(addrs, width)
    act = [a for a in addrs if a is not None]
    assert s == len({a // 32 for a in act})
    assert s.lines <= s <= 4 * s.lines
    assert s <= len(act)
    if act:
        assert 0 < s.efficiency <= 1.0
    m = np.array([a is not None for a in addrs])
    tr = sectors_trace(np.array([[a or 0 for a in addrs]]), width, active=m[None])
    assert tr["sectors"][0] == s and tr["lines"][0] == s.lines


@pytest.mark.parametrize("args,match", [
    (([4 * t for t in T], 3), "1, 2, 4, 8 or 16"), (([4 * t for t in T], 32), "1, 2, 4, 8 or 16"),
    (([4 * t for t in range(31)], 4), "exactly 32"), (([4 * t + 2 for t in T], 4), "misaligned"),
    (([16 * t + 8 for t in T], 16), "misaligned"), (([-4] * 32, 4), ">= 0"),
])
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        sectors(*args)
    with pytest.raises(CoalescingError, match=match):
        sectors_trace(np.array([args[0]]), args[1])


def test_trace_shapes():
    a = np.arange(64 * 32).reshape(64, 32) * 4
    r = sectors_trace(a)
    assert r["sectors"].tolist() == [4] * 64 and np.all(r["efficiency"] == 1.0)
    with pytest.raises(CoalescingError, match="integers"):
        sectors_trace(np.zeros((2, 32)))
