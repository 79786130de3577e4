"""Thread-block clusters: shapes and launch rules, special registers, cluster domains and capacity
(``cudaOccupancyMaxActiveClusters``), placement on domains and SMs, and distributed shared memory."""
from .dsmem import (EXITED, NOT_STARTED, RUNNING, BarrierError, ClusterBarrier, ClusterSharedMemory, DsmemError,
                    PeerNotRunning, RankError, RingTrace, SharedAddressError, StepEvent, ring_exchange)
from .gpc import (CLUSTER_CTAS_PER_SM, H200_CGA, H200_MEASURED, H200_MEASURED_BLOCKS_PER_SM, H200_RULE,
                  MEASURED_LAYOUTS, RULES, CgaLayout, GpcRule, candidate_layouts, derivation, gpcs_from_clusters,
                  identify, layout_from_domains)
from .occupancy import ClusterCapacity, DomainUse, blocks_per_sm, cga_layout, cluster_capacity, max_active_clusters
from .placement import CtaPlacement, Placement, place_clusters, place_launch
from .shape import ClusterError, ClusterLaunch, Dim3, cluster_launch, cluster_size_limit, dim3
from .sregs import SpecialRegisters, all_special_registers, block_of, cta_rank, rank_to_cluster_ctaid, special_registers

__all__ = [
    "ClusterError", "ClusterLaunch", "Dim3", "dim3", "cluster_launch", "cluster_size_limit",
    "SpecialRegisters", "special_registers", "all_special_registers", "cta_rank", "rank_to_cluster_ctaid", "block_of",
    "CgaLayout", "GpcRule", "RULES", "H200_RULE", "H200_CGA", "MEASURED_LAYOUTS", "CLUSTER_CTAS_PER_SM",
    "H200_MEASURED", "H200_MEASURED_BLOCKS_PER_SM", "candidate_layouts", "derivation", "identify",
    "gpcs_from_clusters", "layout_from_domains",
    "ClusterCapacity", "DomainUse", "cluster_capacity", "max_active_clusters", "cga_layout", "blocks_per_sm",
    "CtaPlacement", "Placement", "place_clusters", "place_launch",
    "DsmemError", "RankError", "PeerNotRunning", "SharedAddressError", "BarrierError", "ClusterBarrier",
    "ClusterSharedMemory", "StepEvent", "RingTrace", "ring_exchange", "NOT_STARTED", "RUNNING", "EXITED",
]
