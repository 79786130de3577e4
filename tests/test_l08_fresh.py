"""The fresh-shape test (h100lab.validation.l08.fresh_predictions): every form of the capstone kernel at shapes no
earlier run had timed, its predictions committed (benchmarks/predictions/l08_gemm_fresh.json) before the H200 ran
them (data/l08/gemm_fresh*)."""
import importlib.util
import json
from pathlib import Path

import pytest

from h100lab import data
from h100lab.design import capstone as cap
from h100lab.design import perf
from h100lab.validation import l08
from planted import planted

ROOT = Path(__file__).resolve().parent.parent
PREDICTIONS = ROOT / "benchmarks" / "predictions" / "l08_gemm_fresh.json"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_gemm_fresh", ROOT / "benchmarks" / "bench_gemm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_run_times_the_forms_predicted():
    """The run is bench_gemm.py with its default variants of each mode: the forms predicted are those."""
    bench = _bench()
    assert l08.FRESH_VARIANTS["bf16"] == bench.VARIANTS and l08.FRESH_VARIANTS["fp8"] == bench.FP8_VARIANTS
    assert l08.FRESH_LAUNCHES == 3 + 20                # bench_gemm.py's default --warmup and --repeats


def test_the_shapes_are_fresh():
    """No committed timing run had timed a fresh shape before (the runs of the test itself aside), and the second
    round's shapes are none of the first's."""
    seen = {(r["M"], r["N"], r["K"]) for r in perf.load_records(perf.timing_datasets())}
    assert not seen & (set(l08.FRESH_SHAPES) | set(l08.FRESH2_SHAPES))
    assert not set(l08.FRESH_SHAPES) & set(l08.FRESH2_SHAPES) and len(set(l08.FRESH2_SHAPES)) == 7


def test_the_grid_is_the_benchmarks():
    r = l08._fresh_record("cooperative_inflight_cluster2", (2048, 12288, 8192), "l08/gemm_fresh")
    assert r["grid"] == cap.grid_size(cap.variant("cooperative_inflight_cluster2"), 2048, 12288, 132) == 132
    small = l08._fresh_record("fp8_cooperative_m256_tmastore", (512, 512, 1024), "x")
    assert small["grid"] == 8 and small["launches"] == 23 and (small["group"], small["raster"]) == (8, 0)


@pytest.mark.parametrize("rnd", range(len(l08.FRESH_ROUNDS)))
def test_the_committed_predictions_are_the_codes(rnd):
    """While the models' constants are the ones the file records, the code predicts what the file holds: the
    figures compared with the run were written down by this code, before it (benchmarks/predict_fresh.py). A later
    model (another constants key) leaves the file as the record of what was predicted first."""
    shapes, datasets, file = l08.FRESH_ROUNDS[rnd]
    path = PREDICTIONS.parent / file
    if not path.is_file():
        pytest.skip(f"{file}: not registered yet")
    committed = json.loads(path.read_text())
    assert [tuple(s) for s in committed["shapes"]] == list(shapes)
    assert committed["launches"] == l08.FRESH_LAUNCHES
    assert len(committed["rows"]) == len(shapes) * sum(map(len, l08.FRESH_VARIANTS.values()))
    if committed["params_key"] != l08.fresh_params_key():
        pytest.skip("the model's constants changed since the predictions were registered: the file is history")
    now = l08.fresh_predictions(shapes, datasets)
    for a, b in zip(now, committed["rows"]):
        assert {k: a[k] for k in ("mode", "variant", "M", "N", "K", "grid", "regime")} == \
            {k: b[k] for k in ("mode", "variant", "M", "N", "K", "grid", "regime")}
        assert a["model"] == pytest.approx(b["model"], rel=1e-9) and a["form"] == pytest.approx(b["form"], rel=1e-9)


needs_run = pytest.mark.skipif(not all(data.available(d + s) for d in l08.FRESH_DATASETS.values() for s in ("", "_b")),
                               reason="the fresh-shape runs are not committed")


def test_the_prospective_runs_are_not_campaign_records():
    from h100lab.validation import l08_fence, l08_issue, l08_lead

    assert {d + s for _, ds, _ in l08.FRESH_ROUNDS for d in ds.values() for s in ("", "_b")} | \
        {l08_lead.WS_DATASET + s for s in ("", "_b")} | \
        {r[1] + s for r in l08_fence.ROUNDS.values() for s in ("", "_b")} | \
        {l08_issue.ISSUE_DATASET + s for s in ("", "_b")} == set(perf.PROSPECTIVE_DATASETS)
    assert not set(perf.timing_datasets()) & set(perf.PROSPECTIVE_DATASETS)
    with pytest.raises(ValueError, match="not a fresh-shape run"):
        l08.fresh_rows("l08/gemm_bench")


