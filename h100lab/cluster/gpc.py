"""Where clusters can run: the GPU's *cluster domains* (virtual GPCs and singleton TPCs), the rule that turns
a domain's SMs into whole clusters, and the search that found both on an H200.

A cluster's CTAs are always co-scheduled on the SMs of **one GPC** [CPG §5.2.1 #thread-block-clusters].
A GH100 die has 8 GPCs × 9 TPCs × 2 SMs = 144 SMs; an H100 SXM / H200 enables 66 TPCs (132 SMs), and which
TPCs are fused off differs from chip to chip. For cluster scheduling ("CGA scheduling") Hopper does not
use the physical GPCs as they come out of floorsweeping. NVIDIA's GPU driver source describes the scheme
[NVIDIA nvgpu driver, ``gr_config`` "skyline" code, comments on virtual GPCs and singleton TPCs —
secondary: a driver for other chips, read for the concept]:

* each GPC gets a **virtual GPC id**, numbered by its count of working TPCs, smallest first;
* a per-SKU template, the **skyline**, says how many TPCs of each virtual GPC take part in cluster
  scheduling. It is the same for every chip of a product, so every H200 runs the same number of clusters
  whatever its fused-off TPCs;
* the TPCs a GPC has beyond its skyline are pulled out as **singleton TPCs**: each is a scheduling
  domain of its own (2 SMs), so it runs clusters of at most 2 CTAs.

**What an H200 showed** (``python -m h100lab.measure.l02``, ``data/l02/gpc_map.json`` and
``data/l02/cluster_occupancy.json``, [HW]): SMs that ever share a cluster form 8 domains of 18, 18, 16,
16, 16, 16, 16 and 8 SMs — the virtual GPCs' skyline, 62 TPCs — plus 4 domains of 2 SMs (``%smid``
124–131) that never join a cluster of more than 2 CTAs: the singleton TPCs. ``%smid`` is dealt TPC by
TPC across the virtual GPCs, smallest first, then to the singletons (:meth:`CgaLayout.sm_ids` reproduces
all 132 ids). Over 1450 ``cudaOccupancyMaxActiveClusters`` answers (cluster sizes 1–16 in 1-D, 2-D and
3-D shapes, 5 block sizes, 1–32 CTAs per SM) exactly one rule and layout fit (:func:`identify`):

* a domain of ``n`` SMs holds ``⌊n·b′/c⌋`` clusters of ``c`` CTAs if ``n ≥ c``, else none — each CTA
  of a cluster on its own SM (every one of 319 clusters observed on the H200 was), with
* ``b′ = min(b, 8)``: the API never counts more than **8 CTAs per SM** for a cluster launch, even where
  ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` allows 16 or 32.

Which physical GPC each singleton TPC belongs to is not visible from CUDA (no special register names the
GPC, and singletons never share a cluster); the skyline template bounds it: the 8 GPCs hold 9, 9, 8, 8, 8,
8, 8 and at least 4 TPCs. The simplest physical reading — the 4 singletons are the short GPC's other 4
TPCs, giving 8 GPCs of 18, 18, 16, 16, 16, 16, 16, 16 SMs — is what an H100's driver table showed
(accel-sim/gpu-app-collection PR #87, [secondary]) and what ``H200_SXM.gpc_sm_counts`` records.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

__all__ = [
    "CgaLayout", "GpcRule", "RULES", "H200_RULE", "H200_CGA", "MEASURED_LAYOUTS", "H200_MEASURED",
    "H200_MEASURED_BLOCKS_PER_SM", "CLUSTER_CTAS_PER_SM", "candidate_layouts", "derivation", "identify",
    "gpcs_from_clusters", "layout_from_domains",
]

#: [HW] cudaOccupancyMaxActiveClusters counts at most 8 CTAs per SM for a cluster launch (H200, driver 580).
CLUSTER_CTAS_PER_SM = 8


@dataclass(frozen=True)
class CgaLayout:
    """The cluster-scheduling domains of a GPU: ``vgpc_sms`` (SMs of each virtual GPC inside the skyline,
    largest first) and ``singleton_tpcs`` TPCs of ``sms_per_tpc`` SMs that are domains of their own."""

    vgpc_sms: tuple[int, ...]
    singleton_tpcs: int = 0
    sms_per_tpc: int = 2

    def __post_init__(self):
        v = tuple(operator.index(n) for n in self.vgpc_sms)
        if not v or any(n <= 0 or n % self.sms_per_tpc for n in v):
            raise ValueError(f"virtual GPCs hold whole TPCs of {self.sms_per_tpc} SMs (and at least one), got {v}")
        if operator.index(self.singleton_tpcs) < 0:
            raise ValueError("the number of singleton TPCs is >= 0")
        object.__setattr__(self, "vgpc_sms", tuple(sorted(v, reverse=True)))

    @property
    def domains(self) -> tuple[int, ...]:
        """SMs of every cluster domain: the virtual GPCs (largest first), then one entry per singleton TPC."""
        return self.vgpc_sms + (self.sms_per_tpc,) * self.singleton_tpcs

    @property
    def sm_count(self) -> int:
        return sum(self.domains)

    def is_singleton(self, domain: int) -> bool:
        """Whether domain index ``domain`` (into :attr:`domains`) is a singleton TPC."""
        return domain >= len(self.vgpc_sms)

    def sm_ids(self) -> list[list[int]]:
        """``%smid`` of each domain's SMs, as an H200 numbers them ([HW] ``data/l02/gpc_map.json``): TPC
        ``k`` of every virtual GPC in turn — virtual GPCs in order of increasing size (the driver's virtual
        GPC ids), 2 ids per TPC — then the singleton TPCs. Lists follow :attr:`domains`."""
        t = self.sms_per_tpc
        order = sorted(range(len(self.vgpc_sms)), key=lambda i: (self.vgpc_sms[i], i))
        out: list[list[int]] = [[] for _ in self.domains]
        sm = 0
        for k in range(max(self.vgpc_sms) // t):
            for i in order:
                if k < self.vgpc_sms[i] // t:
                    out[i] += list(range(sm, sm + t))
                    sm += t
        for j in range(len(self.vgpc_sms), len(self.domains)):
            out[j] = list(range(sm, sm + t))
            sm += t
        return out

    def fits_gpcs(self, gpc_sm_counts: Sequence[int]) -> bool:
        """Whether physical GPCs of ``gpc_sm_counts`` SMs can hold this layout: one virtual GPC per GPC
        (sorted pairing, each GPC at least its skyline) and the singleton TPCs in the GPCs' surplus."""
        g = sorted((operator.index(n) for n in gpc_sm_counts), reverse=True)
        if len(g) != len(self.vgpc_sms) or sum(g) != self.sm_count:
            return False
        return all(p >= v and (p - v) % self.sms_per_tpc == 0 for p, v in zip(g, self.vgpc_sms))


