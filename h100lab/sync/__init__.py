"""Synchronisation on Hopper as plain, addressable state: the mbarrier state machine living in a
CTA's shared-memory bytes, the generic and async proxies, named and cluster barriers, bulk
async-groups, the shared trace record format, and a hazard checker over traces.

Modules: ``smem`` (SharedMemory), ``mbarrier`` (pure operations + the MBarrier view), ``proxy``
(generic/async proxy value model), ``named`` (bar.sync/bar.arrive, barrier.cluster), ``groups``
(bulk async-groups), ``trace`` (the Record format), ``hazards`` (the checker).
"""
from .groups import BulkGroups, GroupError, pending_after
from .mbarrier import MBarrier, MBarrierError, MBarrierState
from .named import BarrierError, ClusterBarrier, NamedBarriers
from .smem import SMEM_MAX_PER_BLOCK, SharedMemory, SharedMemoryError
from .trace import Record

__all__ = ["SharedMemory", "SharedMemoryError", "SMEM_MAX_PER_BLOCK", "MBarrier", "MBarrierError",
           "MBarrierState", "NamedBarriers", "ClusterBarrier", "BarrierError", "BulkGroups", "GroupError",
           "pending_after", "Record"]
