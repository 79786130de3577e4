"""How many clusters run at once: ``cudaOccupancyMaxActiveClusters``, GPC by GPC.

``max_active_clusters(cluster_shape, threads_per_block, smem_per_block, spec)`` reproduces the runtime's
``cudaOccupancyMaxActiveClusters`` [RT, group CUDART__OCCUPANCY; CPG §5.2.1 recommends it for cluster
launches]: the per-SM limit of the occupancy calculator (``h100lab.occupancy``, exactly
``cudaOccupancyMaxActiveBlocksPerMultiprocessor``) bounds the CTAs per SM, and the GPC rule of
:mod:`h100lab.cluster.gpc` turns each GPC's SMs into whole clusters — all CTAs of a cluster on one GPC
[CPG §5.2.1]. What large clusters cost is visible in :class:`ClusterCapacity`: CTA slots and whole
SMs of a GPC that no cluster can use.

The GPC grouping comes from the spec's ``gpc_sm_counts`` when it is set (measured), otherwise from the
[model] candidate of :mod:`h100lab.cluster.gpc` (for 132-SM parts), and ``assumed`` says so.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Sequence

from ..specs import H200_SXM, DeviceSpec
from .gpc import CANDIDATE_GROUPING, CANDIDATE_RULE, RULES, GpcRule
from .shape import ClusterError, Dim3, cluster_size_limit, dim3

__all__ = ["GpcUse", "ClusterCapacity", "cluster_capacity", "max_active_clusters", "gpc_grouping",
           "blocks_per_sm"]


def gpc_grouping(spec: DeviceSpec = H200_SXM, grouping: Sequence[int] | None = None) -> tuple[tuple[int, ...], bool]:
    """``(SMs per GPC, assumed)`` for ``spec``: an explicit ``grouping``, else ``spec.gpc_sm_counts``
    (measured), else the [model] candidate when the spec has its 132 SMs (``assumed = True``)."""
    if grouping is not None:
        g = tuple(operator.index(n) for n in grouping)
        if any(n <= 0 for n in g):
            raise ClusterError(f"every GPC has at least one SM, got {g}")
        if sum(g) != spec.sm_count:
            raise ClusterError(f"grouping {g} has {sum(g)} SMs but {spec.name} has {spec.sm_count}")
        return g, False
    if spec.gpc_sm_counts:
        return tuple(spec.gpc_sm_counts), False
    if spec.sm_count == sum(CANDIDATE_GROUPING):
        return CANDIDATE_GROUPING, True
    raise ClusterError(f"{spec.name}: the SMs-per-GPC grouping is unknown (spec.gpc_sm_counts is not set and no "
                       f"candidate has {spec.sm_count} SMs); pass grouping=(...) measured with "
                       "python -m h100lab.measure.l02")


def blocks_per_sm(threads_per_block: int, smem_per_block: int = 0, spec: DeviceSpec = H200_SXM, *,
                  regs_per_thread: int = 32, **kw) -> int:
    """CTAs per SM for the kernel (``cudaOccupancyMaxActiveBlocksPerMultiprocessor``, via
    :func:`h100lab.occupancy.occupancy`; ``kw`` passes static_smem, max_dynamic_smem, carveout)."""
    from ..occupancy import occupancy

    return occupancy(threads_per_block, regs_per_thread, smem_per_block, spec=spec, **kw).active_blocks


@dataclass(frozen=True)
class GpcUse:
    """One GPC's share: its SMs, the SMs clusters of this size may use, the clusters it holds, and what is
    left idle (CTA slots, and SMs that hold no CTA at all)."""

    gpc: int
    sms: int
    usable_sms: int
    clusters: int
    ctas: int
    slots: int
    idle_slots: int
    idle_sms: int


@dataclass(frozen=True)
class ClusterCapacity:
    """The answer of :func:`cluster_capacity`: ``clusters`` is ``cudaOccupancyMaxActiveClusters``."""

    cluster_shape: Dim3
    cluster_size: int
    blocks_per_sm: int
    clusters: int
    per_gpc: tuple[GpcUse, ...]
    grouping: tuple[int, ...]
    assumed: bool
    rule: GpcRule = field(repr=False)

    @property
    def ctas(self) -> int:
        """CTAs resident at once (clusters × cluster size)."""
        return self.clusters * self.cluster_size

    @property
    def slots(self) -> int:
        """CTA slots of the whole GPU: SMs × blocks per SM."""
        return sum(g.slots for g in self.per_gpc)

    @property
    def idle_slots(self) -> int:
        return sum(g.idle_slots for g in self.per_gpc)

    @property
    def idle_sms(self) -> int:
        """SMs that hold no CTA when the GPU is filled with clusters."""
        return sum(g.idle_sms for g in self.per_gpc)

    @property
    def slot_efficiency(self) -> float:
        """Fraction of the GPU's CTA slots that clusters can fill."""
        return self.ctas / self.slots if self.slots else 0.0


