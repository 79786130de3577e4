"""h100lab.design.traffic: DRAM reads of a tile order with a reuse window, its fit, and what the committed DRAM
counters (data/l08/gemm_l2_traffic) say of it."""
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab import data
from h100lab.design import perf, schedule, traffic


def test_window_reads_counts_one_read_per_window_holding_a_sharer():
    # row-major 4 x 32 tiles on 128 CTAs: B panel n is read by CTAs n, n + 32, n + 64, n + 96
    wave = schedule.static_order(4, 32)
    assert traffic.window_reads(wave, None) == (4, 32, 4, 32)           # in step: the distinct panels
    a, b, da, db = traffic.window_reads(wave, 24)
    assert (da, db) == (4, 32) and b == 4 * 32                            # sharers 32 apart: never one window
    assert a == sum(len({c // 24 for c in range(32 * m, 32 * m + 32)}) for m in range(4))
    assert traffic.window_reads(wave, 128)[:2] == (4, 32)                 # one window holding the wave
    with pytest.raises(ValueError, match="window"):
        traffic.window_reads(wave, 0)


@settings(max_examples=40, deadline=None)
@given(tm=st.integers(1, 12), tn=st.integers(1, 12), group=st.integers(1, 6), raster=st.sampled_from("mn"),
       ctas=st.integers(1, 40), w=st.integers(1, 10))
def test_reads_between_distinct_panels_and_tiles_and_fewer_with_wider_nested_windows(tm, tn, group, raster, ctas, w):
    order = schedule.static_order(tm, tn, group, raster)
    t1, t2 = traffic.traffic(order, ctas, 64, 256, 128, 2, w), traffic.traffic(order, ctas, 64, 256, 128, 2, 2 * w)
    t0 = traffic.traffic(order, ctas, 64, 256, 128, 2, None)
    for (a0, b0), (a1, b1), (a2, b2), wave_start in zip(t0.per_wave, t1.per_wave, t2.per_wave,
                                                       range(0, len(order), ctas)):
        n = len(order[wave_start:wave_start + ctas])
        assert a0 <= a2 <= a1 <= n and b0 <= b2 <= b1 <= n
    assert t0.dram <= t2.dram <= t1.dram <= t1.requested
    assert t1.hit_rate == pytest.approx(1 - t1.dram / t1.requested)


def test_in_step_estimate_is_schedule_l2_reuse():
    order = schedule.static_order(16, 8, 2, "m")
    a = traffic.l2_estimate(order, 20, 128, 256, 512, 2, None)
    b = schedule.l2_reuse(order, 20, 128, 256, 512, 2)
    assert a.per_wave == b.per_wave and a.dram == b.dram


def test_concurrent_sets_of_a_two_tile_wave_are_averaged():
    # 'pairs': 2 x SMs tiles per wave, SMs of them in flight at once
    order = schedule.static_order(8, 8)                                   # row-major, 64 tiles
    est = traffic.l2_estimate(order, 16, 64, 256, 64, 2, 4, concurrent=8)
    sub = traffic.traffic(order, 8, 64, 256, 64, 2, 4)
    assert len(est.per_wave) == 4
    for i, (a, b) in enumerate(est.per_wave):
        (a1, b1), (a2, b2) = sub.per_wave[2 * i], sub.per_wave[2 * i + 1]
        assert (a, b) == ((a1 + a2) / 2, (b1 + b2) / 2)
    assert est.dram == pytest.approx(sub.dram)


def test_only_ping_pong_forms_drift():
    assert traffic.drifts(perf.form("pingpong")) and traffic.drifts(perf.form("pingpong_inflight"))
    assert not traffic.drifts(perf.form("cooperative")) and not traffic.drifts(perf.form("cooperative_n128"))
    assert traffic.window_for(perf.form("cooperative")) is None


def test_fit_window_takes_the_most_records_within_tolerance():
    recs = [{"median_ms": 1.0, "w": w} for w in range(5)]
    # a fake model: window 8 predicts every record exactly, 4 only some, None none
    def predict(r, w):
        return {8: 1.0, 4: 1.0 + 0.05 * r["w"], None: 2.0}.get(w, 1.5)
    assert traffic.fit_window(recs, predict, windows=(4, 8, None)) == 8
    assert traffic.fit_window(recs, predict, windows=(4, None)) == 4
    with pytest.raises(ValueError, match="calibration"):
        traffic.fit_window([], predict)


needs_orders = pytest.mark.skipif(not data.available(traffic.ORDERS_DATASET), reason="order sweep not committed")
needs_l2 = pytest.mark.skipif(not data.available(traffic.L2_DATASET), reason="DRAM-counter run not committed")


@needs_orders
def test_window_is_fitted_on_the_calibration_subset_only(monkeypatch):
    recs = traffic.orders_records()
    cal = [r for r in recs if traffic.is_calibration(r)]
    assert len(cal) == 10 and len(recs) > 50
    assert all((r["M"], r["N"], r["K"], r["grid"]) == (8192, 8192, 8192, 132) for r in cal)
    seen = []
    real = traffic.fit_window
    monkeypatch.setattr(traffic, "fit_window", lambda rs, p, **k: seen.append(list(rs)) or real(rs, p, **k))
    p = perf.calibrated()
    w = traffic.fit_window_for(replace(p, reuse_window=None))      # refitted here, with the model's constants
    assert w in traffic.WINDOWS and w is not None
    assert w == p.reuse_window == traffic.calibrated_window()
    assert seen and all(traffic.is_calibration(r) for r in seen[0]) and len(seen[0]) == len(cal)


@needs_orders
def test_row_major_ping_pong_is_predicted_slow_and_grouped_unchanged():
    perf.calibrated()
    rows = {r.label: r for r in traffic.orders_report()}
    rm = rows["8192×8192×8192 pingpong (persistent, 132 CTAs) group 1 raster M"]
    assert rm.part == "calibration" and abs(rm.error) <= 0.10 and rm.lockstep_error < -0.4
    held = [r for r in rows.values() if r.part == "held-out"]
    assert sum(abs(r.error) <= 0.10 for r in held) >= sum(abs(r.lockstep_error) <= 0.10 for r in held)
    # the held-out row-major records at K 16384 and the pairs schedule: within ±10 % with the window, not in step
    for k in ("8192×8192×16384 pingpong (persistent, 132 CTAs) group 1 raster M",
              "8192×8192×8192 pingpong (pairs, 2048 CTAs) group 1 raster M"):
        assert rows[k].part == "held-out" and abs(rows[k].error) <= 0.10 < abs(rows[k].lockstep_error)


@needs_l2
def test_dram_counters_in_step_estimate_right_where_in_step_window_not_a_byte_count():
    rows = traffic.dram_rows()
    assert len(rows) == 52
    by = {r.label: r for r in rows}
    within = lambda x, y, tol: abs(x / y - 1) <= tol                       # noqa: E731
    # the in-step estimate: right for the grouped orders (and most runs), a third of row-major ping-pong at 8192³
    assert sum(within(r.in_step_bytes, r.ncu_bytes, 0.25) for r in rows) >= 30
    g8 = by["8192×8192×8192 pingpong (persistent, 132 CTAs) group 8 raster M"]
    rm = by["8192×8192×8192 pingpong (persistent, 132 CTAs) group 1 raster M"]
    assert within(g8.in_step_bytes, g8.ncu_bytes, 0.10)
    assert 2.5 < rm.ncu_bytes / rm.in_step_bytes < 3.5 and 3.3 < rm.dram_tb_s < 4.2     # DRAM-bound, below 4.7
    # the window over-counts: more than measured in the DRAM-bound run, far more in the grouped one
    assert rm.model_bytes > rm.ncu_bytes and g8.model_bytes > 1.4 * g8.ncu_bytes
    pp = [r for r in rows if r.variant.startswith("pingpong")]
    assert sum(within(r.model_bytes, r.ncu_bytes, 0.25) for r in pp) < sum(
        within(r.in_step_bytes, r.ncu_bytes, 0.25) for r in pp)
    # 4096³: row-major reads no more than grouped, yet takes longer: not DRAM traffic
    a, b = (by[f"4096×4096×4096 pingpong (persistent, 132 CTAs) group {g} raster M"] for g in (1, 8))
    assert a.ncu_bytes < 1.25 * b.ncu_bytes and a.timed_ms > 1.25 * b.timed_ms


@needs_l2
def test_plain_launch_fills_one_gpc_after_another():
    recs = [r for r in data.load(traffic.L2_DATASET).records if r["kind"] == "placement" and r["ok"]]
    gpc = {s: g["gpc"] for g in data.load("l02/gpc_map").records for s in g["sms"]}
    assert recs
    for r in recs:
        seq = [gpc[s] for s in r["smid"]]
        runs = [seq[0]] + [b for a, b in zip(seq, seq[1:]) if b != a]
        assert len(runs) == len(set(runs))                                 # each GPC's CTAs consecutive
        assert sorted(set(seq)) == sorted(set(gpc.values()))


@needs_l2
def test_row_major_with_b_in_l2_splits_into_two_states():
    recs = data.load(traffic.L2_DATASET).records
    t = next(r for r in recs if r["kind"] == "l2time" and (r["M"], r["N"], r["group"], r["raster"]) == (32768, 2048, 1, 0)
             and r["variant"] == "pingpong")
    fast = [x for x in t["samples_ms"] if x < 2.0]
    slow = [x for x in t["samples_ms"] if x > 2.15]
    assert len(fast) >= 3 and len(slow) >= 3 and len(fast) + len(slow) == len(t["samples_ms"])


@pytest.mark.skipif(not data.available(traffic.BISTABLE_DATASET), reason="per-launch DRAM-counter run not committed")
def test_slow_launches_are_the_ones_that_read_more():
    import numpy as np

    recs = {(r["variant"], r["M"], r["N"], r["group"], r["raster"]): r
            for r in data.load(traffic.BISTABLE_DATASET).records if r["kind"] == "l2" and r["ok"]}
    rm = recs[("pingpong", 32768, 2048, 1, 0)]
    t = np.array([m["gpu__time_duration.sum"] for m in rm["launch_metrics"]]) * 1e-6
    b = np.array([m["dram__bytes_read.sum"] for m in rm["launch_metrics"]]) * 1e-9
    assert len(t) == 20 and np.corrcoef(t, b)[0, 1] > 0.8
    fast, slow = b[t < 1.9], b[t > 2.05]
    assert len(fast) >= 3 and len(slow) >= 3 and fast.max() < slow.min()
    # the in-step estimate is the fast launches' bytes
    est = traffic.model_dram_bytes("pingpong", "persistent", 32768, 2048, 8192, 132, 1, 0, None) * 1e-9
    assert abs(est / fast.mean() - 1) < 0.1
    g8 = np.array([m["dram__bytes_read.sum"] for m in recs[("pingpong", 8192, 8192, 8, 0)]["launch_metrics"]])
    r1 = np.array([m["dram__bytes_read.sum"] for m in recs[("pingpong", 8192, 8192, 1, 0)]["launch_metrics"]])
    assert g8.max() < 1.05 * g8.min() and r1.min() > 4 * g8.max()
