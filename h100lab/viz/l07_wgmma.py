"""Figures of lesson 7 (WGMMA part 2): the FP8 number line, the quantisation lab's errors, the 2:4 packer, the
commit/wait timeline, and the chapter's plots of accumulation error and wgmma throughput. Every figure draws a
result the model computed (:mod:`h100lab.widgets.l07_wgmma`, :mod:`h100lab.tensorcore`); nothing here rounds,
packs or times."""
from __future__ import annotations

import numpy as np

from .style import PALETTE, figure, label

__all__ = ["draw_fp8_line", "draw_quant", "draw_packer", "draw_timeline", "draw_accumulation", "draw_throughput"]


def draw_fp8_line(r: dict):
    """Top: every positive finite value of e4m3 and e5m2 (times the scale) on a log axis, the largest finite
    value and the converted input marked. Bottom: the spacing between neighbours relative to the value."""
    fig, (ax, ax2) = figure(2, 1, figsize=(9.0, 4.8), sharex=True)
    for i, f in enumerate(("e4m3", "e5m2")):
        g = r["grid"][f]
        ax.vlines(g, i - 0.35, i + 0.35, color=PALETTE[i], lw=0.6)
        ax2.step(g[:-1], np.diff(g) / g[:-1], where="post", color=PALETTE[i], label=f".{f}")
        ax.vlines(g[-1], i - 0.45, i + 0.45, color=PALETTE[i], lw=2.2)
    k = 0 if r["fmt"] == "e4m3" else 1
    x = max(r["value"], 1e-30)
    ax.plot([x], [k], marker="v", color=PALETTE[3], ms=9, label=f"x = {r['value']:g}")
    ax.plot([max(r["dequantised"], 1e-30)], [k], marker="o", color=PALETTE[2], ms=7, mfc="none",
            label=f"after cvt: {r['dequantised']:g}" + (" (saturated)" if r["saturated"] else ""))
    ax.set_xscale("log", base=2)
    ax.set_yticks([0, 1])
    ax.set_yticklabels([".e4m3", ".e5m2"])
    ax.set_ylim(-0.7, 1.7)
    ax.legend(loc="upper left", fontsize=8)
    label(ax, "value (—)", "format (—)", f"FP8 values × scale s = {r['scale']:g} (thick: largest finite)")
    ax2.set_yscale("log", base=2)
    ax2.legend(fontsize=8)
    label(ax2, "value (—)", "gap to next / value (—)", None)
    return fig


def draw_quant(r: dict):
    """Left: relative RMS error and underflow per scaling granularity (the chosen one highlighted). Right:
    histogram of the per-element relative error of the chosen granularity."""
    fig, (ax, ax2) = figure(1, 2, figsize=(10.0, 3.8))
    names = list(r["table"])
    rms = [r["table"][g]["rel_rms"] for g in names]
    under = [r["table"][g]["underflow"] for g in names]
    x = np.arange(len(names))
    colours = [PALETTE[3] if g == r["granularity"] else PALETTE[0] for g in names]
    ax.bar(x - 0.2, rms, 0.4, color=colours, label="relative RMS error")
    ax.bar(x + 0.2, under, 0.4, color=PALETTE[4], label="fraction flushed to 0")
    ax.set_xticks(x)
    ax.set_xticklabels([g.replace("block_", "") for g in names], rotation=20)
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    label(ax, "scaling granularity (—)", "error, fraction (—)", f"{r['kind']} → .{r['fmt']}")
    rel = r["rel"]
    rel = rel[rel > 0]
    if rel.size:
        ax2.hist(np.log2(rel), bins=60, color=PALETTE[3])
    label(ax2, "log2 relative error of an element (—)", "elements (count)", f"{r['granularity']} scaling")
    return fig


