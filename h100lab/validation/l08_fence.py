"""Lesson 8, issue 17's FP8 cluster item: what the fenced cluster pair's ``.release.cluster`` costs in the FP8
k-block loop, and whether that fence runs under the scale loads still in flight.

The FP8 cluster pair (``fp8_cooperative_tmastore_cluster2``) gives its stage back to both CTAs' producers right
after ``wgmma.wait_group 0``, before the promotion (``l08_gemm.cu``); the remote arrive carries ``.release.cluster``,
which ptxas turns into ``MEMBAR.ALL.CTA; MEMBAR.ALL.GPU; ERRBAR; CGAERRBAR`` ahead of it, after the block's
``LDG.E.CONSTANT`` scale loads and ``WARPGROUP.DEPBAR`` (nvdisasm of NVRTC's sm_90a cubin,
``tests/test_l08_sass.py``). A memory barrier orders every
earlier memory access of the thread, so it cannot complete before the thread's loads still in flight have landed:
with lead-1 scales those are the block's own ``ld.global`` loads, issued under its wgmmas; with the ring
(``-DSCALE_LEAD=2``) the loads issued after the previous block's promotion. The model charged the fence after the
promotion and after those loads, at the constant fitted on a bf16 pair (``perf.CLUSTER_CALIBRATION``): every FP8
pair record came out 5–15 % slow. Two readings of the hardware, each with its one constant fitted on the same single
FP8 record (:data:`FENCE_CALIBRATION`; the rest held out):

* ``"overlap"`` — the barrier's own round trip starts when it issues and runs under the loads: the release ends at
  ``max(waited + F, loads landed)``;
* ``"after"`` — the barrier first waits for the loads, then pays its round trip: ``max(waited, loads landed) + F``.

On the committed pair records both hold (51 of 51 within ±10 %), so those records cannot tell them apart. The ring
pair can: its loads were issued a block earlier and have mostly landed when the fence issues, so the two readings
charge it their own, different, ``F`` (``"overlap"`` ~600 ns, ``"after"`` ~370 ns). **The test**
(:data:`FENCE_SHAPES`, none timed before; :data:`FENCE_PREDICTIONS`, written by ``benchmarks/predict_fence.py`` and
committed before ``bench_gemm.py --fp8 --shapes ... --variants <FENCE_VARIANTS> --name l08/gemm_fence`` ran):
both readings' times of both pairs (and, as controls the fence does not touch, of the two forms without a cluster).
The rule written down with them: the reading with the smaller root-mean-square log error on the pairs' records of
the run becomes the model's.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..data import Dataset
from ..design.perf import FP8_FENCE_CALIBRATION
from . import CheckResult, beyond_floor, silicon_check

__all__ = ["FENCE_VARIANTS", "FENCE_PAIRS", "FENCE_CALIBRATION", "STRUCTURES", "FENCE_SHAPES", "FENCE_DATASET",
           "FENCE_PREDICTIONS", "fence_params", "fence_predictions", "fence_registered", "fence_rows", "fence_verdict"]

#: the two fenced pairs (lead 1, the ring of depth 2) and the same two forms without a cluster (controls)
FENCE_PAIRS = ("fp8_cooperative_tmastore_cluster2", "fp8_cooperative_tmastore_cluster2_lead2")
FENCE_VARIANTS = FENCE_PAIRS + ("fp8_cooperative_tmastore", "fp8_cooperative_tmastore_lead2")
#: the one record each reading's FP8 fence constant is fitted on: (dataset, variant, (M, N, K))
FENCE_CALIBRATION = FP8_FENCE_CALIBRATION[0]
#: the two readings of the fence against the loads in flight
STRUCTURES = ("overlap", "after")
#: the test's shapes, none timed before (multiples of the 128 × 128 tile; working sets below, inside and above the
#: scale loads' gate)
FENCE_SHAPES = ((6144, 10240, 8192), (11264, 4608, 6144), (2560, 15360, 10240), (13312, 13312, 4096),
                (5632, 5632, 14336), (9728, 7680, 7168))
#: the run (``_b``: a second process)
FENCE_DATASET = "l08/gemm_fence"
#: the registered predictions (``benchmarks/predictions/``)
FENCE_PREDICTIONS = "l08_fence.json"


def fence_params(structure: str, params=None):
    """The model (``params``, default :func:`h100lab.design.perf.calibrated`) with the FP8 fence read as
    ``structure`` (:data:`STRUCTURES`) and its constant ``cluster_fence_fp8_ns`` fitted on the one record of
    :data:`FENCE_CALIBRATION` (:func:`h100lab.design.perf._fit_fp8_fence`). [model: one constant per reading]"""
    from ..design import perf

    if structure not in STRUCTURES:
        raise ValueError(f"fence reading {structure!r}: one of {STRUCTURES}")
    return perf._fit_fp8_fence(perf.calibrated() if params is None else params, structure == "after")


def fence_predictions(shapes: Sequence = FENCE_SHAPES) -> dict:
    """Both readings' fitted constants (``fence_ns``) and, per shape and form of :data:`FENCE_VARIANTS`, their times
    on the run's grid and launches (``model_ms``: reading → ms) — what ``benchmarks/predict_fence.py`` commits
    before the run. [model]"""
    from ..design import perf
    from . import l08

    ps = {s: fence_params(s) for s in STRUCTURES}
    rows = []
    for shape in shapes:
        for v in FENCE_VARIANTS:
            r = l08._fresh_record(v, tuple(shape), FENCE_DATASET)
            rows.append({"shape": list(shape), "variant": v,
                         "model_ms": {s: perf.predict_record(r, p).time_ms for s, p in ps.items()}})
    return {"fence_ns": {s: p.cluster_fence_fp8_ns for s, p in ps.items()}, "rows": rows}


def fence_registered() -> dict:
    """The committed predictions ((shape tuple, variant) → row), {} before they are written."""
    from .l08 import registered_rows

    return {(tuple(r["shape"]), r["variant"]): r for r in registered_rows(FENCE_PREDICTIONS)}


def fence_rows(ds: Dataset | str) -> list[dict]:
    """Each timed record of a run at a registered shape and form: ``shape``, ``variant``, the median ``ms`` and
    the registered error of each reading (``err``: reading → predicted / measured − 1). [] without the run."""
    from .. import data
    from ..design import perf

    if isinstance(ds, str):
        if not data.available(ds):
            return []
        ds = data.load(ds)
    reg = fence_registered()
    out = []
    for r in perf.timing_records_of(ds):
        row = reg.get(((r["M"], r["N"], r["K"]), r["variant"]))
        if row is None:
            continue
        ms = float(r["median_ms"])
        out.append({"shape": (r["M"], r["N"], r["K"]), "variant": r["variant"], "ms": ms,
                    "err": {s: row["model_ms"][s] / ms - 1 for s in STRUCTURES}})
    return out


def fence_verdict(runs: Sequence | None = None) -> dict:
    """The registered rule applied to the committed processes of :data:`FENCE_DATASET` together: per reading, over
    the pairs' records (``pairs``) and the controls' (``controls``), ``n``, ``within`` ±10 % and ``rms`` (of the
    log errors); ``winner``: the reading with the smaller rms on the pairs. {} before the run."""
    rows = [r for run in (runs if runs is not None else (FENCE_DATASET, FENCE_DATASET + "_b"))
            for r in fence_rows(run)]
    if not rows:
        return {}
    out: dict = {}
    for s in STRUCTURES:
        for part, sel in (("pairs", True), ("controls", False)):
            e = [r["err"][s] for r in rows if (r["variant"] in FENCE_PAIRS) == sel]
            out.setdefault(s, {})[part] = {
                "n": len(e), "within": sum(abs(x) <= 0.10 for x in e),
                "rms": math.sqrt(sum(math.log1p(x) ** 2 for x in e) / len(e)) if e else math.nan}
    out["winner"] = min(STRUCTURES, key=lambda s: out[s]["pairs"]["rms"])
    return out
