"""Where each CTA of a cluster launch lands: GPC and SM (``%smid``) — a labelled model.

The guarantee is documented: all CTAs of a cluster run at the same time on SMs of one GPC [CPG §5.2.1
#thread-block-clusters]. *Which* GPC and *which* SMs the hardware picks is not documented.

**[model] placement policy** (an assumption, compared with the placement an H200 reports in
``data/l02/placement.json``):

1. clusters are dealt in launch order (cluster id, x fastest) to the GPC with the most room left for
   another cluster (ties: lowest GPC index) — the GPU spreads work over its GPCs;
2. inside the GPC, CTAs go in rank order to the usable SM with the fewest CTAs, preferring an SM that
   holds no CTA of the same cluster yet (ties: the GPC's SM order) — so a cluster spreads over distinct
   SMs when it can, as observed on H100s;
3. SM ids follow :func:`h100lab.cluster.gpc.sm_ids`; withheld SMs (:mod:`h100lab.cluster.gpc`) are a
   GPC's last SMs;
4. clusters beyond the capacity (:func:`h100lab.cluster.occupancy.cluster_capacity`) wait for a later
   wave and are listed in ``waiting``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..specs import H200_SXM, DeviceSpec
from .gpc import CANDIDATE_RULE, RULES, GpcRule, sm_ids
from .occupancy import gpc_grouping
from .shape import ClusterError, cluster_launch
from .sregs import all_special_registers

__all__ = ["CtaPlacement", "Placement", "place_clusters", "place_launch"]


@dataclass(frozen=True)
class CtaPlacement:
    cluster: int              # linear cluster id (launch order)
    rank: int                 # %cluster_ctarank
    gpc: int
    sm: int                   # %smid ([model] numbering)
    block: tuple[int, int, int] | None = None   # blockIdx, when placed from a launch


@dataclass(frozen=True)
class Placement:
    """One wave of a cluster launch on the GPCs: every placed CTA, and the clusters left waiting."""

    cluster_size: int
    blocks_per_sm: int
    grouping: tuple[int, ...]
    sm_ids: tuple[tuple[int, ...], ...]      # per GPC
    usable: tuple[tuple[int, ...], ...]      # per GPC: SMs clusters of this size may use
    ctas: tuple[CtaPlacement, ...]
    waiting: tuple[int, ...]
    assumed: bool

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

    def clusters_on(self, gpc: int) -> list[int]:
        return sorted({c.cluster for c in self.ctas if c.gpc == gpc})

    def cluster_sms(self, cluster: int) -> list[int]:
        """SMs of one cluster's CTAs, in rank order."""
        return [c.sm for c in sorted((c for c in self.ctas if c.cluster == cluster), key=lambda c: c.rank)]


def place_clusters(num_clusters: int, cluster_size: int, blocks_per_sm: int, spec: DeviceSpec = H200_SXM, *,
                   grouping: Sequence[int] | None = None, rule: GpcRule | str | None = None) -> Placement:
    """Place ``num_clusters`` clusters of ``cluster_size`` CTAs with ``blocks_per_sm`` CTAs per SM ([model]
    policy of the module text). The number placed equals the GPC rule's capacity when enough are launched."""
    if num_clusters < 0 or cluster_size < 1 or blocks_per_sm < 0:
        raise ClusterError("need num_clusters >= 0, cluster_size >= 1, blocks_per_sm >= 0")
    if cluster_size > 16:
        raise ClusterError(f"a cluster has at most 16 CTAs on sm_90, got {cluster_size}")
    rule = RULES[rule] if isinstance(rule, str) else (rule or CANDIDATE_RULE)
    g, assumed = gpc_grouping(spec, grouping)
    ids = sm_ids(g)
    usable = [tuple(ids[i][:rule.usable_sms(n, cluster_size)]) for i, n in enumerate(g)]
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
            free = [s for s in usable[gi] if load[s] < blocks_per_sm]
            if not free:  # cannot happen while room[gi] >= 0 (capacity counts slots); kept as a guard
                raise ClusterError(f"placement ran out of CTA slots in GPC {gi}")
            s = min(free, key=lambda s: (s in mine, load[s], order[s]))
            load[s] += 1
            mine.add(s)
            ctas.append(CtaPlacement(k, r, gi, s))
    return Placement(cluster_size, blocks_per_sm, g, tuple(tuple(x) for x in ids), tuple(usable), tuple(ctas),
                     tuple(waiting), assumed)


def place_launch(grid, cluster, blocks_per_sm: int, spec: DeviceSpec = H200_SXM, *, non_portable: bool = False,
                 grouping: Sequence[int] | None = None, rule: GpcRule | str | None = None) -> Placement:
    """:func:`place_clusters` for a real launch shape: validates grid and cluster (sizes, divisibility), numbers
    clusters x-fastest and attaches each CTA's ``blockIdx`` (from its cluster id and rank)."""
    launch = cluster_launch(grid, cluster, non_portable=non_portable, spec=spec)
    p = place_clusters(launch.num_clusters, launch.cluster_size, blocks_per_sm, spec, grouping=grouping, rule=rule)
    blocks = {(r.cluster_linear_id, r.cluster_ctarank): r.ctaid
              for r in all_special_registers(grid, cluster, non_portable=non_portable)}
    ctas = tuple(CtaPlacement(c.cluster, c.rank, c.gpc, c.sm, blocks[(c.cluster, c.rank)]) for c in p.ctas)
    return Placement(p.cluster_size, p.blocks_per_sm, p.grouping, p.sm_ids, p.usable, ctas, p.waiting, p.assumed)
