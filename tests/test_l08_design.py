"""h100lab.design (lesson 8): pipeline ring and the ABA ambiguity, register budgets with setmaxnreg, the tile
calculator, persistent schedulers, wave quantization, L2 reuse, epilogue fusion — with hypothesis properties."""
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from h100lab.design import capstone, epilogue, registers, ring, schedule, tiles

# ---------------------------------------------------------------- ring


def test_classify_the_four_cases():
    assert ring.classify(3, 3) == "pending"
    assert ring.classify(4, 3) == "complete"
    assert ring.classify(5, 3) == "skipped"
    assert ring.classify(2, 3) == "aba"
    assert ring.classify(1, 3) == "pending"


@given(st.integers(0, 50), st.integers(0, 50))
def test_parity_is_exact_in_the_protocol_window(cur, target):
    kind = ring.classify(cur, target)
    if target <= cur <= target + 1:
        assert kind in ("pending", "complete")
    d = cur - target
    assert (kind == "skipped") == (d >= 2 and d % 2 == 0)
    assert (kind == "aba") == (d < 0 and d % 2 == 1)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.integers(1, 40), st.randoms(use_true_random=False))
def test_ring_protocol_never_hits_aba(stages, consumers, n, rnd):
    """Any interleaving of a producer and `consumers` consumers that only proceed when their parity wait succeeds
    consumes every slot in order and never sees a wrong parity answer."""
    r = ring.Ring(stages, consumers)
    produced, consumed = 0, [0] * consumers
    while min(consumed) < n:
        movers = []
        if produced < n and r.can_produce(produced):
            movers.append(-1)
        movers += [c for c in range(consumers) if consumed[c] < produced and r.can_consume(consumed[c])]
        assert movers, "the protocol deadlocked"
        who = rnd.choice(movers)
        if who < 0:
            r.produce(produced)
            produced += 1
        else:
            r.consume(consumed[who])
            r.release(consumed[who])
            consumed[who] += 1
        assert produced - min(consumed) <= stages


def test_ring_detects_a_consumer_running_ahead():
    r = ring.Ring(2)
    r.produce(0)
    with pytest.raises(ring.ABAError, match="ABA"):
        r.can_consume(4)                   # stage 0, lap 2: same parity as lap 0, which is complete


def test_ring_detects_a_skipped_phase():
    b = ring.PhaseBarrier(1)
    b.arrive()
    b.arrive()                             # phases 0 and 1 completed: the barrier is in phase 2
    with pytest.raises(ring.ABAError, match="skipped"):
        b.try_wait_parity(0, target=0)
    assert b.try_wait_parity(0) is False   # what the hardware answers: it looks pending


def test_barrier_rules():
    with pytest.raises(ring.RingError, match="arrival count"):
        ring.PhaseBarrier(0)
    with pytest.raises(ring.RingError, match="more arrivals"):
        ring.PhaseBarrier(2).arrive(3)
    with pytest.raises(ring.RingError, match="phaseParity"):
        ring.parity_answer(0, 2)


@given(st.integers(1, 8), st.integers(1, 64), st.floats(0, 10), st.floats(0.1, 5))
def test_timeline_bounds(stages, n, load, mma):
    t = ring.timeline(stages, n, load, mma)
    assert 0 < t.utilization <= 1 + 1e-12
    assert t.total >= n * mma * (1 - 1e-9) and t.total >= load + mma - 1e-9
    assert all(t.mma_start[i] >= t.load_end[i] for i in range(n))
    if stages * mma >= load + mma:      # the ring hides the load: MMAs back to back after the first
        assert t.total == pytest.approx(load + n * mma)


# ---------------------------------------------------------------- registers


@given(st.integers(0, 300))
def test_setmaxnreg_operand_rule(n):
    legal = n % 8 == 0 and 24 <= n <= 256
    if legal:
        assert registers.check_setmaxnreg(n) == n
    else:
        with pytest.raises(registers.RegisterError, match="multiple of 8 in 24..256"):
            registers.check_setmaxnreg(n)


