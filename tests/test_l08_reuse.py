"""Each cooperative form's own drift and the tile reads' rate (h100lab.validation.l08_reuse): the readings of the
launch-by-launch counters (traffic.fit_form_drifts, perf.fit_tile_read, perf.predict_bytes), the predictions
committed before the H200 ran seven shapes (six never timed) (benchmarks/predict_reuse.py,
benchmarks/predictions/l08_gemm_l2_reuse.json) — the code's, with the constants written in the file — what the H200
said (data/l08/gemm_l2_reuse, _b), and checks that bite on planted times and bytes."""
import copy
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab import data
from h100lab.data import Dataset
from planted import planted
from h100lab.design import perf, traffic
from h100lab.validation import l08_reuse as R

COUNTERS = pytest.mark.skipif(not data.available(traffic.FORM_DRIFT_DATASET), reason="the counter run is not committed")
ROUND = pytest.mark.skipif(not all(data.available(n) for n in R.REUSE_DATASETS), reason="the round is not committed")


def _registered_params():
    """The model with the constants the predictions file was written with."""
    c = R.reuse_registered()["constants"]
    return replace(perf.calibrated(), tile_read_tb_s=c["tile_read_tb_s"], capacity_drift=c["capacity_drift"],
                   form_drifts=tuple(tuple(x) for x in c["form_drifts"]), capacity_blocks=0)


def test_six_shapes_were_never_timed_before_the_round():
    timed = set()
    for path in sorted((data.data_dir() / "l08").glob("*.json")):
        name = f"l08/{path.stem}"
        if name in R.REUSE_DATASETS:
            continue
        timed |= {(r["M"], r["N"], r["K"]) for r in data.load(name).records if all(k in r for k in "MNK")}
    # 12288³, the control, was a shape of the first fresh-shape round
    assert set(R.REUSE_SHAPES) & timed == {(12288, 12288, 12288)}


def test_the_committed_predictions_are_the_codes():
    reg = R.reuse_registered()
    assert reg is not None and [tuple(s) for s in reg["shapes"]] == list(R.REUSE_SHAPES)
    assert len(reg["rows"]) == len(R.REUSE_SHAPES) * len(R.REUSE_VARIANTS)
    # the first and the last shape (the largest loss and the small one) computed again with the file's constants
    shapes = (R.REUSE_SHAPES[0], R.REUSE_SHAPES[-1])
    now = R.reuse_predictions(_registered_params(), shapes)
    assert now["constants"] == reg["constants"]
    written = {(r["variant"], r["M"], r["N"], r["K"]): r for r in reg["rows"]}
    for a in now["rows"]:
        b = written[(a["variant"], a["M"], a["N"], a["K"])]
        for k in ("model_ms", "plain_ms", "model_one_ms", "plain_one_ms", "model_gb", "in_step_gb", "drift"):
            assert a[k] == pytest.approx(b[k], rel=1e-9), k


def test_the_round_separates_the_readings():
    rows = R.reuse_registered()["rows"]
    differ = [r for r in rows if abs(r["model_ms"] / r["plain_ms"] - 1) > R.DECISIVE]
    # the in-flight form at every shape but the control, and nothing else
    assert {r["variant"] for r in differ} == {"cooperative_n128_inflight"}
    assert len(differ) == len(R.REUSE_SHAPES) - 1 and all(r["model_ms"] > r["plain_ms"] for r in differ)
    # the cluster pair keeps the common drift, its time the plain one's within 0.2 %
    assert all(r["drift"] == R.reuse_registered()["constants"]["capacity_drift"]
               and r["model_ms"] == pytest.approx(r["plain_ms"], rel=2e-3) for r in rows if "cluster" in r["variant"])


@COUNTERS
def test_each_form_has_its_own_drift_and_the_second_run_agrees():
    a = dict(traffic.fit_form_drifts())
    b = dict(traffic.fit_form_drifts("l08/gemm_l2_n128_b"))
    assert set(a) == set(b) == {"cooperative", "cooperative_n128", "cooperative_n128_inflight",
                                "cooperative_n128_inflight_tmastore"}
    assert a["cooperative_n128_inflight"] > 5 * a["cooperative_n128"]
    assert all(abs(a[v] - b[v]) <= 0.005 for v in a)
    # the wait-0 forms drift as the common drift fitted on other runs says
    assert abs(a["cooperative_n128"] - traffic.calibrated_drift()) <= 0.001


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(((2048, 2048, 4096), (3072, 2048, 8192), (4096, 4096, 2048))),
       st.sampled_from(("cooperative", "cooperative_n128")),
       st.floats(0.0, 0.03), st.floats(0.0, 0.03))
