"""Roofline plots of the Hopper products side by side, and the lesson-1 overview figures (chip
organisation, memory-hierarchy capacities). Pure functions of h100lab.roofline and h100lab.specs."""
from __future__ import annotations

from .style import PALETTE, figure, label

__all__ = ["draw_rooflines", "draw_hierarchy", "draw_chip"]

_STYLES = ("-", "--", ":", "-.")


def draw_rooflines(dtypes=("bf16", "fp8"), specs=None, sparse: bool = False, points=None, title: str | None = None,
                   measured="auto"):
    """Log-log rooflines: datasheet ceilings (TFLOP/s against arithmetic intensity), one colour per device, one
    line style per dtype, the ridge point of each marked. ``points`` = ``[(name, intensity)]`` marks kernels.

    ``measured``: a :class:`~h100lab.roofline.MeasuredCeilings` (or ``"auto"``: the committed
    ``data/l05/ceilings`` when it exists, ``None``: none) draws what the H200 reached beside the datasheet
    lines — the best cuBLAS GEMM with the measured read-stream and copy bandwidths, in black — so the
    datasheet peaks are not mistaken for attainable throughput."""
    import numpy as np

    from ..roofline import measured_ceilings, measured_roofs, roofs
    from ..specs import ALL

    specs = specs or ALL
    fig, ax = figure(figsize=(7.5, 4.0))
    x = np.logspace(-1, 4, 400)
    devices = [s.name for s in specs]
    for r in roofs(dtypes, specs, sparse):
        c = PALETTE[devices.index(r.device)]
        ls = _STYLES[list(dtypes).index(r.dtype) % len(_STYLES)]
        ax.plot(x, r.attainable(x) / 1e12, color=c, linestyle=ls, label=f"{r.device} {r.dtype} (datasheet)")
        ax.plot([r.ridge], [r.peak / 1e12], "o", color=c, markersize=4)
    ceil = measured_ceilings() if measured == "auto" else measured
    if ceil is not None and not sparse:
        for k, r in enumerate(measured_roofs(ceil, dtypes)):
            ax.plot(x, r.attainable(x) / 1e12, color="#222222", linestyle=_STYLES[k % len(_STYLES)], linewidth=1.2,
                    label=f"{r.device} {r.dtype} (cuBLAS)")
    for name, inten in points or ():
        ax.axvline(inten, color="#555555", linestyle=":", linewidth=1)
        ax.text(inten * 1.08, 0.6, name, fontsize=8, rotation=90, va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=8, ncol=2)
    label(ax, "arithmetic intensity (FLOP/byte)", "attainable throughput (TFLOP/s)",
          title or f"Rooflines ({'2:4 sparse' if sparse else 'dense'} tensor-core peaks, HBM bandwidth"
                   f"{'; measured ceilings in black' if ceil is not None and not sparse else ''})")
    return fig


def draw_hierarchy(specs=None):
    """Capacity of each level of the memory hierarchy, whole GPU, per device (log scale): the register
    files and shared memories of all SMs together are the same order of size as L2."""
    import numpy as np

    from ..specs import ALL

    specs = specs or ALL
    levels = ["registers (all SMs)", "shared memory (all SMs, max)", "L2", "HBM"]
    fig, ax = figure(figsize=(7.5, 3.2))
    h = 0.8 / len(specs)
    for i, s in enumerate(specs):
        vals = [s.sm_count * s.register_file_bytes, s.sm_count * s.smem_per_sm, s.l2_bytes, s.hbm_bytes]
        y = np.arange(len(levels)) + i * h
        ax.barh(y, [v / 2**20 for v in vals], height=h, color=PALETTE[i], label=s.name)
        for yy, v in zip(y, vals):
            ax.text(v / 2**20 * 1.1, yy, f"{v / 2**20:,.0f}", va="center", fontsize=7)
    ax.set_yticks(np.arange(len(levels)) + 0.4 - h / 2, levels)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.legend(fontsize=8, loc="upper right")
    ax.set_xlim(1, 2e6)
    label(ax, "capacity (MiB, log scale)", "level (name)", "Memory hierarchy: capacity of each level")
    return fig


def draw_chip(spec=None):
    """The GH100 die: 8 GPCs x 9 TPCs x 2 SMs. SMs the product disables are hatched; which TPCs are
    fused off varies from chip to chip, so their placement here is illustrative only."""
    from matplotlib.patches import Rectangle

    from ..specs import H100_SXM

    spec = spec or H100_SXM
    disabled_tpcs = spec.physical_tpc_count - spec.tpc_count
    fig, ax = figure(figsize=(8.0, 3.2))
    off = set()
    g = 0
    while len(off) < disabled_tpcs:          # spread the disabled TPCs over the GPCs, last TPC first
        off.add((g % spec.physical_gpc_count, 8 - g // spec.physical_gpc_count))
        g += 1
    for gpc in range(spec.physical_gpc_count):
        x0 = (gpc % 4) * 5.2
        y0 = (gpc // 4) * 3.2
        ax.add_patch(Rectangle((x0, y0), 5.0, 3.0, fill=False, edgecolor="#333333"))
        ax.text(x0 + 0.1, y0 + 2.75, f"GPC {gpc}", fontsize=7)
        for tpc in range(9):
            tx, ty = x0 + 0.2 + (tpc % 5) * 0.95, y0 + 0.2 + (tpc // 5) * 1.2
            dead = (gpc, tpc) in off
            for sm in range(spec.sms_per_tpc):
                ax.add_patch(Rectangle((tx + sm * 0.42, ty), 0.38, 0.9, facecolor="#dddddd" if dead else PALETTE[0],
                                       hatch="xx" if dead else None, edgecolor="white"))
    ax.set_xlim(-0.2, 21)
    ax.set_ylim(6.6, -0.2)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.set_xticks([])
    ax.set_yticks([])
    label(ax, "die position (schematic)", "die position (schematic)",
          f"{spec.name}: {spec.sm_count} of {spec.physical_sm_count} SMs enabled "
          f"({spec.tpc_count} of {spec.physical_tpc_count} TPCs; hatched: disabled, placement illustrative)")
    return fig
