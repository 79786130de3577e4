"""Issue 17's open FP8 item (h100lab.validation.l08_lead): the lead-1 pair under Nsight Compute at the fresh shapes,
the working-set hypothesis and its registered calls."""
import copy
import json
from pathlib import Path

import pytest

from h100lab import data
from h100lab.data import Dataset
from planted import planted
from h100lab.validation import l08_lead as L

PRED = Path(__file__).resolve().parents[1] / "benchmarks" / "predictions" / L.WS_PREDICTIONS
needs_ncu = pytest.mark.skipif(not data.available(L.NCU_DATASET), reason="the ncu run is not committed")


def test_working_set_counts_the_first_waves_distinct_panels():
    # 8192³, 132 CTAs of 128 × 128 in groups of 8 tile rows: 8 rows and 17 columns of tiles (the 17th partly)
    assert L.wave_working_set_mb(8192, 8192, 8192) == pytest.approx((8 + 17) * 128 * 8192 / 1e6)
    # linear in K, and a narrow N (16 tile columns: a wave holds every column) is outside the domain
    assert L.wave_working_set_mb(8192, 8192, 4096) == pytest.approx(L.wave_working_set_mb(8192, 8192, 8192) / 2)
    assert not L.in_domain(12288, 2048) and L.in_domain(12288, 3072) and not L.in_domain(1280, 3840)


def test_calls_follow_the_bounds():
    assert L.ws_call(8192, 8192, 4096) == "hidden" and L.ws_call(8192, 8192, 12288) == "exposed"
    assert L.ws_call(8192, 8192, 8192) is None and L.ws_call(12288, 2048, 2048) is None
    assert all(L.ws_call(*s) is not None for s in L.WS_SHAPES)
    calls = [L.ws_call(*s) for s in L.WS_SHAPES]
    assert calls.count("hidden") == calls.count("exposed") == 4


def test_the_registered_calls_are_the_codes():
    """The committed predictions are what the code says, and none of their shapes was timed before them."""
    reg = json.loads(PRED.read_text())
    rows = L.ws_predictions()
    assert [r["shape"] for r in reg["rows"]] == [r["shape"] for r in rows]
    assert [r["call"] for r in reg["rows"]] == [r["call"] for r in rows]
    for a, b in zip(reg["rows"], rows):
        assert a["working_set_mb"] == pytest.approx(b["working_set_mb"])
        assert len(a["model_ms"]) == 2 and all(x > 0 for x in a["model_ms"])
    assert (reg["hidden_mb"], reg["exposed_mb"]) == (L.HIDDEN_MB, L.EXPOSED_MB)
    seen = {(r["M"], r["N"], r["K"]) for n in data.names() if n.startswith("l08/") and not n.startswith(L.WS_DATASET)
            for r in data.load(n).records if "M" in r}
    assert not seen & set(L.WS_SHAPES)


@needs_ncu
def test_ncu_rows_and_the_refuted_reading():
    rows = L.ncu_lead_rows()
    assert len(rows) == 14
    s = L.dram_summary(rows)
    assert s["same"] >= 11 and s["same_hidden"] >= 5 and s["same_exposed"] >= 6
    # where the hypothesis calls, the committed pairs agree with it (they are what it was read off)
    for r in rows:
        if r["call"] == "hidden":
            assert r["ratio"] <= L.HIDDEN_RATIO
        elif r["call"] == "exposed":
            assert r["ratio"] >= L.EXPOSED_RATIO
    # the model now (its scale loads gated by the working set, bounds read off these launches): lead 2 within ±10 %
    # everywhere, lead 1 at 10 of the 14 (with the FP8 issue window refitted on the cycles), still slow on the whole;
    # its worst the shape outside the domain
    assert all(abs(r["err2"]) <= 0.1 and r["err1"] > 0 for r in rows)
    assert sum(abs(r["err1"]) <= 0.1 for r in rows) >= 10
    assert not L.in_domain(*max(rows, key=lambda r: r["err1"])["shape"][:2])


@needs_ncu
def test_the_checks_pass_and_fail_on_planted_data():
    ds = data.load(L.NCU_DATASET)
    assert L._ncu(ds).mismatches == 0 and L._same_dram(ds).mismatches == 0
    recs = copy.deepcopy(ds.records)
    for r in recs:
        r["metrics"]["gpu__time_duration.sum"] *= 0.7
        if r["variant"] == L.LEAD_PAIR[0]:
            r["metrics"]["dram__bytes_read.sum"] *= 1.5          # lead 1 losing its reuse everywhere
    faster = Dataset(ds.name, ds.meta, recs)
    assert L._ncu(faster).mismatches > 0 and L._same_dram(faster).mismatches > 0


def test_the_hypothesis_passed_its_registered_run():
    """Every registered call right in both processes; the model's registered times of the hidden lead-1 forms are
    its misses there (~22 % slow at three of the four shapes), as at the fresh shapes; exposed, it is within."""
    if not data.available(L.WS_DATASET):
        assert L.ws_verdict() == {}
        pytest.skip("the hypothesis's run is not committed")
    v = L.ws_verdict()
    assert set(v) == {L.WS_DATASET, L.WS_DATASET + "_b"}
    assert all(x["n"] == x["right"] == 8 and not x["wrong"] and x["records"] == 16 for x in v.values())
    assert all(x["now_within"] == 16 for x in v.values())        # the model now: post hoc, its gate read off pairs
    reg = L.ws_registered()
    for name in v:
        e1 = {r["shape"]: reg[r["shape"]]["model_ms"][0] / r["lead1_ms"] - 1 for r in L.lead_rows(name)}
        hidden = [e for s, e in e1.items() if L.ws_call(*s) == "hidden"]
        assert sum(e > 0.15 for e in hidden) == 3 and all(abs(e) < 0.1 for s, e in e1.items()
                                                           if L.ws_call(*s) == "exposed")
    # a planted run where lead 1 is slow everywhere fails the hidden calls
    ds = data.load(L.WS_DATASET)
    assert L._ws_check(planted(ds, lambda r: r.get("variant") == L.LEAD_PAIR[0], 1.1)).mismatches > 0
