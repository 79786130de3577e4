"""Thread-block clusters: shapes and launch rules, special registers, GPC capacity
(``cudaOccupancyMaxActiveClusters``), placement on GPCs and SMs, and distributed shared memory."""
from .dsmem import (EXITED, NOT_STARTED, RUNNING, BarrierError, ClusterBarrier, ClusterSharedMemory, DsmemError,
                    PeerNotRunning, RankError, RingTrace, SharedAddressError, StepEvent, ring_exchange)
from .gpc import (CANDIDATE_GROUPING, CANDIDATE_RULE, H200_MEASURED, H200_MEASURED_BLOCKS_PER_SM, RULES, GpcRule,
                  candidate_groupings, derivation, gpcs_from_clusters, identify, sm_ids)
from .occupancy import (ClusterCapacity, GpcUse, blocks_per_sm, cluster_capacity, gpc_grouping,
                        max_active_clusters)
from .placement import CtaPlacement, Placement, place_clusters, place_launch
from .shape import ClusterError, ClusterLaunch, Dim3, cluster_launch, cluster_size_limit, dim3
from .sregs import SpecialRegisters, all_special_registers, block_of, cta_rank, rank_to_cluster_ctaid, special_registers

__all__ = [
    "ClusterError", "ClusterLaunch", "Dim3", "dim3", "cluster_launch", "cluster_size_limit",
    "SpecialRegisters", "special_registers", "all_special_registers", "cta_rank", "rank_to_cluster_ctaid", "block_of",
    "GpcRule", "RULES", "CANDIDATE_RULE", "CANDIDATE_GROUPING", "H200_MEASURED", "H200_MEASURED_BLOCKS_PER_SM",
    "candidate_groupings", "derivation", "identify", "gpcs_from_clusters", "sm_ids",
    "ClusterCapacity", "GpcUse", "cluster_capacity", "max_active_clusters", "gpc_grouping", "blocks_per_sm",
    "CtaPlacement", "Placement", "place_clusters", "place_launch",
    "DsmemError", "RankError", "PeerNotRunning", "SharedAddressError", "BarrierError", "ClusterBarrier",
    "ClusterSharedMemory", "StepEvent", "RingTrace", "ring_exchange", "NOT_STARTED", "RUNNING", "EXITED",
]
