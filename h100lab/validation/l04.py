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

__all__ = ["check_encode", "check_images", "check_stores", "run_on", "image_mismatch", "hardware_report",
           "LIVE_IMAGE_IDS"]


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


def _verdict_mismatch(r: dict[str, Any]) -> dict[str, Any] | None:
    """Compare what the hardware did with a case before its bytes: the driver's verdict on the map
    (``encode_result``) and a fault of the copy (``fault``), against the model's
    :class:`~h100lab.tma.TensorMapError` / :class:`~h100lab.tma.TmaFault`. ``None`` when they agree
    and the record has bytes to compare; ``{}`` when they agree and there are none (the case is a
    verdict); a dict describing the disagreement otherwise."""
    from .. import tma
    from ..measure.l04 import _map_for, model_image, model_store

    if "encode_result" in r:
        try:
            _map_for(r)
        except tma.TensorMapError as exc:
            return {} if exc.result == r["encode_result"] else {"id": r["id"], "driver": r["encode_result"],
                                                                 "model": exc.result}
        return {"id": r["id"], "driver": r["encode_result"], "model": "CUDA_SUCCESS"}
    model = model_image if r["kind"] in ("load", "im2col") else model_store
    if "fault" in r:
        if r.get("fault_alone") != r["fault"]:
            return {"id": r["id"], "fault": r["fault"], "fault_alone": r.get("fault_alone"),
                    "note": "the fault did not repeat when the case ran alone"}
        try:
            model(r)
        except tma.TmaFault as exc:
            return {} if exc.error == r["fault"] else {"id": r["id"], "fault": r["fault"], "model": exc.error}
        return {"id": r["id"], "fault": r["fault"], "model": "no fault"}
    try:
        _map_for(r)
        model(r)
    except tma.TensorMapError as exc:
        return {"id": r["id"], "driver": "CUDA_SUCCESS", "model": exc.result}
    except tma.TmaFault as exc:
        return {"id": r["id"], "fault": None, "model": exc.error}
    return None


def check_images(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every load / im2col image equals the model's byte for byte, and its mbarrier phase completed
    with exactly the model's ``tx_bytes`` expected; a map the driver refuses is refused by the model
    with the same result, and a copy that faults faults in the model with the same error."""
    from ..measure.l04 import model_image

    return _check_copies(records, ("load", "im2col"), "image", model_image, require_completed=True)


def check_stores(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every tensor store / reduction leaves the global buffer exactly as the model does (verdicts and
    faults as in :func:`check_images`)."""
    from ..measure.l04 import model_store

    return _check_copies(records, ("store", "reduce"), "global_after", model_store, require_completed=False)


def _check_copies(records, kinds, field, model, *, require_completed: bool) -> CheckResult:
    """Compare the bytes in ``record[field]`` of every record of ``kinds`` with ``model(record)``, after
    the driver's verdict and any fault have been compared (:func:`_verdict_mismatch`)."""
    from ..measure.l04 import unpack

    bad, n = [], 0
    for r in records:
        if r["kind"] not in kinds:
            continue
        n += 1
        vm = _verdict_mismatch(r)
        if vm is not None:
            if vm:
                bad.append(vm)
            continue
        if require_completed and not r["completed"]:
            bad.append({"id": r["id"], "completed": False, "tx_bytes": r["tx_bytes"]})
            continue
        mm = image_mismatch(unpack(r[field]), model(r))
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


#: a quick live subset of the image cases (one of each kind of question)
LIVE_IMAGE_IDS = ("sweep_BFLOAT16_128B_inner", "sweep_FLOAT32_64B_origin", "narrow_UINT16_128B_32", "edge_zero_neg_corner",
                  "edge_nan_end_corner", "edge_nan_far_out", "dst384_128B", "es_1_2", "rank5", "unaligned_x3",
                  "bits_TFLOAT32_random", "il16_full", "st_sw128", "st_edge", "red_add_FLOAT16", "red_inc_UINT32",
                  "nhwc_pad1_off11")


def hardware_report(live: bool | None = None) -> dict[str, Any]:
    """What chapter 4's "On real hardware" section shows, from the best source available.

    ``live`` (default: whenever ``h100lab.cuda.available()``) runs the encode matrix and a subset of the
    image cases now; otherwise the committed datasets are read. Returns ``{"source": "live" | "dataset" |
    None, "where", "encode", "images", "stores", "image_records", "encode_records", "command"}``.
    """
    from .. import data

    command = "python -m h100lab.measure.l04"
    if live is None:
        from .. import cuda

        live = cuda.available()
    if live:
        from ..measure import l04 as m

        enc = m.measure_encode(m.encode_cases())
        cases = [c for c in m.image_cases() + m.store_cases() + m.im2col_cases() if c["id"] in LIVE_IMAGE_IDS]
        imgs = m.measure_images(cases, progress=False)
        where, source = "this GPU (live)", "live"
    else:
        if not (data.available("l04/encode_verdicts") and data.available("l04/tma_images")):
            return {"source": None, "command": command}
        ds_e, ds_i = data.load("l04/encode_verdicts"), data.load("l04/tma_images")
        enc, imgs = ds_e.records, ds_i.records
        where, source = ds_i.describe(), "dataset"
    return {"source": source, "where": where, "encode": check_encode(enc), "images": check_images(imgs),
            "stores": check_stores(imgs), "image_records": imgs, "encode_records": enc, "command": command}
