"""Thread-block cluster shapes and the launch rules they must obey on sm_90.

Rules [CPG §5.2.1 #thread-block-clusters; RT ``cudaFuncAttributes::nonPortableClusterSizeAllowed``;
hopper-spec-facts §12]:

* a cluster is a 1-, 2- or 3-D group of CTAs (``__cluster_dims__(x, y, z)`` or the launch attribute
  ``cudaLaunchAttributeClusterDimension``); the grid is still counted in blocks;
* every grid dimension must be a multiple of the cluster's dimension;
* at most **8** CTAs per cluster is the portable limit; H100/H200 accept up to **16** after the kernel
  sets ``cudaFuncAttributeNonPortableClusterSizeAllowed = 1`` (measured on an H200:
  ``cudaOccupancyMaxPotentialClusterSize`` = 8, then 16).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Sequence

from ..specs import H100_SXM, DeviceSpec

__all__ = ["ClusterError", "Dim3", "dim3", "ClusterLaunch", "cluster_launch", "cluster_size_limit"]


class ClusterError(ValueError):
    """A cluster shape or cluster launch breaks a CUDA/PTX rule (the message names the rule)."""


@dataclass(frozen=True)
class Dim3:
    x: int = 1
    y: int = 1
    z: int = 1

    @property
    def count(self) -> int:
        return self.x * self.y * self.z

    def as_tuple(self) -> tuple[int, int, int]:
        return (self.x, self.y, self.z)

    def __iter__(self):
        return iter(self.as_tuple())

    def __str__(self) -> str:
        return f"{self.x}x{self.y}x{self.z}"


def dim3(v: int | Sequence[int] | Dim3, what: str = "dimension") -> Dim3:
    """A ``dim3`` from an int or a 1–3 element sequence (missing dimensions are 1), each ≥ 1."""
    if isinstance(v, Dim3):
        return v
    try:
        vals = [operator.index(v)] if not isinstance(v, (list, tuple)) else [operator.index(x) for x in v]
    except TypeError:
        raise ClusterError(f"{what} must be an int or up to three ints, got {v!r}") from None
    if not 1 <= len(vals) <= 3:
        raise ClusterError(f"{what} has 1 to 3 components (x, y, z), got {len(vals)}")
    if any(x < 1 for x in vals):
        raise ClusterError(f"every component of the {what} must be >= 1, got {tuple(vals)}")
    return Dim3(*(vals + [1] * (3 - len(vals))))


def cluster_size_limit(non_portable: bool = False, spec: DeviceSpec = H100_SXM) -> int:
    """The largest cluster (in CTAs) a launch may use: 8 portable, 16 after opting in to non-portable
    sizes [CPG §5.2.1; hopper-spec-facts §12]."""
    return spec.max_cluster_size_nonportable if non_portable else spec.max_cluster_size_portable


@dataclass(frozen=True)
class ClusterLaunch:
    """A validated cluster launch: grid and cluster in blocks, and the derived cluster grid."""

    grid: Dim3
    cluster: Dim3
    non_portable: bool

    @property
    def cluster_size(self) -> int:
        return self.cluster.count

    @property
    def cluster_grid(self) -> Dim3:
        """``%nclusterid``: the grid measured in clusters."""
        return Dim3(self.grid.x // self.cluster.x, self.grid.y // self.cluster.y, self.grid.z // self.cluster.z)

    @property
    def num_clusters(self) -> int:
        return self.cluster_grid.count

    @property
    def num_blocks(self) -> int:
        return self.grid.count


def cluster_launch(grid, cluster, *, non_portable: bool = False, spec: DeviceSpec = H100_SXM) -> ClusterLaunch:
    """Validate a cluster launch (grid and cluster shapes in blocks) and return it.

    Raises :class:`ClusterError` when the cluster exceeds the size limit (8 portable / 16 non-portable,
    [CPG §5.2.1]) or a grid dimension is not a multiple of the cluster dimension [CPG §5.2.1: "the grid
    dimension must be a multiple of the cluster size"].
    """
    g = dim3(grid, "grid")
    c = dim3(cluster, "cluster shape")
    limit = cluster_size_limit(non_portable, spec)
    if c.count > limit:
        if non_portable or c.count > spec.max_cluster_size_nonportable:
            raise ClusterError(f"cluster {c} has {c.count} CTAs, over the maximum of "
                               f"{spec.max_cluster_size_nonportable} CTAs per cluster on sm_90")
        raise ClusterError(f"cluster {c} has {c.count} CTAs, over the portable limit of {limit}; sizes up to "
                           f"{spec.max_cluster_size_nonportable} need cudaFuncAttributeNonPortableClusterSizeAllowed = 1")
    for name, gd, cd in zip("xyz", g, c):
        if gd % cd:
            raise ClusterError(f"grid {g} is not a multiple of cluster {c}: gridDim.{name} = {gd} is not a "
                               f"multiple of clusterDim.{name} = {cd} [CPG §5.2.1]")
    if g.y > 65535 or g.z > 65535 or g.x > (1 << 31) - 1:
        raise ClusterError(f"grid {g} exceeds the grid limits (2^31-1, 65535, 65535) [CPG §20.2]")
    return ClusterLaunch(g, c, non_portable)
