"""Memory model 2 (h100lab.sim.timing a-h), the streaming pipeline's simulation and closed form
(h100lab.sim.stream), and the calibrate-on-part / validate-on-the-rest machinery (h100lab.validation.fit, .timing).

The fitter is tested on records the model itself generates from known constants (in memory, never written to
data/): it must recover the constants and predict the held-out records.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from h100lab.sim.machine import GPU
from h100lab.sim.stream import (STREAM_KERNEL, StreamConfig, analytic_stream, config_from_record, simulate_stream)
from h100lab.sim.timing import H200_ESTIMATES, MODEL2_ESTIMATES, read_ceiling, write_cost
from h100lab.validation import fit as vf
from h100lab.validation import timing as vt
from h100lab.validation import micro
from h100lab.sim import latency
from h100lab.sim.latency import CopyLatency, LatencyKernel

M2 = H200_ESTIMATES.model2(hbm_read_bytes_per_ns=4600.0, hbm_bytes_per_ns=4200.0, tma_op_ns=20.0,
                           tma_latency_per_kb_ns=2.0, dram_latency_ns=300.0, tma_store_read_ns=50.0, wait_hit_ns=10.0,
                           tma_latency_ns=700.0)


# ------------------------------------------------------------------------------------------------
# the table

def test_model1_is_the_default_and_model2_adds_parameters():
    t = H200_ESTIMATES
    assert t.memory_model == 1 and t.memory_shared == 0 and t.hbm_read_bytes_per_ns == 0
    assert read_ceiling(t) == t.hbm_bytes_per_ns and write_cost(t) == 1.0
    assert MODEL2_ESTIMATES.memory_model == 2 and MODEL2_ESTIMATES.memory_shared == 1
    assert write_cost(M2) == pytest.approx(2 * 4600 / 4200 - 1)
    with pytest.raises(ValueError, match="twice"):
        write_cost(M2.with_values(hbm_bytes_per_ns=9300.0))
    rows = {r[0]: r for r in M2.rows()}
    assert all(rows[k][4] for k in ("tma_op_ns", "dsmem_latency_ns", "cluster_arrive_release_per_warp_ns"))


# ------------------------------------------------------------------------------------------------
# the machine in model 2

def _copies(t, num_sms, active, nbytes=65536, n=8, hbm_sharers=None):
    """CTAs 0..active-1 each copy n tiles back to back (one barrier phase per copy); returns their end times."""
    gpu = GPU(t, num_sms=num_sms, trace=False, hbm_sharers=hbm_sharers)
    ends = {}

    def prog(w, i):
        yield w.init(0, 1)
        for k in range(n):
            yield w.arrive_expect_tx(0, nbytes)
            yield w.cp_async_bulk(1024, nbytes, 0, dram=True)
            yield w.wait(0, k & 1)
        ends[i] = w.now

    for i in range(active):
        gpu.sms[i].spawn("p", prog, i)
    gpu.run()
    return ends, gpu


def test_shared_memory_queue_lends_an_idle_ctas_share():
    t = M2.with_values(tma_bytes_per_ns=10_000.0, tma_op_ns=0.0, tma_latency_ns=0.0, dram_latency_ns=0.0,
                       tma_latency_per_kb_ns=0.0, wait_wake_ns=0.0)      # the memory is the only limit
    slices = t.with_values(memory_shared=0)
    one_shared, _ = _copies(t, 8, 1)
    one_slices, _ = _copies(slices, 8, 1)
    # alone on 8 "SMs": with a shared queue the CTA gets the whole memory, with slices one eighth of it
    assert one_slices[0] > 3 * one_shared[0]
    all_shared, gpu = _copies(t, 8, 8)
    all_slices, _ = _copies(slices, 8, 8)
    # all streaming: the same steady throughput either way (within the first transfer's ordering)
    assert max(all_shared.values()) == pytest.approx(max(all_slices.values()), rel=0.05)
    assert gpu.hbm is not None and all(sm.hbm is gpu.hbm for sm in gpu.sms) and 0 < gpu.hbm_utilization(1e9) < 1


def test_write_cost_separates_the_read_and_copy_ceilings():
    t = M2.with_values(tma_bytes_per_ns=1e6, tma_op_ns=0.0)
    r = simulate_stream(StreamConfig("load", 3, 65536, grid=132, ctas_per_sm=1, tiles=64), t)
    c = simulate_stream(StreamConfig("copy", 3, 65536, grid=132, ctas_per_sm=1, tiles=64), t)
    assert 132 * 65536 / r.period_ns == pytest.approx(read_ceiling(t), rel=0.01)
    assert 2 * 132 * 65536 / c.period_ns == pytest.approx(t.hbm_bytes_per_ns, rel=0.01)


def test_op_queue_limits_small_copies_of_one_sm():
    t = M2.with_values(tma_op_ns=100.0)
    ends, _ = _copies(t.with_values(tma_latency_ns=0.0, dram_latency_ns=0.0, wait_wake_ns=0.0), 1, 1, nbytes=16,
                      n=1)
    assert ends[0] >= 100.0
    gpu = GPU(t, num_sms=1, trace=False)
    lands = []

    def burst(w):
        yield w.init(0, 1)
        yield w.arrive_expect_tx(0, 16 * 10)
        for k in range(10):
            lands.append(w.load_done_v2(w.now, 16, False))
            yield w.t.tma_issue_ns
        yield w.compute(0.0)

    gpu.sms[0].spawn("p", burst)
    gpu.run()
    assert np.diff(lands).min() == pytest.approx(100.0)                # one copy per tma_op_ns


def test_latency_parts_and_store_read_back():
    t = M2.with_values(tma_op_ns=0.0)
    base = _copies(t.with_values(tma_latency_per_kb_ns=0.0), 1, 1, nbytes=65536, n=1)[0][0]
    more = _copies(t, 1, 1, nbytes=65536, n=1)[0][0]
    assert more - base == pytest.approx(64 * t.tma_latency_per_kb_ns)
    gpu = GPU(t, num_sms=1, trace=False)
    seen = {}

    def st(w):
        yield w.cp_async_bulk_store(1024, 4096)
        yield w.commit_group()
        t0 = w.now
        yield w.wait_group(0, read=True)
        seen["read"] = w.now - t0

    gpu.sms[0].spawn("s", st)
    gpu.run()
    assert seen["read"] >= 4096 / t.tma_bytes_per_ns + t.tma_store_read_ns - t.issue_ns


def test_barrier_costs_and_dsmem_in_model2():
    t = M2.with_values(bar_sync_ns=8.0, bar_sync_per_warp_ns=1.0, cluster_barrier_ns=40.0,
                       cluster_barrier_per_cta_ns=2.0, cluster_barrier_per_warp_ns=1.5, cluster_arrive_release_ns=100.0,
                       cluster_arrive_release_per_warp_ns=3.0, cluster_arrive_relaxed_ns=1.0, dsmem_latency_ns=100.0,
                       dsmem_bytes_per_ns=32.0)
    gpu = GPU(t, num_sms=4, cluster_size=4, cta_threads=128, trace=False)
    out = {}

    def syncer(w, i):
        t0 = w.now
        yield w.bar_sync(0)
        out.setdefault("bar", []).append(w.now - t0)
        yield w.cluster_arrive(4 * 128, sem="release" if i else "relaxed")
        yield w.cluster_wait(4 * 128)
        out.setdefault("cl", []).append(w.now)
        if i == 0 and w.sm.rank == 0:
            t2 = w.now
            yield w.ld_shared_cluster(0, 1024, cta=1)
            out["dsmem"] = w.now - t2

    for sm in gpu.sms:
        for i in range(4):
            sm.spawn(f"w{i}", syncer, i, threads=32)
    gpu.run()
    bar = 8.0 + 4 * 1.0
    assert max(out["bar"]) == pytest.approx(bar)
    release = 100.0 + 3.0 * 4
    # every warp, the last to arrive too, resumes the release delay after the last (release) arrival landed
    assert out["cl"] == pytest.approx([bar + release + 40.0 + 2.0 * 4 + 1.5 * 4] * 16)
    assert out["dsmem"] == pytest.approx(100.0 + 1024 / 32.0)
    with pytest.raises(Exception, match="release or .relaxed"):
        g = GPU(t, num_sms=1, trace=False)
        g.sms[0].spawn("x", lambda w: (yield w.cluster_arrive(32, sem="acquire")))
        g.run()


# ------------------------------------------------------------------------------------------------
# the streaming pipeline

GRID = [("load", 1, 16384, 1, 1, True), ("load", 4, 16384, 1, 1, True), ("load", 2, 65536, 132, 1, True),
        ("load", 4, 16384, 264, 2, True), ("load", 1, 1024, 528, 4, True), ("consume", 1, 16384, 1, 1, True),
        ("consume", 8, 4096, 1, 1, False), ("consume", 4, 16384, 264, 2, True), ("copy", 1, 16384, 1, 1, True),
        ("copy", 8, 4096, 1, 1, True), ("copy", 2, 65536, 132, 1, True), ("copy", 6, 8192, 264, 2, True)]


@pytest.mark.parametrize("mode,stages,tile,grid,per_sm,dram", GRID)
def test_closed_form_matches_the_simulator(mode, stages, tile, grid, per_sm, dram):
    cfg = StreamConfig(mode, stages, tile, grid=grid, ctas_per_sm=per_sm, tiles=200, dram=dram)
    s = simulate_stream(cfg, M2)
    a = analytic_stream(cfg, M2)
    assert a.span_ns == pytest.approx(s.span_ns, rel=0.03), a.bound
    assert a.period == pytest.approx(s.period_ns, rel=0.03)
    assert s.moved_gbps == pytest.approx(cfg.moved_bytes / s.kernel_ns)


def test_stream_config_rules_and_records():
    with pytest.raises(ValueError):
        StreamConfig("store", 2, 4096)
    with pytest.raises(ValueError):
        StreamConfig("load", 9, 4096)
    with pytest.raises(ValueError):
        StreamConfig("load", 2, 4008 + 1)
    with pytest.raises(ValueError):
        StreamConfig("load", 2, 4096, grid=3, ctas_per_sm=2)
    with pytest.raises(ValueError, match="227 KB"):
        StreamConfig("load", 8, 65536)
    r = dict(mode="copy", scope="cta_warm", stages=4, tile_bytes=8192, grid=1, ctas_per_sm=1, tiles_per_cta=100,
             flags=4)
    c = config_from_record(r)
    assert not c.dram and c.lag and c.moved_bytes == 2 * 100 * 8192
    assert simulate_stream(StreamConfig("copy", 4, 8192, tiles=40, lag=True), M2).span_ns > 0


def test_more_stages_never_slower_in_the_model():
    for mode in ("load", "consume", "copy"):
        spans = [analytic_stream(StreamConfig(mode, s, 16384, grid=132, tiles=100), M2).span_ns for s in (1, 2, 4, 8)]
        assert all(b <= a * (1 + 1e-9) for a, b in zip(spans, spans[1:]))


# ------------------------------------------------------------------------------------------------
# the fitter

def test_least_squares_recovers_a_line_despite_outliers():
    rng = np.random.default_rng(1)
    x = np.linspace(1, 10, 40)
    y = 3.0 + 2.0 * x
    y[::10] *= 3                                                  # four outliers
    y *= 1 + 0.002 * rng.standard_normal(x.size)
    res = vf.least_squares(lambda v: np.log((v["a"] + v["b"] * x) / y),
                           [vf.FitParam("a", 1.0, 0.01, 100), vf.FitParam("b", 1.0, 0.01, 100)])
    assert res.values["a"] == pytest.approx(3.0, rel=0.05) and res.values["b"] == pytest.approx(2.0, rel=0.02)
    assert res.converged and res.history[-1] <= res.history[0]
    with pytest.raises(ValueError):
        vf.least_squares(lambda v: np.zeros(1), [])
    with pytest.raises(ValueError):
        vf.FitParam("x", 0.0, 0.0, 1.0)


def test_splits_and_agreement():
    recs = [dict(k=i) for i in range(1000)]
    s = vf.hash_split("h", lambda r: r["k"], 0.3)
    cal, held = s.apply(recs)
    assert 250 < len(cal) < 350 and len(cal) + len(held) == 1000
    assert s.apply(recs[::-1])[0] == cal[::-1]                    # independent of order
    a = vf.agreement("m", [("a", 1.0, 1.05), ("b", 2.0, 1.0), ("c", 1.0, 1.0)], tol=0.10)
    assert a.n == 3 and a.within == 2 and a.worst[0]["case"] == "b" and not a.meets(0.9) and a.meets(0.6)
    assert "2/3" in str(a)
    g = vt.goal_check(vf.agreement("m", [(i, 1.0, 1.0) for i in range(18)] + [("x", 2, 1), ("y", 2, 1)]), 0.9)
    assert g.cases == 20 and g.mismatches == 0                    # 18/20 = 90 %: the goal is met
    g = vt.goal_check(vf.agreement("m", [(i, 1.0, 1.0) for i in range(17)] + [(i, 2, 1) for i in range(3)]), 0.9)
    assert g.mismatches == 1
    st = vt.SPLITS["stream"]
    assert st.calibrate(dict(tile_bytes=8192, stages=3)) and not st.calibrate(dict(tile_bytes=16384, stages=3))


TRUE = M2.with_values(tma_bytes_per_ns=190.0, tma_op_ns=15.0, tma_issue_ns=25.0, mbarrier_expect_tx_ns=40.0,
                      tma_latency_ns=120.0, dram_latency_ns=260.0, tma_latency_per_kb_ns=1.5, tma_store_read_ns=60.0,
                      wait_hit_ns=80.0, wait_wake_ns=45.0, mbarrier_arrive_ns=3.0, bar_sync_ns=7.0,
                      bar_sync_per_warp_ns=1.0, cluster_barrier_ns=45.0, cluster_barrier_per_cta_ns=0.5,
                      cluster_barrier_per_warp_ns=1.3, cluster_arrive_release_ns=130.0,
                      cluster_arrive_release_per_warp_ns=3.0, cluster_arrive_relaxed_ns=1.0, dsmem_latency_ns=105.0,
                      dsmem_bytes_per_ns=33.0, smem_latency_ns=14.5, cluster_barrier_per_warp2_ns=0.01,
                      cluster_arrive_release_per_warp2_ns=0.05, cluster_barrier_per_doubling_ns=2.0,
                      dsmem_self_latency_ns=19.0, dsmem_loaded_bytes_per_ns=32.0,
                      dsmem_loaded_per_doubling_bytes_per_ns=-1.5)
TRUE_LAT = CopyLatency(issue_first_ns=35.0, issue_next_ns=28.0, queue_copies=8, first_byte_ns=120.0,
                       dram_extra_ns=200.0, tlb_miss_ns=50.0, fill_bytes_per_ns=200.0,
                       fill_misaligned_bytes_per_ns=80.0, tensor_extra_ns=12.0)
TRUE_LK = LatencyKernel(cold_setup_ns=25.0, issue_setup_ns=60.0)
TRUE_SK = micro.SyncKernel(((256, 193.0), (512, 195.0), (1024, 248.0)))
TRUE_K = STREAM_KERNEL.with_values(consume_warp_bytes_per_ns=70.0, consume_fixed_ns=50.0, loop_ns=30.0,
                                   launch_ns=5000.0)


def _synthetic(noise: float = 0.01, seed: int = 3):
    """Records in the datasets' formats, made by the model with TRUE/TRUE_K (and a little noise)."""
    from h100lab.measure import timing_sweep as ts

    rng = np.random.default_rng(seed)
    jig = lambda: 1 + noise * rng.standard_normal()
    stream = []
    for c in ts.stream_cases():
        r = dict(c, grid=ts.stream_grid(c, 132), tiles_per_cta=ts.plan_tiles(c, 132), flags=0, ok=True)
        cfg = config_from_record(r)
        a = analytic_stream(cfg, TRUE, TRUE_K)
        r.update(ns_per_tile=a.span_ns / cfg.tiles * jig(), moved_gbps=cfg.moved_bytes / a.kernel_ns * jig())
        stream.append(r)
    latency = []
    align = micro.source_alignment(ts.latency_cases())
    for c in ts.latency_cases():
        if c["kind"] == "mbarrier":
            latency.append(dict(c, try_wait_hit_ns=80.0, arrive_ns=3.0, wake_ns=48.0, ok=True))
            continue
        r = dict(c, ok=True)
        for k, v in micro.predict_latency(r, TRUE_LAT, TRUE_LK, align).items():
            r[k] = v * jig()
        latency.append(r)
    sync = []
    for c in ts.sync_cases():
        r = dict(c, ok=True)
        for k, v in micro.predict_sync(r, TRUE, TRUE_SK).items():
            r[k] = v * jig()
        sync.append(r)
    ceilings = [dict(kind="read_stream", gbps=4600.0), dict(kind="memcpy", gbps=4200.0)]
    return stream, latency, sync, ceilings


