"""Plots of lesson 2's cluster model: clusters on the cluster domains (model and measured), capacity and idle
SMs against cluster size, the DSMEM ring."""
from __future__ import annotations

import math
from typing import Sequence

from .style import PALETTE, figure, label

__all__ = ["domain_map", "gpc_map", "wave_map", "capacity_plot", "idle_plot", "ring_diagram"]

_STATE_COLOUR = {"not started": "#DDDDDD", "running": PALETTE[2], "exited": "#888888"}


def _domain_labels(domains: Sequence[int], singleton: Sequence[bool]) -> list[str]:
    """Tick labels: "vGPC" (a virtual GPC) or "TPC" (a singleton TPC), with the SM count."""
    return [f"{'TPC' if single else 'vGPC'}\n{n} SMs" for n, single in zip(domains, singleton)]


def domain_map(sm_ids: Sequence[Sequence[int]], singleton: Sequence[bool], load: dict[int, int] | None = None,
               blocks_per_sm: int = 1, usable: Sequence[Sequence[int]] | None = None,
               colour_of: dict[int, int] | None = None, title: str = "", show_ids: bool = False):
    """One column per cluster domain (virtual GPCs, then singleton TPCs), one cell per SM in ``%smid``
    order. ``load`` (SM → CTAs) shades the cells and writes the count (white = idle SM); ``colour_of``
    (SM → cluster id) picks the colour; SMs not in ``usable`` get a '×'; ``show_ids`` writes ``%smid``."""
    from matplotlib.patches import Rectangle

    domains = [len(x) for x in sm_ids]
    rows = max(domains)
    fig, ax = figure(figsize=(7.4, 3.9))
    for gi, sms in enumerate(sm_ids):
        ok = set(usable[gi]) if usable is not None else set(sms)
        for j, s in enumerate(sms):
            n = load.get(s, 0) if load is not None else 0
            if load is None:
                colour, alpha = PALETTE[5] if not singleton[gi] else PALETTE[1], 0.55
            elif n:
                colour = PALETTE[(colour_of or {}).get(s, 0) % 7]     # the palette without its black
                alpha = 0.35 + 0.65 * min(1.0, n / max(1, blocks_per_sm))
            else:
                colour, alpha = "white", 1.0
            ax.add_patch(Rectangle((gi - 0.42, j - 0.42), 0.84, 0.84, facecolor=colour, alpha=alpha,
                                   edgecolor="#444444", linewidth=0.6))
            if s not in ok:
                ax.text(gi, j, "×", ha="center", va="center", fontsize=10, color="#D55E00")
            elif show_ids:
                ax.text(gi, j, str(s), ha="center", va="center", fontsize=6)
            elif n:
                ax.text(gi, j, str(n), ha="center", va="center", fontsize=7)
    ax.set_xlim(-0.6, len(domains) - 0.4)
    ax.set_ylim(rows - 0.4, -0.6)
    ax.set_yticks(range(0, rows, 2))
    ax.set_xticks(range(len(domains)))
    ax.set_xticklabels(_domain_labels(domains, singleton), fontsize=7)
    ax.grid(False)
    label(ax, "cluster domain (virtual GPC or singleton TPC; SMs)", "SM in the domain (position)", title or None)
    return fig


def gpc_map(placement, title: str | None = None):
    """One wave of the model's placement (:func:`h100lab.cluster.place_clusters`) on the cluster domains: the
    colour names the cluster on the SM, the number the CTAs it holds; white cells are idle SMs, '×' marks
    SMs of a domain too small for clusters of this size."""
    lay = placement.layout
    first: dict[int, int] = {}
    for c in placement.ctas:
        first.setdefault(c.sm, c.cluster)
    placed = len({c.cluster for c in placement.ctas})
    t = title or (f"clusters of {placement.cluster_size}, {placement.blocks_per_sm} CTA/SM: {placed} clusters, "
                  f"{len(placement.idle_sms)} idle SMs" + (" (assumed layout)" if placement.assumed else ""))
    return domain_map(placement.sm_ids, [lay.is_singleton(i) for i in range(len(lay.domains))], placement.sm_load,
                      placement.blocks_per_sm, placement.usable, first, t)


def wave_map(records: Sequence[dict], layout, title: str = ""):
    """A measured full wave (``data/l02/placement.json`` records of one launch: ``smid``, ``clusterid``) on
    the cluster domains of ``layout``: CTAs per SM, coloured by cluster; white cells are idle SMs."""
    load: dict[int, int] = {}
    first: dict[int, int] = {}
    for r in records:
        load[r["smid"]] = load.get(r["smid"], 0) + 1
        first.setdefault(r["smid"], r["clusterid"][0])
    ids = [sorted(x) for x in layout.sm_ids()]
    bps = records[0].get("blocks_per_sm", 1) if records else 1
    idle = sum(1 for x in ids for s in x if s not in load)
    t = title or (f"measured: clusters of {records[0].get('cluster_size', '?')}, {bps} CTA/SM — "
                  f"{len({r['clusterid'][0] for r in records})} clusters, {idle} idle SMs")
    return domain_map(ids, [layout.is_singleton(i) for i in range(len(ids))], load, bps, None, first, t)


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


def idle_plot(sizes: Sequence[int], model_idle: Sequence[int], measured_idle: dict[int, int] | None = None,
              sm_count: int = 132, title: str = ""):
    """SMs left idle by a full wave of clusters against cluster size: model bars, measured markers
    (cluster size → idle SMs counted in ``data/l02/placement.json``)."""
    fig, ax = figure(figsize=(7.0, 3.2))
    ax.bar(sizes, model_idle, color=PALETTE[0], alpha=0.8, label="model: idle SMs")
    if measured_idle:
        ks = sorted(measured_idle)
        ax.plot(ks, [measured_idle[k] for k in ks], "o", color=PALETTE[3], markersize=7, label="H200: idle SMs")
    ax.set_xticks(list(sizes))
    ax.set_ylim(0, sm_count)
    ax2 = ax.secondary_yaxis("right", functions=(lambda v: 100.0 * v / sm_count, lambda p: p * sm_count / 100.0))
    ax2.set_ylabel("idle share of the GPU (%)")
    label(ax, "cluster size (CTAs)", "idle SMs (count)", title or None)
    ax.legend(loc="upper left", fontsize=8)
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
