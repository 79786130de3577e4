"""Lesson 6 model-vs-silicon checks: wgmma fragments, descriptor gathers, ldmatrix/stmatrix, the GEMM tiles and
the tensor-core numerics, each bit for bit (datasets from ``python -m h100lab.measure.l06``).

Every record holds a case (:mod:`h100lab.measure.l06`: the inputs are regenerated from its seed) and the raw
outputs the H200 produced; :func:`check` recomputes them with :mod:`h100lab.tensorcore` and counts the records
(and, for numerics, the output values) that differ. 0 mismatches expected; a record that failed to run on the
GPU counts as a mismatch.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..data import Dataset
from . import CheckResult, silicon_check

__all__ = ["check", "compare_record", "DATASETS"]

DATASETS = ("l06/fragments", "l06/descriptors", "l06/ldmatrix", "l06/gemm", "l06/numerics")


def compare_record(r: dict[str, Any]) -> tuple[int, int, dict | None]:
    """(values compared, values different, first difference or None) for one record."""
    from ..measure.l04 import unpack
    from ..measure.l06 import model_outputs

    if not r.get("ok", False):
        return 1, 1, {"id": r["id"], "error": r.get("error", "did not run")}
    want = model_outputs(r)
    n = bad = 0
    first = None
    for k, m in want.items():
        m = np.ascontiguousarray(m)
        got = unpack(r[k]).view(m.dtype)
        if got.shape != m.reshape(-1).shape:
            return 1, 1, {"id": r["id"], "output": k, "size": [int(got.size), int(m.size)]}
        diff = np.flatnonzero(got != m.reshape(-1))
        n += got.size
        bad += diff.size
        if diff.size and first is None:
            i = int(diff[0])
            first = {"id": r["id"], "output": k, "index": i, "silicon": int(got[i]), "model": int(m.reshape(-1)[i])}
    return n, bad, first


def check(records: Sequence[dict[str, Any]], per_value: bool = False) -> CheckResult:
    """Records (or, with ``per_value``, output values) whose silicon outputs differ from the model's."""
    cases = mism = 0
    examples = []
    for r in records:
        n, b, first = compare_record(r)
        cases += n if per_value else 1
        mism += b if per_value else int(b > 0)
        if first is not None and len(examples) < 5:
            examples.append(first)
    return CheckResult(cases, mism, examples)


@silicon_check("WGMMA accumulator and RS A-fragment layouts", lesson=6, dataset="l06/fragments")
def _fragments(ds: Dataset) -> CheckResult:
    return check(ds.records)


@silicon_check("WGMMA descriptor gathers (swizzle, LBO/SBO, base offset, K-advance, K/MN-major)", lesson=6,
               dataset="l06/descriptors")
def _descriptors(ds: Dataset) -> CheckResult:
    return check(ds.records)


@silicon_check("ldmatrix / stmatrix registers and stored bytes", lesson=6, dataset="l06/ldmatrix")
def _ldmatrix(ds: Dataset) -> CheckResult:
    return check(ds.records)


@silicon_check("WGMMA GEMM tiles (SS and RS), bit for bit", lesson=6, dataset="l06/gemm")
def _gemm(ds: Dataset) -> CheckResult:
    return check(ds.records)


@silicon_check("WGMMA numerics: every output value of every type combination", lesson=6, dataset="l06/numerics")
def _numerics(ds: Dataset) -> CheckResult:
    return check(ds.records, per_value=True)
