"""Timelines (Gantt charts) of simulator traces, with hazards drawn on top.

Draws any trace in the :mod:`h100lab.sync.trace` format: one row per lane (a warp, or a unit such as
``tma``), one bar per record, coloured by what the record is. Operations that overlap on one lane
(copies in flight on the TMA unit) are stacked in sub-rows. Later lessons reuse :func:`gantt` for
TMA pipelines, WGMMA, warp specialisation and ping-pong schedules.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from .style import PALETTE, figure, label

__all__ = ["CATEGORIES", "category", "gantt", "draw_gantt"]

#: category -> (colour, legend text)
CATEGORIES = {
    "copy": (PALETTE[0], "bulk copy (TMA, async proxy)"),
    "compute": (PALETTE[2], "compute"),
    "lsu": (PALETTE[1], "ld/st.shared (generic proxy)"),
    "tensor": (PALETTE[4], "tensor cores (wgmma)"),
    "wait": ("#BBBBBB", "waiting (try_wait / bar.sync / wait_group)"),
    "sync": (PALETTE[7], "arrive / fence / init / commit"),
}


def category(op: str) -> str:
    """The drawing category of a PTX op name."""
    if op.startswith("cp.async.bulk") and "wait_group" not in op and "commit" not in op:
        return "copy"
    if op == "compute":
        return "compute"
    if op in ("ld.shared", "st.shared"):
        return "lsu"
    if op.startswith("wgmma"):
        return "tensor"
    if op.startswith(("mbarrier.try_wait", "mbarrier.test_wait", "bar.sync", "barrier.cluster.wait",
                      "cp.async.bulk.wait_group")):
        return "wait"
    return "sync"


def _stack(intervals: list[tuple[float, float, int]]) -> dict[int, int]:
    """Greedy sub-row assignment so that overlapping intervals of one lane do not hide each other."""
    ends: list[float] = []
    row: dict[int, int] = {}
    for t0, t1, i in sorted(intervals):
        for k, e in enumerate(ends):
            if e <= t0 + 1e-9:
                ends[k] = t1
                row[i] = k
                break
        else:
            ends.append(t1)
            row[i] = len(ends) - 1
    return row


def draw_gantt(ax, trace: Sequence, *, lanes: Sequence[str] | None = None, t0: float | None = None,
               t1: float | None = None, hazards: Iterable = (), legend: bool = True) -> None:
    """Draw ``trace`` on matplotlib axes ``ax`` (see :func:`gantt`)."""
    recs = [r for r in trace if (t1 is None or r.t0 <= t1) and (t0 is None or r.t1 >= t0)]
    order = list(lanes) if lanes is not None else []
    for r in recs:
        ln = r.lane or r.actor
        if ln not in order:
            order.append(ln)
    ypos = {ln: len(order) - 1 - i for i, ln in enumerate(order)}
    used = set()
    for ln in order:
        mine = [(r.t0, max(r.t1, r.t0), i) for i, r in enumerate(recs) if (r.lane or r.actor) == ln]
        rows = _stack(mine)
        depth = max(rows.values(), default=0) + 1
        h = 0.8 / depth
        for _, _, i in mine:
            r = recs[i]
            cat = category(r.op)
            colour, _ = CATEGORIES[cat]
            y = ypos[ln] - 0.4 + rows[i] * h
            width = r.t1 - r.t0
            if cat == "sync" and width < 1e-9:
                continue
            ax.broken_barh([(r.t0, max(width, 1e-9))], (y + 0.05 * h, 0.9 * h), facecolors=colour,
                           edgecolor="white" if cat != "wait" else "#888888", linewidth=0.3,
                           hatch="//" if cat == "wait" else None, alpha=0.55 if cat == "wait" else 0.95)
            used.add(cat)
    for hz in hazards:
        a, b = hz.first, hz.second
        ya, yb = ypos.get(a.lane or a.actor), ypos.get(b.lane or b.actor)
        if ya is None or yb is None:
            continue
        ax.annotate("", xy=(b.t0, yb), xytext=(a.t0, ya),
                    arrowprops=dict(arrowstyle="->", color=PALETTE[3], lw=1.4))
        ax.plot([b.t0], [yb], marker="X", color=PALETTE[3], markersize=9, zorder=5)
        used.add("hazard")
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(list(reversed(order)))
    ax.set_ylim(-0.6, len(order) - 0.4)
    if t0 is not None or t1 is not None:
        ax.set_xlim(t0 if t0 is not None else ax.get_xlim()[0], t1 if t1 is not None else ax.get_xlim()[1])
    ax.grid(True, axis="x", alpha=0.3)
    ax.grid(False, axis="y")
    if legend:
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        handles = [Patch(facecolor=CATEGORIES[c][0], label=CATEGORIES[c][1], alpha=0.9) for c in CATEGORIES
                   if c in used]
        if "hazard" in used:
            handles.append(Line2D([], [], color=PALETTE[3], marker="X", label="hazard (later access)"))
        if handles:
            ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, fontsize=8)


def gantt(trace: Sequence, *, lanes: Sequence[str] | None = None, t0: float | None = None,
          t1: float | None = None, hazards: Iterable = (), title: str | None = None, figsize=(7.5, 3.4)):
    """A timeline figure of ``trace``: rows are lanes (warps and units), bars are operations;
    ``hazards`` (from :func:`h100lab.sync.hazards.check`) are drawn as red arrows from the earlier to
    the later access. Returns the figure."""
    fig, ax = figure(figsize=figsize)
    draw_gantt(ax, trace, lanes=lanes, t0=t0, t1=t1, hazards=hazards)
    label(ax, "time (ns)", "lane (warp or unit)", title)
    return fig
