"""The fresh-shape test (h100lab.validation.l08.fresh_predictions): every form of the capstone kernel at shapes no
earlier run had timed, its predictions committed (benchmarks/predictions/l08_gemm_fresh.json) before the H200 ran
them (data/l08/gemm_fresh*)."""
import importlib.util
import json
from pathlib import Path

import pytest

from h100lab.design import capstone as cap
from h100lab.validation import l08

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
    """No committed timing run had timed a fresh shape before (the runs of the test itself aside)."""
    from h100lab.design import perf

    seen = {(r["M"], r["N"], r["K"]) for r in perf.load_records(perf.timing_datasets())
            if not r["dataset"].startswith("l08/gemm_fresh")}
    assert not seen & set(l08.FRESH_SHAPES)


def test_the_grid_is_the_benchmarks():
    r = l08._fresh_record("cooperative_inflight_cluster2", (2048, 12288, 8192), "l08/gemm_fresh")
    assert r["grid"] == cap.grid_size(cap.variant("cooperative_inflight_cluster2"), 2048, 12288, 132) == 132
    small = l08._fresh_record("fp8_cooperative_m256_tmastore", (512, 512, 1024), "x")
    assert small["grid"] == 8 and small["launches"] == 23 and (small["group"], small["raster"]) == (8, 0)


def test_the_committed_predictions_are_the_codes():
    """While the models' constants are the ones the file records, the code predicts what the file holds: the
    figures compared with the run were written down by this code, before it (benchmarks/predict_fresh.py). A later
    model (another constants key) leaves the file as the record of what was predicted first."""
    committed = json.loads(PREDICTIONS.read_text())
    assert [tuple(s) for s in committed["shapes"]] == list(l08.FRESH_SHAPES)
    assert committed["launches"] == l08.FRESH_LAUNCHES
    assert len(committed["rows"]) == len(l08.FRESH_SHAPES) * sum(map(len, l08.FRESH_VARIANTS.values()))
    if committed["params_key"] != l08.fresh_params_key():
        pytest.skip("the model's constants changed since the predictions were registered: the file is history")
    now = l08.fresh_predictions()
    for a, b in zip(now, committed["rows"]):
        assert {k: a[k] for k in ("mode", "variant", "M", "N", "K", "grid", "regime")} == \
            {k: b[k] for k in ("mode", "variant", "M", "N", "K", "grid", "regime")}
        assert a["model"] == pytest.approx(b["model"], rel=1e-9) and a["form"] == pytest.approx(b["form"], rel=1e-9)