def layout_from_domains(domains: Sequence[int], sms_per_tpc: int = 2) -> CgaLayout:
    """The :class:`CgaLayout` of measured domain sizes (e.g. ``data/l02/gpc_map.json``'s ``sm_count``s): a
    domain of exactly one TPC is a singleton TPC, every larger one a virtual GPC."""
    d = [operator.index(n) for n in domains]
    if not d or any(n <= 0 for n in d):
        raise ValueError(f"domains hold at least one SM each, got {tuple(d)}")
    single = sum(1 for n in d if n == sms_per_tpc)
    v = tuple(n for n in d if n != sms_per_tpc)
    if not v:            # only TPC-sized domains: read them as virtual GPCs of one TPC
        return CgaLayout(tuple(d), 0, sms_per_tpc)
    return CgaLayout(v, single, sms_per_tpc)


@dataclass(frozen=True)
class GpcRule:
    """How many clusters one domain of ``n`` SMs holds, at ``b`` CTAs per SM, for clusters of ``c`` CTAs.

    ``withheld_sms`` SMs of every domain are not usable by clusters of more than ``free_size`` CTAs;
    ``distinct_sms`` requires each CTA of a cluster to sit on its own SM; ``max_ctas_per_sm`` caps ``b``.
    """

    name: str
    withheld_sms: int
    free_size: int
    distinct_sms: bool
    description: str
    max_ctas_per_sm: int | None = None

    def usable_sms(self, n_sms: int, cluster_size: int) -> int:
        """SMs of a domain of ``n_sms`` that clusters of ``cluster_size`` CTAs can use."""
        u = max(0, n_sms - self.withheld_sms) if cluster_size > self.free_size else n_sms
        return 0 if self.distinct_sms and u < cluster_size else u

    def ctas_per_sm(self, blocks_per_sm: int) -> int:
        """CTAs per SM the rule counts: ``blocks_per_sm``, capped at :attr:`max_ctas_per_sm`."""
        return blocks_per_sm if self.max_ctas_per_sm is None else min(blocks_per_sm, self.max_ctas_per_sm)

    def clusters(self, n_sms: int, blocks_per_sm: int, cluster_size: int) -> int:
        """Clusters of ``cluster_size`` CTAs one domain of ``n_sms`` SMs holds at once."""
        if n_sms < 0 or blocks_per_sm < 0 or cluster_size < 1:
            raise ValueError("SM count and blocks per SM are >= 0, a cluster has >= 1 CTA")
        return (self.usable_sms(n_sms, cluster_size) * self.ctas_per_sm(blocks_per_sm)) // cluster_size