def draw_packer(r: dict):
    """The dense row (zeros grey), the values kept in the packed A, and each group's metadata nibble in bits."""
    K = r["k"]
    grp = r["group"]
    fig, ax = figure(1, 1, figsize=(min(12.0, 2.0 + K * 0.22), 3.2))
    for k, v in enumerate(r["dense"]):
        ax.add_patch(_box(k, 2, PALETTE[0] if v != 0 else "0.85"))
        ax.text(k + 0.5, 2.5, f"{v:g}", ha="center", va="center", fontsize=6)
    vals = r["values"]
    scale = K / len(vals)
    for j, v in enumerate(vals):
        ax.add_patch(_box(j * scale + (scale - 1) / 2, 1, PALETTE[2]))
        ax.text(j * scale + scale / 2, 1.5, f"{v:g}", ha="center", va="center", fontsize=6)
    for g, nib in enumerate(r["nibbles"]):
        ax.text(g * grp + grp / 2, 0.5, f"{nib:04b}", ha="center", va="center", fontsize=7, family="monospace",
                color=PALETTE[3])
        ax.axvline(g * grp, color="0.5", lw=0.5)
    ax.set_xlim(0, K)
    ax.set_ylim(0, 3.2)
    ax.set_yticks([0.5, 1.5, 2.5])
    ax.set_yticklabels(["metadata", "packed A", "dense A"])
    ax.grid(False)
    label(ax, "k (element of K)", "stored form (—)",
          f".{r['atype']}: {r['kept']}:{r['group']} sparsity, row of K = {K} → {len(vals)} values + "
          f"{len(r['nibbles'])} nibbles")
    return fig


def _box(x, y, colour):
    from matplotlib.patches import Rectangle
    return Rectangle((x + 0.05, y + 0.1), 0.9, 0.8, color=colour)


def draw_timeline(r: dict):
    """Left: issue and tensor-core execution of each wgmma (cycles). Right: tensor-core utilisation against the
    number of groups a wait leaves in flight."""
    fig, (ax, ax2) = figure(1, 2, figsize=(10.5, 3.6), gridspec_kw={"width_ratios": [2.2, 1]})
    tl = r["timeline"]
    per = r["per_group"]
    for i, (issue, start, end) in enumerate(tl.spans):
        c = PALETTE[(i // per) % 4]
        ax.barh(1, end - start, left=start, color=c, edgecolor="white", lw=0.4)
        ax.plot([issue], [0], marker="|", color=c, ms=10)
    ax.set_yticks([0, 1])
    ax.set_yticklabels(["issue (warpgroup)", "tensor core"])
    ax.set_xlim(0, tl.cycles)
    tag = "calibrated subset" if r["calibrated"] else "prior constants"
    label(ax, "time (cycles)", "unit (—)", f"{r['per_group']} wgmma/group, wait_group {r['depth']} "
          f"[model-only: {tag}]")
    d = sorted(r["curve"])
    ax2.plot(d, [100 * r["curve"][k] for k in d], marker="o", color=PALETTE[0])
    ax2.plot([r["depth"]], [100 * r["utilisation"]], marker="o", color=PALETTE[3], ms=9)
    ax2.set_ylim(0, 105)
    ax2.set_xticks(d)
    label(ax2, "groups left in flight N (groups)", "tensor core busy (%)", "utilisation")
    return fig


def draw_accumulation(intervals, errors, budget=None):
    """Max relative error of an FP8 GEMM against the promotion interval (wgmmas per promotion)."""
    fig, ax = figure(1, 1, figsize=(6.4, 3.6))
    ax.loglog(intervals, errors, marker="o", color=PALETTE[0], base=2)
    if budget is not None:
        ax.axhline(budget, color=PALETTE[3], ls="--", lw=1, label=f"budget {budget:g}")
        ax.legend(fontsize=8)
    label(ax, "promotion interval (wgmmas of k32)", "max relative error (—)", "two-level accumulation [model]")
    return fig


def draw_throughput(rows):
    """Dense MACs per SM per cycle of m64nNk wgmma chains, measured (bars) and the peak (marks), per type."""
    fig, ax = figure(1, 1, figsize=(6.4, 3.6))
    x = np.arange(len(rows))
    ax.bar(x, [r["measured"] for r in rows], color=PALETTE[0], label="H200, measured")
    ax.plot(x, [r["peak"] for r in rows], "_", ms=28, mew=2.5, color=PALETTE[3], label="peak (spec sheet)")
    ax.set_xticks(x)
    ax.set_xticklabels([r["type"] for r in rows])
    ax.legend(fontsize=8)
    label(ax, "A/B type (—)", "MACs per SM per cycle (MAC/cycle)", "wgmma m64n256 throughput")
    return fig
