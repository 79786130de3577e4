"""Lesson 4 model-vs-silicon checks: tensor-map verdicts and TMA shared-memory images.

Datasets come from ``python -m h100lab.measure.l04``. Every comparison is exact: the driver's result
name against :func:`h100lab.tma.verdict`, and every byte of a dumped shared region (or of the global
buffer after a store / reduction) against :mod:`h100lab.tma`'s image of the same case.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np

from ..data import Dataset
from . import CheckResult, silicon_check

__all__ = ["check_encode", "check_images", "check_stores", "run_on", "image_mismatch"]


def check_encode(records: Sequence[dict[str, Any]]) -> CheckResult:
    """The model's verdict equals the driver's for every encode case the Python bindings could express."""
    from .. import tma
    from ..measure.l04 import model_args

    bad, n, skipped = [], 0, 0
    for r in records:
        if r["result"] == "not_callable":
            skipped += 1
            continue
        n += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = tma.verdict(**model_args(r, base_address=r.get("address", 1 << 20) - r.get("address_offset", 0)))
        if v.result != r["result"]:
            bad.append({"id": r["id"], "driver": r["result"], "model": v.result, "model_rule": v.rule})
    note = f"{skipped} case(s) the cuda.bindings enums cannot express were skipped" if skipped else ""
    return CheckResult(n, len(bad), bad[:5], note)


def image_mismatch(got: np.ndarray, want: np.ndarray) -> dict[str, Any] | None:
    """None if equal, else where they differ (first offset, count, the bytes there)."""
    if got.shape != want.shape:
        return {"shape": (got.shape, want.shape)}
    diff = np.flatnonzero(got != want)
    if diff.size == 0:
        return None
    i = int(diff[0])
    return {"first": i, "count": int(diff.size), "got": got[i:i + 8].tolist(), "model": want[i:i + 8].tolist()}


def check_images(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every load / im2col image equals the model's byte for byte, and its mbarrier phase completed
    with exactly the model's ``tx_bytes`` expected."""
    from ..measure.l04 import model_image, unpack

    bad, n = [], 0
    for r in records:
        if r["kind"] not in ("load", "im2col"):
            continue
        n += 1
        if not r["completed"]:
            bad.append({"id": r["id"], "completed": False, "tx_bytes": r["tx_bytes"]})
            continue
        mm = image_mismatch(unpack(r["image"]), model_image(r))
        if mm:
            bad.append({"id": r["id"], **mm})
    return CheckResult(n, len(bad), bad[:5])


def check_stores(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every tensor store / reduction leaves the global buffer exactly as the model does."""
    from ..measure.l04 import model_store, unpack

    bad, n = [], 0
    for r in records:
        if r["kind"] not in ("store", "reduce"):
            continue
        n += 1
        mm = image_mismatch(unpack(r["global_after"]), model_store(r))
        if mm:
            bad.append({"id": r["id"], **mm})
    return CheckResult(n, len(bad), bad[:5])


@silicon_check("TMA: cuTensorMapEncodeTiled accepts and refuses exactly what the driver does", lesson=4,
               dataset="l04/encode_verdicts")
def _encode(ds: Dataset) -> CheckResult:
    return check_encode(ds.records)


@silicon_check("TMA: shared-memory images of tensor loads and im2col loads, byte for byte", lesson=4,
               dataset="l04/tma_images")
def _images(ds: Dataset) -> CheckResult:
    return check_images(ds.records)


@silicon_check("TMA: global memory after tensor stores and reductions, byte for byte", lesson=4,
               dataset="l04/tma_images")
def _stores(ds: Dataset) -> CheckResult:
    return check_stores(ds.records)


def run_on(name: str, records: Sequence[dict[str, Any]]) -> CheckResult:
    """Run this lesson's checks of dataset ``name`` on in-memory records (the measurement script's report)."""
    if name == "l04/encode_verdicts":
        return check_encode(records)
    a, b = check_images(records), check_stores(records)
    return CheckResult(a.cases + b.cases, a.mismatches + b.mismatches, a.examples + b.examples)