def _rules() -> dict[str, GpcRule]:
    base = [("pooled", 0, 16, False, "a domain's n·{b} CTA slots are pooled: ⌊n·{b}/c⌋"),
            ("withheld-sm", 1, 2, False, "one SM per domain withheld from clusters over 2 CTAs: ⌊(n−1)·{b}/c⌋ for c > 2"),
            ("distinct-sms", 0, 16, True, "each CTA of a cluster on its own SM: ⌊n·{b}/c⌋ if n ≥ c, else 0")]
    cap = CLUSTER_CTAS_PER_SM
    out = {}
    for name, w, f, d, text in base:
        out[name] = GpcRule(name, w, f, d, text.format(b="b"))
        out[f"{name}-cap{cap}"] = GpcRule(f"{name}-cap{cap}", w, f, d, text.format(b=f"min(b, {cap})"), cap)
    return out


#: The candidate rules; :func:`identify` tests each against measured records.
RULES: dict[str, GpcRule] = _rules()
#: [HW] the one rule that reproduces every cudaOccupancyMaxActiveClusters answer of an H200.
H200_RULE = RULES["distinct-sms-cap8"]
#: [HW] the H200's cluster domains (``data/l02/gpc_map.json``): 8 virtual GPCs and 4 singleton TPCs.
H200_CGA = CgaLayout((18, 18, 16, 16, 16, 16, 16, 8), singleton_tpcs=4)
#: Layouts measured per product (``DeviceSpec.name``).
MEASURED_LAYOUTS: dict[str, CgaLayout] = {"H200 SXM": H200_CGA}

#: [HW] hopper-spec-facts §12: cudaOccupancyMaxActiveClusters on an H200, 128 threads, 8 blocks/SM.
H200_MEASURED: Mapping[int, int] = {1: 1056, 2: 528, 4: 248, 8: 124, 16: 58}
H200_MEASURED_BLOCKS_PER_SM = 8


@lru_cache(maxsize=64)
def _partitions(total: int, parts: int, lo: int, hi: int) -> tuple[tuple[int, ...], ...]:
    """Non-increasing tuples of ``parts`` integers in [lo, hi] summing to ``total``."""
    out: list[tuple[int, ...]] = []

    def rec(rem: int, k: int, mx: int, acc: tuple[int, ...]):
        if k == 0:
            if rem == 0:
                out.append(acc)
            return
        for v in range(min(mx, rem), lo - 1, -1):
            if v * k >= rem and rem - v >= lo * (k - 1):
                rec(rem - v, k - 1, v, acc + (v,))
    rec(total, parts, hi, ())
    return tuple(out)


