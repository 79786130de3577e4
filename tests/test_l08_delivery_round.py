"""The delivery bound's registered round (h100lab.validation.l08.delivery_round_predictions): the predictions
committed before the order sweep at six fresh shapes ran (benchmarks/predict_delivery.py,
benchmarks/predictions/l08_gemm_orders_delivery.json) are the code's, and the round can tell the model with the
bound from the model without it."""
import json
from pathlib import Path

import pytest

from h100lab import data
from h100lab.validation import l08

PREDICTIONS = Path(__file__).resolve().parent.parent / "benchmarks" / "predictions" / "l08_gemm_orders_delivery.json"


def _timed_shapes() -> set:
    """Every (M, N, K) a committed data/l08 dataset timed (other than the round itself)."""
    out = set()
    for path in sorted((data.data_dir() / "l08").glob("*.json")):
        name = f"l08/{path.stem}"
        if name.startswith(l08.DELIVERY_ROUND_DATASET):
            continue
        out |= {(r["M"], r["N"], r["K"]) for r in data.load(name).records if all(k in r for k in "MNK")}
    return out


def test_the_shapes_were_never_timed_before():
    assert not set(l08.DELIVERY_SHAPES) & _timed_shapes()


def test_the_committed_predictions_are_the_codes():
    committed = json.loads(PREDICTIONS.read_text())
    assert [tuple(s) for s in committed["shapes"]] == list(l08.DELIVERY_SHAPES)
    now = l08.delivery_round_predictions()
    assert len(now) == len(committed["rows"]) == len(l08.DELIVERY_SHAPES) * (len(l08.DRIFT_ORDERS)
                                                                            + len(l08.DELIVERY_PAIR_ORDERS))
    for a, b in zip(now, committed["rows"]):
        assert {k: a[k] for k in ("M", "N", "K", "schedule", "group", "raster", "bound")} == \
            {k: b[k] for k in ("M", "N", "K", "schedule", "group", "raster", "bound")}
        for k in ("model", "plain", "lonely", "ws_mb"):
            assert a[k] == pytest.approx(b[k], rel=1e-9)


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
