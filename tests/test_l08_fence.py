"""Issue 17's FP8 cluster item (h100lab.validation.l08_fence): the fenced pair's release in the FP8 k-block loop, its
two readings, and their registered predictions."""
import copy
import json
import math
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from h100lab import data
from h100lab.design import perf
from h100lab.validation import l08_fence as F

ROOT = Path(__file__).resolve().parents[1]
PRED = ROOT / "benchmarks" / "predictions" / F.FENCE_PREDICTIONS


def test_the_fence_waits_for_the_loads_in_flight():
    """The issue loop's release: "after" never ends before the loads land plus the fence; "overlap" never before
    either alone; both at least the fence after wait_group. Without loads the two readings are one."""
    f = perf.form("fp8_cooperative_tmastore_cluster2")
    p = perf.calibrated()
    w = p.wgmma
    base = perf._loop_args(f, p, p.tensor_ghz)
    for load in (0.0, 500.0, 3000.0):
        a = dict(base, load_cycles=load, fence_cycles=800.0, fence_after_cycles=0.0)
        over = perf.issue_timing(f, w, **a).cycles
        after = perf.issue_timing(f, w, **dict(a, fence_cycles=0.0, fence_after_cycles=800.0)).cycles
        assert after >= over
        if load == 0.0:
            assert after == pytest.approx(over)
    # a form without a cluster ignores the fence
    g = perf.form("fp8_cooperative_tmastore")
    a = dict(perf._loop_args(g, p, p.tensor_ghz), fence_cycles=800.0)
    assert perf.issue_timing(g, w, **a).cycles == perf.issue_timing(g, w, **dict(a, fence_cycles=0.0)).cycles


def test_the_fp8_fence_constant_reaches_only_fp8_forms():
    p = replace(perf.calibrated(), cluster_fence_fp8_ns=1234.0)
    ghz = p.tensor_ghz
    assert perf._loop_args(perf.form("fp8_cooperative_tmastore_cluster2"), p, ghz)["fence_cycles"] == \
        pytest.approx(round(1234.0 * ghz, 6))
    assert perf._loop_args(perf.form("cooperative_inflight_cluster2"), p, ghz)["fence_cycles"] == \
        pytest.approx(round(p.cluster_fence_ns * ghz, 6))


def test_each_reading_fits_its_one_record():
    d, v, shape = F.FENCE_CALIBRATION
    r = next(x for x in perf.timing_records_of(data.load(d)) if x["variant"] == v and (x["M"], x["N"], x["K"]) == shape)
    assert perf.calibration_part(r) is None            # the model's reading (split) is fitted on the fence run
    for s in F.STRUCTURES:
        p = F.fence_params(s)
        assert (p.cluster_fence_fp8_ns > 0, p.cluster_fence_fp8_after_ns > 0) == (s == "overlap", s == "after")
        assert abs(math.log(perf.predict_record(r, p).time_ms / r["median_ms"])) < 0.005
    with pytest.raises(ValueError, match="fence reading"):
        F.fence_params("sideways")


@pytest.mark.parametrize("rnd", sorted(F.ROUNDS))
def test_the_registered_predictions_are_the_codes(rnd):
    """Each round's committed file holds every form at every shape of the round, its shapes were never timed before
    it (but by the round's own run), and its rule is written down."""
    shapes, dataset, file, readings, rule = F.ROUNDS[rnd]
    reg = json.loads((ROOT / "benchmarks" / "predictions" / file).read_text())
    want = [(list(s), v) for s in shapes for v in F.FENCE_VARIANTS]
    assert [(r["shape"], r["variant"]) for r in reg["rows"]] == want
    assert set(reg["fence_ns"]) == set(readings) and reg["rule"] == rule
    for r in reg["rows"]:
        assert set(r["model_ms"]) == set(readings) and all(x > 0 for x in r["model_ms"].values())
        if r["variant"] not in F.FENCE_PAIRS:          # the controls: no fence, one time for every reading
            assert len({round(x, 9) for x in r["model_ms"].values()}) == 1
    seen = {(x["M"], x["N"], x["K"]) for n in data.names()
            if n.startswith("l08/") and not n.startswith(dataset)
            for x in data.load(n).records if "M" in x}
    assert not seen & set(shapes)


