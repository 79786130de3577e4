"""perf.wave_clock_ratio / wave_clock_rows and l08.wave_clock_diagnosis: the per-wave clock under the power limit,
the one-clock model's (wave_clock=False: off) calibrated on the bf16 k-block traces' clocks at 1280 x 3840 x 8192;
the form clock, the model, keeps its cap."""
from dataclasses import replace

import pytest

from h100lab import data
from h100lab.design import perf


def test_ratio_rules():
    p = replace(perf.calibrated(), wave_clock=(180.0, 1.77))
    assert perf.wave_clock_ratio(replace(p, wave_clock=()), 120.0, 36, 132) == 1.0     # off
    assert perf.wave_clock_ratio(p, 120.0, 132, 132) == 1.0                           # a whole wave
    assert perf.wave_clock_ratio(p, 120.0, 36, 132) == pytest.approx(1.77 / 1.5)       # up to the cap
    assert perf.wave_clock_ratio(p, 120.0, 125, 132) == pytest.approx(132 / 125)       # power, below the cap
    assert perf.wave_clock_ratio(p, 80.0, 36, 132) == 1.0                             # at the cap already (FP8)


def test_on_by_default_and_partial_wave_faster():
    p = perf.calibrated(wave_clock=False)
    assert p.wave_clock == ()
    q = replace(p, wave_clock=(180.0, 1.77))
    a = perf.predict("cooperative_n128", 1280, 3840, 8192, params=p)
    b = perf.predict("cooperative_n128", 1280, 3840, 8192, params=q)
    assert b.waves[0].period_ns == pytest.approx(a.waves[0].period_ns)          # the whole waves unchanged
    assert b.waves[-1].active == 36 and b.waves[-1].period_ns < 0.9 * a.waves[-1].period_ns
    f8a = perf.predict("fp8_cooperative_tmastore", 1280, 3840, 8192, params=p)
    f8b = perf.predict("fp8_cooperative_tmastore", 1280, 3840, 8192, params=q)
    assert f8b.time_ns == pytest.approx(f8a.time_ns, rel=0.01)                   # FP8 near the cap: < 1 %


@pytest.mark.skipif(not data.available("l08/gemm_trace_forms"), reason="needs the k-block traces")
def test_the_model_has_the_wave_clock():
    """perf.calibrated() (the model, what l08.report() uses) carries the wave clock's constants read off the traces
    at its own refitted clock; wave_clock=False is the same fit without it, kept reachable."""
    from h100lab.validation import l08

    p, off = perf.calibrated(form_clock=False), perf.calibrated(wave_clock=False)
    assert p.wave_clock and off.wave_clock == ()
    assert p.wave_clock == pytest.approx(perf.wave_clock_constants(p), rel=1e-3)
    assert "wave_clock" in p.source and "wave_clock" not in off.source
    assert perf.calibrated().wave_clock == p.wave_clock       # the form clock keeps its cap (and budget)
    assert l08.report().params is perf.calibrated()
    p = perf.calibrated()
    assert perf.predict("cooperative_n128", 1280, 3840, 8192).time_ms == \
        perf.predict("cooperative_n128", 1280, 3840, 8192, params=p).time_ms


@pytest.mark.skipif(not data.available("l08/gemm_trace_forms"), reason="needs the k-block traces")
def test_trace_constants():
    one = perf.calibrated(form_clock=False)         # the constants are read at the one-clock model's activity
    rows = perf.wave_clock_rows(params=one)
    assert [r["last_ctas"] for r in rows] == [18, 36]
    assert all(r["last_ghz"] > r["full_ghz"] + 0.1 for r in rows)
    budget, cap = perf.wave_clock_constants(one)
    assert 170 < budget < 190 and 1.7 < cap < 1.85


