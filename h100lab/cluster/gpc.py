"""How the enabled SMs are grouped into GPCs, and how many clusters one GPC holds — with the derivation.

A cluster's CTAs are always co-scheduled on the SMs of **one GPC** [CPG §5.2.1 #thread-block-clusters].
So the number of clusters a GPU runs at once depends on how its enabled SMs are spread over its GPCs,
which differs from chip to chip (a GH100 die has 8 GPCs × 9 TPCs × 2 SMs = 144 SMs; an H100 SXM / H200
enables 132 of them, and which TPCs are fused off is not documented).
``cudaOccupancyMaxActiveClusters`` knows the grouping; PTX does not expose it.

**What was measured** (hopper-spec-facts §12, [HW]): on an H200, a 128-thread kernel limited to 8
blocks/SM gives ``cudaOccupancyMaxActiveClusters`` = 1056, 528, 248, 124, 58 for clusters of 1, 2, 4,
8, 16 CTAs.

**Derivation** (:func:`derivation` recomputes it):

1. *Pooled slots* — a GPC of ``n`` SMs offers ``n·b`` CTA slots and holds ``⌊n·b / c⌋`` clusters — gives
   ``132·8/4 = 264`` clusters of 4 for **every** grouping, not 248. With ``b = 8`` and ``c`` dividing 8
   even a single SM holds whole clusters, so no grouping can lose capacity: 248 = 264 − 16 means that
   64 CTA slots — 8 SMs' worth — are not usable by clusters of 4.
2. *Distinct SMs* (each CTA of a cluster on its own SM) loses nothing either for ``c ≤ n``; it would need
   GPCs of fewer than 4 SMs. Rejected for 8 GPCs.
3. *One SM per GPC withheld from clusters larger than 2*: a GPC of ``n`` SMs holds ``⌊(n−1)·b / c⌋``
   clusters of ``c > 2`` CTAs and ``⌊n·b / c⌋`` of ``c ≤ 2``. With 8 GPCs of even SM counts (whole
   TPCs) this reproduces all five numbers: ``c = 4, 8`` → ``Σ(n−1)·8/c`` = 248, 124; ``c = 16`` →
   ``Σ⌊(n−1)/2⌋ = Σ(n/2 − 1)`` = 66 − 8 = 58. **Every** grouping of 132 SMs into 8 GPCs of whole TPCs
   fits, so these five numbers fix the rule but not the grouping.

**[model] choices, to be replaced by measurement**: the rule of step 3 (:data:`CANDIDATE_RULE`) and the
grouping ``(18, 18, 16, 16, 16, 16, 16, 16)`` (:data:`CANDIDATE_GROUPING`: two full GPCs, one TPC fused
off in each of the other six). ``python -m h100lab.measure.l02`` measures the grouping directly (SMs that
ever share a cluster are in one GPC, read from ``%smid``) and sweeps ``cudaOccupancyMaxActiveClusters``
over cluster sizes 1–16, 2-D shapes, block sizes and shared-memory sizes (blocks/SM 1…32), which
separates the candidate rules (:func:`identify`). The measured grouping belongs in the device spec's
``gpc_sm_counts`` field.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

__all__ = [
    "GpcRule", "RULES", "CANDIDATE_RULE", "CANDIDATE_GROUPING", "H200_MEASURED", "H200_MEASURED_BLOCKS_PER_SM",
    "candidate_groupings", "derivation", "identify", "gpcs_from_clusters", "sm_ids",
]


@dataclass(frozen=True)
class GpcRule:
    """How many clusters one GPC holds, given its SM count ``n``, blocks per SM ``b`` and cluster size ``c``.

    ``withheld_sms`` SMs of every GPC are not usable by clusters of more than ``free_size`` CTAs;
    ``distinct_sms`` requires each CTA of a cluster to sit on its own SM.
    """

    name: str
    withheld_sms: int
    free_size: int
    distinct_sms: bool
    description: str

    def usable_sms(self, n_sms: int, cluster_size: int) -> int:
        """SMs of a GPC of ``n_sms`` that clusters of ``cluster_size`` CTAs can use."""
        return max(0, n_sms - self.withheld_sms) if cluster_size > self.free_size else n_sms

    def clusters(self, n_sms: int, blocks_per_sm: int, cluster_size: int) -> int:
        """Clusters of ``cluster_size`` CTAs one GPC of ``n_sms`` SMs holds at once ([model] rule)."""
        if n_sms < 0 or blocks_per_sm < 0 or cluster_size < 1:
            raise ValueError("SM count and blocks per SM are >= 0, a cluster has >= 1 CTA")
        u = self.usable_sms(n_sms, cluster_size)
        if self.distinct_sms and u < cluster_size:
            return 0
        return (u * blocks_per_sm) // cluster_size


RULES: dict[str, GpcRule] = {r.name: r for r in [
    GpcRule("pooled", 0, 16, False, "a GPC's n·b CTA slots are pooled: ⌊n·b/c⌋ clusters"),
    GpcRule("distinct-sms", 0, 16, True, "each CTA of a cluster on its own SM: ⌊n·b/c⌋ if n ≥ c, else 0"),
    GpcRule("withheld-sm", 1, 2, False,
            "one SM per GPC withheld from clusters of more than 2 CTAs: ⌊(n−1)·b/c⌋ for c > 2, ⌊n·b/c⌋ otherwise"),
]}

#: [HW] hopper-spec-facts §12: cudaOccupancyMaxActiveClusters on an H200, 128 threads, 8 blocks/SM.
H200_MEASURED: Mapping[int, int] = {1: 1056, 2: 528, 4: 248, 8: 124, 16: 58}
H200_MEASURED_BLOCKS_PER_SM = 8

#: [model] the rule that reproduces :data:`H200_MEASURED` (see the module text).
CANDIDATE_RULE = RULES["withheld-sm"]
#: [model] one grouping consistent with :data:`H200_MEASURED` under :data:`CANDIDATE_RULE`.
CANDIDATE_GROUPING: tuple[int, ...] = (18, 18, 16, 16, 16, 16, 16, 16)


@lru_cache(maxsize=64)
def _partitions(total: int, parts: int, lo: int, hi: int, step: int) -> tuple[tuple[int, ...], ...]:
    """Non-increasing tuples of ``parts`` multiples of ``step`` in [lo, hi] summing to ``total``."""
    out: list[tuple[int, ...]] = []

    def rec(rem: int, k: int, mx: int, acc: tuple[int, ...]):
        if k == 0:
            if rem == 0:
                out.append(acc)
            return
        v = mx
        while v >= lo:
            if v * k >= rem and rem - v >= lo * (k - 1):
                rec(rem - v, k - 1, v, acc + (v,))
            v -= step
    top = hi - (hi - lo) % step if step > 1 else hi
    rec(total, parts, top, ())
    return tuple(out)


def candidate_groupings(measured: Mapping[int, int], blocks_per_sm: int, rule: GpcRule = CANDIDATE_RULE, *,
                        sm_count: int = 132, gpcs: int = 8, max_sms_per_gpc: int = 18,
                        whole_tpcs: bool = True) -> list[tuple[int, ...]]:
    """Every grouping of ``sm_count`` SMs into ``gpcs`` GPCs (at most ``max_sms_per_gpc`` each — 18 on
    GH100 — and whole TPCs of 2 SMs if ``whole_tpcs``) for which ``rule`` reproduces every measured
    ``cluster size → max active clusters``."""
    step = 2 if whole_tpcs else 1
    lo = step
    return [p for p in _partitions(sm_count, gpcs, lo, max_sms_per_gpc, step)
            if all(sum(rule.clusters(n, blocks_per_sm, c) for n in p) == v for c, v in measured.items())]


def derivation(measured: Mapping[int, int] = H200_MEASURED, blocks_per_sm: int = H200_MEASURED_BLOCKS_PER_SM,
               sm_count: int = 132, gpcs: int = 8) -> list[dict]:
    """For each candidate rule: how many groupings reproduce the measurement, and one example.
    Rows ``{rule, description, groupings, example, predicted}`` (``predicted`` under
    :data:`CANDIDATE_GROUPING`)."""
    rows = []
    for rule in RULES.values():
        found = candidate_groupings(measured, blocks_per_sm, rule, sm_count=sm_count, gpcs=gpcs)
        pred = {c: sum(rule.clusters(n, blocks_per_sm, c) for n in CANDIDATE_GROUPING) for c in measured}
        rows.append({"rule": rule.name, "description": rule.description, "groupings": len(found),
                     "example": found[0] if found else None, "predicted": pred})
    return rows


def identify(records: Iterable[Mapping], *, sm_count: int = 132, gpc_counts: Sequence[int] = (7, 8, 9),
             rules: Iterable[GpcRule] | None = None, whole_tpcs: bool = True) -> list[tuple[str, tuple[int, ...]]]:
    """Every ``(rule, grouping)`` consistent with measured records ``{cluster_size, blocks_per_sm,
    clusters}`` (e.g. ``data/l02/cluster_occupancy.json``). One answer left means the data identify both."""
    recs = [(int(r["cluster_size"]), int(r["blocks_per_sm"]), int(r["clusters"])) for r in records]
    if not recs:
        raise ValueError("identify needs at least one measured record")
    out = []
    for rule in (rules or RULES.values()):
        for g in gpc_counts:
            step = 2 if whole_tpcs else 1
            for p in _partitions(sm_count, g, step, 18, step):
                if all(sum(rule.clusters(n, b, c) for n in p) == v for c, b, v in recs):
                    out.append((rule.name, p))
    return out


def gpcs_from_clusters(clusters: Iterable[Iterable[int]]) -> list[list[int]]:
    """Group SM ids into GPCs from observed clusters: the CTAs of one cluster always share a GPC
    [CPG §5.2.1], so SMs that ever host CTAs of one cluster are in the same GPC (union–find over the
    ``%smid`` sets of many clusters). Returns sorted SM lists, largest GPC first."""
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


def sm_ids(grouping: Sequence[int]) -> list[list[int]]:
    """``%smid`` values of each GPC's SMs ([model] numbering): SM ids are dealt TPC by TPC across the
    GPCs — TPC ``k`` of every GPC in turn, two SM ids per TPC — as an H100 was observed to number them
    (one GPC holding SMs 0, 16, 32, 48: accel-sim/gpu-app-collection PR #87, [secondary]).
    The real numbering of a chip is read from ``data/l02/gpc_map.json``."""
    if any(n <= 0 for n in grouping):
        raise ValueError(f"every GPC has at least one SM, got {tuple(grouping)}")
    tpcs = [(n + 1) // 2 for n in grouping]
    out: list[list[int]] = [[] for _ in grouping]
    sm = 0
    for k in range(max(tpcs)):
        for g, n in enumerate(grouping):
            for s in range(2):
                if 2 * k + s < n:
                    out[g].append(sm)
                    sm += 1
    return out
