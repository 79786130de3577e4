"""Plots of lesson 2's cluster model: clusters on the GPCs, capacity against cluster size, the DSMEM ring."""
from __future__ import annotations

import math
from typing import Sequence

from .style import PALETTE, figure, label

__all__ = ["gpc_map", "capacity_plot", "ring_diagram"]

_STATE_COLOUR = {"not started": "#DDDDDD", "running": PALETTE[2], "exited": "#888888"}


def gpc_map(placement, title: str | None = None):
    """One column per GPC, one cell per SM: the colour names the cluster(s) on the SM, the number the CTAs
    it holds; white cells are idle SMs, '×' marks SMs withheld from clusters of this size ([model])."""
    from matplotlib.patches import Rectangle

    g = placement.grouping
    rows = max(g)
    fig, ax = figure(figsize=(7.0, 3.8))
    load = placement.sm_load
    first: dict[int, int] = {}
    for c in placement.ctas:
        first.setdefault(c.sm, c.cluster)
    for gi, sms in enumerate(placement.sm_ids):
        usable = set(placement.usable[gi])
        for j, s in enumerate(sms):
            n = load[s]
            colour = PALETTE[first[s] % 7] if n else "white"   # the palette without its black
            alpha = 0.35 + 0.65 * min(1.0, n / max(1, placement.blocks_per_sm)) if n else 1.0
            ax.add_patch(Rectangle((gi - 0.42, j - 0.42), 0.84, 0.84, facecolor=colour, alpha=alpha,
                                   edgecolor="#444444", linewidth=0.6))
            if s not in usable:
                ax.text(gi, j, "×", ha="center", va="center", fontsize=10, color="#D55E00")
            elif n:
                ax.text(gi, j, str(n), ha="center", va="center", fontsize=7)
    ax.set_xlim(-0.6, len(g) - 0.4)
    ax.set_ylim(rows - 0.4, -0.6)
    ax.set_yticks(range(0, rows, 2))
    ax.set_xticks(range(len(g)))
    ax.set_xticklabels([f"{i}\n{n} SMs" for i, n in enumerate(g)], fontsize=8)
    ax.grid(False)
    placed = len({c.cluster for c in placement.ctas})
    t = title or (f"clusters of {placement.cluster_size}, {placement.blocks_per_sm} CTA/SM: {placed} clusters, "
                  f"{len(placement.idle_sms)} idle SMs" + (" (assumed grouping)" if placement.assumed else ""))
    label(ax, "GPC (index, SMs)", "SM in the GPC (position)", t)
    return fig


def capacity_plot(sizes: Sequence[int], clusters: Sequence[int], ctas: Sequence[int], slots: int,
                  measured: dict[int, int] | None = None, title: str = ""):
    """Resident clusters (bars) and resident CTAs (line, right axis) against cluster size; ``measured``
    (cluster size → clusters) overlays silicon values as markers."""
    fig, ax = figure(figsize=(7.0, 3.4))
    ax.bar(sizes, clusters, color=PALETTE[0], alpha=0.8, label="model: clusters")
    if measured:
        ks = sorted(measured)
        ax.plot(ks, [measured[k] for k in ks], "o", color=PALETTE[3], label="cudaOccupancyMaxActiveClusters")
    ax.set_yscale("log")
    ax.set_xticks(list(sizes))
    label(ax, "cluster size (CTAs)", "resident clusters (count)", title or None)
    ax2 = ax.twinx()
    ax2.plot(sizes, [100.0 * c / slots for c in ctas], "-s", color=PALETTE[1], label="CTA slots used")
    ax2.set_ylim(0, 105)
    ax2.set_ylabel("CTA slots used (%)")
    ax2.grid(False)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="lower left", fontsize=8)
    return fig


def ring_diagram(trace, step: int | None = None):
    """The CTAs of a cluster on a circle after ``step`` (default: the last) of a :func:`ring_exchange` trace:
    colour = state, number = the value in its receive slot, arrows = remote accesses so far, red = the error."""
    from matplotlib.patches import Circle

    n = trace.cluster_size
    events = trace.events
    k = len(events) - 1 if step is None else max(0, min(step, len(events) - 1))
    ev = events[k]
    fig, ax = figure(figsize=(5.0, 4.6))
    ax.set_aspect("equal")
    ax.axis("off")
    pos = [(math.cos(2 * math.pi * r / n - math.pi / 2), math.sin(2 * math.pi * r / n - math.pi / 2)) for r in range(n)]
    for e in events[:k + 1]:
        if e.remote is None:
            continue
        (x0, y0), (x1, y1) = pos[e.rank], pos[e.remote]
        colour = PALETTE[3] if e.error else (PALETTE[0] if e.op == "st_remote" else PALETTE[4])
        ax.annotate("", xy=(x1 * 0.82, y1 * 0.82), xytext=(x0 * 0.82, y0 * 0.82),
                    arrowprops=dict(arrowstyle="->", color=colour, lw=1.6 if e.error else 1.0, alpha=0.9))
    radius = min(0.22, 1.6 / n)
    for r, (x, y) in enumerate(pos):
        st = ev.states[r]
        edge = PALETTE[3] if (ev.error and (r == ev.rank or r == ev.remote)) else "#333333"
        ax.add_patch(Circle((x, y), radius, facecolor=_STATE_COLOUR[st], edgecolor=edge,
                            linewidth=2.0 if edge != "#333333" else 0.8))
        ax.text(x, y, f"{r}", ha="center", va="center", fontsize=9, fontweight="bold")
        ax.text(x * 1.32, y * 1.32, str(ev.slots[r]) if ev.slots[r] else "·", ha="center", va="center", fontsize=8)
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.6, 1.6)
    head = f"step {k}/{len(events) - 1}: " + (ev.detail if ev.error else f"CTA {ev.rank} {ev.detail}")
    ax.set_title(head if len(head) < 70 else head[:67] + "…", fontsize=9,
                 color=PALETTE[3] if ev.error else "black")
    return fig
