"""The fast paths of the fits are the plain formulas, bit for bit.

Lesson 3's memory-model fit (:func:`h100lab.validation.timing.fit`) evaluates the streaming closed form of ~120 runs
~800 times; lesson 7's wgmma calibration (:func:`h100lab.tensorcore.timing.calibrate`) simulates ~1000 programs of
~1000 wgmmas. Their fast forms (:func:`h100lab.sim.stream.analytic_stream_batch`,
:func:`h100lab.sim.timing.soft_periods`, :func:`h100lab.validation.fit.log_ratios`,
:func:`h100lab.tensorcore.timing.simulate`) must give exactly the numbers of the formulas as first written. Those
formulas are kept here, written out the plain way (one configuration, one op at a time, Python floats), as the
reference; every comparison is ``==`` on floats (to the last bit), on inputs drawn by hypothesis.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings, strategies as st

from h100lab.sim.stream import (BOUNDS, MODES, StreamBatch, StreamConfig, StreamKernel,
                                analytic_stream, analytic_stream_batch)
from h100lab.sim.timing import H200_ESTIMATES, read_ceiling, soft_period, soft_periods, store_rate, write_cost
from h100lab.tensorcore import timing as wt
from h100lab.validation import fit as vf

# ------------------------------------------------------------------------------------------------
# the references: the formulas one value at a time (as h100lab had them before the fast paths)


def ref_analytic_stream(cfg: StreamConfig, t, kernel: StreamKernel) -> dict:
    T, S, G, c = cfg.tile_bytes, cfg.stages, cfg.grid, cfg.ctas_per_sm
    R = read_ceiling(t)
    w = write_cost(t) if t.memory_model >= 2 else 1.0
    shared = t.memory_model >= 2 and t.memory_shared
    n_cp = cfg.copies_per_tile
    op = t.tma_op_ns if t.memory_model >= 2 else 0.0
    per_kb = t.tma_latency_per_kb_ns if t.memory_model >= 2 else 0.0
    dram = t.dram_latency_ns if (cfg.dram and t.memory_model >= 2) else 0.0
    lat = t.tma_latency_ns + per_kb * T / 1024.0 + dram
    b1 = min(t.tma_bytes_per_ns, R if shared else R / G)
    loop = kernel.loop_ns
    expect = t.mbarrier_expect_tx_ns if t.memory_model >= 2 else t.mbarrier_arrive_ns
    if cfg.mode == "load":
        work = work_rt = 0.0
    elif cfg.mode == "consume":
        half = T / 2
        own = kernel.consume_fixed_ns + half / kernel.consume_warp_bytes_per_ns + t.fence_ns
        work = t.smem_latency_ns + half / t.smem_bytes_per_ns + own
        work_rt = t.smem_latency_ns + T / t.smem_bytes_per_ns + own
    else:
        store_read = T / store_rate(t) + (t.tma_store_read_ns if t.memory_model >= 2 else 0.0)
        st_start = 0.0 if (t.memory_model >= 2 and t.tma_issue_overlap) else t.tma_issue_ns
        work = work_rt = max(t.tma_issue_ns, st_start + op + store_read) + t.issue_ns + t.wait_hit_ns
    C = t.wait_hit_ns + work + t.mbarrier_arrive_ns + loop
    Q = t.wait_hit_ns + expect + t.tma_issue_ns + loop
    x_tma = c * (T / t.tma_bytes_per_ns + (T / store_rate(t) if cfg.mode == "copy" else 0.0))
    x_ops = c * n_cp * op
    units = T * (1.0 + (w if cfg.mode == "copy" else 0.0))
    x_mem = G * units / R if shared else units / (R / G)
    x_lsu = c * T / t.smem_bytes_per_ns if cfg.mode == "consume" else 0.0
    start = 0.0 if (t.memory_model >= 2 and t.tma_issue_overlap) else t.tma_issue_ns
    first = start + op + T / b1 + lat + t.wait_wake_ns
    rt = expect + first + work_rt + t.wait_wake_ns
    terms = {"consumer": C, "producer": Q, "tma": x_tma, "ops": x_ops, "memory": x_mem, "lsu": x_lsu,
             "latency": rt / S}
    bound = max(terms, key=terms.get)
    P = soft_period(terms.values(), t)
    drain = 0.0
    if cfg.mode == "copy":
        drain = t.tma_latency_ns + max(0.0, T * w / (R if shared else R / G) - T / t.tma_bytes_per_ns)
    span = first + work_rt + t.mbarrier_arrive_ns + loop + (cfg.tiles - 1) * P + drain
    return dict(consumer=C, producer=Q, x_tma=x_tma, x_ops=x_ops, x_mem=x_mem, x_lsu=x_lsu, round_trip=rt, period=P,
                bound=bound, first_ns=first, drain_ns=drain, span_ns=span, kernel_ns=span + kernel.launch_ns)


def ref_simulate(program, params):
    t = tc_free = busy = 0.0
    open_done, groups, spans = [], [], []
    for op in program:
        if op[0] == "mma":
            e = wt.exec_cycles(op[1], op[2], params)
            t += params.issue
            start = max(t, tc_free)
            end = start + e
            tc_free = end
            busy += e
            spans.append((t, start, end))
            open_done.append(max(start + params.latency_start, end + params.latency_tail))
        elif op[0] == "commit":
            groups.append(max(open_done) if open_done else t)
            open_done = []
        elif op[0] == "wait":
            n = int(op[1])
            if len(groups) > n:
                t = max(t, max(groups[:len(groups) - n]))
                groups = groups[len(groups) - n:] if n else []
            t += params.wait
        elif op[0] == "fence":
            t += params.fence
        elif op[0] == "loop":
            t += params.loop
        else:
            t += float(op[1])
    return t, busy, spans


# ------------------------------------------------------------------------------------------------
# strategies

pos = st.floats(0.5, 5000.0, allow_nan=False)


@st.composite
def tables(draw):
    """A memory-model-2 table (or model 1) with the fitted parameters drawn, as the fit moves them."""
    if draw(st.booleans()):
        r = draw(st.floats(1000.0, 6000.0))
        vals = dict(hbm_read_bytes_per_ns=r, hbm_bytes_per_ns=draw(st.floats(1000.0, 1.98 * r)),
                    tma_bytes_per_ns=draw(st.floats(20.0, 2000.0)), tma_op_ns=draw(st.floats(0.1, 500.0)),
                    tma_issue_ns=draw(st.floats(0.1, 500.0)), mbarrier_expect_tx_ns=draw(st.floats(0.1, 500.0)),
                    tma_store_read_ns=draw(st.floats(0.1, 2000.0)),
                    tma_store_bytes_per_ns=draw(st.sampled_from([0.0, draw(st.floats(10.0, 2000.0))])),
                    period_sharpness=draw(st.sampled_from([0.0, 1.0, 8.0, draw(st.floats(1.0, 60.0))])),
                    tma_latency_ns=draw(st.floats(5.0, 5000.0)), dram_latency_ns=draw(st.floats(1.0, 5000.0)),
                    tma_latency_per_kb_ns=draw(st.floats(0.01, 200.0)))
        return H200_ESTIMATES.model2(tma_issue_overlap=draw(st.sampled_from([0, 1])), **vals)
    return H200_ESTIMATES


@st.composite
def configs(draw):
    stages = draw(st.integers(1, 8))
    tile = 16 * draw(st.integers(1, (232_448 - 1024) // (16 * stages)))
    c = draw(st.integers(1, 4))
    grid = draw(st.sampled_from([1, c * draw(st.integers(1, 132))]))
    return StreamConfig(draw(st.sampled_from(MODES)), stages, tile, grid=grid, ctas_per_sm=c,
                        tiles=draw(st.integers(1, 4096)), dram=draw(st.booleans()), lag=draw(st.booleans()))


kernels = st.builds(StreamKernel, pos, pos, pos, st.floats(100.0, 50000.0))


# ------------------------------------------------------------------------------------------------
# lesson 3: the streaming closed form, the smooth maximum, the log ratios


@settings(max_examples=150, deadline=None)
@given(tables(), st.lists(configs(), min_size=1, max_size=12), kernels)
def test_analytic_stream_batch_is_the_scalar_closed_form_bit_for_bit(t, cfgs, k):
    got = analytic_stream_batch(cfgs, t, k)
    for i, cfg in enumerate(cfgs):
        want = ref_analytic_stream(cfg, t, k)
        one = analytic_stream(cfg, t, k)
        for f, v in want.items():
            g = BOUNDS[got[f][i]] if f == "bound" else float(got[f][i])
            assert g == v and getattr(one, f) == v, (f, cfg, g, v)
    # a prebuilt batch is the same batch
    again = analytic_stream_batch(StreamBatch.of(cfgs), t, k)
    assert all(np.array_equal(again[f], got[f]) for f in got)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(0.0, 1e6), min_size=7, max_size=7), min_size=1, max_size=20),
       st.sampled_from([0.0, 1.0, 2.0, 8.0, 33.3, 60.0]))
def test_soft_periods_is_soft_period_of_each_column(rows, k):
    t = H200_ESTIMATES.model2(period_sharpness=k)
    b = np.array(rows).T
    got = soft_periods(b, t)
    assert [float(x) for x in got] == [soft_period(col, t) for col in rows]


def test_soft_periods_refuses_a_negative_bound_and_a_flat_list():
    t = H200_ESTIMATES.model2(period_sharpness=8.0)
    for bad in (np.array([[1.0, -1.0], [2.0, 2.0]]), np.array([1.0, 2.0])):
        try:
            soft_periods(bad, t)
        except ValueError:
            continue
        raise AssertionError(f"no ValueError for {bad}")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-10.0, 1e9), st.floats(-10.0, 1e9)), min_size=1, max_size=40))
def test_log_ratios_is_log_ratio_of_each_pair(pairs):
    got = vf.log_ratios([p for p, _ in pairs], [m for _, m in pairs])
    assert list(got) == [vf.log_ratio(p, m) for p, m in pairs]


def test_log_ratios_and_soft_periods_on_many_random_values():
    """Seeded bulk inputs, where a SIMD ``log`` or ``power`` would differ in the last bit (~0.3 % and ~5 % of the
    values on an AVX-512 machine)."""
    rng = np.random.default_rng(3)
    p, m = rng.uniform(1.0, 1e4, 20000), rng.uniform(1.0, 1e4, 20000)
    assert list(vf.log_ratios(p, m)) == [vf.log_ratio(a, b) for a, b in zip(p.tolist(), m.tolist())]
    t = H200_ESTIMATES.model2(period_sharpness=8.37)
    b = rng.uniform(0.0, 1e3, (7, 3000))
    assert soft_periods(b, t).tolist() == [soft_period(col, t) for col in b.T.tolist()]


# ------------------------------------------------------------------------------------------------
# lesson 7: the wgmma program simulator, the programs, the calibration's memo

ops = st.one_of(st.tuples(st.just("mma"), st.sampled_from(["bf16", "e4m3", "tf32", "sp_bf16"]),
                          st.sampled_from([8, 16, 64, 128, 256])),
                st.just(("commit",)), st.tuples(st.just("wait"), st.integers(0, 3)), st.just(("fence",)),
                st.just(("loop",)), st.tuples(st.just("work"), st.floats(0.0, 300.0)))
params = st.builds(wt.WgmmaTiming, pos, pos, st.floats(0.5, 2.0), st.floats(-16.0, 64.0), st.floats(0.0, 128.0),
                   st.floats(0.0, 100.0), st.floats(0.0, 1000.0), pos, pos, pos)


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=200), params)
def test_simulate_is_the_op_by_op_model(program, p):
    tl = wt.simulate(program, p)
    t, busy, spans = ref_simulate(program, p)
    assert (tl.cycles, tl.busy, tl.spans) == (t, busy, spans)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["bf16", "sp_bf16", "e4m3"]), st.sampled_from([16, 64, 256]), st.integers(1, 21),
       st.integers(0, 3), st.integers(1, 12), st.integers(1, 4), st.sampled_from(wt.KERNELS), params)
def test_predict_case_is_the_simulated_pattern(atype, n, per_group, depth, iters, sets, kernel, p):
    c = dict(type=atype, n=n, per_group=per_group, depth=depth, iters=iters, sets=sets,
             **({"kind": "timing_dep", "static": True} if kernel == "l07_wgmma_deps" else {"kind": "timing"}))
    named = {"pre": p.work, "pre4": p.work + p.work_block4, **{f"wait{d}": p.work_wait[d] for d in range(4)}}
    prog = [("work", named[op[1]]) if op[0] == "work" else op
            for op in wt.pattern(atype, n, per_group, depth, iters, sets=sets, kernel=kernel)]
    assert wt.predict_case(c, p) == ref_simulate(prog, p)[0]
    # the program handed out is the caller's to change: the next call is not affected
    wt.pattern(atype, n, per_group, depth, iters, sets=sets, kernel=kernel).clear()
    assert wt.predict_case(c, p) == ref_simulate(prog, p)[0]


def _records(truth):
    recs = []
    for kernel, atype, n, g, depth, sets in sorted(wt.CALIBRATION):
        r = dict(id=f"{kernel}-{atype}-{n}-{g}-{depth}-{sets}", type=atype, n=n, per_group=g, depth=depth, sets=sets,
                 iters=1024 // g if kernel == "l07_wgmma_deps" else 64, ok=True)
        r.update(dict(kind="timing_dep", static=True, mode="chain") if kernel == "l07_wgmma_deps" else
                 dict(kind="timing"))
        r["cycles"] = [wt.predict_case(r, truth)]
        recs.append(r)
    return recs


def test_calibrate_is_computed_once_per_content_and_again_when_a_record_changes(tmp_path, monkeypatch):
    from h100lab import fitcache

    monkeypatch.setenv("H100LAB_CACHE", str(tmp_path))
    fitcache.clear_memory()
    truth = wt.WgmmaTiming(issue=wt.ISSUE, min_exec=23.0, overhead=0.5, sparse_extra=18.0, latency_tail=40.0,
                           wait=6.0, fence=6.0, loop=20.0, work=90.0, work_wait=(120.0, 110.0, 140.0, 140.0),
                           work_block4=60.0)
    recs = _records(truth)
    calls = []
    real = wt._calibrate
    monkeypatch.setattr(wt, "_calibrate", lambda cal, prior: calls.append(1) or real(cal, prior))
    p = wt.calibrate(recs)
    assert len(calls) == 1 and len(list((tmp_path / "fits").glob("wgmma-calibrate-*"))) == 1
    # the same content (other dict objects, another order, a record outside the subset) is not fitted again
    copy = [dict(r) for r in reversed(recs)] + [dict(recs[0], depth=2, id="held out")]
    assert wt.calibrate(copy) is p and len(calls) == 1
    # a new process reads the disk copy: equal to the last bit
    fitcache.clear_memory()
    assert wt.calibrate(recs) == p and len(calls) == 1
    # a changed measurement is fitted again, as if nothing had been remembered
    changed = [dict(r, cycles=[r["cycles"][0] * 1.05]) if r["type"] == "sp_bf16" else r for r in recs]
    q = wt.calibrate(changed)
    assert len(calls) == 2 and q.sparse_extra != p.sparse_extra
    monkeypatch.setenv("H100LAB_CACHE", "off")
    fitcache.clear_memory()
    assert wt.calibrate(changed) == q and len(calls) == 3
    # another prior is another fit (the records then set every constant it had: the same values)
    assert wt.calibrate(recs, prior=wt.WgmmaTiming(issue=5.0)) == p and len(calls) == 4
    fitcache.clear_memory()


# ------------------------------------------------------------------------------------------------
# lesson 3's pipeline simulator: an untraced run is remembered per (configuration, table values)


def test_untraced_pipeline_runs_are_remembered_per_configuration_and_table(monkeypatch):
    from h100lab.sim import pipeline as sp

    monkeypatch.setattr(sp, "_MEMO", {})
    calls = []
    real = sp._simulate
    monkeypatch.setattr(sp, "_simulate", lambda *a: calls.append(a[2]) or real(*a))
    cfg = sp.PipelineConfig(stages=3, iters=16, tile_bytes=4096, compute_ns=300.0)
    t = H200_ESTIMATES
    a = sp.simulate(cfg, t, trace=False)
    b = sp.simulate(sp.PipelineConfig(stages=3, iters=16, tile_bytes=4096, compute_ns=300.0),
                    H200_ESTIMATES.with_values(source="another source, the same values"), trace=False)
    assert calls == [False] and a == b and a is not b          # a copy of the first result
    fresh = real(cfg, t, False)
    assert (fresh.total_ns, fresh.ns_per_iter, fresh.steady_ns_per_iter, fresh.events) == \
        (a.total_ns, a.ns_per_iter, a.steady_ns_per_iter, a.events)
    # another value of the table, another configuration, or a trace: simulated
    slower = sp.simulate(cfg, t.with_values(tma_latency_ns=t.tma_latency_ns * 3), trace=False)
    sp.simulate(sp.PipelineConfig(stages=4, iters=16, tile_bytes=4096, compute_ns=300.0), t, trace=False)
    traced = sp.simulate(cfg, t, trace=True)
    assert calls == [False, False, False, True] and slower.total_ns > a.total_ns and traced.trace
    # bounded
    monkeypatch.setattr(sp, "MEMO_SIZE", 2)
    for s in (5, 6, 7):
        sp.simulate(sp.PipelineConfig(stages=s, iters=8, tile_bytes=4096), t, trace=False)
    assert len(sp._MEMO) == 2


def test_log_ratio_of_an_underflowing_quotient_is_minus_infinity():
    """A positive prediction so much smaller than its measurement that the quotient underflows to 0 (found by
    hypothesis: 5e-324 over 6.0) is −inf in both forms, not a math domain error."""
    assert vf.log_ratio(5e-324, 6.0) == -math.inf
    assert list(vf.log_ratios([5e-324, 2.0], [6.0, 1.0])) == [-math.inf, math.log(2.0)]
