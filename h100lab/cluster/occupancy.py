"""How many clusters run at once: ``cudaOccupancyMaxActiveClusters``, domain by domain.

``max_active_clusters(cluster_shape, threads_per_block, smem_per_block, spec)`` reproduces the runtime's
``cudaOccupancyMaxActiveClusters`` [RT, group CUDART__OCCUPANCY; CPG §5.2.1 recommends it for cluster
launches]: the per-SM limit of the occupancy calculator (``h100lab.occupancy``, exactly
``cudaOccupancyMaxActiveBlocksPerMultiprocessor``) bounds the CTAs per SM, and the rule of
:mod:`h100lab.cluster.gpc` turns each cluster domain's SMs into whole clusters — all CTAs of a cluster
in one domain [CPG §5.2.1]. On an H200 the domains are 8 virtual GPCs and 4 singleton TPCs, and rule and
layout reproduce all 1450 answers of ``data/l02/cluster_occupancy.json`` [HW]. What large clusters cost
is visible in :class:`ClusterCapacity`: CTA slots and whole SMs that no cluster can use.

The layout comes from :data:`h100lab.cluster.gpc.MEASURED_LAYOUTS` for a measured product, else — for a
132-SM GH100 part such as the H100 SXM — the H200's (``assumed = True``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..specs import H200_SXM, DeviceSpec
from .gpc import H200_CGA, H200_RULE, MEASURED_LAYOUTS, RULES, CgaLayout, GpcRule, layout_from_domains
from .shape import ClusterError, Dim3, cluster_size_limit, dim3

__all__ = ["DomainUse", "ClusterCapacity", "cluster_capacity", "max_active_clusters", "cga_layout",
           "blocks_per_sm"]


def cga_layout(spec: DeviceSpec = H200_SXM, grouping: CgaLayout | Sequence[int] | None = None
               ) -> tuple[CgaLayout, bool]:
    """``(cluster domains, assumed)`` for ``spec``: an explicit ``grouping`` (a :class:`CgaLayout`, or domain
    sizes read by :func:`~h100lab.cluster.gpc.layout_from_domains`), else the layout measured for the product
    (``MEASURED_LAYOUTS[spec.name]``), else the H200's for another 132-SM / 66-TPC GH100 part, else one
    domain per GPC of ``spec.gpc_sm_counts`` (skyline unknown); ``assumed`` is True for the last two."""
    if grouping is not None:
        try:
            lay = grouping if isinstance(grouping, CgaLayout) else layout_from_domains(grouping)
        except (TypeError, ValueError) as exc:
            raise ClusterError(f"bad grouping {grouping!r}: {exc}") from None
        if lay.sm_count != spec.sm_count:
            raise ClusterError(f"grouping {lay.domains} has {lay.sm_count} SMs but {spec.name} has {spec.sm_count}")
        return lay, False
    if spec.name in MEASURED_LAYOUTS and MEASURED_LAYOUTS[spec.name].sm_count == spec.sm_count:
        return MEASURED_LAYOUTS[spec.name], False
    if spec.sm_count == H200_CGA.sm_count and spec.tpc_count * spec.sms_per_tpc == spec.sm_count:
        return H200_CGA, True
    if spec.gpc_sm_counts:
        return CgaLayout(tuple(spec.gpc_sm_counts), 0, spec.sms_per_tpc), True
    raise ClusterError(f"{spec.name}: the cluster domains are unknown (no layout was measured for it and "
                       f"spec.gpc_sm_counts is not set); pass grouping=(...) measured with "
                       "python -m h100lab.measure.l02")


def blocks_per_sm(threads_per_block: int, smem_per_block: int = 0, spec: DeviceSpec = H200_SXM, *,
                  regs_per_thread: int = 32, **kw) -> int:
    """CTAs per SM for the kernel (``cudaOccupancyMaxActiveBlocksPerMultiprocessor``, via
    :func:`h100lab.occupancy.occupancy`; ``kw`` passes static_smem, max_dynamic_smem, carveout)."""
    from ..occupancy import occupancy

    return occupancy(threads_per_block, regs_per_thread, smem_per_block, spec=spec, **kw).active_blocks


@dataclass(frozen=True)
class DomainUse:
    """One cluster domain's share: its SMs, the SMs clusters of this size may use, the clusters it holds,
    and what is left idle (CTA slots, and SMs that hold no CTA at all)."""

    domain: int
    singleton: bool
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
    per_domain: tuple[DomainUse, ...]
    layout: CgaLayout
    assumed: bool
    rule: GpcRule = field(repr=False)

    @property
    def domains(self) -> tuple[int, ...]:
        """SMs of each cluster domain (virtual GPCs, then singleton TPCs)."""
        return self.layout.domains

    @property
    def ctas(self) -> int:
        """CTAs resident at once (clusters × cluster size)."""
        return self.clusters * self.cluster_size

    @property
    def slots(self) -> int:
        """CTA slots of the whole GPU: SMs × blocks per SM."""
        return sum(g.slots for g in self.per_domain)

    @property
    def idle_slots(self) -> int:
        return sum(g.idle_slots for g in self.per_domain)

    @property
    def idle_sms(self) -> int:
        """SMs that hold no CTA when the GPU is filled with clusters."""
        return sum(g.idle_sms for g in self.per_domain)

    @property
    def slot_efficiency(self) -> float:
        """Fraction of the GPU's CTA slots that clusters can fill."""
        return self.ctas / self.slots if self.slots else 0.0