def _idle_sms(n: int, usable: int, ctas: int) -> int:
    """SMs of a GPC left without any CTA when its clusters are spread evenly ([model] placement of
    :mod:`h100lab.cluster.placement`: each CTA goes to the least-loaded usable SM)."""
    return n - min(usable, ctas)


def cluster_capacity(cluster_shape, threads_per_block: int, smem_per_block: int = 0, spec: DeviceSpec = H200_SXM, *,
                     regs_per_thread: int = 32, blocks: int | None = None, non_portable: bool = False,
                     rule: GpcRule | str | None = None, grouping: Sequence[int] | None = None,
                     **occupancy_kw) -> ClusterCapacity:
    """Clusters of ``cluster_shape`` that fit on the GPU at once, GPC by GPC [RT cudaOccupancyMaxActiveClusters;
    CPG §5.2.1]. ``blocks`` overrides the per-SM CTA limit (otherwise computed by the occupancy
    calculator from threads, registers and ``smem_per_block`` dynamic shared memory).

    Raises :class:`ClusterError` for a cluster over 8 CTAs without ``non_portable=True``, over 16 at all,
    or a GPU whose grouping is unknown.
    """
    c = dim3(cluster_shape, "cluster shape")
    limit = cluster_size_limit(non_portable, spec)
    if c.count > limit:
        if c.count > spec.max_cluster_size_nonportable:
            raise ClusterError(f"cluster {c} has {c.count} CTAs, over the maximum of "
                               f"{spec.max_cluster_size_nonportable} per cluster on sm_90 "
                               "(cudaOccupancyMaxActiveClusters fails with cudaErrorInvalidClusterSize)")
        raise ClusterError(f"cluster {c} has {c.count} CTAs, over the portable limit of {limit}; set "
                           "cudaFuncAttributeNonPortableClusterSizeAllowed (non_portable=True) for up to 16")
    if isinstance(rule, str):
        if rule not in RULES:
            raise ClusterError(f"unknown GPC rule {rule!r}; choose one of {list(RULES)}")
        rule = RULES[rule]
    rule = rule or CANDIDATE_RULE
    g, assumed = gpc_grouping(spec, grouping)
    b = blocks if blocks is not None else blocks_per_sm(threads_per_block, smem_per_block, spec,
                                                        regs_per_thread=regs_per_thread, **occupancy_kw)
    if b < 0:
        raise ClusterError("blocks per SM is >= 0")
    per = []
    for i, n in enumerate(g):
        k = rule.clusters(n, b, c.count)
        usable = rule.usable_sms(n, c.count)
        per.append(GpcUse(i, n, usable, k, k * c.count, n * b, n * b - k * c.count,
                          _idle_sms(n, usable, k * c.count)))
    return ClusterCapacity(c, c.count, b, sum(p.clusters for p in per), tuple(per), g, assumed, rule)


def max_active_clusters(cluster_shape, threads_per_block: int, smem_per_block: int = 0,
                        spec: DeviceSpec = H200_SXM, **kw) -> int:
    """``cudaOccupancyMaxActiveClusters`` for a kernel launched with ``threads_per_block`` threads,
    ``smem_per_block`` bytes of dynamic shared memory and clusters of ``cluster_shape`` [RT; CPG §5.2.1].
    Keywords as :func:`cluster_capacity` (``regs_per_thread``, ``blocks``, ``non_portable``, ``grouping``)."""
    return cluster_capacity(cluster_shape, threads_per_block, smem_per_block, spec, **kw).clusters
