"""Lesson 3 model-vs-silicon checks on ``l03/bulk_pipeline`` (``python -m h100lab.measure.l03``).

1. Every CTA's checksum matched: the consumers read exactly the bytes the bulk copies brought, with
   the kernel's mbarrier protocol (exact).
2. More buffers never make a tile slower on silicon (within 10 %, for run-to-run noise), as the
   model says.
3. Calibrated on a documented subset (:func:`calibration_records`: the calibration group — one CTA, one
   buffer, no work, four tile sizes: the copy latency and one SM's bandwidth — and the sweep's three
   two-buffer runs, whose consumers' measured wait per tile is the cost of a ``try_wait`` that finds its
   phase complete: :func:`h100lab.sim.timing.calibrate`), the simulator predicts the time per tile of every
   held-out single-CTA run of the stage sweep within ±10 % (:data:`TOLERANCE`), given the consumer busy time
   the kernel measured.
4. The same for every full-GPU run (1–8 buffers), all held out. The memory bandwidth they share comes from
   step 2 of the calibration on ``l05/copy_bandwidth`` when that dataset exists (these runs are bound by
   their consumers, not by the memory, so they cannot calibrate it); :func:`check_timing` with
   ``full_gpu="all"`` checks every full-GPU run, the single-buffer ones included. Goal: all within ±10 %;
   reached: 3 of 4 (the two-buffer run measured 884 ns per tile, 11 % slower than simulated), checked at that
   floor (:data:`FULL_GPU_FLOOR`).

The first checks were looser than the timing model of :mod:`h100lab.validation.timing`: ±25 %, and the wait
cost fitted on every multi-buffer run they then checked. Issue 13 tightened them to its ±10 % on held-out runs
(without the two-buffer runs' wait the try_wait costs the table's estimate, 4 ns, and the held-out runs without
work come out 21 % fast: the wait is the kernel's own, loop and clock reads included, ~113 ns a tile).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..data import Dataset
from . import CheckResult, beyond_floor, silicon_check

__all__ = ["model_config", "predict", "check_data", "check_monotone", "check_timing", "calibrated", "hardware_report",
           "TOLERANCE", "FULL_GPU_FLOOR", "CALIBRATION_GROUP", "WAIT_CALIBRATION_STAGES", "is_calibration",
           "calibration_records"]

#: the simulator's time per tile against every held-out run (issue 13: the timing model's ±10 %)
TOLERANCE = 0.10
#: the full-GPU runs' level (fraction within :data:`TOLERANCE`; regression guard): 3 of 4 on the committed H200 run
FULL_GPU_FLOOR = 0.75
#: the group of records the copy path is calibrated on: ``group == "calibration"`` (one CTA, one buffer, no work)
CALIBRATION_GROUP = "calibration"
#: the stage count of the sweep's single-CTA runs whose measured wait calibrates ``wait_hit_ns``
WAIT_CALIBRATION_STAGES = 2


def is_calibration(r: dict[str, Any]) -> bool:
    """Whether a record is in the calibration subset (:func:`calibration_records`)."""
    return r.get("group") == CALIBRATION_GROUP or (r.get("group") == "stages" and r.get("ctas") == 1
                                                   and r.get("stages") == WAIT_CALIBRATION_STAGES)


def calibration_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documented calibration subset: the calibration group (:data:`CALIBRATION_GROUP`: the copy latency and
    one SM's bandwidth) and the stage sweep's single-CTA runs with :data:`WAIT_CALIBRATION_STAGES` buffers (their
    consumers' measured wait per tile: ``wait_hit_ns``); every other record is held out."""
    return [r for r in records if is_calibration(r)]


