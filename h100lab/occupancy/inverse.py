"""The inverse questions a kernel writer asks of the occupancy calculator.

"How many registers may my kernel use and still keep N blocks per SM?", "where are the cliffs?",
"why does going from 64 to 65 registers cost a block while 63 -> 64 costs nothing?" — each
answered by scanning :func:`h100lab.occupancy.occupancy` over the register counts CUDA allows
(1..255, [CPG §20.2]); the register-allocation rule that makes the steps is
``roundup(32 R, 256)`` registers per warp [OCC ``cudaOccRegAllocationGranularity``].
"""
from __future__ import annotations

from dataclasses import dataclass

from ..specs import H100_SXM, DeviceSpec
from .core import OccupancyError, occupancy

__all__ = ["max_regs_for_blocks", "register_steps", "RegisterStep", "next_cliff", "Cliff"]


def _blocks_by_regs(threads_per_block: int, smem_per_block: int, spec: DeviceSpec, kw) -> list[int]:
    """active_blocks for R = 0..255 (index = R)."""
    return [occupancy(threads_per_block, r, smem_per_block, spec, **kw).active_blocks
            for r in range(spec.max_regs_per_thread + 1)]


def max_regs_for_blocks(threads_per_block: int, blocks: int, smem_per_block: int = 0,
                        spec: DeviceSpec = H100_SXM, **kw) -> int | None:
    """The most registers per thread that still allows ``blocks`` resident blocks per SM.

    ``None`` if even 1 register per thread cannot reach ``blocks`` (another resource limits the
    kernel below it). What ``__launch_bounds__(threads, blocks)`` asks the compiler to respect
    [CPG §8.4.1 launch bounds]; the rule is the one of :func:`occupancy`.
    """
    if blocks <= 0:
        raise OccupancyError(f"blocks per SM must be positive, got {blocks}")
    if blocks > spec.max_blocks_per_sm:
        raise OccupancyError(f"{blocks} blocks per SM exceeds the limit of {spec.max_blocks_per_sm}")
    by_r = _blocks_by_regs(threads_per_block, smem_per_block, spec, kw)
    ok = [r for r in range(1, len(by_r)) if by_r[r] >= blocks]
    return max(ok) if ok else None


@dataclass(frozen=True)
class RegisterStep:
    """A run of register counts ``lo..hi`` (inclusive) giving the same ``active_blocks``."""

    lo: int
    hi: int
    active_blocks: int
    active_warps: int


def register_steps(threads_per_block: int, smem_per_block: int = 0, spec: DeviceSpec = H100_SXM,
                   **kw) -> list[RegisterStep]:
    """The staircase of active blocks per SM over registers per thread 1..255 (``occupancy`` scanned)."""
    by_r = _blocks_by_regs(threads_per_block, smem_per_block, spec, kw)
    warps = -(-threads_per_block // spec.warp_size)
    steps: list[RegisterStep] = []
    lo = 1
    for r in range(2, len(by_r) + 1):
        if r == len(by_r) or by_r[r] != by_r[lo]:
            steps.append(RegisterStep(lo, r - 1, by_r[lo], by_r[lo] * warps))
            lo = r
    return steps


@dataclass(frozen=True)
class Cliff:
    """The first register count above ``regs_per_thread`` that loses resident blocks."""

    regs_per_thread: int
    blocks: int
    cliff_regs: int | None       # None: no cliff up to 255
    blocks_after: int
    regs_per_warp_before: int
    regs_per_warp_after: int | None


def next_cliff(threads_per_block: int, regs_per_thread: int, smem_per_block: int = 0,
               spec: DeviceSpec = H100_SXM, **kw) -> Cliff:
    """The smallest register count above ``regs_per_thread`` with fewer active blocks per SM.

    The "63 -> 65 registers" trap: with 256 threads, 63 and 64 registers both allocate 2048
    registers per warp (8 warps per sub-partition, 4 blocks), 65 allocates 2304 (7 warps, 3 blocks)
    [OCC ``cudaOccMaxBlocksPerSMRegsLimit``].
    """
    base = occupancy(threads_per_block, regs_per_thread, smem_per_block, spec, **kw)
    for r in range(regs_per_thread + 1, spec.max_regs_per_thread + 1):
        o = occupancy(threads_per_block, r, smem_per_block, spec, **kw)
        if o.active_blocks < base.active_blocks:
            return Cliff(regs_per_thread, base.active_blocks, r, o.active_blocks, base.regs_per_warp, o.regs_per_warp)
    return Cliff(regs_per_thread, base.active_blocks, None, base.active_blocks, base.regs_per_warp, None)
