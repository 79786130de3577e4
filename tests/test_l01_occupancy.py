"""Occupancy: the CUDA calculator's algorithm for CC 9.0, its inverse questions, waves."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab.occupancy import (CARVEOUT_DEFAULT, LIMITS, OccupancyError, block_placement, carveout_roundup,
                               max_regs_for_blocks, next_cliff, occupancy, register_steps, regs_per_warp,
                               smem_per_block_allocated, warp_sub_partitions, waves)
from h100lab.specs import H100_PCIE, H100_SXM, H200_SXM


def test_worked_examples_from_the_facts():
    # hopper-spec-facts.md §1.3 worked examples (derived from cuda_occupancy.h).
    assert occupancy(128, 168).active_blocks == 3
    o = occupancy(256, 32, 60000)
    assert o.smem_per_block == 61056 and o.active_blocks == 3 and o.limiting == ("shared_memory",)
    # 255 registers -> 8192 per warp -> 2 warps per sub-partition -> 8 warps per SM.
    assert occupancy(256, 255).active_warps == 8


def test_granularity_trap_63_64_65():
    assert occupancy(256, 63).active_blocks == occupancy(256, 64).active_blocks == 4
    assert occupancy(256, 65).active_blocks == 3
    c = next_cliff(256, 63)
    assert (c.cliff_regs, c.blocks, c.blocks_after) == (65, 4, 3)
    assert (c.regs_per_warp_before, c.regs_per_warp_after) == (2048, 2304)
    # 32 one-warp blocks need only 32 warps: up to 64 regs (8 warps per sub-partition) the block cap binds
    assert (next_cliff(32, 0).cliff_regs, next_cliff(32, 0).blocks_after) == (65, 28)
    assert next_cliff(1024, 64).cliff_regs == 65 and next_cliff(1024, 64).blocks_after == 0


def test_cannot_launch_answers_zero_with_reason():
    o = occupancy(1024, 65)
    assert o.active_blocks == 0 and not o.launchable and "too many resources" in o.reason
    o = occupancy(256, 32, 100_000, max_dynamic_smem=49152)
    assert o.active_blocks == 0 and "MaxDynamicSharedMemorySize" in o.reason
    # 25 warps x 2560 regs = 64000 fits a block's 65536, but a sub-partition holds 6 such warps
    # (24 per SM): the block cannot be resident anywhere.
    assert occupancy(800, 80).active_blocks == 0 and occupancy(224, 255).active_blocks == 1


def test_limits_listed_and_min():
    o = occupancy(128, 32, 4096)
    assert set(o.limits) == set(LIMITS)
    assert o.active_blocks == min(v for v in o.limits.values() if v is not None)
    assert all(o.limits[k] == o.active_blocks for k in o.limiting)
    assert occupancy(64, 0).limits["registers"] is None
    assert occupancy(32, 16).limiting == ("blocks",)


def test_carveout_preference():
    # default -> 228 KB; 0 % -> smallest step that holds one block; 50 % -> 116736 B -> 132 KB step.
    assert occupancy(256, 32).smem_per_sm == 233472
    o = occupancy(256, 32, carveout=0)
    assert o.smem_per_sm == 8 * 1024 and o.active_blocks == 8
    o = occupancy(128, 32, 20000, carveout=50)
    assert o.smem_per_sm == 132 * 1024 and o.active_blocks == (132 * 1024) // o.smem_per_block
    # preference too small for one block: the driver takes the step that holds it.
    o = occupancy(128, 32, 100_000, carveout=25)
    assert o.smem_per_sm == 100 * 1024 and o.active_blocks == 1  # 101120 B -> the 100 KB step


def test_static_and_optin_rules():
    # static > 48 KB is a compile error; static + dynamic over the opt-in is rejected
    with pytest.raises(OccupancyError, match="48 KB static"):
        occupancy(128, 32, static_smem=49153)
    with pytest.raises(OccupancyError, match="opt-in"):
        occupancy(128, 32, 232449)
    with pytest.raises(OccupancyError, match="opt-in"):
        occupancy(128, 32, 0, static_smem=1024, max_dynamic_smem=232448)
    # exactly at the opt-in limit: one block
    assert occupancy(128, 32, 232448).active_blocks == 1
    # static + dynamic: the block's footprint counts both
    assert occupancy(128, 32, 40000, static_smem=12000).smem_per_block == smem_per_block_allocated(12000, 40000)


@pytest.mark.parametrize("bad", [dict(threads_per_block=0, regs_per_thread=32),
                                 dict(threads_per_block=-32, regs_per_thread=32),
                                 dict(threads_per_block=1025, regs_per_thread=32),
                                 dict(threads_per_block=128, regs_per_thread=256),
                                 dict(threads_per_block=128, regs_per_thread=-1),
                                 dict(threads_per_block=128, regs_per_thread=32, smem_per_block=-1),
                                 dict(threads_per_block=128, regs_per_thread=32, carveout=101),
                                 dict(threads_per_block=128.5, regs_per_thread=32)])
def test_bad_input_is_a_named_value_error(bad):
    with pytest.raises(ValueError) as e:
        occupancy(**bad)
    assert len(str(e.value)) > 20


def test_rule_messages_name_the_rule():
    with pytest.raises(OccupancyError, match="1024 threads per block"):
        occupancy(2048, 32)
    with pytest.raises(OccupancyError, match="255 registers per thread"):
        occupancy(128, 300)


def test_helpers():
    assert regs_per_warp(63) == 2048 and regs_per_warp(65) == 2304 and regs_per_warp(0) == 0
    assert carveout_roundup(0) == 0 and carveout_roundup(1) == 8192 and carveout_roundup(116736) == 132 * 1024
    with pytest.raises(OccupancyError):
        carveout_roundup(233473)
    assert smem_per_block_allocated() == 1024 and smem_per_block_allocated(0, 1) == 1152


def _reference_blocks(T, R, S, spec=H100_SXM):
    """Independent reference: place blocks one at a time on an SM whose 4 sub-partitions each own
    16384 registers and 16 warp slots, dealing warps round-robin, until the next block does not fit."""
    warps = -(-T // 32)
    rpw = -(-R * 32 // 256) * 256
    if R and rpw * (-(-warps // 4) * 4) > 65536:
        return 0
    alloc = -(-(S + 1024) // 128) * 128
    regs = [16384] * 4
    wslots = [16] * 4
    smem, blocks, nxt = 233472, 0, 0
    while blocks < 32:
        trial_regs, trial_w, k = list(regs), list(wslots), nxt
        ok = smem >= alloc
        for _ in range(warps):
            if trial_regs[k] < rpw or trial_w[k] == 0:
                ok = False
                break
            trial_regs[k] -= rpw
            trial_w[k] -= 1
            k = (k + 1) % 4
        if not ok:
            break
        regs, wslots, nxt, smem, blocks = trial_regs, trial_w, k, smem - alloc, blocks + 1
    return blocks


@settings(max_examples=300)
@given(T=st.integers(1, 1024), R=st.integers(1, 255), S=st.integers(0, 232448))
def test_matches_independent_packing_model(T, R, S):
    assert occupancy(T, R, S).active_blocks == _reference_blocks(T, R, S)


@settings(max_examples=200)
@given(T=st.integers(1, 1024), R=st.integers(0, 254), S=st.integers(0, 200_000),
       c=st.sampled_from([CARVEOUT_DEFAULT, 0, 10, 25, 50, 75, 100]),
       spec=st.sampled_from([H100_SXM, H100_PCIE, H200_SXM]))
def test_invariants(T, R, S, c, spec):
    o = occupancy(T, R, S, spec, carveout=c)
    assert 0 <= o.active_blocks <= 32
    assert o.active_warps <= 64 and o.active_threads <= 2048 + 31 * 32
    assert o.regs_used <= 65536
    assert o.smem_used <= max(o.smem_per_sm, 0) + 0
    assert 0.0 <= o.occupancy <= 1.0
    assert sum(o.warps_per_sub_partition) == o.active_warps
    # more registers or more shared memory never raise the answer
    assert occupancy(T, R + 1, S, spec, carveout=c).active_blocks <= o.active_blocks
    assert occupancy(T, R, S + 1024, spec, carveout=c).active_blocks <= o.active_blocks
    # the default carveout is the largest: a preference never beats it
    assert o.active_blocks <= occupancy(T, R, S, spec).active_blocks


def test_inverse_questions():
    assert max_regs_for_blocks(256, 4) == 64
    assert max_regs_for_blocks(256, 3) == 80
    assert max_regs_for_blocks(128, 16) == 32
    assert max_regs_for_blocks(1024, 2) == 32
    assert max_regs_for_blocks(1024, 3) is None  # 3 x 32 warps exceeds 64 warps: no register count helps
    for n in (1, 2, 3, 5, 8):
        r = max_regs_for_blocks(128, n)
        assert occupancy(128, r).active_blocks >= n and (r == 255 or occupancy(128, r + 1).active_blocks < n)
    with pytest.raises(OccupancyError):
        max_regs_for_blocks(128, 0)
    with pytest.raises(OccupancyError):
        max_regs_for_blocks(128, 33)
    steps = register_steps(256)
    assert steps[0].lo == 1 and steps[-1].hi == 255
    assert all(a.hi + 1 == b.lo and a.active_blocks > b.active_blocks for a, b in zip(steps, steps[1:]))
    assert [s.active_blocks for s in steps if s.lo <= 64 <= s.hi] == [4]


def test_waves():
    w = waves(1000, 2)
    assert (w.capacity, w.waves, w.blocks_last_wave, w.idle_sms_last_wave) == (264, 4, 208, 0)
    w = waves(133, 1)
    assert (w.waves, w.busy_sms_last_wave, w.idle_sms_last_wave) == (2, 1, 131)
    assert w.efficiency == pytest.approx(133 / 264)
    assert waves(114, 1, H100_PCIE).waves == 1 and waves(132, occupancy(128, 255)).waves == 1
    with pytest.raises(OccupancyError):
        waves(0, 1)
    with pytest.raises(OccupancyError, match="0 active blocks"):
        waves(10, occupancy(1024, 65))


@settings(max_examples=100)
@given(G=st.integers(1, 5000), b=st.integers(1, 32))
def test_placement_is_consistent_with_waves(G, b):
    p = block_placement(G, b)
    w = waves(G, b)
    assert p[:, 1].max() + 1 == w.waves
    assert len({tuple(r) for r in p}) == G  # no two blocks share (SM, wave, slot)
    last = p[p[:, 1] == w.waves - 1]
    assert len(np.unique(last[:, 0])) == w.busy_sms_last_wave
    assert np.bincount(p[:, 0], minlength=132).max() <= w.waves * b


def test_warp_sub_partitions():
    assert warp_sub_partitions(128).tolist() == [0, 1, 2, 3]
    assert warp_sub_partitions(96).tolist() == [0, 1, 2]
    assert np.bincount(warp_sub_partitions(1024), minlength=4).tolist() == [8, 8, 8, 8]
    with pytest.raises(OccupancyError):
        warp_sub_partitions(0)


def test_to_dict_and_derived_fields():
    o = occupancy(256, 65, 20000)
    d = o.to_dict()
    assert d["active_blocks"] == 3 and d["limiting"] == ["registers"] and d["limits"]["warps"] == 8
    assert d["smem_per_block"] == smem_per_block_allocated(0, 20000) and d["occupancy"] == pytest.approx(24 / 64)
    assert o.regs_used == 24 * 2304 and o.smem_used == 3 * o.smem_per_block
    assert o.warps_per_sub_partition == (6, 6, 6, 6)
    assert occupancy(96, 32).warps_per_sub_partition == (16, 16, 16, 15)  # 21 blocks x 3 warps = 63
