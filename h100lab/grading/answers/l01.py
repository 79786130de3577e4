"""Exercise set 1 (chapter 1, "The Hopper architecture"): occupancy, banks, sectors, rooflines, waves.

Every reference answer is computed by the model the chapter teaches (h100lab.occupancy,
h100lab.memory, h100lab.roofline), never typed in.
"""
from __future__ import annotations

from ..registry import exercise


@exercise("1.1", points=1, hint="occupancy(threads, regs, smem).limiting names the resource(s) whose limit "
          "equals the answer; give the first as a string such as 'registers' or 'shared_memory'.")
def _limiting_resource():
    from h100lab.occupancy import occupancy

    return occupancy(256, 90, 40 * 1024).limiting[0]


@exercise("1.2", points=1, hint="90 registers round up to 3072 per warp: how many warps fit in a "
          "sub-partition's 16,384 registers?")
def _active_blocks():
    from h100lab.occupancy import occupancy

    return occupancy(256, 90, 40 * 1024).active_blocks


@exercise("1.3", points=2, hint="Registers are allocated per warp in units of 256 (8 per thread); look for "
          "the first count whose rounded allocation no longer fits 8 warps in a sub-partition.")
def _cliff():
    from h100lab.occupancy import next_cliff

    return next_cliff(256, 56).cliff_regs


@exercise("1.4", points=1, hint="Two blocks of 16 warps are 8 warps per sub-partition; 16,384 / 8 registers "
          "per warp, divided by 32 threads.")
def _max_regs():
    from h100lab.occupancy import max_regs_for_blocks

    return max_regs_for_blocks(512, 2)


@exercise("1.5", points=2, hint="A 50 % preference is 116,736 B, rounded up to the next carveout step; the "
          "block's footprint includes the 1 KB reserve.")
def _carveout():
    from h100lab.occupancy import occupancy

    return occupancy(128, 32, 100 * 1024, carveout=50).active_blocks


@exercise("1.6", points=2, hint="64-bit loads go by half-warps: the 16 lanes of a phase must fall in "
          "different bank pairs. Try min_padding(row_bytes, width).")
def _padding():
    from h100lab.memory.banks import min_padding

    return min_padding(64 * 8, 8)


@exercise("1.7", points=1, hint="128-bit loads go by quarter-warps of 8 lanes, 128 bytes per wavefront.")
def _wavefronts():
    from h100lab.memory.banks import lane_addresses, wavefronts

    return int(wavefronts(lane_addresses(32, 16), 16))


@exercise("1.8", points=1, hint="Count the distinct 32-byte sectors floor(address / 32) the 32 lanes touch.")
def _sectors():
    from h100lab.memory.banks import lane_addresses
    from h100lab.memory.coalescing import sectors

    return int(sectors(lane_addresses(3 * 4, 4), 4))


@exercise("1.9", points=2, rtol=1e-3, hint="Ridge point = peak FLOP/s / HBM bytes/s "
          "(h100lab.roofline.ridge_point), in the order H100 SXM BF16, H100 SXM FP8, H200 BF16, H200 FP8.")
def _ridges():
    from h100lab import roofline as rl
    from h100lab.specs import H100_SXM, H200_SXM

    return [rl.ridge_point(s, d) for s in (H100_SXM, H200_SXM) for d in ("bf16", "fp8")]


@exercise("1.10", points=2, hint="First the blocks per SM (occupancy), then waves(grid, blocks_per_sm): "
          "idle SMs in the last wave.")
def _idle_sms():
    from h100lab.occupancy import occupancy, waves

    return waves(600, occupancy(1024, 64)).idle_sms_last_wave
