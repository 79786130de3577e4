"""A diagram of one Hopper SM: four sub-partitions (each with its warp scheduler, dispatch unit, L0
instruction cache, a quarter of the register file and its own execution units) around the SM-wide L1
instruction cache, 256 KB L1/shared memory, TMA unit and texture units. Numbers come from the spec."""
from __future__ import annotations

from .style import PALETTE, figure, label

__all__ = ["draw_sm"]


def draw_sm(spec=None):
    """The SM of ``spec`` (default the H200) as boxes: what is per sub-partition, what the SM shares."""
    from matplotlib.patches import FancyBboxPatch, Rectangle

    from ..specs import H200_SXM

    s = spec or H200_SXM
    fig, ax = figure(figsize=(8.6, 5.6))
    ax.set_xlim(0, 20)
    ax.set_ylim(0, 14)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.set_xticks([])
    ax.set_yticks([])

    def box(x, y, w, h, text, color, fs=7, tc="black"):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.12", facecolor=color,
                                    edgecolor="#333333", linewidth=0.6))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs, color=tc)

    ax.add_patch(Rectangle((0.1, 0.1), 19.8, 13.8, fill=False, edgecolor="#333333", linewidth=1.2))
    box(0.4, 12.6, 19.2, 1.0, "L1 instruction cache  ·  constant cache", "#eeeeee", 8)
    regs_sp = s.regs_per_sub_partition
    for q in range(s.sub_partitions):
        x0 = 0.4 + q * 4.85
        ax.add_patch(Rectangle((x0, 4.1), 4.6, 8.2, fill=False, edgecolor=PALETTE[0], linewidth=1.0))
        ax.text(x0 + 0.1, 12.05, f"sub-partition {q}", fontsize=7, color=PALETTE[0])
        box(x0 + 0.2, 11.0, 4.2, 0.7, "L0 I-cache", "#f5f5f5")
        box(x0 + 0.2, 10.1, 4.2, 0.75, f"warp scheduler (≤ {s.max_warps_per_sub_partition} warps)\n+ dispatch, 1 instr./clock",
            "#d9e8f5", 6.5)
        box(x0 + 0.2, 8.9, 4.2, 1.0, f"register file\n{regs_sp:,} × 32 bit ({regs_sp * 4 // 1024} KB)", "#c7dff0")
        lanes = s.fp32_lanes_per_sm // s.sub_partitions
        box(x0 + 0.2, 7.5, 2.0, 1.2, f"{lanes} FP32\nlanes", PALETTE[2], 6.5, "white")
        box(x0 + 2.4, 7.5, 2.0, 1.2, "16 INT32\nlanes", "#7fc8b3", 6.5)
        box(x0 + 0.2, 6.2, 2.0, 1.1, "16 FP64\nlanes", "#b3dfd2", 6.5)
        box(x0 + 2.4, 6.2, 2.0, 1.1, "tensor core\n(4th gen.)", PALETTE[4], 6.5, "white")
        box(x0 + 0.2, 4.3, 2.0, 1.7, f"{s.lsus_per_sm // s.sub_partitions} LD/ST\nunits", PALETTE[1], 6.5)
        box(x0 + 2.4, 4.3, 2.0, 1.7, f"{s.sfus_per_sm // s.sub_partitions} SFUs", "#f3cf80", 6.5)
    l1 = s.l1_smem_bytes // 1024
    smem = s.smem_per_sm // 1024
    box(0.4, 1.9, 13.6, 1.9, f"{l1} KB L1 data cache / shared memory (shared: up to {smem} KB per SM, "
        f"{s.smem_per_block_optin // 1024} KB per block)\n32 banks × 4 B: 128 B per clock", "#fde3c8", 7.5)
    box(14.3, 1.9, 5.3, 1.9, "TMA unit\n(tensor memory accelerator)", PALETTE[0], 7.5, "white")
    box(0.4, 0.4, 19.2, 1.2, "to L2 (shared by all SMs) and HBM  ·  to the other SMs of the GPC (DSMEM)",
        "#eeeeee", 7.5)
    label(ax, "layout (schematic)", "layout (schematic)", f"One SM of the {s.name}: {s.sub_partitions} sub-partitions, {s.fp32_lanes_per_sm} FP32 lanes, "
                      f"{s.tensor_cores_per_sm} tensor cores, {s.regs_per_sm:,} registers")
    return fig
