"""Shared-memory bank model: the H200 Nsight measurements, a brute-force reference, properties, errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab.memory.banks import (BankError, bank_access, bank_of, lane_addresses, min_padding, wavefronts,
                                  wavefronts_trace)

T = range(32)


def _quarters_two_rows():
    a = []
    for q in range(4):
        for t in range(8):
            a.append(512 * q + 64 * (q % 2) + (t % 4) * 16 + (t // 4) * 128)
    return a


def _pair_uniform_half_conflict():
    return [64 * h + ((t // 2) % 4) * 16 + ((t // 2) // 4) * 128 for h in range(2) for t in range(16)]


_HALVES_SAME_BANKS = ([8 * t for t in range(8)] + [256 + 8 * t for t in range(8)]
                      + [64 + 8 * t for t in range(8)] + [320 + 8 * t for t in range(8)])

# hopper-spec-facts.md §2, measured on an H200 with l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.
MEASURED = [
    ([4 * t for t in T], 4, "ld", 1), ([8 * t for t in T], 4, "ld", 2), ([128 * t for t in T], 4, "ld", 32),
    ([0] * 32, 4, "ld", 1), ([4 * (t % 16) for t in T], 4, "ld", 1),
    ([4 * t for t in T], 4, "st", 1), ([8 * t for t in T], 4, "st", 2), ([128 * t for t in T], 4, "st", 32),
    ([8 * t for t in T], 8, "ld", 2), ([8 * t for t in T], 8, "st", 2),
    (_HALVES_SAME_BANKS, 8, "ld", 4), (_HALVES_SAME_BANKS, 8, "st", 4),
    ([8 * (t // 2) for t in T], 8, "ld", 1), ([0] * 32, 8, "ld", 1),
    ([8 * (t // 2) for t in T], 8, "st", 2), ([0] * 32, 8, "st", 2),
    ([16 * t for t in T], 16, "ld", 4), ([16 * t for t in T], 16, "st", 4),
    (_quarters_two_rows(), 16, "ld", 8), (_quarters_two_rows(), 16, "st", 8),
    ([16 * (t % 8) for t in T], 16, "ld", 4), ([32 * t for t in T], 16, "ld", 8), ([32 * t for t in T], 16, "st", 8),
    ([16 * (t // 2) for t in T], 16, "ld", 2), ([0] * 32, 16, "ld", 2), ([16 * ((t >> 2) * 2 + (t & 1)) for t in T], 16, "ld", 2),
    ([16 * (t // 2) for t in T], 16, "st", 4), ([0] * 32, 16, "st", 4),
    (_pair_uniform_half_conflict(), 16, "ld", 4),
]


@pytest.mark.parametrize("addrs,width,op,expected", MEASURED)
def test_measured_on_h200(addrs, width, op, expected):
    assert wavefronts(addrs, width, op) == expected
    assert wavefronts_trace(np.array([addrs]), width, op)[0] == expected


def _reference(addrs, width, op):
    """The rules written as directly as possible, for comparison with the vectorised counter."""
    act = [a is not None for a in addrs]

    def uniform(x):
        return all(not act[t] or not act[t ^ x] or addrs[t] == addrs[t ^ x] for t in T)

    uni = op == "ld" and any(act) and (uniform(1) or uniform(2))
    size = {4: 32, 8: 32 if uni else 16, 16: 16 if uni else 8}[width]
    total = 0
    for p0 in range(0, 32, size):
        words = {(addrs[t] >> 2) + j for t in range(p0, p0 + size) if act[t] for j in range(width // 4)}
        per_bank = {}
        for w in words:
            per_bank[w % 32] = per_bank.get(w % 32, 0) + 1
        total += max(per_bank.values(), default=0)
    return total


access = st.integers(0, 3).flatmap(lambda scale: st.lists(
    st.one_of(st.none(), st.integers(0, [64, 512, 4096, 1 << 17][scale])), min_size=32, max_size=32))


@settings(max_examples=300)
@given(raw=access, width=st.sampled_from([4, 8, 16]), op=st.sampled_from(["ld", "st"]),
       pairs=st.booleans())
def test_matches_reference(raw, width, op, pairs):
    addrs = [None if a is None else a * width for a in raw]
    if pairs:  # exercise the pair-uniform path
        addrs = [addrs[t & ~1] for t in T]
    r = wavefronts(addrs, width, op)
    assert r == _reference(addrs, width, op)
    assert r.per_bank.max(axis=1).sum() == r
    assert r.conflicts == r - r.ideal >= 0


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), width=st.sampled_from([4, 8, 16]), op=st.sampled_from(["ld", "st"]))
def test_trace_equals_single_accesses(seed, width, op):
    rng = np.random.default_rng(seed)
    n = 40
    a = rng.integers(0, rng.choice([8, 64, 2048]), (n, 32)) * width
    a[::3] = a[::3, [t & ~1 for t in T]]
    m = rng.random((n, 32)) > 0.1
    got = wavefronts_trace(a, width, op, active=m)
    want = [int(wavefronts([int(x) if on else None for x, on in zip(r, mr)], width, op)) for r, mr in zip(a, m)]
    assert got.tolist() == want


def _random_trace(rng, n, width):
    """Random accesses with the patterns the fast path treats specially: pair-uniform rows (t^1, t^2),
    broadcasts, tiny and large address ranges, far-away bases (relative bank rows)."""
    span = int(rng.choice([1, 4, 64, 2048, 1 << 14]))
    a = rng.integers(0, span, (n, 32)) * width
    a += int(rng.choice([0, 1 << 12, 1 << 31, 1 << 40])) // width * width
    for perm, p in (([t & ~1 for t in T], 0.3), ([t & ~2 for t in T], 0.2), ([t & ~3 for t in T], 0.1),
                    ([0] * 32, 0.05)):
        rows = rng.random(n) < p
        a[rows] = a[rows][:, perm]
    return a


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), width=st.sampled_from([4, 8, 16]), op=st.sampled_from(["ld", "st"]),
       inactive=st.sampled_from([None, 0.0, 0.03, 0.3, 0.9]), int32=st.booleans())
def test_trace_matches_reference(seed, width, op, inactive, int32):
    """The vectorised trace counter equals the per-access rules on random traces."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 48))
    a = _random_trace(rng, n, width)
    if int32 and a.max() < 2**31:
        a = a.astype(np.int32)
    m = None if inactive is None else rng.random((n, 32)) >= inactive
    if m is not None:
        m[rng.random(n) < 0.1] = False                  # whole warps inactive
        a[~m & (rng.random((n, 32)) < 0.5)] = -3        # inactive lanes may hold any value
    got = wavefronts_trace(a, width, op, active=m)
    on = np.ones(a.shape, bool) if m is None else m
    rows = [[int(x) if o else None for x, o in zip(r, mr)] for r, mr in zip(a, on)]
    assert got.tolist() == [_reference(r, width, op) for r in rows]


