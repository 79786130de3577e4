"""Lesson 5 model-vs-silicon checks: raw bulk copies, multicast, bulk reductions, the TMA copy stream.

Datasets come from ``python -m h100lab.measure.l05``. Every functional comparison is exact (bytes and
barrier outcomes); the copy-bandwidth dataset is checked for correct output and, after the timing table
is calibrated (:func:`h100lab.sim.timing.calibrate`: one CTA's copy path on ``l03/bulk_pipeline``, the
memory's bandwidth and DRAM latency on this dataset), for the simulator's bandwidth: every record within
:data:`BANDWIDTH_TOLERANCE` (relative) of :func:`predict_bandwidth`.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..data import Dataset
from . import CheckResult, silicon_check
from .l04 import image_mismatch

__all__ = ["check_round_trips", "check_multicast", "check_bulk_reduce", "check_copy_output", "check_copy_bandwidth",
           "predict_bandwidth", "copy_timing", "run_on", "hardware_report", "BANDWIDTH_TOLERANCE"]

#: the simulator's copy bandwidth must be within ±20 % of every l05/copy_bandwidth record
BANDWIDTH_TOLERANCE = 0.20


def check_round_trips(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Each raw round trip completed its barrier phase and delivered exactly the model's bytes."""
    from ..measure.l04 import unpack
    from ..measure.l05 import model_round_trip

    bad, n = [], 0
    for r in records:
        if r["kind"] != "round_trip":
            continue
        n += 1
        mm = None if r["completed"] else {"completed": False}
        mm = mm or image_mismatch(unpack(r["out"]), model_round_trip(r))
        if mm:
            bad.append({"id": r["id"], **mm})
    return CheckResult(n, len(bad), bad[:5])


