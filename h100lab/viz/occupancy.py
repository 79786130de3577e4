"""Drawings of occupancy: an SM's register file, shared memory and warp slots filling up; the register
staircase; a grid's waves over the SMs. Pure functions of the model's results (h100lab.occupancy)."""
from __future__ import annotations

from .style import PALETTE, figure, label

__all__ = ["draw_occupancy", "draw_register_steps", "draw_waves"]


def _block_colour(b: int) -> str:
    return PALETTE[b % 6] if b >= 0 else "#dddddd"


def draw_occupancy(o, title: str | None = None):
    """Three panels for one :class:`~h100lab.occupancy.Occupancy`: the register file (4 sub-partitions of
    16,384 registers, each warp's allocation a coloured slab, one colour per block), shared memory
    (the carveout, each block's allocation with its 1 KB reserve hatched) and the 64 warp slots."""
    from matplotlib.patches import Rectangle

    spec = o.spec
    fig, (ax_r, ax_s, ax_w) = figure(1, 3, figsize=(9.0, 3.4), gridspec_kw={"width_ratios": [1.25, 1.1, 0.8]})
    sub = spec.sub_partitions
    cap = spec.regs_per_sub_partition
    # registers: warp w of block b sits on sub-partition (b*warps + w) % 4, stacked
    height = [0] * sub
    slot = 0
    for b in range(o.active_blocks):
        for _w in range(o.warps_per_block):
            p = slot % sub
            ax_r.add_patch(Rectangle((p + 0.08, height[p] / 1024), 0.84, o.regs_per_warp / 1024,
                                     facecolor=_block_colour(b), edgecolor="white", linewidth=0.6))
            height[p] += o.regs_per_warp
            slot += 1
    for p in range(sub):
        ax_r.add_patch(Rectangle((p + 0.08, 0), 0.84, cap / 1024, fill=False, edgecolor="#555555", linewidth=1))
    ax_r.set_xlim(0, sub)
    ax_r.set_ylim(0, cap / 1024 * 1.04)
    ax_r.set_xticks([p + 0.5 for p in range(sub)], [f"SMSP {p}" for p in range(sub)])
    ax_r.grid(False)
    label(ax_r, "sub-partition (index)", "registers (x1024)", f"registers: {o.regs_per_warp} per warp")

    # shared memory
    full = spec.smem_per_sm / 1024
    carve = o.smem_per_sm / 1024
    ax_s.add_patch(Rectangle((0, 0), 1, full, fill=False, edgecolor="#bbbbbb", linestyle=":"))
    ax_s.add_patch(Rectangle((0, 0), 1, carve, fill=False, edgecolor="#555555", linewidth=1))
    y = 0.0
    for b in range(o.active_blocks):
        h = o.smem_per_block / 1024
        resv = spec.smem_reserved_per_block / 1024
        ax_s.add_patch(Rectangle((0.1, y), 0.8, h, facecolor=_block_colour(b), edgecolor="white", linewidth=0.6))
        ax_s.add_patch(Rectangle((0.1, y), 0.8, resv, facecolor="none", edgecolor="black", hatch="///",
                                 linewidth=0))
        y += h
    ax_s.set_xlim(0, 1)
    ax_s.set_ylim(0, full * 1.04)
    ax_s.set_xticks([])
    ax_s.grid(False)
    label(ax_s, "carveout (one SM)", "shared memory (KB)", f"shared: {o.smem_per_block} B/block, {carve:.0f} KB carveout")

    # warp slots
    per = spec.max_warps_per_sub_partition
    for p in range(sub):
        ws = o.warps_per_sub_partition[p]
        for k in range(per):
            blk = (k * sub + p) // o.warps_per_block if k < ws else -1
            ax_w.add_patch(Rectangle((p + 0.1, k + 0.1), 0.8, 0.8, facecolor=_block_colour(blk), edgecolor="white"))
    ax_w.set_xlim(0, sub)
    ax_w.set_ylim(0, per)
    ax_w.set_xticks([p + 0.5 for p in range(sub)], [str(p) for p in range(sub)])
    ax_w.grid(False)
    label(ax_w, "sub-partition (index)", "warp slots (count)", f"{o.active_warps}/{spec.max_warps_per_sm} warps")
    fig.suptitle(title or f"{o.threads_per_block} threads, {o.regs_per_thread} regs/thread, "
                 f"{o.dynamic_smem + o.static_smem} B smem: {o.active_blocks} blocks/SM "
                 f"({o.occupancy:.0%}), limited by {' & '.join(x.replace('_', ' ') for x in o.limiting)}")
    return fig


def draw_register_steps(block_sizes=(128, 256, 512), spec=None, mark: int | None = None):
    """Resident warps per SM against registers per thread, one staircase per block size."""
    from ..occupancy import register_steps
    from ..specs import H100_SXM

    spec = spec or H100_SXM
    fig, ax = figure(figsize=(7.0, 3.4))
    for i, t in enumerate(block_sizes):
        xs, ys = [], []
        for s in register_steps(t, spec=spec):
            xs += [s.lo, s.hi + 1]
            ys += [s.active_warps, s.active_warps]
        ax.plot(xs, ys, color=PALETTE[i], label=f"{t} threads/block", drawstyle="steps-post")
    if mark is not None:
        ax.axvline(mark, color="#555555", linestyle=":", linewidth=1)
    ax.set_xlim(0, spec.max_regs_per_thread + 1)
    ax.set_ylim(0, spec.max_warps_per_sm + 4)
    ax.legend()
    label(ax, "registers per thread (count)", "resident warps per SM (count)", "The register staircase")
    return fig


def draw_waves(w, title: str | None = None):
    """Blocks running on each SM in each wave of a :class:`~h100lab.occupancy.Waves` (breadth-first model)."""
    import numpy as np

    from ..occupancy import block_placement

    p = block_placement(w.grid_blocks, w.blocks_per_sm, sm_count=w.sm_count)
    grid = np.zeros((w.waves, w.sm_count))
    np.add.at(grid, (p[:, 1], p[:, 0]), 1)
    fig, ax = figure(figsize=(8.0, 1.0 + 0.45 * w.waves))
    im = ax.imshow(grid, aspect="auto", cmap="Blues", vmin=0, vmax=w.blocks_per_sm, interpolation="nearest",
                   extent=(-0.5, w.sm_count - 0.5, w.waves - 0.5, -0.5))
    ax.set_yticks(range(w.waves))
    ax.grid(False)
    cb = fig.colorbar(im, ax=ax, pad=0.01)
    cb.set_label("blocks (count)")
    label(ax, "SM (index)", "wave (index)", title or
          f"{w.grid_blocks} blocks, {w.blocks_per_sm}/SM on {w.sm_count} SMs: {w.waves} waves, "
          f"{w.idle_sms_last_wave} SMs idle in the last, {w.efficiency:.0%} of block slots used")
    return fig