def test_capacity_reads_grow_with_the_drift(shape, v, d1, d2):
    """More drift, never fewer DRAM bytes; and never more than every tile's requested bytes."""
    f = perf.form(v)
    lo, hi = sorted((d1, d2))
    a = sum(traffic.capacity_reads(f, *shape, 132, 8, 0, drift=lo))
    b = sum(traffic.capacity_reads(f, *shape, 132, 8, 0, drift=hi))
    tiles = -(-shape[0] // f.bm) * -(-shape[1] // f.bn)
    assert b >= a * (1 - 1e-12) and b <= tiles * (f.bm + f.bn) * shape[2] * f.elem_bytes


def test_predict_bytes_is_the_model_at_its_own_bytes_and_grows_with_them():
    p = replace(perf.calibrated(), tile_read_tb_s=0.0)
    f = perf.form("pingpong")
    own = traffic.model_dram_bytes("pingpong", "persistent", 8192, 8192, 8192, 132, 8, 0, None)
    a = perf.predict(f, 8192, 8192, 8192, params=p, window=None).time_ms
    assert perf.predict_bytes(f, 8192, 8192, 8192, own, params=p).time_ms == pytest.approx(a, rel=1e-12)
    q = perf.calibrated()
    ts = [perf.predict_bytes("cooperative_n128_inflight", 16384, 16384, 16384, b, params=q).time_ms
          for b in (10e9, 30e9, 50e9, 70e9)]
    assert ts == sorted(ts) and ts[-1] > 1.2 * ts[0]
    with pytest.raises(ValueError, match="DRAM bytes"):
        perf.predict_bytes("cooperative", 4096, 4096, 4096, -1.0, params=q)


def test_the_readings_are_off_by_default():
    """PerfParams without the tile reads' rate: the in-step DRAM bytes at the read-stream ceiling, as before."""
    p = perf.calibrated()
    off = replace(p, tile_read_tb_s=0.0)
    f = perf.form("cooperative_n128_inflight")
    lay = perf._layout(f, 16384, 16384, 16384, 132, 8, 0)
    waves, rate = perf._dram_waves(f, 16384, 16384, 16384, 132, 8, 0, off, lay, None)
    assert waves == lay.waves and rate == pytest.approx(4735.095, rel=1e-3)
    waves, rate = perf._dram_waves(f, 16384, 16384, 16384, 132, 8, 0, p, lay, None)
    assert rate == p.tile_read_tb_s * 1e3 and sum(w[1] for w in waves) > 3 * sum(w[1] for w in lay.waves)


@COUNTERS
def test_fit_tile_read_finds_a_planted_rate(monkeypatch):
    """Durations planted from the model at 3.0 TB/s, the counters' bytes kept: the fit returns 3.0."""
    p = perf.calibrated()
    planted = replace(p, tile_read_tb_s=3.0)
    runs = [r for r in traffic.launch_runs() if r["M"] == 8192][:1]
    for r in runs:
        r["launch_ms"] = [perf.predict_bytes(r["variant"], r["M"], r["N"], r["K"], b, sms=r["grid"],
                                             group=r["group"], raster=r["raster"], params=planted).time_ms
                          for b in r["launch_bytes"]]
    monkeypatch.setattr(traffic, "launch_runs", lambda dataset=None: copy.deepcopy(runs))
    assert perf.fit_tile_read(p) == pytest.approx(3.0, abs=0.01)


@ROUND
@pytest.mark.parametrize("name", R.REUSE_DATASETS)
def test_the_round_on_silicon(name):
    s = R.reuse_summary(name)
    assert s["runs"] == s["profiled"] == 35
    assert s["model"] >= 33 > 29 >= s["plain"] and s["decisive"] == 6 and s["decisive_model"] >= 5 >= 1 \
        >= s["decisive_plain"]
    assert s["bytes"] >= 26 > 10 >= s["in_step"]
    # the cluster pair stays in step: its bytes the in-step estimate's, not the common drift's
    rows = [r for r in R.reuse_rows(name) if "cluster" in r["variant"]]
    assert all(abs(r["in_step_err"]) < 0.1 < r["gb_err"] for r in rows)


@ROUND
@pytest.mark.parametrize("name", R.REUSE_DATASETS)
def test_the_checks_pass_on_silicon_and_fail_on_planted_runs(name):
    ds = data.load(name)
    assert R._round_check(ds).mismatches == 0 and R._bytes_check(ds).mismatches == 0
    assert R._time_link_check(ds).mismatches == 0
    # the in-flight form 30 % slower than measured: the model no longer ahead of the plain constants
    slow = planted(ds, lambda r: r.get("kind") == "l2time" and r.get("variant") == "cooperative_n128_inflight", 1.3)
    assert R._round_check(slow).mismatches >= 1
    # every launch reading half its bytes: the in-step estimate wins
    recs = copy.deepcopy(ds.records)
    for r in recs:
        for m in r.get("launch_metrics") or ():
            m["dram__bytes_read.sum"] *= 0.5
    assert R._bytes_check(Dataset(ds.name, ds.meta, recs)).mismatches >= 1


@ROUND
def test_the_traced_pairs_and_their_check():
    plain, inflight = (R.skew_rates(n) for n in R.SKEW_DATASETS)
    assert set(plain) == set(inflight) == {(16384,) * 3, (8192,) * 3}
    assert R._skew_check(data.load(R.SKEW_DATASETS[1])).mismatches == 0
    # the two traces swapped: the check bites
    assert R._skew_check(data.load(R.SKEW_DATASETS[0])).mismatches == 2