def check_multicast(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Exactly the CTAs of ``ctaMask`` received the data at the same offset and completed their own barrier;
    the others' shared memory is untouched."""
    from ..measure.l04 import unpack
    from ..measure.l05 import model_multicast

    bad, n = [], 0
    for r in records:
        if r["kind"] != "multicast":
            continue
        n += 1
        imgs, status = model_multicast(r)
        if list(r["status"]) != status:
            bad.append({"id": r["id"], "status": r["status"], "model": status})
            continue
        for rank, (got, want) in enumerate(zip(r["images"], imgs)):
            mm = image_mismatch(unpack(got), want)
            if mm:
                bad.append({"id": r["id"], "rank": rank, **mm})
                break
    return CheckResult(n, len(bad), bad[:5])


def check_bulk_reduce(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Each ``cp.reduce.async.bulk.global`` op/type leaves the model's bytes in global memory."""
    from ..measure.l04 import unpack
    from ..measure.l05 import model_bulk_reduce

    bad, n = [], 0
    for r in records:
        if r["kind"] != "bulk_reduce":
            continue
        n += 1
        mm = image_mismatch(unpack(r["after"]), model_bulk_reduce(r))
        if mm:
            bad.append({"id": r["id"], **mm})
    return CheckResult(n, len(bad), bad[:5])


def check_copy_output(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every TMA copy-stream configuration produced an exact copy of its input."""
    rows = [r for r in records if r["kind"] == "tma_copy"]
    bad = [{k: r[k] for k in ("box_x", "box_y", "stages", "ctas_per_sm")} for r in rows if not r["correct"]]
    return CheckResult(len(rows), len(bad), bad[:5])


def copy_timing(records: Sequence[dict[str, Any]]):
    """The timing table for the copy-bandwidth comparison: step 1 of the calibration on
    ``data/l03/bulk_pipeline`` when it exists (else the estimates), step 2 on ``records``."""
    from .. import data
    from ..sim.timing import H200_ESTIMATES, calibrate, calibrate_hbm

    base = H200_ESTIMATES
    if data.available("l03/bulk_pipeline"):
        try:
            base = calibrate(data.load("l03/bulk_pipeline").records)
        except (ValueError, KeyError):
            base = H200_ESTIMATES
    return calibrate_hbm(list(records), base)


def predict_bandwidth(r: dict[str, Any], timing) -> float:
    """The simulator's GB/s (bytes read + written per ns) for one ``l05/copy_bandwidth`` record.

    ``tma_copy``: :func:`h100lab.tma.pipeline.simulate_copy_stream` of the record's tile, stages, grid
    and CTAs per SM over the whole tensor (``bytes / tile_bytes`` tiles in the kernel's grid-stride
    loop; a record without ``grid``/``bytes`` gets the measurement's: ``num_sms × ctas_per_sm`` CTAs and the
    512 MiB tensor of :mod:`h100lab.measure.l05`). ``device_copy`` and ``memcpy``: the memory's bandwidth ``hbm_bytes_per_ns`` — the model
    assumes a plain copy with thousands of 16-byte loads in flight is limited by the memory alone (the
    simulator has no LSU path to global memory to simulate it with)."""
    if r["kind"] in ("device_copy", "memcpy"):
        return float(timing.hbm_bytes_per_ns)
    if r["kind"] != "tma_copy":
        raise ValueError(f"record kind {r['kind']!r} is not a copy (tma_copy, device_copy, memcpy)")
    from ..measure.l05 import COPY_COLS, COPY_ROWS
    from ..tma.pipeline import simulate_copy_stream

    tiles = r.get("bytes", COPY_ROWS * COPY_COLS * 4) // r["tile_bytes"]
    if tiles < 1:
        raise ValueError(f"record copies {r['bytes']} B, less than one {r['tile_bytes']}-byte tile")
    grid = r.get("grid", int(timing.num_sms) * r["ctas_per_sm"])
    res = simulate_copy_stream(r["tile_bytes"], r["stages"], ctas=grid, ctas_per_sm=r["ctas_per_sm"], tiles=tiles,
                               timing=timing)
    return res.bandwidth_gbps


def check_copy_bandwidth(records: Sequence[dict[str, Any]], *, tol: float = BANDWIDTH_TOLERANCE,
                         timing=None) -> CheckResult:
    """The simulator's bandwidth against every record's measured GB/s, within ``tol`` (relative); the note
    gives the largest error and the calibrated numbers. ``timing`` defaults to :func:`copy_timing`."""
    rows = [r for r in records if r.get("kind") in ("tma_copy", "device_copy", "memcpy")]
    try:
        timing = timing if timing is not None else copy_timing(rows)
    except ValueError as exc:
        return CheckResult(len(rows), len(rows), [], f"cannot calibrate: {exc}")
    bad, worst, where = [], 0.0, ""
    for r in rows:
        p = predict_bandwidth(r, timing)
        err = p / r["gbps"] - 1
        label = (f"tma_copy {r['tile_bytes'] // 1024} KB, {r['stages']} stage(s), {r['ctas_per_sm']} CTA/SM"
                 if r["kind"] == "tma_copy" else r["kind"] + (f" {r['blocks_per_sm']} blocks/SM × {r['threads']}"
                                                              if r["kind"] == "device_copy" else ""))
        if abs(err) > worst:
            worst, where = abs(err), f"{label}: {r['gbps']:.0f} measured, {p:.0f} simulated"
        if abs(err) > tol:
            bad.append({"record": label, "measured_gbps": round(r["gbps"]), "model_gbps": round(p)})
    note = (f"largest error {worst:.1%} ({where}); memory {timing.hbm_bytes_per_ns:.0f} B/ns, DRAM latency "
            f"{timing.dram_latency_ns:.0f} ns, copy latency {timing.tma_latency_ns:.0f} ns, "
            f"{timing.tma_bytes_per_ns:.0f} B/ns per SM") if rows else "no copy records"
    return CheckResult(len(rows), len(bad), bad[:5], note)


@silicon_check("Bulk copies: raw cp.async.bulk round trips deliver exactly the model's bytes", lesson=5,
               dataset="l05/bulk")
def _rt(ds: Dataset) -> CheckResult:
    return check_round_trips(ds.records)


@silicon_check("Multicast: ctaMask bit i = %cluster_ctarank i, each receiver's own barrier completes", lesson=5,
               dataset="l05/bulk")
def _mc(ds: Dataset) -> CheckResult:
    return check_multicast(ds.records)


@silicon_check("Bulk reductions: cp.reduce.async.bulk op/type semantics", lesson=5, dataset="l05/bulk")
def _red(ds: Dataset) -> CheckResult:
    return check_bulk_reduce(ds.records)


@silicon_check("TMA copy stream: every configuration copies exactly", lesson=5, dataset="l05/copy_bandwidth")
def _copy(ds: Dataset) -> CheckResult:
    return check_copy_output(ds.records)


@silicon_check("TMA copy stream: simulated bandwidth within ±20 % of every configuration", lesson=5,
               dataset="l05/copy_bandwidth")
def _copy_bw(ds: Dataset) -> CheckResult:
    return check_copy_bandwidth(ds.records)


def run_on(name: str, records: Sequence[dict[str, Any]]) -> CheckResult:
    """This lesson's checks of dataset ``name`` on in-memory records."""
    if name == "l05/copy_bandwidth":
        return check_copy_output(records)
    parts = [check_round_trips(records), check_multicast(records), check_bulk_reduce(records)]
    return CheckResult(sum(p.cases for p in parts), sum(p.mismatches for p in parts),
                       [e for p in parts for e in p.examples])




def hardware_report(live: bool | None = None) -> dict[str, Any]:
    """What chapter 5's "On real hardware" section shows: bulk/multicast/reduce checks and copy bandwidth.

    Live (whenever ``h100lab.cuda.available()``): the bulk cases and the quick copy configurations run now;
    otherwise the committed datasets are read. Returns ``{"source", "where", "round_trips", "multicast",
    "reduce", "copy", "copy_records", "command"}`` (``source`` None: neither a GPU nor the datasets).
    """
    from .. import data

    command = "python -m h100lab.measure.l05"
    if live is None:
        from .. import cuda

        live = cuda.available()
    if live:
        from ..measure import l05 as m

        bulk = m.measure_bulk()
        bw = m.measure_copy(m.copy_configs(quick=True), repeats=5)
        where, source = "this GPU (live)", "live"
    else:
        if not (data.available("l05/bulk") and data.available("l05/copy_bandwidth")):
            return {"source": None, "command": command}
        ds_b, ds_c = data.load("l05/bulk"), data.load("l05/copy_bandwidth")
        bulk, bw = ds_b.records, ds_c.records
        where, source = ds_c.describe(), "dataset"
    return {"source": source, "where": where, "round_trips": check_round_trips(bulk), "multicast": check_multicast(bulk),
            "reduce": check_bulk_reduce(bulk), "copy": check_copy_output(bw), "copy_records": bw, "command": command}