def test_trace_across_chunks():
    """A trace longer than the counter's chunks, full and partial masks mixed: same as access by access."""
    rng = np.random.default_rng(7)
    for width, op in ((4, "ld"), (8, "ld"), (16, "ld"), (16, "st")):
        a = _random_trace(rng, 9000, width)
        a[:4500] = _random_trace(np.random.default_rng(8), 4500, width) % 4096
        m = np.ones(a.shape, bool)
        m[6000:] = rng.random((3000, 32)) > 0.2
        got = wavefronts_trace(a, width, op, active=m)
        rows = rng.choice(9000, 600, replace=False)
        want = [_reference([int(x) if on else None for x, on in zip(a[i], m[i])], width, op) for i in rows]
        assert got[rows].tolist() == want
        assert got[:10].tolist() == wavefronts_trace(a[:10], width, op).tolist()


@settings(max_examples=100)
@given(raw=st.lists(st.integers(0, 4095), min_size=32, max_size=32), shift=st.integers(0, 1000),
       perm_seed=st.integers(0, 1000))
def test_invariances_32bit(raw, shift, perm_seed):
    addrs = [4 * a for a in raw]
    w = wavefronts(addrs)
    # shifting the whole warp by whole bank rows (128 B) changes nothing; nor does reordering lanes
    assert wavefronts([a + 128 * shift for a in addrs]) == w
    perm = np.random.default_rng(perm_seed).permutation(32)
    assert wavefronts([addrs[i] for i in perm]) == w
    assert 1 <= w <= 32


def test_breakdown_and_broadcast():
    r = bank_access([8 * t for t in T])
    assert (r, r.ideal, r.conflicts) == (2, 1, 1)
    assert r.per_bank.tolist()[0][:4] == [2, 0, 2, 0]
    assert r.lane_bank.tolist()[:3] == [0, 2, 4] and r.lane_phase.tolist() == [0] * 32
    q = bank_access([16 * t for t in T], 16)
    assert q.phases == 4 and q.lane_phase.tolist()[::8] == [0, 1, 2, 3]
    assert bank_access([0] * 32, 16).pair_uniform
    # inactive lanes
    half = [4 * t if t < 16 else None for t in T]
    assert wavefronts(half) == 1 and bank_access(half).lane_bank[20] == -1
    assert wavefronts([None] * 32) == 0
    assert wavefronts([4 * t for t in T], active=[t % 2 == 0 for t in T]) == 1
    assert bank_of(132) == 1 and bank_of(np.array([0, 4, 128])).tolist() == [0, 1, 0]


def test_padding():
    # column of a 32 x 32 float tile: 32-way conflict; one word of padding removes it
    assert wavefronts(lane_addresses(128)) == 32
    assert min_padding(128) == 1 and wavefronts(lane_addresses(132)) == 1
    assert min_padding(128, 8) == 2 and min_padding(256, 16) == 4
    with pytest.raises(BankError):
        min_padding(130, 4)


@pytest.mark.parametrize("args,match", [
    (([4 * t for t in T], 2), "4, 8 or 16"), (([4 * t for t in T], 32), "4, 8 or 16"),
    (([4 * t for t in range(31)], 4), "exactly 32"), (([4 * t for t in range(33)], 4), "exactly 32"),
    (([4 * t + 2 for t in T], 4), "misaligned"), (([8 * t + 4 for t in T], 8), "8-byte aligned"),
    (([-4] + [4 * t for t in range(31)], 4), "negative"), ((["x"] * 32, 4), "integers"),
])
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        wavefronts(*args)


def test_bad_trace_input():
    with pytest.raises(BankError, match="exactly 32"):
        wavefronts_trace(np.zeros((4, 16), int))
    with pytest.raises(BankError, match="misaligned"):
        wavefronts_trace(np.full((4, 32), 6), 4)
    with pytest.raises(BankError, match="op must be"):
        wavefronts_trace(np.zeros((4, 32), int), 4, "atom")
    with pytest.raises(BankError, match="integers"):
        wavefronts_trace(np.zeros((4, 32)), 4)
    assert wavefronts_trace(np.zeros((0, 32), int)).shape == (0,)
    # misaligned lane that is inactive is fine
    a = np.full((1, 32), 8)
    a[0, 5] = 6
    m = np.ones((1, 32), bool)
    m[0, 5] = False
    # ...and matches any partner (measured, data/l01/bank_wavefronts): one pair-uniform phase
    assert wavefronts_trace(a, 8, active=m).tolist() == [1]
