"""Figures of lesson 5: simulator timelines of TMA work, multicast byte counts, copy bandwidth (simulated
vs measured), and a dynamic-shared-memory plan."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .style import PALETTE, figure, label

__all__ = ["op_colour", "draw_timeline", "draw_multicast_bytes", "draw_copy_bandwidth", "draw_smem_plan"]


def op_colour(op: str) -> str:
    """One colour per kind of operation: copies, waits, compute, barrier arrivals, other."""
    if op.startswith("cp.async.bulk.global") or op.startswith("cp.reduce"):
        return PALETTE[1]
    if op.startswith("cp.async.bulk"):
        return PALETTE[0]
    if "wait" in op:
        return "#cccccc"
    if op in ("compute", "wgmma", "ld.shared"):
        return PALETTE[2]
    if op.startswith("mbarrier"):
        return PALETTE[4]
    return PALETTE[7]


def draw_timeline(trace: Sequence, *, t_max: float | None = None, lanes: Sequence[str] | None = None,
                  title: str | None = None, ax=None):
    """One row per lane of a simulator trace (``h100lab.sync.trace.Record``), intervals coloured by
    :func:`op_colour`; copies are drawn on the TMA lanes from issue to completion."""
    from matplotlib.patches import Patch

    recs = [r for r in trace if r.t1 > r.t0]
    names = list(lanes) if lanes is not None else sorted({r.lane or r.actor for r in recs})
    if ax is None:
        fig, ax = figure(figsize=(9, 0.6 + 0.42 * len(names)))
    else:
        fig = ax.figure
    y = {n: i for i, n in enumerate(names)}
    # operations that overlap in one lane (copies in flight) are stacked on tracks inside the lane
    tracks: dict[str, list[float]] = {n: [] for n in names}
    placed = []
    for r in sorted(recs, key=lambda r: (r.t0, r.t1)):
        ln = r.lane or r.actor
        if ln not in y:
            continue
        ends = tracks[ln]
        k = next((i for i, e in enumerate(ends) if e <= r.t0 + 1e-9), None)
        if k is None:
            ends.append(r.t1)
            k = len(ends) - 1
        else:
            ends[k] = r.t1
        placed.append((r, ln, k))
    for r, ln, k in placed:
        n = max(1, len(tracks[ln]))
        h = 0.76 / n
        ax.broken_barh([(r.t0, r.t1 - r.t0)], (y[ln] - 0.38 + k * h, h), facecolors=op_colour(r.op),
                       edgecolor="white", linewidth=0.3)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    if t_max is not None:
        ax.set_xlim(0, t_max)
    ax.legend(handles=[Patch(color=PALETTE[0], label="TMA load"), Patch(color=PALETTE[1], label="TMA store"),
                       Patch(color=PALETTE[2], label="compute / read"), Patch(color="#cccccc", label="waiting"),
                       Patch(color=PALETTE[4], label="mbarrier op")], loc="center left", fontsize=7,
              bbox_to_anchor=(1.01, 0.5))
    label(ax, "time (ns)", "lane (warp or TMA unit)", title)
    return fig


def draw_multicast_bytes(results: Sequence, title: str | None = None, ax=None):
    """Grouped bars for each :class:`~h100lab.tma.pipeline.MulticastResult`: bytes requested from L2, fetched
    from HBM and delivered to shared memory."""
    if ax is None:
        fig, ax = figure(figsize=(7, 3.2))
    else:
        fig = ax.figure
    x = np.arange(3)
    w = 0.8 / max(len(results), 1)
    for i, r in enumerate(results):
        vals = [r.l2_request_bytes / 1024, r.hbm_bytes / 1024, r.delivered_bytes / 1024]
        name = "multicast" if r.multicast else "one load per CTA"
        ax.bar(x + i * w, vals, w, color=PALETTE[i % len(PALETTE)], label=f"{name} ({r.total_ns / 1000:.1f} µs)")
    ax.set_xticks(x + w * (len(results) - 1) / 2, ["requested from L2", "fetched from HBM", "delivered to SMEM"])
    ax.legend(fontsize=8)
    label(ax, "traffic (kind)", "bytes (KiB)", title or "multicast: one read, many deliveries")
    return fig


def draw_copy_bandwidth(simulated: Sequence[dict], measured: Sequence[dict] = (), reference: float | None = None,
                        title: str | None = None):
    """Bandwidth (GB/s, read + written) against stages: simulated lines per tile size, measured points,
    and a horizontal line for the device copy."""
    fig, ax = figure(figsize=(7, 3.6))
    tiles = sorted({r["tile_bytes"] for r in simulated} | {r["tile_bytes"] for r in measured})
    for i, tb in enumerate(tiles):
        col = PALETTE[i % len(PALETTE)]
        sim = sorted((r["stages"], r["gbps"]) for r in simulated if r["tile_bytes"] == tb)
        if sim:
            ax.plot(*zip(*sim), "-", color=col, label=f"simulated, {tb // 1024} KB tiles")
        meas = sorted((r["stages"], r["gbps"]) for r in measured if r["tile_bytes"] == tb)
        if meas:
            ax.plot(*zip(*meas), "o", color=col, label=f"measured, {tb // 1024} KB tiles")
    if reference:
        ax.axhline(reference, color="black", ls="--", lw=1, label="device copy kernel (measured)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, ncol=2)
    label(ax, "stages (buffers in flight)", "bandwidth, read + write (GB/s)", title or "TMA copy stream")
    return fig


def draw_smem_plan(plan, title: str | None = None):
    """The dynamic-shared-memory plan as one bar: barriers, tiles, padding (offsets in bytes)."""
    fig, ax = figure(figsize=(9, 1.9))
    for i, r in enumerate(plan.regions):
        col = PALETTE[4] if r.kind == "mbarrier" else PALETTE[i % 4]
        ax.broken_barh([(r.offset, r.nbytes)], (0, 1), facecolors=col, edgecolor="black", linewidth=0.4)
        if r.nbytes >= plan.used_bytes / 25:
            ax.text(r.offset + r.nbytes / 2, 0.5, r.name, ha="center", va="center", fontsize=7)
    ax.set_yticks([])
    ax.set_xlim(0, max(plan.used_bytes, 1))
    label(ax, "offset in dynamic shared memory (bytes)", "plan (one bar)",
          title or f"{plan.used_bytes} B used, {plan.padding_bytes} B padding, {plan.slack} B alignment slack")
    return fig