def model_config(r: dict[str, Any], timing):
    """The simulator's :class:`~h100lab.sim.pipeline.PipelineConfig` for a record: its case, with the
    consumers' compute time per tile set so that the busy time of the last consumer to finish — its
    read waits behind the others' on the shared LSUs, so it ends after the whole tile has been read —
    plus compute and fence equals the busy time the kernel measured."""
    from ..sim.pipeline import PipelineConfig

    c = r.get("consumers", 2)
    read = timing.smem_latency_ns + r["tile_bytes"] / timing.smem_bytes_per_ns
    compute = max(0.0, r["busy_ns_per_iter"] - read - timing.fence_ns)
    return PipelineConfig(stages=r["stages"], iters=r["iters"], tile_bytes=r["tile_bytes"], compute_ns=compute,
                          consumers=c, ctas=r["ctas"])


def predict(r: dict[str, Any], timing) -> float:
    """The simulator's time per tile (ns) for record ``r``: total simulated time / tiles."""
    from ..sim.pipeline import simulate

    return simulate(model_config(r, timing), timing, trace=False).ns_per_iter


def check_data(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every case's checksums matched the host's."""
    bad = [{k: r[k] for k in ("group", "stages", "tile_bytes", "work", "ctas")} for r in records if not r["ok"]]
    return CheckResult(len(records), len(bad), bad[:5])


def check_monotone(records: Sequence[dict[str, Any]], slack: float = 0.10) -> CheckResult:
    """Within each (group, tile, work, ctas) series, time per tile does not grow with more stages."""
    series: dict[tuple, list] = {}
    for r in records:
        series.setdefault((r["group"], r["tile_bytes"], r["work"], r["ctas"]), []).append(r)
    n, bad = 0, []
    for key, rs in series.items():
        rs = sorted(rs, key=lambda r: r["stages"])
        for a, b in zip(rs, rs[1:]):
            n += 1
            if b["ns_per_iter"] > a["ns_per_iter"] * (1 + slack):
                bad.append({"series": key, "stages": (a["stages"], b["stages"]),
                            "ns_per_iter": (round(a["ns_per_iter"], 1), round(b["ns_per_iter"], 1))})
    return CheckResult(n, len(bad), bad[:5])


def _copy_records() -> list[dict[str, Any]] | None:
    from .. import data

    if not data.available("l05/copy_bandwidth"):
        return None
    from .l05 import is_copy_calibration

    return [r for r in data.load("l05/copy_bandwidth").records if is_copy_calibration(r)]


def calibrated(records: Sequence[dict[str, Any]]):
    """The timing table calibrated on ``records`` (step 1) and, when it exists, ``data/l05/copy_bandwidth``'s
    calibration subset (step 2: memory bandwidth and DRAM latency, :func:`h100lab.validation.l05.is_copy_calibration`)
    — :func:`h100lab.sim.timing.calibrate`."""
    from ..sim.timing import calibrate

    return calibrate(list(records), copy_records=_copy_records())


def check_timing(records: Sequence[dict[str, Any]], *, full_gpu: bool | str = False,
                 tol: float = TOLERANCE, floor: float = 1.0) -> CheckResult:
    """Simulated against measured time per tile, the timing table calibrated on the documented subset alone
    (:func:`calibration_records`, :func:`calibrated`), every checked run held out: at least ``floor`` of them
    within ``tol`` (relative). ``full_gpu``: False — the single-CTA stage sweep; True — the full-GPU runs with
    ≥ 4 buffers; ``"all"`` — every full-GPU run. The note: how many within, the largest error, the calibrated
    constants."""
    try:
        timing = calibrated(calibration_records(records))
    except ValueError as exc:
        return CheckResult(len(records), len(records), [], f"cannot calibrate: {exc}")
    held = [r for r in records if not is_calibration(r) and r["ok"]]
    if full_gpu:
        min_stages = 1 if full_gpu == "all" else 4
        sel = [r for r in held if r["ctas"] > 1 and r["stages"] >= min_stages]
    else:
        sel = [r for r in held if r["ctas"] == 1 and r["group"] == "stages"]
    bad, worst = [], 0.0
    for r in sel:
        p = predict(r, timing)
        err = p / r["ns_per_iter"] - 1
        worst = max(worst, abs(err))
        if abs(err) > tol:
            bad.append({"stages": r["stages"], "work": r["work"], "ctas": r["ctas"],
                        "measured_ns": round(r["ns_per_iter"], 1), "model_ns": round(p, 1),
                        "error": f"{100 * err:+.1f} %"})
    note = (f"held out: {len(sel) - len(bad)}/{len(sel)} within ±{tol:.0%} (floor {floor:.0%}); largest error "
            f"{worst:.1%}; calibrated on {sum(map(is_calibration, records))} runs: copy latency "
            f"{timing.tma_latency_ns:.0f} ns, {timing.tma_bytes_per_ns:.0f} B/ns per SM, a completed try_wait "
            f"{timing.wait_hit_ns:.0f} ns") if sel \
        else "no such records"
    return CheckResult(len(sel), beyond_floor(len(sel), len(bad), floor), bad[:5], note)


@silicon_check("Bulk-copy pipeline: consumers read the copied bytes", lesson=3, dataset="l03/bulk_pipeline")
def _data(ds: Dataset) -> CheckResult:
    return check_data(ds.records)


@silicon_check("Bulk-copy pipeline: more buffers never slower", lesson=3, dataset="l03/bulk_pipeline")
def _monotone(ds: Dataset) -> CheckResult:
    return check_monotone(ds.records)


@silicon_check("Bulk-copy pipeline: simulated time per tile, one CTA, held out (calibrated on the calibration "
               "group and the two-buffer runs' wait), all within ±10 %", lesson=3, dataset="l03/bulk_pipeline")
def _timing(ds: Dataset) -> CheckResult:
    return check_timing(ds.records)


@silicon_check("Bulk-copy pipeline: simulated time per tile, full GPU, every buffer count, held out: ≥ 75 % within "
               "±10 % (goal: all; not met — the two-buffer run 11 % slower than simulated)", lesson=3,
               dataset="l03/bulk_pipeline")
def _timing_full(ds: Dataset) -> CheckResult:
    return check_timing(ds.records, full_gpu="all", floor=FULL_GPU_FLOOR)


def hardware_report(live: bool | None = None) -> dict[str, Any]:
    """What the chapter's "On real hardware" section shows, from the best source available.

    ``live`` (default: whenever ``h100lab.cuda.available()``) runs the quick case list of
    ``h100lab.measure.l03`` now; otherwise the committed dataset is read. Returns ``{"source": "live" |
    "dataset" | None, "where", "records", "timing" (calibrated on :func:`calibration_records`), "data", "monotone",
    "single", "full",
    "predicted", "command"}``; ``source`` None means there is neither a GPU nor the dataset.
    """
    from .. import data

    command = "python -m h100lab.measure.l03"
    if live is None:
        from .. import cuda

        live = cuda.available()
    if live:
        from .. import cuda
        from ..measure import l03 as m

        num_sms = int(cuda.device_properties(0)["multiProcessorCount"])
        records = m.measure(m.cases(quick=True, num_sms=num_sms))
        where, source = f"this GPU ({cuda.device_properties(0)['name']}, live)", "live"
    else:
        if not data.available("l03/bulk_pipeline"):
            return {"source": None, "command": command}
        ds = data.load("l03/bulk_pipeline")
        records, where, source = ds.records, ds.describe(), "dataset"
    try:
        timing = calibrated(calibration_records(records))
    except ValueError:
        timing = None
    predicted = [predict(r, timing) if timing is not None and r["ok"] else float("nan") for r in records]
    return {"source": source, "where": where, "records": records, "timing": timing,
            "data": check_data(records), "monotone": check_monotone(records),
            "single": check_timing(records), "full": check_timing(records, full_gpu="all", floor=FULL_GPU_FLOOR),
            "predicted": predicted, "command": command}

# The timing model's fit-on-part / validate-on-the-rest checks (h100lab.validation.timing, datasets of
# python -m h100lab.measure.timing_sweep), calibration and held-out apart, at the level memory model 2 reaches.
from . import timing as _timing  # noqa: E402

_timing.register_checks()
