"""Figures of lesson 8 (kernel design): the pipeline ring's timeline, cooperative vs ping-pong consumers, the tile
calculator's budgets, the tile-order heatmap, utilisation curves and the measured GEMM table. Every figure draws
a result the model computed (:mod:`h100lab.widgets.l08_design`, :mod:`h100lab.design`); nothing here computes."""
from __future__ import annotations

import numpy as np

from .style import PALETTE, figure, label

__all__ = ["draw_pipeline", "draw_consumers", "draw_calculator", "draw_order", "draw_utilization",
           "draw_measured"]

_VERDICT_COLOUR = {"ok": PALETTE[2], "wait": PALETTE[5], "aba": PALETTE[3], "skipped": PALETTE[4]}


def draw_pipeline(r: dict):
    """Upper lanes: each slot's TMA load (issue → landing), one lane per stage; bottom lane: its MMA; the MMA bar coloured by what the
    consumer's parity wait answered (green right, light blue pending, red ABA, purple phase skipped)."""
    tl = r["timeline"]
    S = r["stages"]
    fig, ax = figure(1, 1, figsize=(8.0, 1.6 + 0.35 * S))
    for i in range(r["n"]):
        c = PALETTE[(i % S) % len(PALETTE)]
        y = 1 + i % S
        ax.barh(y, tl.load_end[i] - tl.load_start[i], left=tl.load_start[i], height=0.6, color=c, alpha=0.35,
                edgecolor=c)
        ax.text((tl.load_start[i] + tl.load_end[i]) / 2, y, f"L{i}", ha="center", va="center", fontsize=7)
        ax.barh(0, tl.mma_end[i] - tl.mma_start[i], left=tl.mma_start[i], height=0.5,
                color=_VERDICT_COLOUR[r["verdicts"][i]], edgecolor="white")
        ax.text((tl.mma_start[i] + tl.mma_end[i]) / 2, 0, f"M{i}", ha="center", va="center", fontsize=7,
                color="white")
    ax.set_yticks(range(S + 1), ["MMA (consumer)"] + [f"load, stage {s}" for s in range(S)])
    ax.grid(axis="y", visible=False)
    label(ax, "time (cycles)", "lane (—)",
          f"{S} stages: utilisation {100 * tl.utilization:.1f} % ({r['rule']})")
    return fig


def draw_consumers(r: dict):
    """Two panels (cooperative, ping-pong): for each consumer warpgroup its mainloop (MMA) and epilogue intervals."""
    fig, axes = figure(2, 1, figsize=(8.0, 3.8), sharex=True)
    for ax, v in zip(axes, ("cooperative", "pingpong")):
        d = r[v]
        for c, kind, s, e in d["intervals"]:
            ax.barh(c, e - s, left=s, height=0.6, color=PALETTE[0] if kind == "mma" else PALETTE[1],
                    edgecolor="white")
        ax.set_yticks([0, 1], ["consumer 0", "consumer 1"])
        ax.grid(axis="y", visible=False)
        label(ax, "time (cycles)", "warpgroup (—)",
              f"{v}: {d['total']:.0f} cycles, tensor core busy {100 * d['busy']:.1f} % (blue MMA, orange epilogue)")
    return fig


def draw_calculator(r: dict):
    """Two bars: shared memory used against the 227 KiB limit, consumer registers against the setmaxnreg budget."""
    t = r["tile"]
    fig, axes = figure(1, 2, figsize=(8.0, 2.8))
    ax = axes[0]
    ax.bar(["ring + barriers"], [t.smem / 1024], color=PALETTE[0] if t.smem <= r["smem_limit"] else PALETTE[3])
    ax.axhline(r["smem_limit"] / 1024, color="0.3", ls="--", lw=1)
    label(ax, "use (—)", "shared memory (KiB)", f"{t.stages} stages: {t.smem / 1024:.1f} of {r['smem_limit'] / 1024:.0f} KiB")
    ax = axes[1]
    ax.bar(["consumer thread"], [t.regs], color=PALETTE[2] if t.regs <= t.reg_limit else PALETTE[3])
    ax.axhline(t.reg_limit, color="0.3", ls="--", lw=1)
    label(ax, "use (—)", "registers (per thread)", f"{t.regs} of {t.reg_limit} registers")
    return fig


#: how many tiles of the order :func:`draw_order` numbers: enough to show the path (a group's columns, the turn to
#: the next group); numbering every tile made each of the order explorer's precomputed figures ~1 s to draw
NUMBERED = 40


def draw_order(r: dict):
    """The tile grid, each tile coloured by its wave (which round of the persistent CTAs runs it), the first
    :data:`NUMBERED` tiles of the order numbered."""
    fig, ax = figure(1, 1, figsize=(5.2, 4.4))
    im = ax.imshow(r["wave"], cmap="viridis", aspect="auto", interpolation="nearest")
    pos = r["position"]
    for (m, n), t in np.ndenumerate(pos):
        if t < NUMBERED:
            ax.text(n, m, str(t), ha="center", va="center", fontsize=5.5, color="white")
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="wave (index)")
    label(ax, "tile column n (tile)", "tile row m (tile)",
          f"group {r['group']} along {r['raster'].upper()}: L2 hit {100 * r['l2'].hit_rate:.1f} % (model)")
    return fig


def draw_utilization(stages, utilization, load: float, mma: float):
    """Tensor-core utilisation of the ring timeline against the number of stages."""
    fig, ax = figure(1, 1, figsize=(6.0, 3.0))
    ax.plot(stages, 100 * np.asarray(utilization), "o-", color=PALETTE[0])
    ax.set_ylim(0, 105)
    label(ax, "stages (—)", "tensor-core utilisation (%)", f"load {load:.0f} cycles, MMA {mma:.0f} cycles per stage")
    return fig


def draw_measured(rows: list[dict]):
    """Measured TFLOP/s of the book's kernel (cooperative, ping-pong) and cuBLAS per shape, same run."""
    fig, ax = figure(1, 1, figsize=(8.0, 3.4))
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    x = np.arange(len(shapes))
    for k, (who, colour) in enumerate((("cublas", PALETTE[7]), ("cooperative", PALETTE[0]),
                                       ("pingpong", PALETTE[1]))):
        ys = [next((r["tflops"] for r in rows if r["shape"] == s and r["variant"] == who), np.nan) for s in shapes]
        ax.bar(x + (k - 1) * 0.27, ys, width=0.27, color=colour, label=who)
    ax.set_xticks(x, shapes, fontsize=8)
    ax.legend(fontsize=8)
    label(ax, "shape M×N×K (—)", "throughput (TFLOP/s)", "H200, same run: the book's GEMM and cuBLAS")
    return fig
