"""Occupancy of compute capability 9.0: the CUDA occupancy calculator, its inverse questions, waves.

``occupancy(threads, regs, smem)`` equals ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` on an
H100/H200; ``max_regs_for_blocks``, ``register_steps`` and ``next_cliff`` answer the register
questions; ``waves`` and ``block_placement`` show how a grid fills the SMs.
"""
from .core import (CARVEOUT_DEFAULT, CARVEOUT_MAX_L1, CARVEOUT_MAX_SHARED, LIMITS, Occupancy, OccupancyError,
                   carveout_roundup, occupancy, regs_per_warp, smem_per_block_allocated)
from .inverse import Cliff, RegisterStep, max_regs_for_blocks, next_cliff, register_steps
from .waves import Waves, block_placement, warp_sub_partitions, waves

__all__ = ["occupancy", "Occupancy", "OccupancyError", "LIMITS", "CARVEOUT_DEFAULT", "CARVEOUT_MAX_L1",
           "CARVEOUT_MAX_SHARED", "carveout_roundup", "regs_per_warp", "smem_per_block_allocated",
           "max_regs_for_blocks", "register_steps", "RegisterStep", "next_cliff", "Cliff",
           "waves", "Waves", "block_placement", "warp_sub_partitions"]
