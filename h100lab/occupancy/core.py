"""Per-SM occupancy of compute capability 9.0, exactly as the CUDA occupancy calculator computes it.

The algorithm is ``cudaOccMaxActiveBlocksPerMultiprocessor`` of ``cuda_occupancy.h`` (CUDA 12.6,
[OCC]) specialised to sm_90; on an H200 it matched the driver's
``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` in 2,548 of 2,548 configurations
(hopper-spec-facts.md §1.3). Five limits, each a number of blocks per SM:

* **warps**: ``floor(64 / ceil(T/32))`` [CPG §20.2: 64 resident warps per SM];
* **blocks**: 32 resident blocks per SM [CPG §20.2];
* **registers**: registers are allocated per *warp*, ``rpw = roundup(32 R, 256)``; each of the four
  sub-partitions holds ``floor(16384 / rpw)`` warps, so the SM holds ``4 floor(16384 / rpw)`` warps;
  a block whose ``rpw x roundup(warps, 4)`` exceeds 65,536 registers cannot launch [OCC
  ``cudaOccMaxBlocksPerSMRegsLimit``];
* **shared memory**: a block occupies ``roundup(static + dynamic + 1024, 128)`` bytes [OCC
  ``cudaOccSMemPerBlock``, ``cudaOccSMemAllocationGranularity``]; the SM's shared memory is the
  carveout preference rounded up to a carveout step, or, if not even one block fits there, the
  smallest step that holds one block [OCC ``cudaOccMaxBlocksPerSMSmemLimit``, CPG §20.8.3];
* **barriers**: on CC 9.0 the header allows ``2 x 32`` named barriers per SM and a block uses one
  by default, so 64 blocks — never the binding limit for a kernel that uses the default.

Where CUDA answers "0 blocks" (a block needing more registers than a block may have, dynamic
shared memory above the kernel's ``cudaFuncAttributeMaxDynamicSharedMemorySize``), the model
answers 0 and names the reason. Inputs CUDA itself rejects before any launch (more than 1024
threads, more than 255 registers per thread, static shared memory above 48 KB, an opt-in above
227 KB) raise :class:`OccupancyError`, a ``ValueError``.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ..specs import H100_SXM, DeviceSpec

__all__ = ["Occupancy", "OccupancyError", "occupancy", "carveout_roundup", "regs_per_warp",
           "smem_per_block_allocated", "CARVEOUT_DEFAULT", "CARVEOUT_MAX_L1", "CARVEOUT_MAX_SHARED",
           "LIMITS"]

#: ``cudaSharedmemCarveoutDefault`` / ``MaxL1`` / ``MaxShared`` [RT cudaFuncAttributePreferredSharedMemoryCarveout].
CARVEOUT_DEFAULT, CARVEOUT_MAX_L1, CARVEOUT_MAX_SHARED = -1, 0, 100
#: The names of the five limits, in the header's order.
LIMITS = ("warps", "blocks", "registers", "shared_memory", "barriers")


class OccupancyError(ValueError):
    """A kernel configuration CUDA rejects before occupancy is even defined."""


def _roundup(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def carveout_roundup(nbytes: int, spec: DeviceSpec = H100_SXM) -> int:
    """The smallest shared-memory carveout step holding ``nbytes`` bytes.

    Steps 0, 8, 16, 32, 64, 100, 132, 164, 196, 228 KB [CPG §20.8.3 #shared-memory-9-0; OCC
    ``cudaOccAlignUpShmemSizeVoltaPlus``]. More than 228 KB is an error.
    """
    if nbytes < 0:
        raise OccupancyError(f"shared-memory size must be >= 0, got {nbytes}")
    for step in spec.carveout_bytes:
        if nbytes <= step:
            return step
    raise OccupancyError(f"{nbytes} B exceeds the largest carveout ({spec.carveout_kb[-1]} KB per SM)")


def regs_per_warp(regs_per_thread: int, spec: DeviceSpec = H100_SXM) -> int:
    """Registers allocated to one warp: ``roundup(32 x R, 256)`` [OCC ``cudaOccRegAllocationGranularity``]."""
    if regs_per_thread < 0:
        raise OccupancyError(f"registers per thread must be >= 0, got {regs_per_thread}")
    return _roundup(regs_per_thread * spec.warp_size, spec.reg_alloc_unit)


def smem_per_block_allocated(static_smem: int = 0, dynamic_smem: int = 0, spec: DeviceSpec = H100_SXM) -> int:
    """Shared memory one block occupies: ``roundup(static + dynamic + 1024 reserved, 128)``.

    [CPG §20.8.3: 1 KB per block reserved for the system; OCC ``cudaOccSMemPerBlock`` and
    ``cudaOccSMemAllocationGranularity`` = 128 B on CC 8.x/9.x].
    """
    if static_smem < 0 or dynamic_smem < 0:
        raise OccupancyError("shared-memory sizes must be >= 0")
    return _roundup(static_smem + dynamic_smem + spec.smem_reserved_per_block, spec.smem_alloc_granularity)


@dataclass(frozen=True)
class Occupancy:
    """The occupancy calculator's answer for one kernel configuration on one SM.

    ``limits`` maps each of :data:`LIMITS` to the blocks per SM that resource alone allows
    (``None``: no limit); ``limiting`` names the resources whose limit equals ``active_blocks``.
    """

    active_blocks: int
    warps_per_block: int
    limits: Mapping[str, int | None]
    limiting: tuple[str, ...]
    reason: str
    threads_per_block: int
    regs_per_thread: int
    regs_per_warp: int
    smem_per_block: int          # bytes one block occupies (with reserve and rounding)
    smem_per_sm: int             # the carveout the SM runs with for this kernel
    static_smem: int
    dynamic_smem: int
    carveout: int
    spec: DeviceSpec = field(repr=False, compare=False, default=H100_SXM)

    @property
    def active_warps(self) -> int:
        """Resident warps per SM."""
        return self.active_blocks * self.warps_per_block

    @property
    def active_threads(self) -> int:
        """Resident threads per SM (threads of partial warps included as launched)."""
        return self.active_blocks * self.threads_per_block

    @property
    def occupancy(self) -> float:
        """Resident warps / 64 [CPG "occupancy" = active warps over the maximum]."""
        return self.active_warps / self.spec.max_warps_per_sm

    @property
    def launchable(self) -> bool:
        """Whether at least one block fits on an SM."""
        return self.active_blocks > 0

    @property
    def regs_used(self) -> int:
        """Registers allocated on the SM: resident warps x registers per warp."""
        return self.active_warps * self.regs_per_warp

    @property
    def smem_used(self) -> int:
        """Shared memory allocated on the SM by resident blocks (reserve included)."""
        return self.active_blocks * self.smem_per_block

    @property
    def warps_per_sub_partition(self) -> tuple[int, ...]:
        """Resident warps on each of the 4 sub-partitions, warps dealt round-robin by warp slot.

        [model] A block's warp ``w`` goes to sub-partition ``(first slot + w) % 4``; with the
        blocks packed one after another this is the even spread the occupancy header assumes.
        """
        n = self.active_warps
        s = self.spec.sub_partitions
        return tuple(n // s + (1 if i < n % s else 0) for i in range(s))

    def to_dict(self) -> dict:
        """Plain values (for datasets, tables and widgets)."""
        return {"active_blocks": self.active_blocks, "active_warps": self.active_warps,
                "occupancy": self.occupancy, "limiting": list(self.limiting), "reason": self.reason,
                "limits": dict(self.limits), "regs_per_warp": self.regs_per_warp,
                "smem_per_block": self.smem_per_block, "smem_per_sm": self.smem_per_sm}


def _check(threads: int, regs: int, static: int, dynamic: int, max_dyn: int | None, carveout: int,
           spec: DeviceSpec) -> None:
    if threads <= 0:
        raise OccupancyError(f"threads_per_block must be positive, got {threads}")
    if threads > spec.max_threads_per_block:
        raise OccupancyError(f"{threads} threads per block exceeds the limit of "
                             f"{spec.max_threads_per_block} threads per block (CC 9.0)")
    if regs < 0:
        raise OccupancyError(f"regs_per_thread must be >= 0, got {regs}")
    if regs > spec.max_regs_per_thread:
        raise OccupancyError(f"{regs} registers per thread exceeds the limit of "
                             f"{spec.max_regs_per_thread} registers per thread (CC 9.0)")
    if static < 0 or dynamic < 0:
        raise OccupancyError("shared-memory sizes must be >= 0")
    if static > spec.smem_static_limit:
        raise OccupancyError(f"static shared memory {static} B exceeds the 48 KB static limit "
                             f"({spec.smem_static_limit} B); use dynamic shared memory above it")
    optin = spec.smem_per_block_optin - static
    if max_dyn is not None:
        if max_dyn < 0:
            raise OccupancyError(f"max_dynamic_smem must be >= 0, got {max_dyn}")
        if max_dyn > optin:
            raise OccupancyError(f"cudaFuncAttributeMaxDynamicSharedMemorySize = {max_dyn} B exceeds the opt-in "
                                 f"limit of {spec.smem_per_block_optin} B per block minus {static} B static")
    elif dynamic > optin:
        raise OccupancyError(f"{static + dynamic} B of shared memory per block exceeds the opt-in limit of "
                             f"{spec.smem_per_block_optin} B (227 KB) per block")
    if not (carveout == CARVEOUT_DEFAULT or 0 <= carveout <= 100):
        raise OccupancyError(f"carveout preference must be -1 (default) or a percentage 0..100, got {carveout}")


def occupancy(threads_per_block: int, regs_per_thread: int, smem_per_block: int = 0,
              spec: DeviceSpec = H100_SXM, *, static_smem: int = 0, max_dynamic_smem: int | None = None,
              carveout: int | None = CARVEOUT_DEFAULT) -> Occupancy:
    """Active blocks per SM, and which resource limits them, for one kernel on ``spec``.

    Reproduces ``cudaOccupancyMaxActiveBlocksPerMultiprocessor(kernel, threads_per_block,
    smem_per_block)`` [OCC ``cudaOccMaxActiveBlocksPerMultiprocessor``; CPG §20.2, §20.8.3].

    ``regs_per_thread`` is the kernel's ``numRegs``; ``smem_per_block`` its *dynamic* shared
    memory; ``static_smem`` its ``sharedSizeBytes``; ``max_dynamic_smem`` its
    ``cudaFuncAttributeMaxDynamicSharedMemorySize`` (``None``: as if the launcher opted in to exactly
    what it launches with whenever that exceeds the 48 KB default, the usual practice);
    ``carveout`` its ``cudaFuncAttributePreferredSharedMemoryCarveout`` (-1 default, else percent).
    """
    if carveout is None:
        carveout = CARVEOUT_DEFAULT
    try:
        threads_per_block, regs_per_thread, smem_per_block, static_smem, carveout = (
            operator.index(v) for v in (threads_per_block, regs_per_thread, smem_per_block, static_smem, carveout))
        if max_dynamic_smem is not None:
            max_dynamic_smem = operator.index(max_dynamic_smem)
    except TypeError:
        raise OccupancyError("threads, registers, shared-memory sizes and carveout must be integers") from None
    _check(threads_per_block, regs_per_thread, static_smem, smem_per_block, max_dynamic_smem, carveout, spec)
    T, R, S_st, S_dyn, c = threads_per_block, regs_per_thread, static_smem, smem_per_block, carveout
    if max_dynamic_smem is None:
        max_dynamic_smem = max(S_dyn, spec.smem_per_block_default - S_st)
    warps = -(-T // spec.warp_size)
    sub = spec.sub_partitions
    limits: dict[str, int | None] = {}
    why: dict[str, str] = {}

    limits["warps"] = spec.max_warps_per_sm // warps
    why["warps"] = f"{spec.max_warps_per_sm} warps per SM / {warps} warps per block"
    limits["blocks"] = spec.max_blocks_per_sm
    why["blocks"] = f"at most {spec.max_blocks_per_sm} resident blocks per SM"

    rpw = regs_per_warp(R, spec)
    if R == 0:
        limits["registers"] = None
    elif rpw * _roundup(warps, sub) > spec.regs_per_block or rpw * warps > spec.regs_per_block:
        limits["registers"] = 0
        why["registers"] = (f"too many resources requested for launch: {warps} warps (rounded up to "
                            f"{_roundup(warps, sub)}) x {rpw} registers per warp > {spec.regs_per_block} "
                            f"registers per block")
    else:
        per_subp = spec.regs_per_sub_partition // rpw
        limits["registers"] = per_subp * sub // warps
        why["registers"] = (f"{R} regs/thread -> {rpw} regs per warp; {per_subp} warps per sub-partition "
                            f"x {sub} = {per_subp * sub} warps per SM / {warps} warps per block")

    alloc = smem_per_block_allocated(S_st, S_dyn, spec)
    blk_limit = (spec.smem_per_block_optin if S_st + max_dynamic_smem > spec.smem_per_block_default
                 else spec.smem_per_block_default) + spec.smem_reserved_per_block
    if S_dyn > max_dynamic_smem:
        limits["shared_memory"] = 0
        smem_sm = 0
        why["shared_memory"] = (f"{S_dyn} B dynamic shared memory exceeds the kernel's "
                                f"cudaFuncAttributeMaxDynamicSharedMemorySize of {max_dynamic_smem} B")
    elif alloc > blk_limit:
        limits["shared_memory"] = 0
        smem_sm = 0
        why["shared_memory"] = f"{alloc} B per block exceeds the per-block limit of {blk_limit} B (with reserve)"
    else:
        pref = spec.smem_per_sm if c == CARVEOUT_DEFAULT else carveout_roundup(c * spec.smem_per_sm // 100, spec)
        smem_sm = pref if pref >= alloc else carveout_roundup(alloc, spec)
        limits["shared_memory"] = smem_sm // alloc
        why["shared_memory"] = (f"{smem_sm // 1024} KB carveout / {alloc} B per block "
                                f"(static {S_st} + dynamic {S_dyn} + {spec.smem_reserved_per_block} reserved, "
                                f"rounded to {spec.smem_alloc_granularity} B)")

    limits["barriers"] = 2 * spec.max_blocks_per_sm
    why["barriers"] = "64 named barriers per SM, 1 per block by default"

    finite = [v for v in limits.values() if v is not None]
    blocks = min(finite)
    limiting = tuple(k for k in LIMITS if limits[k] == blocks)
    first = limiting[0]
    if blocks == 0:
        reason = f"cannot launch: {why[first]}"
    else:
        reason = f"{blocks} block{'s' if blocks != 1 else ''}, limited by {' and '.join(k.replace('_', ' ') for k in limiting)}: {why[first]}"
    return Occupancy(blocks, warps, MappingProxyType(limits), limiting, reason, T, R, rpw, alloc, smem_sm,
                     S_st, S_dyn, c, spec)