def test_fit_recovers_the_constants_and_predicts_the_held_out_runs():
    stream, latency, sync, ceilings = _synthetic()
    f = vt.fit(stream, latency, sync, ceilings)
    t = f.timing
    assert t.memory_model == 2 and t.params["tma_op_ns"].status == "calibrated"
    assert "2, 8 and 32 KiB" in t.params["tma_bytes_per_ns"].source
    # (the thread's issue costs, tma_issue_ns and mbarrier_expect_tx_ns, enter the stream only through their sum with
    # the loop's bookkeeping: the streaming runs alone do not separate them)
    for k in ("hbm_read_bytes_per_ns", "hbm_bytes_per_ns", "tma_bytes_per_ns", "dram_latency_ns", "bar_sync_ns", "cluster_barrier_per_warp_ns", "dsmem_latency_ns",
              "dsmem_self_latency_ns", "dsmem_loaded_bytes_per_ns"):
        assert getattr(t, k) == pytest.approx(getattr(TRUE, k), rel=0.15), k
    assert t.params["cluster_arrive_release_per_warp2_ns"].value == pytest.approx(0.05, rel=0.3)
    lm = f.latency.model
    assert lm.queue_copies == 8
    for k in ("fill_bytes_per_ns", "fill_misaligned_bytes_per_ns"):
        assert getattr(lm, k) == pytest.approx(getattr(TRUE_LAT, k), rel=0.15), k
    assert f.latency.kernel.issue_next_ns == pytest.approx(TRUE_LAT.issue_next_ns, rel=0.15)   # the kernel's loop
    assert lm.tensor_extra_ns == pytest.approx(TRUE_LAT.tensor_extra_ns, abs=5.0)   # a difference of ~170 ns times
    assert lm.issue_first_ns + lm.first_byte_ns == pytest.approx(TRUE_LAT.issue_first_ns + TRUE_LAT.first_byte_ns,
                                                                 rel=0.05)
    assert f.kernel.launch_ns == pytest.approx(TRUE_K.launch_ns, rel=0.25)
    held = {r["tile_bytes"] for r in f.held_out["stream"]}
    assert {1024, 4096, 16384, 65536} <= held and len(f.held_out["stream"]) > 3 * len(f.calibration["stream"])
    rep = vt.validate(f, method="analytic")
    assert rep.held_out["stream ns/tile"].fraction >= 0.95 and rep.held_out["stream GB/s"].fraction >= 0.95
    assert all(a.fraction >= 0.9 for a in rep.held_out.values()), rep.summary()
    assert "held-out agreement" in rep.summary()
    # the simulator agrees with the closed form on a sample of held-out runs (the closed form's smooth maximum
    # (assumption i) switched off: the simulator's events give the hard one)
    sample = f.held_out["stream"][::40]
    hard = f.timing.with_values(period_sharpness=0.0)
    for r in sample:
        p = vt.predict_stream(r, hard, f.kernel, "sim")
        q = vt.predict_stream(r, hard, f.kernel, "analytic")
        assert p["ns_per_tile"] == pytest.approx(q["ns_per_tile"], rel=0.08), vt.stream_label(r)


