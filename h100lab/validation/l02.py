"""Lesson 2 model-vs-silicon checks: cluster occupancy, placement, special registers, DSMEM, packing, state spaces.

Datasets come from ``python -m h100lab.measure.l02``. The cluster domains the occupancy check uses are the
ones *measured* from ``%smid`` (``data/l02/gpc_map.json``, an independent experiment: SMs that share a
cluster), so the check tests the rule of :mod:`h100lab.cluster.gpc`, not a fit to the same numbers; the
map itself is checked against the model's layout and ``%smid`` numbering. :func:`run_on` runs every check
on in-memory records (the measurement script reports with it).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..cluster import (H200_CGA, H200_RULE, CgaLayout, cluster_capacity, layout_from_domains, place_clusters,
                       ring_exchange, special_registers)
from ..data import Dataset
from ..memory.spaces import SHARED_RESERVED, AddressMap, cluster_address
from ..ptx import cvt_x2, decode, ptx_type
from ..specs import H200_SXM
from . import CheckResult, silicon_check

__all__ = ["check_cluster_occupancy", "check_gpc_map", "check_placement", "check_residency", "residency_waves",
           "check_sregs", "check_ring", "check_pack", "check_spaces", "measured_grouping", "measured_idle_sms",
           "occupancy_curve", "run_on", "hardware_report", "histogram_rows", "check_histogram", "histogram_report",
           "histogram_grid_model", "ASM_ZOO_INTENDED", "asm_zoo_intended", "check_asm_zoo", "asm_zoo_report", "cluster_sync_rows",
           "swizzle_model", "check_swizzle_read"]

_BITS = {".shared::cta": 1, ".shared::cluster": 2, ".global": 4, ".local": 8, ".const": 16}


def measured_grouping(gmap: Sequence[dict] | None = None) -> CgaLayout | None:
    """The cluster domains of ``l02/gpc_map`` records (the committed dataset when ``gmap`` is None) as a
    :class:`~h100lab.cluster.CgaLayout` (a domain of one TPC is a singleton TPC), or None."""
    if gmap is None:
        from .. import data

        if not data.available("l02/gpc_map"):
            return None
        gmap = data.load("l02/gpc_map").records
    sizes = [int(g["sm_count"]) for g in gmap]
    return layout_from_domains(sizes) if sizes else None


def check_cluster_occupancy(records: Sequence[dict[str, Any]], grouping: CgaLayout | Sequence[int] | None = None
                            ) -> CheckResult:
    """``max_active_clusters`` (the H200 rule × the driver's blocks per SM × the measured cluster domains)
    equals ``cudaOccupancyMaxActiveClusters`` in every case; a driver error must match a model error or 0.
    Records the driver refused to size (``blocks_error``) are not cases."""
    g = grouping if grouping is not None else measured_grouping()
    lay = g if isinstance(g, CgaLayout) or g is None else layout_from_domains(g)
    bad, cases = [], 0
    for r in records:
        if r.get("blocks_per_sm") is None:
            continue
        cases += 1
        try:
            m = cluster_capacity(r["cluster"], r["block_size"], r["dynamic_smem"], H200_SXM, blocks=r["blocks_per_sm"],
                                 non_portable=True, grouping=lay).clusters
        except ValueError as exc:
            m = f"error: {exc}"
        api = r.get("clusters")
        if api is None:
            api = 0
        if m != api:
            bad.append({"cluster": r["cluster"], "block_size": r["block_size"], "dynamic_smem": r["dynamic_smem"],
                        "blocks_per_sm": r["blocks_per_sm"], "api": r.get("clusters"), "model": m,
                        "api_error": r.get("api_error")})
    where = "measured from %smid" if lay is not None else "the model's H200 layout"
    lay = lay or H200_CGA
    note = (f"rule {H200_RULE.name}, domains: virtual GPCs {lay.vgpc_sms} + {lay.singleton_tpcs} singleton TPCs "
            f"({where})")
    return CheckResult(cases, len(bad), bad[:5], note=note)


def check_gpc_map(gmap: Sequence[dict[str, Any]]) -> CheckResult:
    """The measured cluster domains partition all 132 SMs, are the model's domains (:data:`H200_CGA`: 8
    virtual GPCs of at most 18 SMs — GH100's 9 TPCs — and singleton TPCs), and hold exactly the ``%smid``
    values :meth:`CgaLayout.sm_ids` deals them. One case per domain."""
    sms = [s for g in gmap for s in g["sms"]]
    bad: list[dict] = []
    if sorted(sms) != list(range(H200_SXM.sm_count)):
        bad.append({"sms_seen": len(set(sms)), "expected": H200_SXM.sm_count})
    bad += [{"gpc": g["gpc"], "sm_count": g["sm_count"]} for g in gmap
            if not 1 <= g["sm_count"] <= 18 or g["sm_count"] != len(g["sms"])]
    model = sorted(sorted(x) for x in H200_CGA.sm_ids())
    for g in gmap:
        if sorted(g["sms"]) not in model:
            bad.append({"gpc": g["gpc"], "sms": g["sms"][:6], "model": "no model domain holds these SMs"})
    lay = layout_from_domains([g["sm_count"] for g in gmap]) if gmap else None
    if lay is not None and len(lay.vgpc_sms) > H200_SXM.physical_gpc_count:
        bad.append({"virtual_gpcs": len(lay.vgpc_sms), "max": H200_SXM.physical_gpc_count})
    note = (f"virtual GPCs {lay.vgpc_sms} + {lay.singleton_tpcs} singleton TPCs" if lay else "no domains")
    return CheckResult(len(gmap), len(bad), bad[:5], note=note)


def check_placement(records: Sequence[dict[str, Any]], gmap: Sequence[dict[str, Any]]) -> CheckResult:
    """Every cluster of a wave sits on the SMs of one domain [CPG §5.2.1], each CTA on its own SM (the rule's
    assumption); and every full wave (launches ``wave c<size> b<CTAs/SM>``) loads each SM with exactly the
    CTAs the model's placement puts there — so the same SMs are left idle. One case per cluster, plus one
    per wave."""
    dom_of = {s: g["gpc"] for g in gmap for s in g["sms"]}
    by: dict[tuple[str, int], list[dict]] = {}
    waves: dict[str, list[dict]] = {}
    for r in records:
        by.setdefault((r["launch"], r["clusterid"][0]), []).append(r)
        waves.setdefault(r["launch"], []).append(r)
    bad = []
    distinct = 0
    for (launch, cid), rs in by.items():
        sms = [r["smid"] for r in rs]
        doms = {dom_of.get(s) for s in sms}
        distinct += len(set(sms)) == len(sms)
        if len(doms) != 1 or None in doms or len(set(sms)) != len(sms):
            bad.append({"launch": launch, "cluster": cid, "sms": sms, "domains": sorted(map(str, doms))})
    lay = measured_grouping(gmap) if gmap else H200_CGA
    full = 0
    for launch, rs in waves.items():
        if "cluster_size" not in rs[0] or "blocks_per_sm" not in rs[0]:
            continue
        full += 1
        n = len({r["clusterid"][0] for r in rs})
        p = place_clusters(n, rs[0]["cluster_size"], rs[0]["blocks_per_sm"], H200_SXM, grouping=lay)
        hw: dict[int, int] = {}
        for r in rs:
            hw[r["smid"]] = hw.get(r["smid"], 0) + 1
        model = {s: k for s, k in p.sm_load.items() if k}
        if hw != model or p.waiting:
            bad.append({"launch": launch, "idle_hw": sorted(set(range(H200_SXM.sm_count)) - set(hw))[:12],
                        "idle_model": p.idle_sms[:12], "waiting": len(p.waiting)})
    return CheckResult(len(by) + full, len(bad), bad[:5],
                       note=f"{distinct} of {len(by)} clusters on distinct SMs; {full} full waves load every SM "
                            "as the model places them")


def residency_waves(r: dict[str, Any], grouping: CgaLayout | None = None) -> int:
    """Waves the model predicts for a ``l02/cluster_residency`` cluster launch: ``⌈clusters / capacity⌉`` with
    the capacity of :func:`~h100lab.cluster.cluster_capacity` (at most 8 CTAs per SM counted), relative to
    the plain launch's single wave."""
    c = r["cluster_size"]
    cap = cluster_capacity(c, r["block"], blocks=r["blocks_per_sm"], non_portable=c > 8, grouping=grouping).clusters
    clusters = r["grid"] // c
    return -(-clusters // cap) if cap else 0


def check_residency(records: Sequence[dict[str, Any]], grouping: CgaLayout | None = None) -> CheckResult:
    """A cluster launch takes as many waves as the model's capacity implies: the measured time ratio
    (cluster launch / the same CTAs as a plain launch, one wave) rounds to :func:`residency_waves`; and the
    driver's ``cudaOccupancyMaxActiveClusters`` equals the model's. Tells whether the hardware, not only the
    API, holds a cluster launch to 8 CTAs per SM. One case per record."""
    bad = []
    for r in records:
        want = residency_waves(r, grouping)
        cap = cluster_capacity(r["cluster_size"], r["block"], blocks=r["blocks_per_sm"], non_portable=True,
                               grouping=grouping).clusters
        if r.get("waves") != want or r.get("api_clusters") != cap:
            bad.append({"cluster": r["cluster_size"], "blocks_per_sm": r["blocks_per_sm"], "ratio": r.get("ratio"),
                        "model_waves": want, "api": r.get("api_clusters"), "model_api": cap})
    return CheckResult(len(records), len(bad), bad[:5])


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
    ``getctarank(mapa(a, r)) == r``, rank 0's atomic counter holds 1 + 2 + … + n, and the addresses are the
    model's encoding: ``cvta.to.shared`` of the slot is ``(rank << 24) | offset`` with the offset past the
    reserved 1 KB, and ``mapa`` gives :func:`~h100lab.memory.spaces.cluster_address` of the target."""
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
            rank, off = x["local_addr"] >> 24, x["local_addr"] & 0xFFFFFF
            ok = (trace is not None and trace.ok and x["received"] == trace.received[x["rank"]]
                  and x["mapa_owner"] == (x["rank"] + 1) % n and (x["rank"] != 0 or x["counter"] == n * (n + 1) // 2)
                  and rank == x["rank"] and off >= SHARED_RESERVED
                  and x["mapa_addr"] == cluster_address((x["rank"] + 1) % n, off, n))
            if not ok:
                bad.append({k: x[k] for k in ("cluster", "clusterid", "rank", "received", "mapa_owner", "counter",
                                              "local_addr", "mapa_addr")})
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


def check_spaces(records: Sequence[dict[str, Any]], cluster_size: int = 2) -> CheckResult:
    """``isspacep`` and ``cvta`` answer as :class:`h100lab.memory.spaces.AddressMap` does, for clusters of
    ``cluster_size`` CTAs along x (rank = block mod size): a shared variable is in ``.shared::cta`` and
    ``.shared::cluster`` only, a peer's (generic ``mapa``) in ``.shared::cluster`` only, local, global and
    constant addresses in their own space only; ``cvta.to.shared`` of the CTA's first shared variable is
    ``(rank << 24) | 0x400`` (the model's ``cvta_to``), ``cvta.shared`` maps it back, and the generic
    addresses of own and peer variable lie one window base plus their cluster addresses apart. One case per
    CTA."""
    want = {"shared": _BITS[".shared::cta"] | _BITS[".shared::cluster"], "peer_shared": _BITS[".shared::cluster"],
            "local": _BITS[".local"], "global": _BITS[".global"], "const": _BITS[".const"]}
    bad = []
    bases = {r["shared_generic"] - r["shared_offset"] for r in records if "shared_generic" in r}
    for r in records:
        for k, v in want.items():
            if r[k] != v:
                bad.append({"block": r["block"], "address": k, "isspacep_bits": r[k], "model_bits": v})
        rank = r["block"] % cluster_size
        amap = AddressMap(cta_rank=rank, cluster_size=cluster_size)
        first = cluster_address(rank, SHARED_RESERVED, cluster_size)
        model = amap.cvta_to(".shared::cta", amap.cvta(".shared::cta", first))
        if not r["cvta_round_trip"] or r["shared_offset"] != model:
            bad.append({"block": r["block"], "shared_offset": r["shared_offset"], "model": model,
                        "round_trip": r["cvta_round_trip"]})
        if "peer_generic" in r and len(bases) == 1:
            base = next(iter(bases))
            peer = cluster_address((rank + 1) % cluster_size, SHARED_RESERVED, cluster_size)
            if r["peer_generic"] != base + peer:
                bad.append({"block": r["block"], "peer_generic": hex(r["peer_generic"]), "model": hex(base + peer)})
    if len(bases) > 1:
        bad.append({"window_bases": sorted(hex(b) for b in bases)})
    note = f"shared window base {hex(next(iter(bases)))}" if len(bases) == 1 else ""
    return CheckResult(len(records), len(bad), bad[:5], note=note)


@silicon_check("Clusters: model equals cudaOccupancyMaxActiveClusters", lesson=2, dataset="l02/cluster_occupancy")
def _occupancy(ds: Dataset) -> CheckResult:
    return check_cluster_occupancy(ds.records)


@silicon_check("Clusters: the SMs group into 8 virtual GPCs and 4 singleton TPCs", lesson=2, dataset="l02/gpc_map")
def _gpc_map(ds: Dataset) -> CheckResult:
    return check_gpc_map(ds.records)


@silicon_check("Clusters: each cluster in one domain; full waves load SMs as modelled", lesson=2,
               dataset="l02/placement")
def _placement(ds: Dataset) -> CheckResult:
    from .. import data

    return check_placement(ds.records, data.load("l02/gpc_map").records)


@silicon_check("Clusters: a cluster launch keeps at most 8 CTAs per SM", lesson=2, dataset="l02/cluster_residency")
def _residency(ds: Dataset) -> CheckResult:
    return check_residency(ds.records)


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


def measured_idle_sms(placement: Sequence[dict[str, Any]], sm_count: int = 132) -> dict[tuple[int, int], int]:
    """SMs a measured full wave left without a CTA, per ``(cluster size, CTAs per SM)`` — from the ``wave``
    launches of ``l02/placement`` records (each launched exactly ``cudaOccupancyMaxActiveClusters`` clusters)."""
    used: dict[tuple[int, int], set[int]] = {}
    for r in placement:
        if "cluster_size" in r and "blocks_per_sm" in r:
            used.setdefault((r["cluster_size"], r["blocks_per_sm"]), set()).add(r["smid"])
    return {k: sm_count - len(v) for k, v in sorted(used.items())}


def occupancy_curve(records: Sequence[dict[str, Any]], block_size: int = 128, blocks_per_sm: int = 8
                    ) -> dict[int, int]:
    """``cluster size → cudaOccupancyMaxActiveClusters`` for 1-D clusters of ``l02/cluster_occupancy`` records
    with the given block size and driver-reported CTAs per SM."""
    return {r["cluster_size"]: r["clusters"] for r in records
            if r["cluster"][1:] == [1, 1] and r["block_size"] == block_size and r.get("blocks_per_sm") == blocks_per_sm
            and r.get("clusters") is not None}


def run_on(*, occ, gmap, placement, sregs, ring, pack, spaces, residency=None) -> list[tuple[str, CheckResult]]:
    """Every lesson-2 check on in-memory records (``residency`` only when given)."""
    g = measured_grouping(gmap)
    extra = [("cluster residency", check_residency(residency, g))] if residency is not None else []
    return [("cluster occupancy", check_cluster_occupancy(occ, g)), ("cluster domains", check_gpc_map(gmap)),
            ("placement", check_placement(placement, gmap)), ("special registers", check_sregs(sregs)),
            ("DSMEM ring", check_ring(ring)), ("packing", check_pack(pack)),
            ("state spaces", check_spaces(spaces))] + extra


def hardware_report(live: bool | None = None) -> dict[str, Any]:
    """What the chapter's "On real hardware" section shows, from the best source available.

    ``live`` (default: whenever ``h100lab.cuda.available()``) runs the DSMEM ring, a few occupancy queries and
    the placement waves (which give the cluster domains) now; otherwise the committed datasets are read.
    Returns ``{"source": "live" | "dataset" | None, "where", "ring", "occupancy", "gmap", "placement",
    "spaces", "residency", "command"}`` (``spaces`` / ``residency`` None when that dataset is missing).
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
        placement, gmap = m.measure_placement(waves=2, progress=False)
        return {"source": "live", "where": f"this GPU ({cuda.device_properties(0)['name']}, live)", "ring": ring,
                "occupancy": occ, "gmap": gmap, "placement": placement, "spaces": m.measure_spaces(),
                "residency": m.measure_residency(cases=((1, 16), (2, 16))), "command": command}
    names = ("l02/dsmem_ring", "l02/cluster_occupancy", "l02/gpc_map", "l02/placement")
    if not all(data.available(n) for n in names):
        return {"source": None, "command": command}
    ds = {n: data.load(n) for n in names}
    opt = {k: data.load(f"l02/{n}").records if data.available(f"l02/{n}") else None
           for k, n in (("spaces", "spaces"), ("residency", "cluster_residency"))}
    return {"source": "dataset", "where": ds["l02/dsmem_ring"].describe(), "ring": ds["l02/dsmem_ring"].records,
            "occupancy": ds["l02/cluster_occupancy"].records, "gmap": ds["l02/gpc_map"].records,
            "placement": ds["l02/placement"].records, **opt, "command": command}


# ------------------------------------------------------------------------------------------------
# The DSMEM histogram (l02/cluster_histogram), the asm bug zoo (l02/asm_zoo), cluster-barrier cost

def histogram_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per bin count: values counted per second (10^9/s) by each kernel — global atomics, one shared copy
    per CTA, each cluster size; None where the variant cannot run — and the speed-up of the best on-chip variant
    over global atomics."""
    clusters = sorted({r["cluster"] for r in records if r["kernel"] == "cluster"})
    keys = ["global atomics", "shared, 1 CTA"] + [f"cluster of {c}" for c in clusters]
    rows: dict[int, dict[str, Any]] = {}
    for r in records:
        row = rows.setdefault(r["nbins"], {"bins": r["nbins"], "KiB of counts": r["nbins"] * 4 // 1024,
                                           **{k: None for k in keys}})
        if not r.get("gelems"):
            continue
        key = {"global": "global atomics", "shared": "shared, 1 CTA"}.get(r["kernel"], f"cluster of {r['cluster']}")
        row[key] = r["gelems"]
    for row in rows.values():
        on_chip = [v for k, v in row.items() if k.startswith(("shared", "cluster")) and v]
        row["best on chip / global"] = max(on_chip) / row["global atomics"] if on_chip and row["global atomics"] else None
    return [rows[k] for k in sorted(rows)]


def histogram_grid_model(r: dict[str, Any], threads: int = 512) -> int:
    """The grid one full wave of a ``l02/cluster_histogram`` case has by the model: clusters that fit at once
    (:func:`h100lab.cluster.max_active_clusters`) × cluster size, or blocks per SM (:func:`h100lab.occupancy.occupancy`)
    × SMs — what the measurement asked the driver for (``cudaOccupancyMaxActiveClusters`` /
    ``...MaxActiveBlocksPerMultiprocessor``)."""
    from ..cluster import max_active_clusters
    from ..occupancy import occupancy

    if r["kernel"] == "cluster":
        return max_active_clusters(r["cluster"], threads, r["smem"], non_portable=r["cluster"] > 8) * r["cluster"]
    return occupancy(threads, 32, r["smem"]).active_blocks * H200_SXM.sm_count


def check_histogram(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every launched kernel counted exactly what NumPy counts, every case the model says fits (the slice of
    ``ceil(bins / cluster)`` counts within the 227 KB a CTA may have) launched at least one full cluster, and the
    driver's full wave (the grid) equals the model's (:func:`histogram_grid_model`)."""
    bad = [dict(kernel=r["kernel"], cluster=r["cluster"], bins=r["nbins"], why="wrong counts") for r in records
           if r.get("correct") is False]
    bad += [dict(kernel=r["kernel"], cluster=r["cluster"], bins=r["nbins"], why=f"grid {r['grid']}, model "
                 f"{histogram_grid_model(r, r.get('block', 512))}") for r in records
            if r.get("grid") and r["grid"] != histogram_grid_model(r, r.get("block", 512))]
    bad += [dict(kernel=r["kernel"], cluster=r["cluster"], bins=r["nbins"], why="no cluster fits") for r in records
            if not r.get("grid")]
    rows = histogram_rows(records)
    best = max((r for r in rows if r.get("best on chip / global")), key=lambda r: r["bins"], default=None)
    note = (f"{best['bins']} bins ({best['KiB of counts']} KiB): best on-chip variant "
            f"{best['best on chip / global']:.1f} x global atomics") if best else ""
    return CheckResult(len(records), len(bad), bad[:5], note=note)


#: what each kernel of l02_asm_zoo.cu computes when its asm statement is right (h100lab.measure.l02.asm_zoo_run)
ASM_ZOO_INTENDED = {"count": [128], "reread": [1000] * 32, "accumulate": [100 * t + 5 for t in range(32)]}


def asm_zoo_intended(kernel: str) -> list[int]:
    """What ``kernel`` of the asm zoo computes when its statement is right."""
    return ASM_ZOO_INTENDED[kernel.split("_")[0]]


def check_asm_zoo(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Every corrected kernel computed what it should, every buggy twin did not (the bug is real on the GPU,
    not an artefact of the emulator)."""
    bad = []
    for r in records:
        right = list(r["output"]) == asm_zoo_intended(r["kernel"])
        if right != (r["role"] == "fix"):
            bad.append({"kernel": r["kernel"], "output": r["output"][:4]})
    return CheckResult(len(records), len(bad), bad[:5], note="fixes right, bugs wrong" if not bad else "")


def asm_zoo_report() -> dict[str, Any]:
    """The committed ``l02/asm_zoo`` records (``source`` None when absent) keyed by kernel name."""
    from .. import data

    if not data.available("l02/asm_zoo"):
        return {"source": None, "command": "python -m h100lab.measure.l02 --only asm,sass"}
    ds = data.load("l02/asm_zoo")
    return {"source": "dataset", "where": ds.describe(), "outputs": {r["kernel"]: r["output"] for r in ds.records},
            "check": check_asm_zoo(ds.records)}


def histogram_report() -> dict[str, Any]:
    """The committed ``l02/cluster_histogram`` dataset, its check and its table (``source`` None when absent)."""
    from .. import data

    command = "python -m h100lab.measure.l02 --only histogram"
    if not data.available("l02/cluster_histogram"):
        return {"source": None, "command": command}
    ds = data.load("l02/cluster_histogram")
    return {"source": "dataset", "where": ds.describe(), "records": ds.records, "check": check_histogram(ds.records),
            "rows": histogram_rows(ds.records), "command": command}


def cluster_sync_rows(records: Sequence[dict[str, Any]], threads: int = 128) -> list[dict[str, Any]]:
    """``cluster.sync()`` (``barrier.cluster.arrive`` + ``wait``) cost per cluster size for ``threads``-thread CTAs,
    from ``l03/sync_cost`` records (kind ``cluster_barrier``): ns per barrier with the default ``.release`` arrive
    and with ``.relaxed``, each without and with a store before the arrive; and ``bar.sync`` (one CTA) beside it."""
    rows: dict[int, dict[str, Any]] = {}
    for r in records:
        if r.get("kind") != "cluster_barrier" or r.get("threads") != threads or not r.get("ok", True):
            continue
        row = rows.setdefault(r["cluster"], {"cluster size": r["cluster"]})
        row[f"{r['sem']}{', after a store' if r.get('store') else ''} (ns)"] = r["ns"]
    bar = [r["ns"] for r in records if r.get("kind") == "bar_sync" and r.get("threads") == threads]
    for row in rows.values():
        row["bar.sync, one CTA (ns)"] = bar[0] if bar else None
    return [rows[k] for k in sorted(rows)]


@silicon_check("DSMEM histogram: exact counts for every kernel, bin count and cluster size", lesson=2,
               dataset="l02/cluster_histogram")
def _histogram(ds: Dataset) -> CheckResult:
    return check_histogram(ds.records)


@silicon_check("Inline-PTX bug zoo: each bug changes the GPU's result, each fix restores it", lesson=2,
               dataset="l02/asm_zoo")
def _asm_zoo(ds: Dataset) -> CheckResult:
    return check_asm_zoo(ds.records)


def swizzle_model(mode: int) -> int:
    """The model's wavefronts for mode ``mode`` of ``l02_swizzle_read.cu``: lane t reads row t (byte 0) of a tile
    with 128-byte rows, 2 or 16 bytes wide, plain or through the 128-byte swizzle
    (:func:`h100lab.memory.banks.wavefronts`, :func:`h100lab.memory.swizzle.swizzle_address`)."""
    from ..measure.l02 import SWIZZLE_MODES
    from ..memory.banks import wavefronts
    from ..memory.swizzle import swizzle_address

    _, width, swizzled = SWIZZLE_MODES[mode]
    addrs = [int(swizzle_address(128 * t, "128B")) if swizzled else 128 * t for t in range(32)]
    return int(wavefronts(addrs, 4 if width < 4 else width))


def check_swizzle_read(records: Sequence[dict[str, Any]]) -> CheckResult:
    """Nsight Compute's wavefronts for each access of ``l02_swizzle_read.cu`` equal the model's."""
    bad = [dict(r, model=swizzle_model(r["mode"])) for r in records if r["wavefronts"] != swizzle_model(r["mode"])]
    return CheckResult(len(records), len(bad), bad[:5],
                       note=", ".join(f"{r['access']}: {r['wavefronts']}" for r in records))


@silicon_check("Swizzled and plain column reads: model wavefronts equal Nsight Compute's", lesson=2,
               dataset="l02/swizzle_read")
def _swizzle_read(ds: Dataset) -> CheckResult:
    return check_swizzle_read(ds.records)