@pytest.mark.parametrize("rnd", sorted(F.ROUNDS))
def test_the_predictions_were_committed_before_the_run(rnd):
    """The commit that added a round's predictions is an ancestor of the one that added its run (where git history
    is here)."""
    _, dataset, file, _, _ = F.ROUNDS[rnd]

    def added(path):
        git = subprocess.run(["git", "log", "--format=%H", "--diff-filter=A", "--", str(path)], cwd=ROOT,
                             capture_output=True, text=True)
        return git.stdout.split()[-1:] if git.returncode == 0 else []

    pred, run = added(ROOT / "benchmarks" / "predictions" / file), added(ROOT / "data" / (dataset + ".json"))
    if not pred or not run:
        pytest.skip("no git history of the predictions and the run here")
    ok = subprocess.run(["git", "merge-base", "--is-ancestor", pred[0], run[0]], cwd=ROOT)
    assert ok.returncode == 0 and pred[0] != run[0]


def _needs(*names):
    return pytest.mark.skipif(not all(data.available(n) for n in names), reason="the fence runs are not committed")


@_needs(F.FENCE_DATASET, F.FENCE_DATASET + "_b")
def test_round_one_picked_overlap_and_missed_the_ring():
    v = F.fence_verdict(1)
    assert v["winner"] == "overlap"
    assert v["overlap"]["pairs"]["within"] == 20 and v["after"]["pairs"]["within"] == 17
    rows = [r for x in ("", "_b") for r in F.fence_rows(F.FENCE_DATASET + x)]
    ring = [r for r in rows if r["variant"] == F.FENCE_PAIRS[1]]
    # the ring pair: too slow under one reading, too fast under the other, at every shape
    assert all(r["err"]["overlap"] > 0.05 and r["err"]["after"] < -0.08 for r in ring)
    # silicon runs the ring pair within a few per cent of the lead-1 pair
    ms = {(r["shape"], r["variant"]): r["ms"] for r in F.fence_rows(F.FENCE_DATASET)}
    assert all(0.97 <= ms[(s, F.FENCE_PAIRS[1])] / ms[(s, F.FENCE_PAIRS[0])] <= 1.04 for s in F.FENCE_SHAPES)


@_needs(F.FENCE2_DATASET, F.FENCE2_DATASET + "_b")
def test_round_two_picked_split_and_the_model_took_it():
    v = F.fence_verdict(2)
    assert v["winner"] == "split" == perf.FP8_FENCE_READING
    assert v["split"]["pairs"]["within"] == v["split"]["pairs"]["n"] == 24 > v["overlap"]["pairs"]["within"]
    assert v["split"]["pairs"]["rms"] < 0.03
    p = perf.calibrated()
    assert p.cluster_fence_fp8_ns > 0 and p.cluster_fence_fp8_after_ns > 0
    # the check the fit was not asked to pass: the two parts sum to the bf16 pair's one fence (no loads in flight,
    # it pays both in series) within 5 %
    assert (p.cluster_fence_fp8_ns + p.cluster_fence_fp8_after_ns) == pytest.approx(p.cluster_fence_ns, rel=0.05)
    for n in (F.FENCE_DATASET, F.FENCE_DATASET + "_b", F.FENCE2_DATASET, F.FENCE2_DATASET + "_b"):
        held = [r for r in F.model_rows(n) if r["variant"] in F.FENCE_PAIRS and not r["calibration"]]
        assert held and all(abs(r["error"]) <= 0.10 for r in held)
    assert sum(r["calibration"] for r in F.model_rows(F.FENCE_DATASET)) == 2


@_needs(F.FENCE2_DATASET)
def test_the_round_checks_fail_on_planted_data():
    from h100lab.data import Dataset
    ds = data.load(F.FENCE2_DATASET)
    assert F._round_check(ds).mismatches == 0
    recs = copy.deepcopy(ds.records)
    for r in recs:
        if r.get("variant") == F.FENCE_PAIRS[1] and "median_ms" in r:
            r["median_ms"] = float(r["median_ms"]) * 1.25      # the ring pair a quarter slower than it ran
    assert F._round_check(Dataset(ds.name, ds.meta, recs)).mismatches > 0