@pytest.mark.skipif(not data.available("l08/gemm_trace_forms"), reason="needs the k-block traces")
def test_diagnosis_counts():
    from h100lab.validation import l08

    d = l08.wave_clock_diagnosis()
    # switched off, the partial-wave records go back out ...
    assert d["off"]["capstone"][0] < d["model"]["capstone"][0]
    assert d["off"]["fp8"][0] <= d["model"]["fp8"][0]
    assert d["off"]["steps"] == d["model"]["steps"] and d["off"]["cluster"] == d["model"]["cluster"]
    # ... and the ablation gets back its persistent ping-pong at 8192^3 (grouped order, group 8): the clock refitted
    # without the wave clock is higher (with it, the calibration shapes' partial last waves run faster) — the record
    # the model pays
    assert d["off"]["ablation"][0] == d["model"]["ablation"][0] + 1
    assert d["ghz"][0] < d["ghz"][1]
    key = next(k for k in d["changed"] if k.startswith("8192×8192×8192 pingpong (persistent) [gemm_steps_ablation]"))
    assert d["changed"][key][0] > 0.10 >= d["changed"][key][1]
    assert sum(a for a, _ in d["model"].values()) == sum(a for a, _ in d["off"].values()) + 3


def test_repeat_median_rows_on_copies(tmp_path):
    """benchmarks/merge_gemm_repeats.py on three copies of l08/gemm_bench: every configuration's median is the
    original's, spread 0, and the check counts them (the repeated table's code path, before its data)."""
    import importlib.util
    import json
    import shutil

    from h100lab.validation import l08

    for r in range(3):
        (tmp_path / f"r{r}" / "l08").mkdir(parents=True)
        shutil.copy(data._path("l08/gemm_bench"), tmp_path / f"r{r}" / "l08" / "gemm_bench.json")
    spec = importlib.util.spec_from_file_location("merge", "benchmarks/merge_gemm_repeats.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    recs, meta = m.merge(tmp_path)
    assert {r["repeat"] for r in recs} == {0, 1, 2} and all(r["kind"].startswith("repeat_") for r in recs)
    assert not any(r["kind"] in perf.TIME_KINDS for r in recs)           # never in the model's own report
    rows = l08.repeat_median_rows(data.Dataset("l08/gemm_bench_repeats", meta, recs))
    orig = {(r["variant"], r["M"], r["N"], r["K"], r.get("group", 8), r.get("raster", 0)): r["median_ms"]
            for r in data.load("l08/gemm_bench").records if r.get("kind") == "time" and r.get("ok")
            and not r["variant"].startswith("cublas")}
    assert len(rows) == len(orig)
    for r in rows:
        assert r["n"] == 3 and r["spread"] == 0.0
        assert r["median_ms"] == orig[(r["variant"], *r["shape"], r["group"], r["raster"])]
    json.dumps(meta)


@pytest.mark.skipif(not data.available("l08/gemm_bench_repeats"), reason="needs the repeated table")
def test_repeated_table():
    from h100lab.validation import l08

    ds = data.load("l08/gemm_bench_repeats")
    assert len(ds.meta["repeats"]) == 5 and all(r["complete"] for r in ds.meta["repeats"])
    assert len({tuple(r["variants"]) for r in ds.meta["repeats"]}) == 5            # five variant orders
    rows = l08.repeat_median_rows(ds)
    assert len(rows) == 37 and all(r["n"] == 5 for r in rows)
    assert sorted(r["spread"] for r in rows)[len(rows) // 2] < 0.02                 # the repeats agree
    res = l08._repeats(ds)
    assert res.mismatches == 0 and res.cases == 37
    # the original table's ping-pong_inflight calibration records ran ~6 % slower than they repeat
    orig = {(r["variant"], r["M"]): r["median_ms"] for r in data.load("l08/gemm_bench").records
            if r.get("kind") == "time" and r.get("group", 8) == 8 and r.get("raster", 0) == 0}
    for r in rows:
        if r["variant"] == "pingpong_inflight" and r["shape"][0] in (4096, 8192):
            assert r["median_ms"] < 0.95 * orig[("pingpong_inflight", r["shape"][0])]
    reps = [r for r in l08.repeat_rows() if "repeats" in r["source"]]
    assert len(reps) == 5 and all(r["vs_first"] < -0.1 for r in reps)              # 16384^3 n128: as the L2 run
