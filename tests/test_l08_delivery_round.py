"""The delivery bound's registered round (h100lab.validation.l08.delivery_round_predictions): the predictions
committed before the order sweep at six fresh shapes ran (benchmarks/predict_delivery.py,
benchmarks/predictions/l08_gemm_orders_delivery.json) are the code's, and the round can tell the model with the
bound from the model without it — and what the H200 said (data/l08/gemm_orders_delivery, _b; the counters of
data/l08/gemm_l2_delivery_round), with checks that bite on planted times and counters."""
import copy
import json
from pathlib import Path

import pytest

from h100lab import data
from h100lab.data import Dataset
from planted import planted
from h100lab.validation import l08

PREDICTIONS = Path(__file__).resolve().parent.parent / "benchmarks" / "predictions" / "l08_gemm_orders_delivery.json"
PREDICTIONS2 = PREDICTIONS.with_name("l08_gemm_orders_delivery2.json")


def _timed_shapes() -> set:
    """Every (M, N, K) a committed data/l08 dataset timed (other than the round itself)."""
    out = set()
    for path in sorted((data.data_dir() / "l08").glob("*.json")):
        name = f"l08/{path.stem}"
        if any(name.startswith(d) for d in l08.DELIVERY_ROUNDS) or name == l08.DELIVERY_ROUND_L2_DATASET:
            continue
        out |= {(r["M"], r["N"], r["K"]) for r in data.load(name).records if all(k in r for k in "MNK")}
    return out


def test_the_shapes_were_never_timed_before():
    timed = _timed_shapes()
    assert not set(l08.DELIVERY_SHAPES) & timed and not set(l08.DELIVERY2_SHAPES) & timed
    assert not set(l08.DELIVERY_SHAPES) & set(l08.DELIVERY2_SHAPES)


@pytest.mark.parametrize("path, name", [(PREDICTIONS, l08.DELIVERY_ROUND_DATASET),
                                        (PREDICTIONS2, l08.DELIVERY2_DATASET)])
def test_the_committed_predictions_are_the_codes(path, name):
    committed = json.loads(path.read_text())
    shapes, pairs = l08.DELIVERY_ROUNDS[name].shapes, l08.DELIVERY_ROUNDS[name].pairs
    assert [tuple(s) for s in committed["shapes"]] == list(shapes)
    now = l08.delivery_round_predictions(shapes, pairs=pairs)
    assert len(now) == len(committed["rows"]) == len(shapes) * (len(l08.DRIFT_ORDERS) + len(l08.DELIVERY_PAIR_ORDERS))
    for a, b in zip(now, committed["rows"]):
        assert {k: a[k] for k in ("M", "N", "K", "schedule", "group", "raster", "bound")} == \
            {k: b[k] for k in ("M", "N", "K", "schedule", "group", "raster", "bound")}
        for k in ("model", "plain", "lonely", "ws_mb"):
            assert a[k] == pytest.approx(b[k], rel=1e-9)


def test_the_second_round_separates_the_pairs_refinements():
    rows = l08.delivery_round_predictions(l08.DELIVERY2_SHAPES, pairs=True)
    differ = [r for r in rows if abs(r["model"] / r["plain"] - 1) > 0.10]
    # the row-major pairs launch at every shape, nothing persistent
    assert {(r["M"], r["N"], r["K"]) for r in differ} == set(l08.DELIVERY2_SHAPES)
    assert all(r["schedule"] == "pairs" and (r["group"], r["raster"]) == (1, 0) and r["model"] < r["plain"]
               for r in differ)
    assert all(r["model"] == r["plain"] for r in rows if r["schedule"] == "persistent")


def test_the_round_separates_the_two_models():
    rows = l08.delivery_round_predictions()
    differ = [r for r in rows if abs(r["model"] / r["plain"] - 1) > 0.10]
    # the row-major order (and its transpose in groups of 16 along N) at the four shapes whose wave fits in L2
    assert len(differ) >= 10 and all(r["bound"] == "delivery" for r in differ)
    assert {(r["M"], r["N"], r["K"]) for r in differ} >= set(l08.DELIVERY_SHAPES[:4])
    # the two controls: 3072³ (B sharers 12 CTAs apart) and 4096 x 8192 x 4096 in row-major order (a wave over L2)
    assert all(r["model"] == r["plain"] for r in rows if (r["M"], r["N"], r["K"]) == (3072,) * 3)
    assert all(r["model"] == r["plain"] for r in rows if (r["M"], r["N"], r["K"]) == (4096, 8192, 4096)
               and r["group"] == 1 and r["raster"] == 0)


needs_run = pytest.mark.skipif(not data.available(l08.DELIVERY_ROUND_DATASET), reason="the round is not committed")