def _idle_sms(n: int, usable: int, ctas: int) -> int:
    """SMs of a domain left without any CTA when its clusters are spread over its usable SMs (each CTA to
    the least-loaded SM, as :mod:`h100lab.cluster.placement` does and the H200's full waves in
    ``data/l02/placement.json`` show)."""
    return n - min(usable, ctas)


def cluster_capacity(cluster_shape, threads_per_block: int, smem_per_block: int = 0, spec: DeviceSpec = H200_SXM, *,
                     regs_per_thread: int = 32, blocks: int | None = None, non_portable: bool = False,
                     rule: GpcRule | str | None = None, grouping: CgaLayout | Sequence[int] | None = None,
                     **occupancy_kw) -> ClusterCapacity:
    """Clusters of ``cluster_shape`` that fit on the GPU at once, domain by domain [RT
    cudaOccupancyMaxActiveClusters; CPG §5.2.1 — all CTAs of a cluster on one GPC]. ``blocks`` overrides the
    per-SM CTA limit (otherwise computed by the occupancy calculator from threads, registers and
    ``smem_per_block`` dynamic shared memory); ``rule`` defaults to the H200's
    (:data:`~h100lab.cluster.gpc.H200_RULE`), ``grouping`` to :func:`cga_layout` of ``spec``.

    Raises :class:`ClusterError` for a cluster over 8 CTAs without ``non_portable=True``, over 16 at all,
    or a GPU whose cluster domains are unknown.
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
    rule = rule or H200_RULE
    lay, assumed = cga_layout(spec, grouping)
    b = blocks if blocks is not None else blocks_per_sm(threads_per_block, smem_per_block, spec,
                                                        regs_per_thread=regs_per_thread, **occupancy_kw)
    if b < 0:
        raise ClusterError("blocks per SM is >= 0")
    per = []
    for i, n in enumerate(lay.domains):
        k = rule.clusters(n, b, c.count)
        usable = rule.usable_sms(n, c.count)
        per.append(DomainUse(i, lay.is_singleton(i), n, usable, k, k * c.count, n * b, n * b - k * c.count,
                             _idle_sms(n, usable, k * c.count)))
    return ClusterCapacity(c, c.count, b, sum(p.clusters for p in per), tuple(per), lay, assumed, rule)


def max_active_clusters(cluster_shape, threads_per_block: int, smem_per_block: int = 0,
                        spec: DeviceSpec = H200_SXM, **kw) -> int:
    """``cudaOccupancyMaxActiveClusters`` for a kernel launched with ``threads_per_block`` threads,
    ``smem_per_block`` bytes of dynamic shared memory and clusters of ``cluster_shape`` [RT; CPG §5.2.1].
    Keywords as :func:`cluster_capacity` (``regs_per_thread``, ``blocks``, ``non_portable``, ``grouping``, ``rule``)."""
    return cluster_capacity(cluster_shape, threads_per_block, smem_per_block, spec, **kw).clusters