def test_capstone_split():
    s = registers.split((40, 232, 232))
    assert s.launch_regs == 168 and s.pool == 64512 and s.used == 64512 and s.fits
    assert not registers.split((40, 240, 240)).fits
    assert registers.accumulator_registers(64, 256) == 128 and registers.accumulator_registers(128, 128) == 128


@given(st.integers(1, 3), st.integers(1, 3), st.sampled_from([24, 32, 40, 56]))
def test_best_split_fits_and_is_maximal(p, c, preg):
    try:
        s = registers.best_split(p, c, preg)
    except registers.RegisterError:
        return
    assert s.fits and s.used <= s.pool <= registers.REGISTER_FILE
    cons = s.regs[-1]
    assert cons == 256 or 128 * (p * preg + c * (cons + 8)) > s.pool


@given(st.integers(1, 1024), st.integers(1, 4))
def test_launch_cap(threads, blocks):
    try:
        r = registers.launch_cap(threads, blocks)
    except registers.RegisterError:
        assert threads * blocks * 8 > registers.REGISTER_FILE
        return
    assert r % 8 == 0 and threads * blocks * r <= registers.REGISTER_FILE and r <= 256


# ---------------------------------------------------------------- tiles


def test_capstone_variants_fit_the_calculator():
    for v in capstone.VARIANTS.values():
        t = tiles.evaluate(v.bm, v.bn, v.bk, v.stages, 2, v.pingpong)
        assert t.fits, t.reason
        assert t.regs <= 232 and t.smem <= tiles.SMEM_LIMIT
        # the calculator's ring = the kernel's (the TMA-store epilogue's staging tiles come on top)
        assert t.smem - 1024 - 16 * v.stages == v.smem_bytes - v.epi_bytes - 1024 - 8 * (2 * v.stages + 2)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([64, 128, 192, 256]), st.sampled_from(range(8, 257, 8)), st.sampled_from([32, 64, 128]),
       st.integers(1, 8), st.booleans(), st.sampled_from(["ss", "rs"]))
def test_tile_verdicts(bm, bn, bk, stages, pingpong, src):
    t = tiles.evaluate(bm, bn, bk, stages, 2, pingpong, src)
    if t.fits:
        assert t.smem <= tiles.SMEM_LIMIT and t.regs <= t.reg_limit and stages >= 2
    else:
        assert t.reason
    if stages < 8:
        assert tiles.evaluate(bm, bn, bk, stages + 1, 2, pingpong, src).smem > t.smem
    assert stages > tiles.max_stages(bm, bn, bk) or t.smem <= tiles.SMEM_LIMIT


def test_choose_and_errors():
    best = tiles.choose()
    assert best.fits and best.stages >= 3
    with pytest.raises(tiles.TileError, match="multiple of the wgmma K"):
        tiles.evaluate(128, 128, 40)
    assert "not a multiple of the wgmma M" in tiles.evaluate(64, 128, consumers=2).reason
    assert "registers" in tiles.evaluate(256, 256, 64, 2, 2).reason


# ---------------------------------------------------------------- schedule


@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 16), st.sampled_from(["m", "n"]))
def test_static_order_is_a_permutation(tm, tn, group, raster):
    order = schedule.static_order(tm, tn, group, raster)
    assert sorted(order) == [(m, n) for m in range(tm) for n in range(tn)]


def test_static_order_limits():
    assert schedule.static_order(3, 4, 1, "m") == [(m, n) for m in range(3) for n in range(4)]        # row-major
    assert schedule.static_order(3, 4, 3, "m") == [(m, n) for n in range(4) for m in range(3)]        # column-major
    assert schedule.static_order(3, 4, 1, "n") == [(m, n) for n in range(4) for m in range(3)]
    with pytest.raises(schedule.ScheduleError):
        schedule.tile_at(12, 3, 4)
    with pytest.raises(schedule.ScheduleError, match="raster"):
        schedule.tile_at(0, 3, 4, raster="k")


