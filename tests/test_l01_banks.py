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
        return all((act[t] and act[t ^ x] and addrs[t] == addrs[t ^ x]) or (not act[t] and not act[t ^ x])
                   for t in T)

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
    # ...and breaks pair uniformity ([model]): two half-warp phases of one word each
    assert wavefronts_trace(a, 8, active=m).tolist() == [2]