def test_fit_needs_the_stream_sweep_and_the_goal_checks_are_registered(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="stream_sweep"):
        vt.fit(None, [dict(kind="mbarrier", try_wait_hit_ns=1, arrive_ns=1, wake_ns=2)], None, None)
    from h100lab.validation import all_checks
    titles = {c.title for c in all_checks()}
    assert all(t in titles for t, *_ in vt.GOAL_CHECKS + vt.ACHIEVED_CHECKS)
    assert all(d.startswith(f"l{l:02d}/") for _, l, d, *_ in vt.GOAL_CHECKS + vt.ACHIEVED_CHECKS)
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    vt._CACHE.clear()
    try:
        assert vt._check("stream ns/tile").cases == 0 and "cannot fit" in vt._check("stream ns/tile").note
    finally:
        vt._CACHE.clear()


def test_predictions_of_the_micro_benchmarks():
    align = {}
    lat = micro.predict_latency(dict(kind="bulk", bytes=1024), TRUE_LAT, TRUE_LK)
    ramp = TRUE_LAT.dram_ramp_ns * 1024 / TRUE_LAT.dram_ramp_bytes            # the DRAM part's ramp, 1 KiB of it
    assert lat["cold_ns"] - lat["warm_ns"] == pytest.approx(TRUE_LK.cold_setup_ns + TRUE_LAT.dram_extra_ns
                                                            + TRUE_LAT.tlb_miss_ns + ramp)
    assert lat["warm_ns"] == pytest.approx(35.0 + 1024 / 200.0 + 120.0)
    ten = micro.predict_latency(dict(kind="tensor", bytes=1024), TRUE_LAT, TRUE_LK)
    assert ten["warm_ns"] - lat["warm_ns"] == pytest.approx(12.0)
    one = micro.predict_latency(dict(kind="issue", bytes=16, count=1, cold=False), TRUE_LAT, TRUE_LK, align)
    many = micro.predict_latency(dict(kind="issue", bytes=16, count=32, cold=False), TRUE_LAT, TRUE_LK, align)
    assert one["issue_ns_per_copy"] > many["issue_ns_per_copy"] > TRUE_LAT.issue_next_ns
    assert many["total_ns"] > one["total_ns"]
    # the unit's queue: 32 copies of 4 KiB issue no faster than 8 fill
    big = latency.round_trip(TRUE_LAT, 4096, 32)
    assert big["issue"] >= 24 * 4096 / 200.0
    assert latency.round_trip(TRUE_LAT, 16384, aligned=False)["total"] > latency.round_trip(TRUE_LAT, 16384)["total"]
    with pytest.raises(ValueError):
        latency.round_trip(TRUE_LAT, 0)
    clean = micro.predict_latency_clean(dict(bytes=4096, count=4, align=16, touch=1), TRUE_LAT)
    assert clean["cold_total_ns"] - clean["warm_total_ns"] == pytest.approx(TRUE_LAT.dram_extra_ns
                                                                            + TRUE_LAT.dram_ramp_ns)
    assert clean["warm_first_ns"] == TRUE_LAT.issue_first_ns < clean["warm_issue_ns"]
    s = micro.predict_sync(dict(kind="cluster_barrier", cluster=4, threads=256, sem="release"), TRUE)["ns"]
    r = micro.predict_sync(dict(kind="cluster_barrier", cluster=4, threads=256, sem="relaxed"), TRUE)["ns"]
    assert s - r == pytest.approx(130.0 + 3.0 * 8 + 0.05 * 64 - 1.0)
    no_cta = TRUE.with_values(cluster_barrier_per_cta_ns=0.0)        # the doubling term alone: capped at 8 CTAs
    r4, r8, r16 = (micro.predict_sync(dict(kind="cluster_barrier", cluster=n, threads=256, sem="relaxed"), no_cta)["ns"]
                   for n in (4, 8, 16))
    assert r16 == r8 == pytest.approx(r4 + 2.0)
    assert micro.predict_sync(dict(kind="dsmem_stream", remote=1, cluster=2), TRUE)["bytes_per_ns_per_sm"] == 33.0
    assert micro.predict_sync(dict(kind="dsmem_stream", remote=1, cluster=4, all_sms=True), TRUE)[
        "bytes_per_ns_per_sm"] == pytest.approx(29.0)
    assert micro.predict_sync(dict(kind="dsmem_chase", remote=1, target=0), TRUE)["ns"] == 19.0
    assert micro.predict_sync(dict(kind="dsmem_stream", remote=0, threads=512), TRUE, TRUE_SK)[
        "bytes_per_ns_per_sm"] == 195.0
    assert vt.predict_ceiling(dict(kind="memcpy", gbps=1.0), TRUE, TRUE_K) == TRUE.hbm_bytes_per_ns
    assert vt.predict_ceiling(dict(kind="gemm"), TRUE, TRUE_K) is None
    with pytest.raises(ValueError):
        micro.predict_latency(dict(kind="nope"), TRUE_LAT)