@given(st.integers(1, 40), st.integers(1, 20), st.integers(1, 16))
def test_stream_k_covers_every_iteration_once(tiles_, k_iters, ctas):
    segs = schedule.stream_k(tiles_, k_iters, ctas)
    seen = [(s.tile, k) for cta in segs for s in cta for k in range(s.k_begin, s.k_end)]
    assert sorted(seen) == [(t, k) for t in range(tiles_) for k in range(k_iters)]
    work = [sum(s.k_end - s.k_begin for s in cta) for cta in segs]
    assert max(work) - min(work) <= 1
    owners = [s.tile for cta in segs for s in cta if s.owner]
    assert sorted(owners) == list(range(tiles_))


@given(st.integers(1, 2000), st.integers(1, 200))
def test_waves(tiles_, ctas):
    w = schedule.waves(tiles_, ctas)
    assert (w.waves - 1) * ctas < tiles_ <= w.waves * ctas
    assert 0 < w.efficiency <= 1 and 1 <= w.last <= ctas and w.idle_sms_last == ctas - w.last


def test_wave_quantized_shapes():
    v = capstone.VARIANTS["cooperative"]
    tm, tn = capstone.tile_counts(v, 1280, 3840)
    assert schedule.waves(tm * tn, 132).waves == 2 and schedule.waves(tm * tn, 132).last == 18
    tm, tn = capstone.tile_counts(v, 1408, 3072)
    assert schedule.waves(tm * tn, 132).waves == 1 and schedule.waves(tm * tn, 132).efficiency == 1


@given(st.integers(1, 16), st.integers(1, 16), st.integers(1, 8), st.integers(1, 40))
def test_l2_reuse_bounds(tm, tn, group, ctas):
    e = schedule.l2_reuse(schedule.static_order(tm, tn, group), ctas, 128, 256, 1024)
    assert 0 <= e.dram <= e.requested and 0 <= e.hit_rate < 1


def test_grouping_raises_l2_reuse_at_8192():
    row = schedule.l2_reuse(schedule.static_order(64, 32, 1), 132, 128, 256, 8192)
    grouped = schedule.l2_reuse(schedule.static_order(64, 32, 8), 132, 128, 256, 8192)
    assert grouped.hit_rate > row.hit_rate


def test_grouped_gemm_order():
    order = schedule.grouped_order([(256, 512), (128, 256)], 128, 256)
    assert order[:4] == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1)] and order[4:] == [(1, 0, 0)]
    assert len(schedule.cta_tiles(order, 2)[0]) == 3


# ---------------------------------------------------------------- epilogue


@given(st.sets(st.sampled_from(epilogue.ORDER), min_size=1), st.integers(1, 4096), st.integers(1, 4096))
def test_epilogue_in_order_saves_bytes(ops, M, N):
    ops = sorted(ops, key=epilogue.ORDER.index)
    p = epilogue.plan(ops, M, N)
    assert p.saved == p.bytes_unfused - p.bytes_fused >= 2 * M * N * 2 * len(ops) - 1
    assert p.extra_regs >= 1


@given(st.permutations(["alpha", "bias", "activation"]))
def test_epilogue_order_rule(perm):
    if list(perm) == ["alpha", "bias", "activation"]:
        epilogue.plan(perm, 64, 64)
    else:
        with pytest.raises(epilogue.EpilogueError, match="order"):
            epilogue.plan(perm, 64, 64)


def test_epilogue_errors():
    with pytest.raises(epilogue.EpilogueError, match="unknown"):
        epilogue.plan(["gelu"], 8, 8)
    with pytest.raises(epilogue.EpilogueError, match="twice"):
        epilogue.plan(["alpha", "alpha"], 8, 8)
