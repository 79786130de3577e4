"""Lesson 2 model-vs-silicon checks: cluster occupancy, placement, special registers, DSMEM, packing, state spaces.

Datasets come from ``python -m h100lab.measure.l02``. The GPC grouping the occupancy check uses is the one
*measured* from ``%smid`` (``data/l02/gpc_map.json``, an independent experiment), so the check tests the
GPC rule of :mod:`h100lab.cluster.gpc`, not a fit to the same numbers. :func:`run_on` runs every check on
in-memory records (the measurement script reports with it).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..cluster import CANDIDATE_RULE, cluster_capacity, ring_exchange, special_registers
from ..data import Dataset
from ..ptx import cvt_x2, decode, ptx_type
from ..specs import H200_SXM
from . import CheckResult, silicon_check

__all__ = ["check_cluster_occupancy", "check_gpc_map", "check_placement", "check_sregs", "check_ring",
           "check_pack", "check_spaces", "measured_grouping", "run_on", "hardware_report"]

_BITS = {".shared::cta": 1, ".shared::cluster": 2, ".global": 4, ".local": 8, ".const": 16}


def measured_grouping(gmap: Sequence[dict] | None = None) -> tuple[int, ...] | None:
    """SMs per GPC from ``l02/gpc_map`` records (the committed dataset when ``gmap`` is None), or None."""
    if gmap is None:
        from .. import data

        if not data.available("l02/gpc_map"):
            return None
        gmap = data.load("l02/gpc_map").records
    return tuple(sorted((int(g["sm_count"]) for g in gmap), reverse=True)) or None


def check_cluster_occupancy(records: Sequence[dict[str, Any]], grouping: Sequence[int] | None = None) -> CheckResult:
    """``max_active_clusters`` (GPC rule × the driver's blocks per SM × the measured grouping) equals
    ``cudaOccupancyMaxActiveClusters`` in every case; a driver error must match a model error or 0."""
    g = tuple(grouping) if grouping else measured_grouping()
    bad, cases = [], 0
    for r in records:
        if r.get("blocks_per_sm") is None:
            continue
        cases += 1
        try:
            m = cluster_capacity(r["cluster"], r["block_size"], r["dynamic_smem"], H200_SXM, blocks=r["blocks_per_sm"],
                                 non_portable=True, grouping=g).clusters
        except ValueError as exc:
            m = f"error: {exc}"
        api = r.get("clusters")
        if api is None:
            api = 0
        if m != api:
            bad.append({"cluster": r["cluster"], "block_size": r["block_size"], "dynamic_smem": r["dynamic_smem"],
                        "blocks_per_sm": r["blocks_per_sm"], "api": r.get("clusters"), "model": m,
                        "api_error": r.get("api_error")})
    note = (f"rule {CANDIDATE_RULE.name}, grouping {g} " + ("(measured from %smid)" if grouping or
                                                             measured_grouping() else "([model] candidate)"))
    return CheckResult(cases, len(bad), bad[:5], note=note)


def check_gpc_map(gmap: Sequence[dict[str, Any]]) -> CheckResult:
    """The measured GPCs partition all 132 SMs, each GPC of at most 18 SMs (9 TPCs of GH100)."""
    sms = [s for g in gmap for s in g["sms"]]
    bad = []
    if sorted(sms) != list(range(H200_SXM.sm_count)):
        bad.append({"sms_seen": len(set(sms)), "expected": H200_SXM.sm_count})
    bad += [{"gpc": g["gpc"], "sm_count": g["sm_count"]} for g in gmap if not 1 <= g["sm_count"] <= 18]
    return CheckResult(len(gmap), len(bad), bad[:5],
                       note=f"SMs per GPC {tuple(g['sm_count'] for g in gmap)}")


def check_placement(records: Sequence[dict[str, Any]], gmap: Sequence[dict[str, Any]]) -> CheckResult:
    """Every cluster of a wave sits on the SMs of one GPC [CPG §5.2.1]. The note reports how many clusters
    spread over distinct SMs, as the [model] placement of :mod:`h100lab.cluster.placement` assumes."""
    gpc_of = {s: g["gpc"] for g in gmap for s in g["sms"]}
    by: dict[tuple[str, int], list[dict]] = {}
    for r in records:
        by.setdefault((r["launch"], r["clusterid"][0]), []).append(r)
    bad = []
    distinct = 0
    for (launch, cid), rs in by.items():
        sms = [r["smid"] for r in rs]
        gpcs = {gpc_of.get(s) for s in sms}
        distinct += len(set(sms)) == len(sms)
        if len(gpcs) != 1 or None in gpcs:
            bad.append({"launch": launch, "cluster": cid, "sms": sms, "gpcs": sorted(map(str, gpcs))})
    return CheckResult(len(by), len(bad), bad[:5],
                       note=f"{distinct} of {len(by)} clusters on distinct SMs (the [model] placement's assumption)")


def check_sregs(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every special register of every CTA equals :func:`h100lab.cluster.special_registers`."""
    bad = []
    for r in records:
        m = special_registers(tuple(r["ctaid"]), tuple(r["grid"]), tuple(r["cluster"]) if r["cluster"] else None,
                              non_portable=bool(r.get("non_portable")))
        got = (tuple(r["clusterid"]), tuple(r["nclusterid"]), tuple(r["cluster_ctaid"]), tuple(r["cluster_nctaid"]),
               r["cluster_ctarank"], r["cluster_nctarank"], r["is_explicit_cluster"])
        want = (m.clusterid, m.nclusterid, m.cluster_ctaid, m.cluster_nctaid, m.cluster_ctarank, m.cluster_nctarank,
                m.is_explicit_cluster)
        if got != want:
            bad.append({"launch": r["launch"], "ctaid": r["ctaid"], "hardware": got, "model": want})
    return CheckResult(len(records), len(bad), bad[:5])


def check_ring(records: Sequence[dict[str, Any]]) -> CheckResult:
    """The DSMEM ring: each CTA received what the model's ring exchange delivers (its left neighbour's value),
    ``getctarank(mapa(a, r)) == r``, and rank 0's atomic counter holds 1 + 2 + … + n."""
    sent: dict[tuple, int] = {}
    for r in records:
        sent[(tuple(r["cluster"]), tuple(r["clusterid"]), r["rank"])] = r["sent"]
    bad = []
    by_cluster: dict[tuple, list[dict]] = {}
    for r in records:
        by_cluster.setdefault((tuple(r["cluster"]), tuple(r["clusterid"])), []).append(r)
    for (shape, cid), rs in by_cluster.items():
        n = rs[0]["nrank"]
        ranks = sorted(x["rank"] for x in rs)
        values = [sent[(shape, cid, k)] for k in range(n)] if ranks == list(range(n)) else None
        trace = ring_exchange(n, values) if values else None
        for x in rs:
            ok = (trace is not None and trace.ok and x["received"] == trace.received[x["rank"]]
                  and x["mapa_owner"] == (x["rank"] + 1) % n and (x["rank"] != 0 or x["counter"] == n * (n + 1) // 2))
            if not ok:
                bad.append({k: x[k] for k in ("cluster", "clusterid", "rank", "received", "mapa_owner", "counter")})
    return CheckResult(len(records), len(bad), bad[:5])


def _f32(bits: int) -> float:
    return decode(bits, ".f32")


def check_pack(records: Sequence[dict[str, Any]]) -> CheckResult:
    """``cvt_x2`` (first source in the upper half) equals ``cvt.rn.{f16x2,bf16x2}.f32`` and
    ``cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32`` bit for bit (NaN results compared as "is NaN"), and
    ``mov.b32 d, {lo, hi}`` puts ``lo`` in bits 0–15."""
    import math

    bad = []
    for r in records:
        a, b = _f32(r["a_bits"]), _f32(r["b_bits"])
        for t in ("f16x2", "bf16x2", "e4m3x2", "e5m2x2"):
            m, hw = cvt_x2(a, b, "." + t), r[t]
            if m != hw:
                e = ptx_type("." + t).element_type
                w = e.bits
                halves = [(m >> (k * w)) & ((1 << w) - 1) for k in (0, 1)], [(hw >> (k * w)) & ((1 << w) - 1)
                                                                             for k in (0, 1)]
                both_nan = all(math.isnan(decode(x, e)) and math.isnan(decode(y, e))
                               for x, y in zip(*halves) if x != y)
                if not both_nan:
                    bad.append({"a": a, "b": b, "type": t, "model": hex(m), "hardware": hex(hw)})
        if r["mov_b32"] != r["bf16x2"]:
            bad.append({"a": a, "b": b, "type": "mov.b32 {lo, hi}", "hardware": hex(r["mov_b32"]),
                        "expected": hex(r["bf16x2"])})
    return CheckResult(len(records), len(bad), bad[:5])


def check_spaces(records: Sequence[dict[str, Any]]) -> CheckResult:
    """``isspacep`` answers as :class:`h100lab.memory.spaces.AddressMap` does: a shared variable is in
    ``.shared::cta`` and ``.shared::cluster`` only, a peer's (generic ``mapa``) in ``.shared::cluster``
    only, local, global and constant addresses in their own space only; ``cvta.to.shared`` gives an offset
    within the CTA's shared memory that ``cvta.shared`` maps back."""
    want = {"shared": _BITS[".shared::cta"] | _BITS[".shared::cluster"], "peer_shared": _BITS[".shared::cluster"],
            "local": _BITS[".local"], "global": _BITS[".global"], "const": _BITS[".const"]}
    bad = []
    for r in records:
        for k, v in want.items():
            if r[k] != v:
                bad.append({"block": r["block"], "address": k, "isspacep_bits": r[k], "model_bits": v})
        if not r["cvta_round_trip"] or not 0 <= r["shared_offset"] < H200_SXM.smem_per_sm:
            bad.append({"block": r["block"], "shared_offset": r["shared_offset"], "round_trip": r["cvta_round_trip"]})
    return CheckResult(len(records), len(bad), bad[:5])


@silicon_check("Clusters: model equals cudaOccupancyMaxActiveClusters", lesson=2, dataset="l02/cluster_occupancy")
def _occupancy(ds: Dataset) -> CheckResult:
    return check_cluster_occupancy(ds.records)


@silicon_check("Clusters: the SMs group into GPCs of whole SM sets", lesson=2, dataset="l02/gpc_map")
def _gpc_map(ds: Dataset) -> CheckResult:
    return check_gpc_map(ds.records)


@silicon_check("Clusters: each cluster runs inside one GPC", lesson=2, dataset="l02/placement")
def _placement(ds: Dataset) -> CheckResult:
    from .. import data

    return check_placement(ds.records, data.load("l02/gpc_map").records)


@silicon_check("Clusters: special registers (rank, cluster ids)", lesson=2, dataset="l02/cluster_sregs")
def _sregs(ds: Dataset) -> CheckResult:
    return check_sregs(ds.records)


@silicon_check("DSMEM: ring exchange through mapa and atomics", lesson=2, dataset="l02/dsmem_ring")
def _ring(ds: Dataset) -> CheckResult:
    return check_ring(ds.records)


@silicon_check("PTX: cvt/mov packing of f16x2, bf16x2, e4m3x2, e5m2x2", lesson=2, dataset="l02/pack")
def _pack(ds: Dataset) -> CheckResult:
    return check_pack(ds.records)


@silicon_check("State spaces: isspacep and cvta", lesson=2, dataset="l02/spaces")
def _spaces(ds: Dataset) -> CheckResult:
    return check_spaces(ds.records)


def run_on(*, occ, gmap, placement, sregs, ring, pack, spaces) -> list[tuple[str, CheckResult]]:
    """Every lesson-2 check on in-memory records."""
    g = measured_grouping(gmap)
    return [("cluster occupancy", check_cluster_occupancy(occ, g)), ("GPC map", check_gpc_map(gmap)),
            ("placement", check_placement(placement, gmap)), ("special registers", check_sregs(sregs)),
            ("DSMEM ring", check_ring(ring)), ("packing", check_pack(pack)), ("state spaces", check_spaces(spaces))]


def hardware_report(live: bool | None = None) -> dict[str, Any]:
    """What the chapter's "On real hardware" section shows, from the best source available.

    ``live`` (default: whenever ``h100lab.cuda.available()``) runs the DSMEM ring, a few occupancy queries and
    the GPC map now; otherwise the committed datasets are read. Returns ``{"source": "live" | "dataset" |
    None, "where", "ring", "occupancy", "gmap", "command"}``.
    """
    from .. import data

    command = "python -m h100lab.measure l02"
    if live is None:
        from .. import cuda

        live = cuda.available()
    if live:
        from .. import cuda
        from ..measure import l02 as m

        ring = m.measure_ring(shapes=((2, 1, 1), (4, 1, 1), (8, 1, 1), (16, 1, 1)))
        occ = m.measure_occupancy(m.occupancy_cases(tuple((n, 1, 1) for n in (1, 2, 4, 8, 16)), (128,), (1, 8)),
                                  progress=False)
        _, gmap = m.measure_placement(waves=2, progress=False)
        return {"source": "live", "where": f"this GPU ({cuda.device_properties(0)['name']}, live)", "ring": ring,
                "occupancy": occ, "gmap": gmap, "command": command}
    names = ("l02/dsmem_ring", "l02/cluster_occupancy", "l02/gpc_map")
    if not all(data.available(n) for n in names):
        return {"source": None, "command": command}
    ds = {n: data.load(n) for n in names}
    return {"source": "dataset", "where": ds["l02/dsmem_ring"].describe(), "ring": ds["l02/dsmem_ring"].records,
            "occupancy": ds["l02/cluster_occupancy"].records, "gmap": ds["l02/gpc_map"].records, "command": command}
