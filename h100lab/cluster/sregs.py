"""The cluster-related PTX special registers a thread reads, and rank versus block id.

Special registers [PTX §10 #special-registers; §10.11–§10.17 for the cluster ones, sm_90+]:
``%ctaid`` / ``%nctaid`` (CTA index and grid size in CTAs), ``%clusterid`` / ``%nclusterid`` (cluster
index and grid size in clusters), ``%cluster_ctaid`` / ``%cluster_nctaid`` (CTA index inside its
cluster, cluster shape), ``%cluster_ctarank`` / ``%cluster_nctarank`` (linear rank inside the cluster,
cluster size), ``%is_explicit_cluster`` (whether the launch asked for clusters; a plain launch runs every
CTA as an implicit 1×1×1 cluster).

Relations (not spelled out by PTX; verified on an H200 with grid 4×4×2, cluster 2×2×2 —
hopper-spec-facts §12): ``rank = x + nx·(y + ny·z)`` for ``(x, y, z) = %cluster_ctaid``, and
``%ctaid.d = %clusterid.d · %cluster_nctaid.d + %cluster_ctaid.d``.

``mapa``, DSMEM and TMA multicast masks address CTAs by **rank**, never by ``blockIdx``.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

from .shape import ClusterError, ClusterLaunch, Dim3, cluster_launch, dim3

__all__ = ["SpecialRegisters", "special_registers", "cta_rank", "rank_to_cluster_ctaid", "block_of",
           "all_special_registers"]


def cta_rank(cluster_ctaid, cluster_shape) -> int:
    """``%cluster_ctarank`` from ``%cluster_ctaid`` and ``%cluster_nctaid``: ``x + nx·(y + ny·z)``
    [PTX §10 cluster_ctarank; relation measured on an H200, hopper-spec-facts §12]."""
    c = dim3(cluster_shape, "cluster shape")
    x, y, z = _index3(cluster_ctaid, "%cluster_ctaid")
    if not (0 <= x < c.x and 0 <= y < c.y and 0 <= z < c.z):
        raise ClusterError(f"%cluster_ctaid {(x, y, z)} is outside cluster {c}")
    return x + c.x * (y + c.y * z)


def rank_to_cluster_ctaid(rank: int, cluster_shape) -> tuple[int, int, int]:
    """Inverse of :func:`cta_rank`."""
    c = dim3(cluster_shape, "cluster shape")
    rank = operator.index(rank)
    if not 0 <= rank < c.count:
        raise ClusterError(f"rank {rank} is outside the cluster: 0 <= rank < %cluster_nctarank = {c.count}")
    return rank % c.x, (rank // c.x) % c.y, rank // (c.x * c.y)


@dataclass(frozen=True)
class SpecialRegisters:
    """What one CTA's threads read from the cluster-related special registers."""

    ctaid: tuple[int, int, int]
    nctaid: tuple[int, int, int]
    clusterid: tuple[int, int, int]
    nclusterid: tuple[int, int, int]
    cluster_ctaid: tuple[int, int, int]
    cluster_nctaid: tuple[int, int, int]
    cluster_ctarank: int
    cluster_nctarank: int
    is_explicit_cluster: bool

    @property
    def cluster_linear_id(self) -> int:
        """Linear cluster index in the grid (x fastest), the way CUDA numbers clusters."""
        x, y, z = self.clusterid
        nx, ny, _ = self.nclusterid
        return x + nx * (y + ny * z)

    def as_dict(self) -> dict:
        return {"%ctaid": self.ctaid, "%nctaid": self.nctaid, "%clusterid": self.clusterid,
                "%nclusterid": self.nclusterid, "%cluster_ctaid": self.cluster_ctaid,
                "%cluster_nctaid": self.cluster_nctaid, "%cluster_ctarank": self.cluster_ctarank,
                "%cluster_nctarank": self.cluster_nctarank, "%is_explicit_cluster": self.is_explicit_cluster}


def _index3(v, what: str) -> tuple[int, int, int]:
    """A 0-based (x, y, z) index from an int or a 1–3 element sequence (missing components are 0)."""
    try:
        vals = [operator.index(x) for x in v] if isinstance(v, (list, tuple, Dim3)) else [operator.index(v)]
    except TypeError:
        raise ClusterError(f"{what} must be an int or up to three ints, got {v!r}") from None
    if not 1 <= len(vals) <= 3 or any(x < 0 for x in vals):
        raise ClusterError(f"{what} has 1 to 3 components, each >= 0, got {v!r}")
    x, y, z = vals + [0] * (3 - len(vals))
    return x, y, z


def _launch(grid, cluster, non_portable) -> tuple[ClusterLaunch, bool]:
    explicit = cluster is not None
    return cluster_launch(grid, cluster if explicit else 1, non_portable=non_portable), explicit


def special_registers(block, grid, cluster=None, *, non_portable: bool = False) -> SpecialRegisters:
    """The special registers of the CTA at ``blockIdx = block`` in a launch of ``grid`` blocks with
    cluster shape ``cluster`` (``None``: a plain launch, an implicit 1×1×1 cluster with
    ``%is_explicit_cluster`` false) [PTX §10.11–§10.17]. Validates the launch first."""
    launch, explicit = _launch(grid, cluster, non_portable)
    b = Dim3(*_index3(block, "block index"))
    g, c = launch.grid, launch.cluster
    if not (b.x < g.x and b.y < g.y and b.z < g.z):
        raise ClusterError(f"block {b.as_tuple()} is outside grid {g}")
    cid = (b.x // c.x, b.y // c.y, b.z // c.z)
    cctaid = (b.x % c.x, b.y % c.y, b.z % c.z)
    return SpecialRegisters(
        ctaid=b.as_tuple(), nctaid=g.as_tuple(), clusterid=cid, nclusterid=launch.cluster_grid.as_tuple(),
        cluster_ctaid=cctaid, cluster_nctaid=c.as_tuple(), cluster_ctarank=cta_rank(cctaid, c),
        cluster_nctarank=c.count, is_explicit_cluster=explicit)


def block_of(clusterid, rank: int, grid, cluster, *, non_portable: bool = False) -> tuple[int, int, int]:
    """``blockIdx`` of the CTA with ``%cluster_ctarank = rank`` in cluster ``clusterid``:
    ``%ctaid.d = %clusterid.d · %cluster_nctaid.d + %cluster_ctaid.d`` (hopper-spec-facts §12)."""
    launch, _ = _launch(grid, cluster, non_portable)
    cid = _index3(clusterid, "cluster index")
    cg = launch.cluster_grid
    if not all(0 <= a < n for a, n in zip(cid, cg)):
        raise ClusterError(f"cluster {cid} is outside the cluster grid {cg}")
    x, y, z = rank_to_cluster_ctaid(rank, launch.cluster)
    c = launch.cluster
    return (cid[0] * c.x + x, cid[1] * c.y + y, cid[2] * c.z + z)


def all_special_registers(grid, cluster=None, *, non_portable: bool = False) -> list[SpecialRegisters]:
    """The special registers of every CTA of a launch, in ``blockIdx`` order (x fastest)."""
    launch, _ = _launch(grid, cluster, non_portable)
    g = launch.grid
    return [special_registers((x, y, z), grid, cluster, non_portable=non_portable)
            for z in range(g.z) for y in range(g.y) for x in range(g.x)]