@needs_run
def test_what_the_registered_predictions_got():
    """The prospective test's outcome (every timed form at every fresh shape, both processes, both rounds): the
    form clock (then a hypothesis, the model since) far ahead of the one-clock model (the model then) on bf16, the
    two level on FP8; the model's figures are the form clock's as registered while both models' constants are those
    the round's file records."""
    s = l08.fresh_summary()
    got = {n.split("/")[-1]: (v["n"], v["registered"], v["form"]) for n, v in s.items()}
    assert got == {"gemm_fresh": (98, 78, 97), "gemm_fresh_b": (98, 79, 95), "gemm_fresh_fp8": (112, 96, 94),
                   "gemm_fresh_fp8_b": (112, 96, 95), "gemm_fresh2": (98, 86, 98), "gemm_fresh2_b": (98, 88, 98),
                   "gemm_fresh2_fp8": (112, 93, 96), "gemm_fresh2_fp8_b": (112, 93, 95),
                   # round 3, registered with the form clock as the model and the working-set gate on its scale loads
                   "gemm_fresh3": (98, 92, 98), "gemm_fresh3_b": (98, 90, 96), "gemm_fresh3_fp8": (112, 98, 106),
                   "gemm_fresh3_fp8_b": (112, 98, 103)}
    for shapes, datasets, file in l08.FRESH_ROUNDS:
        if json.loads((PREDICTIONS.parent / file).read_text())["params_key"] == l08.fresh_params_key():
            assert all(s[d + x]["model"] == s[d + x]["form"] for d in datasets.values() for x in ("", "_b"))
        for d in datasets.values():
            for x in ("", "_b"):
                v = s[d + x]
                assert sum(n for _, n in v["by_shape"].values()) == v["n"] and set(v["by_shape"]) == set(shapes)


@needs_run
def test_the_capacity_rule_was_refuted():
    """The LRU capacity rule registered for the second round is not in the model: on that round's FP8 records it
    did no better than the model without it (which the first round's rows were registered with)."""
    v = l08.fresh_lru_verdict()
    assert set(v) == {l08.FRESH2_DATASETS["fp8"], l08.FRESH2_DATASETS["fp8"] + "_b"}
    for r in v.values():
        assert r["n"] == 112 and r["with_rule"] < r["without"]
    # the model then was round 1's; it has changed since (the form clock, then the working-set gate)
    assert json.loads(PREDICTIONS.read_text())["params_key"] != l08.fresh_params_key()


@needs_run
def test_b_resident_in_l2_hides_the_lead_1_latency():
    """Where B (N·K bytes, read again by every group of tile rows) fits in L2, the 128 × 128 form loading its
    scales one k-block ahead is as fast as two ahead; where it does not, 8–11 % slower; the model charges ~20 %
    everywhere (its loaded latency has no L2 capacity)."""
    rows = {r["shape"]: r for r in l08.fresh_residency_rows()}
    assert set(rows) == set(l08.FRESH_SHAPES)
    for shape, r in rows.items():
        if r["b_mb"] < 45:
            assert r["ratio"] < 1.0 and r["model"] > 0.2, shape
        else:
            assert 1.05 < r["ratio"] < 1.12, shape
        assert r["model_ratio"] > 1.19
    # the tall and the wide shape: the same tiles, K and waves; only which operand is re-read differs
    tall, wide = rows[(12288, 2048, 8192)], rows[(2048, 12288, 8192)]
    assert tall["lead2_ms"] == pytest.approx(wide["lead2_ms"], rel=0.02) and tall["lead1_ms"] < 0.92 * wide["lead1_ms"]


@needs_run
def test_the_checks_pass_and_fail_on_planted_times():
    from h100lab.data import Dataset

    fresh = {d + s for _, ds, _ in l08.FRESH_ROUNDS for d in ds.values() for s in ("", "_b")}
    for name in (n for n in perf.PROSPECTIVE_DATASETS if data.available(n) and n in fresh):
        ds = data.load(name)
        assert l08._fresh_check(ds).mismatches == 0
        assert l08._fresh_check(planted(ds, lambda r: True, 1.25)).mismatches > 0
    assert l08._fresh_check(Dataset(l08.FRESH_DATASETS["bf16"], {}, [])).mismatches == 1


def test_the_fifth_trace_held_out():
    """data/l08/gemm_trace_stagger (2026-12-03, nothing fitted on it): every FP8 form within ±10 % at the clock
    its trace read; the staggered 128 × 128 k-block at least as long as the plain one in the same run."""
    if not data.available(l08.STAGGER_TRACE_DATASET):
        pytest.skip("the fifth trace is not committed")
    rows = {r["variant"]: r for r in l08.trace_rows(l08.STAGGER_TRACE_DATASET)}
    assert len(rows) == 7 and all(abs(r["error"]) <= l08.TOLERANCE for r in rows.values())
    for plain in ("fp8_cooperative_tmastore", "fp8_cooperative", "fp8_cooperative_n192_tmastore"):
        stag = plain.replace("cooperative", "cooperative_staggered", 1) if "n192" not in plain else \
            "fp8_cooperative_n192_staggered_tmastore"
        assert rows[stag]["trace_period"] >= rows[plain]["trace_period"]
    assert l08.STAGGER_TRACE_DATASET not in l08.TRACE_RUNS
