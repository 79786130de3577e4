"""Where each CTA of a cluster launch lands: cluster domain and SM (``%smid``) — measured numbering, modelled choice.

The guarantee is documented: all CTAs of a cluster run at the same time on SMs of one GPC [CPG §5.2.1
#thread-block-clusters]. The domains and the ``%smid`` numbering are measured on an H200
(:mod:`h100lab.cluster.gpc`); *which* domain and SMs the hardware picks for a given cluster is not
documented.

**[model] placement policy**, compared with the H200's full waves in ``data/l02/placement.json`` (the
domains fill to the rule's capacity, and the SMs left idle are the ones the model leaves idle):

1. clusters are dealt in launch order (cluster id, x fastest) to the domain with the most room left for
   another cluster (ties: lowest domain index) — the GPU spreads work over its GPCs;
2. inside the domain, CTAs go in rank order to the usable SM with the fewest CTAs, preferring an SM that
   holds no CTA of the same cluster yet (ties: lowest ``%smid``) — so a cluster spreads over distinct SMs;
3. clusters beyond the capacity (:func:`h100lab.cluster.occupancy.cluster_capacity`) wait for a later
   wave and are listed in ``waiting``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..specs import H200_SXM, DeviceSpec
from .gpc import H200_RULE, RULES, CgaLayout, GpcRule
from .occupancy import cga_layout
from .shape import ClusterError, cluster_launch
from .sregs import all_special_registers

__all__ = ["CtaPlacement", "Placement", "place_clusters", "place_launch"]


@dataclass(frozen=True)
class CtaPlacement:
    cluster: int              # linear cluster id (launch order)
    rank: int                 # %cluster_ctarank
    domain: int               # index into Placement.domains (virtual GPCs, then singleton TPCs)
    sm: int                   # %smid (the H200's numbering)
    block: tuple[int, int, int] | None = None   # blockIdx, when placed from a launch


@dataclass(frozen=True)
class Placement:
    """One wave of a cluster launch on the cluster domains: every placed CTA, and the clusters left waiting."""

    cluster_size: int
    blocks_per_sm: int
    layout: CgaLayout
    sm_ids: tuple[tuple[int, ...], ...]      # per domain
    usable: tuple[tuple[int, ...], ...]      # per domain: SMs clusters of this size may use
    ctas: tuple[CtaPlacement, ...]
    waiting: tuple[int, ...]
    assumed: bool

    @property
    def domains(self) -> tuple[int, ...]:
        """SMs of each domain (virtual GPCs, then singleton TPCs)."""
        return self.layout.domains

    @property
    def sm_load(self) -> dict[int, int]:
        """CTAs on each SM (every SM listed, 0 when idle)."""
        load = {s: 0 for g in self.sm_ids for s in g}
        for c in self.ctas:
            load[c.sm] += 1
        return load

    @property
    def idle_sms(self) -> list[int]:
        """SMs with no CTA in this wave."""
        return [s for s, n in self.sm_load.items() if n == 0]

    def clusters_on(self, domain: int) -> list[int]:
        """Cluster ids placed in one domain."""
        return sorted({c.cluster for c in self.ctas if c.domain == domain})

    def cluster_sms(self, cluster: int) -> list[int]:
        """SMs of one cluster's CTAs, in rank order."""
        return [c.sm for c in sorted((c for c in self.ctas if c.cluster == cluster), key=lambda c: c.rank)]


def place_clusters(num_clusters: int, cluster_size: int, blocks_per_sm: int, spec: DeviceSpec = H200_SXM, *,
                   grouping: CgaLayout | Sequence[int] | None = None, rule: GpcRule | str | None = None) -> Placement:
    """Place ``num_clusters`` clusters of ``cluster_size`` CTAs with ``blocks_per_sm`` CTAs per SM ([model]
    policy of the module text; all CTAs of a cluster in one domain [CPG §5.2.1]). The number placed equals
    the rule's capacity (``cudaOccupancyMaxActiveClusters``) when enough are launched."""
    if num_clusters < 0 or cluster_size < 1 or blocks_per_sm < 0:
        raise ClusterError("need num_clusters >= 0, cluster_size >= 1, blocks_per_sm >= 0")
    if cluster_size > 16:
        raise ClusterError(f"a cluster has at most 16 CTAs on sm_90, got {cluster_size}")
    if isinstance(rule, str) and rule not in RULES:
        raise ClusterError(f"unknown GPC rule {rule!r}; choose one of {list(RULES)}")
    rule = RULES[rule] if isinstance(rule, str) else (rule or H200_RULE)
    lay, assumed = cga_layout(spec, grouping)
    g = lay.domains
    ids = [sorted(x) for x in lay.sm_ids()]
    usable = [tuple(ids[i][:rule.usable_sms(n, cluster_size)]) for i, n in enumerate(g)]
    per_sm = rule.ctas_per_sm(blocks_per_sm)
    room = [rule.clusters(n, blocks_per_sm, cluster_size) for n in g]
    load = {s: 0 for gi in ids for s in gi}
    ctas: list[CtaPlacement] = []
    waiting: list[int] = []
    for k in range(num_clusters):
        gi = max(range(len(g)), key=lambda i: (room[i], -i))
        if room[gi] <= 0:
            waiting.append(k)
            continue
        room[gi] -= 1
        mine: set[int] = set()
        order = {s: j for j, s in enumerate(usable[gi])}
        for r in range(cluster_size):
            free = [s for s in usable[gi] if load[s] < per_sm]
            if not free:  # cannot happen while room[gi] >= 0 (capacity counts slots); kept as a guard
                raise ClusterError(f"placement ran out of CTA slots in domain {gi}")
            s = min(free, key=lambda s: (s in mine, load[s], order[s]))
            load[s] += 1
            mine.add(s)
            ctas.append(CtaPlacement(k, r, gi, s))
    return Placement(cluster_size, blocks_per_sm, lay, tuple(tuple(x) for x in ids), tuple(usable), tuple(ctas),
                     tuple(waiting), assumed)


def place_launch(grid, cluster, blocks_per_sm: int, spec: DeviceSpec = H200_SXM, *, non_portable: bool = False,
                 grouping: CgaLayout | Sequence[int] | None = None, rule: GpcRule | str | None = None) -> Placement:
    """:func:`place_clusters` for a real launch shape: validates grid and cluster (sizes, divisibility), numbers
    clusters x-fastest and attaches each CTA's ``blockIdx`` (from its cluster id and rank)."""
    launch = cluster_launch(grid, cluster, non_portable=non_portable, spec=spec)
    p = place_clusters(launch.num_clusters, launch.cluster_size, blocks_per_sm, spec, grouping=grouping, rule=rule)
    blocks = {(r.cluster_linear_id, r.cluster_ctarank): r.ctaid
              for r in all_special_registers(grid, cluster, non_portable=non_portable)}
    ctas = tuple(CtaPlacement(c.cluster, c.rank, c.domain, c.sm, blocks[(c.cluster, c.rank)]) for c in p.ctas)
    return Placement(p.cluster_size, p.blocks_per_sm, p.layout, p.sm_ids, p.usable, ctas, p.waiting, p.assumed)
