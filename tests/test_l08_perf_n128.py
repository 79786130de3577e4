"""Issue 17's bf16 misses left (h100lab.validation.l08: cycle_rows, partial_wave_diagnosis, repeat_rows;
h100lab.design.perf.PerfParams.smem_shared): the numbers that say what they are, on the committed data."""
from dataclasses import replace

import pytest

from h100lab import data
from h100lab.design import perf
from h100lab.validation import l08

needs_l2 = pytest.mark.skipif(not data.available(l08.L2_DATASET), reason="data/l08/gemm_l2_traffic not committed")
needs_bench = pytest.mark.skipif(not data.available("l08/gemm_bench"), reason="data/l08/gemm_bench not committed")


@needs_l2
@needs_bench
def test_cycle_rows_smem_bound_is_not_a_cycle_bound():
    # the one-clock model's shared-memory bound (ω = 1), what these counters were first read against
    one = perf.calibrated(form_clock=False)
    rows = {(r["variant"], r["shape"]): r for r in l08.cycle_rows(params=one) if (r["group"], r["raster"]) == (8, 0)}
    n128, coop = rows[("cooperative_n128", (8192,) * 3)], rows[("cooperative", (8192,) * 3)]
    # the 128-column form runs no more SM cycles than the 256-column one (the tensor-core bound) at a lower clock
    assert n128["cycles"] < coop["cycles"] and n128["ncu_mhz"] < coop["ncu_mhz"] - 50
    # the model's shared-memory bound charges it far more cycles than it ran; the tensor-bound form much less
    assert n128["bound"] == "smem" and n128["ratio"] > 1.2 and coop["ratio"] < 1.12
    for r in rows.values():
        assert r["cycles"] == pytest.approx(r["ncu_ms"] * r["ncu_mhz"] * 1e3)


@needs_l2
@needs_bench
def test_repeat_rows_16384_cooperative_n128_does_not_repeat():
    rows = l08.repeat_rows("cooperative_n128", (16384,) * 3)
    bench = next(r for r in rows if r["source"] == "l08/gemm_bench")
    timed = next(r for r in rows if r["source"].endswith("(timed)"))
    assert rows[0] is bench and bench["vs_first"] == 0.0
    # 17.3 ms (min 15.8) against 13.9 (min 12.7) in the DRAM-counter run: not reproducible to ±10 %
    assert timed["vs_first"] < -0.15 and timed["median_ms"] < bench["min_ms"]
    # the same configuration at 1280 x 3840 x 8192 repeats (within 4 %; of the repeated table's five processes the
    # median — one of them ran 8.6 % slower)
    small = l08.repeat_rows("cooperative_n128", (1280, 3840, 8192))
    single = [r for r in small if "repeats" not in r["source"]]
    reps = sorted(r["vs_first"] for r in small if "repeats" in r["source"])
    assert len(single) >= 3 and all(abs(r["vs_first"]) < 0.04 for r in single)
    assert not reps or abs(reps[len(reps) // 2]) < 0.04


@needs_bench
def test_smem_shared_scales_only_partial_waves():
    p = perf.calibrated(wave_clock=False)             # the mechanism alone (the model's per-wave clock off)
    assert p.smem_shared is False and p.wave_clock == ()
    q = replace(p, smem_shared=True)
    a = perf.predict("cooperative_n128", 1280, 3840, 8192, params=p)
    b = perf.predict("cooperative_n128", 1280, 3840, 8192, params=q)
    assert [w.active for w in b.waves] == [132, 132, 36]
    for wa, wb in zip(a.waves, b.waves):
        assert wb.bounds["smem"] == pytest.approx(wa.bounds["smem"] * wa.active / 132)
        assert (wb.period_ns == pytest.approx(wa.period_ns)) == (wa.active == 132)
    assert b.time_ms < a.time_ms
    # whole waves: the same prediction
    c = perf.predict("cooperative_n128", 1408, 3072, 8192, params=q)
    assert c.time_ms == pytest.approx(perf.predict("cooperative_n128", 1408, 3072, 8192, params=p).time_ms)


@needs_bench
def test_partial_wave_diagnosis():
    d = l08.partial_wave_diagnosis()
    # against the model without its per-wave clock (the other explanation of the same misses)
    assert d["before"] == l08.wave_clock_diagnosis()["off"]
    # the hypothesis brings the 1280 x 3840 x 8192 capstone misses within ±10 % ...
    assert d["after"]["capstone"][0] >= d["before"]["capstone"][0] + 3
    key = next(k for k in d["changed"] if k.startswith("1280×3840×8192 cooperative_n128 [gemm_bench]"))
    before, after = d["changed"][key]
    assert before > 0.10 and abs(after) <= 0.10
    # ... and costs FP8 records whose partial wave the FP8 chain already times fast: why it is not the model
    assert d["after"]["fp8"][0] < d["before"]["fp8"][0]
    assert d["after"]["steps"] == d["before"]["steps"] and d["after"]["cluster"] == d["before"]["cluster"]
    # fitted as the model is (the ping-pong window off while fitting): the ping-pong steps keep their window
    assert d["after"]["ablation"][0] >= d["before"]["ablation"][0] - 1
    assert 1.6 < d["ghz"][1] < d["ghz"][0]


@needs_l2
@needs_bench
def test_cycle_rows_row_major_pingpong_loses_cycles_not_clock():
    rows = {(r["variant"], r["shape"], r["group"], r["raster"]): r
            for r in l08.cycle_rows(params=perf.calibrated(form_clock=False))}    # the one-clock model's cycles
    g1, g8 = rows[("pingpong", (4096,) * 3, 1, 0)], rows[("pingpong", (4096,) * 3, 8, 0)]
    # 4096^3 row-major ping-pong: ~36 % more SM cycles than grouped at about the same clock
    assert g1["cycles"] > 1.3 * g8["cycles"] and abs(g1["ncu_mhz"] / g8["ncu_mhz"] - 1) < 0.05
    # the model has most of the ratio of the two: with its delivery bound of an out-of-step ping-pong wave the
    # row-major launch is within 5 % in cycles, the grouped one ~10 % high
    assert 1.2 < g1["model_cycles"] / g8["model_cycles"] < g1["cycles"] / g8["cycles"]
    assert abs(g1["ratio"] - 1) < 0.05 and 1.05 < g8["ratio"] < 1.2
