"""Lesson 5 model-vs-silicon checks: raw bulk copies, multicast, bulk reductions, the TMA copy stream.

Datasets come from ``python -m h100lab.measure.l05``. Every functional comparison is exact (bytes and
barrier outcomes); the copy-bandwidth dataset is checked for correct output (its times are shown next
to the simulator's prediction in chapter 5, not asserted).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..data import Dataset
from . import CheckResult, silicon_check
from .l04 import image_mismatch

__all__ = ["check_round_trips", "check_multicast", "check_bulk_reduce", "check_copy_output", "run_on",
           "hardware_report"]


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