def candidate_layouts(tpc_count: int = 66, gpcs: Iterable[int] = (7, 8), max_tpcs_per_gpc: int = 9,
                      singletons: Iterable[int] = range(0, 9), sms_per_tpc: int = 2) -> list[CgaLayout]:
    """Every layout of ``tpc_count`` TPCs (66 on H100 SXM / H200): ``g`` virtual GPCs of at most
    ``max_tpcs_per_gpc`` TPCs (9 on GH100) plus ``s`` singleton TPCs, for ``g`` in ``gpcs`` and ``s`` in
    ``singletons``."""
    out = []
    for s in singletons:
        for g in gpcs:
            for p in _partitions(tpc_count - s, g, 1, max_tpcs_per_gpc):
                out.append(CgaLayout(tuple(sms_per_tpc * t for t in p), s, sms_per_tpc))
    return out


def _fits(rule: GpcRule, layout: CgaLayout, recs: Sequence[tuple[int, int, int]]) -> bool:
    d = layout.domains
    return all(sum(rule.clusters(n, b, c) for n in d) == v for c, b, v in recs)


def _records(records: Iterable[Mapping]) -> list[tuple[int, int, int]]:
    recs = [(int(r["cluster_size"]), int(r["blocks_per_sm"]), int(r["clusters"])) for r in records
            if r.get("blocks_per_sm") is not None and r.get("clusters") is not None]
    if not recs:
        raise ValueError("identify needs at least one measured record with blocks_per_sm and clusters")
    return recs


def identify(records: Iterable[Mapping], *, rules: Iterable[GpcRule] | None = None,
             layouts: Sequence[CgaLayout] | None = None) -> list[tuple[str, CgaLayout]]:
    """Every ``(rule name, layout)`` for which the rule reproduces every measured record ``{cluster_size,
    blocks_per_sm, clusters}`` (e.g. ``data/l02/cluster_occupancy.json``; records without an answer are
    skipped). ``layouts`` defaults to :func:`candidate_layouts`. One answer left: the data identify both."""
    recs = _records(records)
    cands = candidate_layouts() if layouts is None else layouts
    return [(rule.name, lay) for rule in (rules or RULES.values()) for lay in cands if _fits(rule, lay, recs)]


def derivation(records: Iterable[Mapping] | None = None) -> list[dict]:
    """For each candidate rule: how many layouts of :func:`candidate_layouts` reproduce ``records``
    (default: the five H200 answers :data:`H200_MEASURED`, at 8 CTAs per SM), and one of them. Rows
    ``{rule, description, layouts, example, predicted}``; ``predicted`` is the rule's answer for the
    five cluster sizes of :data:`H200_MEASURED` on :data:`H200_CGA` at 8 CTAs per SM."""
    if records is None:
        records = [{"cluster_size": c, "blocks_per_sm": H200_MEASURED_BLOCKS_PER_SM, "clusters": v}
                   for c, v in H200_MEASURED.items()]
    recs = _records(records)
    cands = candidate_layouts()
    rows = []
    for rule in RULES.values():
        found = [lay for lay in cands if _fits(rule, lay, recs)]
        pred = {c: sum(rule.clusters(n, H200_MEASURED_BLOCKS_PER_SM, c) for n in H200_CGA.domains)
                for c in H200_MEASURED}
        rows.append({"rule": rule.name, "description": rule.description, "layouts": len(found),
                     "example": found[0] if found else None, "predicted": pred})
    return rows


def gpcs_from_clusters(clusters: Iterable[Iterable[int]]) -> list[list[int]]:
    """Group SM ids into cluster domains from observed clusters: the CTAs of one cluster always share a
    GPC [CPG §5.2.1], so SMs that ever host CTAs of one cluster are in the same domain (union–find over the
    ``%smid`` sets of many clusters). A singleton TPC shows up as a domain of its own 2 SMs. Returns sorted
    SM lists, largest domain first."""
    parent: dict[int, int] = {}

    def find(a: int) -> int:
        parent.setdefault(a, a)
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for sms in clusters:
        sms = [int(s) for s in sms]
        for s in sms:
            find(s)
        for s in sms[1:]:
            ra, rb = find(sms[0]), find(s)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for s in parent:
        groups.setdefault(find(s), []).append(s)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))
