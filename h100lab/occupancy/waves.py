"""How a grid's blocks fill the SMs in waves, and how a block's warps spread over sub-partitions.

The GigaThread engine hands the next unstarted block to an SM that has room for it [seed lesson 1
§8, §12]; NVIDIA does not document the order. The model here ([model], stated so a timing model can
be calibrated against it) assumes equal-length blocks dealt breadth-first: block ``b`` runs in wave
``b // (SMs x blocks_per_sm)`` on SM ``b % SMs``. With that assumption a grid of ``G`` blocks takes
``ceil(G / (SMs x blocks_per_sm))`` waves, and the last wave leaves SMs idle whenever ``G`` is not a
multiple of the capacity — "wave quantization", which lesson 8 returns to.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..specs import H100_SXM, DeviceSpec
from .core import Occupancy, OccupancyError

__all__ = ["Waves", "waves", "block_placement", "warp_sub_partitions"]


@dataclass(frozen=True)
class Waves:
    """Wave arithmetic for one grid."""

    grid_blocks: int
    blocks_per_sm: int
    sm_count: int
    capacity: int               # blocks resident at once on the whole GPU
    waves: int                  # ceil(grid / capacity)
    full_waves: int
    blocks_last_wave: int       # blocks in the last (possibly partial) wave
    busy_sms_last_wave: int
    idle_sms_last_wave: int
    efficiency: float           # grid / (waves x capacity): useful fraction of the block slots


def _bps(blocks_per_sm: int | Occupancy) -> int:
    return blocks_per_sm.active_blocks if isinstance(blocks_per_sm, Occupancy) else int(blocks_per_sm)


def waves(grid_blocks: int, blocks_per_sm: int | Occupancy = 1, spec: DeviceSpec = H100_SXM,
          sm_count: int | None = None) -> Waves:
    """Waves a grid of ``grid_blocks`` blocks takes with ``blocks_per_sm`` resident blocks per SM.

    ``blocks_per_sm`` may be an :class:`Occupancy` (its ``active_blocks``). Breadth-first dealing
    is assumed (module docstring); idle SMs of the last wave = SMs minus the blocks it holds.
    """
    bps = _bps(blocks_per_sm)
    sms = spec.sm_count if sm_count is None else int(sm_count)
    if grid_blocks <= 0:
        raise OccupancyError(f"grid must have a positive number of blocks, got {grid_blocks}")
    if bps <= 0:
        raise OccupancyError("a kernel with 0 active blocks per SM cannot launch: no waves")
    if sms <= 0:
        raise OccupancyError(f"SM count must be positive, got {sms}")
    cap = sms * bps
    n = math.ceil(grid_blocks / cap)
    last = grid_blocks - (n - 1) * cap
    busy = min(last, sms)
    return Waves(grid_blocks, bps, sms, cap, n, grid_blocks // cap, last, busy, sms - busy,
                 grid_blocks / (n * cap))


def block_placement(grid_blocks: int, blocks_per_sm: int | Occupancy = 1, spec: DeviceSpec = H100_SXM,
                    sm_count: int | None = None) -> np.ndarray:
    """``(grid_blocks, 3)`` int array: for each block its SM, wave, and slot on that SM (breadth-first model)."""
    w = waves(grid_blocks, blocks_per_sm, spec, sm_count)
    b = np.arange(grid_blocks)
    within = b % w.capacity
    return np.stack([within % w.sm_count, b // w.capacity, within // w.sm_count], axis=1)


def warp_sub_partitions(threads_per_block: int, spec: DeviceSpec = H100_SXM, first_slot: int = 0) -> np.ndarray:
    """The sub-partition (SMSP 0..3) of each warp of one block: warp ``w`` -> ``(first_slot + w) % 4``.

    Seed lesson 1 §12: a block is cut into warps dealt round-robin over the four sub-partitions
    [model; WP Fig. 7: four processing blocks per SM]. A block of 128 threads puts one warp on
    each; 96 threads leave one sub-partition without a warp of this block.
    """
    if threads_per_block <= 0 or threads_per_block > spec.max_threads_per_block:
        raise OccupancyError(f"threads_per_block must be 1..{spec.max_threads_per_block}, got {threads_per_block}")
    warps = -(-threads_per_block // spec.warp_size)
    return (first_slot + np.arange(warps)) % spec.sub_partitions
