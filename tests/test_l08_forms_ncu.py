"""Every bf16 form under Nsight Compute (issue 17, data/l08/gemm_ncu_forms): the time model's cycles and clock
checked apart (h100lab.validation.l08.form_counter_rows and its check)."""
import copy

import pytest

from h100lab import data
from h100lab.data import Dataset
from h100lab.validation import l08

pytestmark = pytest.mark.skipif(not data.available(l08.FORMS_NCU_DATASET), reason="the ncu run is not committed")


def test_every_form_at_every_shape_once():
    rs = l08.form_counter_rows()
    assert len(rs) == 39 and all(r["launches"] == 2 for r in rs)
    assert len({r["variant"] for r in rs}) == 9
    for r in rs:
        # the counters agree with each other: cycles / clock is the launch's time
        assert r["mcycles"] / r["ghz"] == pytest.approx(r["ms"], rel=0.02)
        assert 0.3 < r["tensor_busy"] <= 1.0 and 0.3 < r["model_busy"] <= 1.0


def test_the_one_clock_models_cycles_and_clock_are_both_high_and_cancel():
    """What made the form clock: the one-clock model (the model then) right in time for the wrong reasons."""
    from h100lab.design import perf

    one = perf.calibrated(form_clock=False)
    s = l08.form_counter_summary(params=one)
    rs = l08.form_counter_rows(params=one)
    assert s["cycle_error_median"] > 0.05 and s["clock_error_median"] > 0.02
    times = sorted(abs(r["error"]) for r in rs)
    assert times[len(times) // 2] < s["cycle_error_median"]
    # silicon: one form's clock differs from another's at one shape (8192³: ping-pong with a group in flight below
    # ping-pong without one), the model has one clock for every whole wave
    at8 = {r["variant"]: r for r in rs if r["shape"] == (8192, 8192, 8192)}
    assert at8["pingpong"]["ghz"] > 1.05 * at8["pingpong_inflight"]["ghz"]
    assert at8["pingpong"]["model_ghz"] == pytest.approx(at8["pingpong_inflight"]["model_ghz"])


def test_the_check_passes_and_fails_on_planted_times():
    ds = data.load(l08.FORMS_NCU_DATASET)
    assert l08._forms_ncu(ds).mismatches == 0
    recs = copy.deepcopy(ds.records)
    for r in recs[: 2 * 8]:                              # eight configurations' launches 20 % faster on the clock
        r["metrics"]["gpu__time_duration.sum"] *= 0.8
    res = l08._forms_ncu(Dataset(ds.name, ds.meta, recs))
    assert res.mismatches > 0 and all(e["time"].startswith("+") for e in res.examples)


@pytest.mark.skipif(not data.available(l08.FORMS_NCU_FP8_DATASET), reason="the FP8 ncu run is not committed")
def test_the_fp8_forms_under_ncu():
    rs = l08.form_counter_rows(l08.FORMS_NCU_FP8_DATASET)
    assert len(rs) == 34 and {r["shape"][0] for r in rs} == {4096, 8192, 1280, 1408, 16384}
    for r in rs:
        assert r["mcycles"] / r["ghz"] == pytest.approx(r["ms"], rel=0.02)
        assert 0.1 < r["tensor_busy"] < 0.8 and 0.1 < r["model_busy"] < 0.9      # FP8 leaves its tensor pipe idle
    ds = data.load(l08.FORMS_NCU_FP8_DATASET)
    assert l08._forms_ncu_fp8(ds).mismatches == 0
    recs = copy.deepcopy(ds.records)
    for r in recs[: 2 * 8]:
        r["metrics"]["gpu__time_duration.sum"] *= 1.3
    assert l08._forms_ncu_fp8(Dataset(ds.name, ds.meta, recs)).mismatches > 0


def test_the_ncu_script_plans_chosen_shapes_and_forms():
    """benchmarks/ncu_gemm_forms.py --shapes/--variants: every chosen form at each chosen shape, in that order; the
    tables' plan otherwise; a form the mode does not have is refused."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    import ncu_gemm_forms as n

    assert len(n.plan()) == 9 * 4 + 3 and len(n.plan(True)) == 8 * 4 + 2
    two = ("fp8_cooperative_tmastore", "fp8_cooperative_tmastore_lead2")
    assert n.plan(True, [(6144, 6144, 6144), (8192, 4096, 8192)], two) == [
        ((6144, 6144, 6144), two[0]), ((6144, 6144, 6144), two[1]), ((8192, 4096, 8192), two[0]),
        ((8192, 4096, 8192), two[1])]
    assert n.plan(True, None, two[:1]) == [(s, two[0]) for s in n.SHAPES] + [(n.BIG_FP8[0], two[0])]
    p = subprocess.run([sys.executable, str(root / "benchmarks" / "ncu_gemm_forms.py"), "--fp8", "--variants",
                        "cooperative"], capture_output=True, text=True)
    assert p.returncode == 2 and "--variants" in p.stderr