@needs_run
def test_the_round_kept_the_bound():
    s = l08.delivery_round_summary()
    assert set(s) == {l08.DELIVERY_ROUND_DATASET, l08.DELIVERY_ROUND_DATASET + "_b"}
    for v in s.values():
        assert v["n"] == 78 and v["decisive"] >= 10
        # where the two registered predictions differ the bound got almost every record, the model without it none
        assert v["decisive_model"] >= v["decisive"] - 1 and v["decisive_plain"] == 0
        assert v["model"] >= v["plain"] + 10 and v["model"] >= l08.ACHIEVED_DELIVERY_ROUND * v["n"]
    rows = {(r["shape"], r["schedule"], r["group"], r["raster"]): r for r in l08.delivery_round_rows()}
    # the row-major order at 6144 x 6144 x 4096: 46 % slow without the bound, within 1 % with it
    r = rows[((6144, 6144, 4096), "persistent", 1, 0)]
    assert abs(r["model"]) < 0.02 and r["plain"] > 0.4
    # left: the controls the bound does not touch — all of A and B in L2 at 3072³, a wave over the L2 at 4096 x 8192
    assert rows[((3072,) * 3, "persistent", 1, 0)]["model"] > 0.1
    assert rows[((4096, 8192, 4096), "persistent", 1, 0)]["model"] > 0.2


@needs_run
def test_the_round_checks_bite_on_planted_times():
    for name in (l08.DELIVERY_ROUND_DATASET, l08.DELIVERY_ROUND_DATASET + "_b"):
        ds = data.load(name)
        assert l08._delivery_round_check(ds).mismatches == 0
        # the decisive runs as slow as the model without the bound says
        slow = planted(ds, lambda r: r.get("variant") == "pingpong" and r.get("group") == 1 and r.get("raster") == 0
                       and r["M"] in (6144, 5120, 8192), 1.45)
        assert l08._delivery_round_check(slow).mismatches > 0


@pytest.mark.skipif(not data.available(l08.DELIVERY_ROUND_L2_DATASET), reason="the counter run is not committed")
def test_the_threshold_on_the_rounds_counters():
    rs = l08.delivery_round_lonely()
    assert len(rs) == 20 and sum(r["right"] for r in rs) == 19
    wrong = [r for r in rs if not r["right"]]
    assert wrong[0]["label"].startswith("6144×6144×4096") and wrong[0]["unmerged"]
    ds = data.load(l08.DELIVERY_ROUND_L2_DATASET)
    assert l08._delivery_round_l2(ds).mismatches == 0
    recs = copy.deepcopy(ds.records)
    key = "lts__t_sectors_srcunit_tex_op_read.sum"
    for r in recs:         # the row-major runs merging half their requests: on the wrong side of the threshold
        if r.get("kind") == "l2" and (r.get("group"), r.get("raster")) == (1, 0):
            for m in r.get("launch_metrics") or [r["metrics"]]:
                m[key] *= 0.5
            r["metrics"][key] *= 0.5
    orig = data.load
    halved = Dataset(ds.name, ds.meta, recs)
    try:
        data.load = lambda name, *a, **k: halved if name == ds.name else orig(name, *a, **k)
        assert l08._delivery_round_l2(halved).mismatches > 0
    finally:
        data.load = orig


@pytest.mark.skipif(not data.available(l08.DELIVERY2_DATASET), reason="the second round is not committed")
def test_the_second_round_kept_the_pairs_refinements():
    s = l08.delivery_round_summary(round_=l08.DELIVERY2_DATASET)
    assert set(s) == {l08.DELIVERY2_DATASET, l08.DELIVERY2_DATASET + "_b"}
    for v in s.values():
        assert v["n"] == 65 and v["decisive"] == 5 and v["decisive_model"] == 5 and v["decisive_plain"] == 0
        assert v["model"] >= l08.ACHIEVED_DELIVERY2 * v["n"] and v["model"] > v["plain"]
    rows = l08.delivery_round_rows(l08.DELIVERY2_DATASET)
    dec = [r for r in rows if r["decisive"]]
    assert all(r["schedule"] == "pairs" and abs(r["model"]) < 0.05 and r["plain"] > 0.25 for r in dec)
    # what is left: the persistent order in groups of 2 along M, the window's DRAM reads of a wave in step
    left = [r for r in rows if abs(r["model"]) > l08.TOLERANCE]
    assert left and all(r["schedule"] == "persistent" and (r["group"], r["raster"]) == (2, 0) for r in left)
    for name in (l08.DELIVERY2_DATASET, l08.DELIVERY2_DATASET + "_b"):
        ds = data.load(name)
        assert l08._delivery_round_check(ds).mismatches == 0
        # the row-major pairs launches as slow as the first round's bound said
        slow = planted(ds, lambda r: r.get("schedule") == "pairs" and (r.get("group"), r.get("raster")) == (1, 0), 1.35)
        assert l08._delivery_round_check(slow).mismatches > 0
