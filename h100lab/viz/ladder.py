"""Lesson 1's kernel figures: the roofline kernel against its roofline, copy/compute overlap timelines, the
latency/bandwidth ladder, the pointer-chase latency curve and Little's law. Pure functions of records and
of :mod:`h100lab.memory.ladder` / :mod:`h100lab.sim.overlap`."""
from __future__ import annotations

from typing import Sequence

from .style import PALETTE, figure, label

__all__ = ["draw_roofline_kernel", "draw_overlap", "draw_ladder", "draw_chase", "draw_littles_law"]


def draw_roofline_kernel(rows: Sequence[dict], spec=None, clock_ghz: float | None = None, emulator=None):
    """The FP32 (SIMT) roofline of ``spec`` at ``clock_ghz`` (default: its max SM clock) with the measured
    throughput of each row of :func:`h100lab.validation.l01.roofline_rows` with K ≥ 1 as dots (the copy, K = 0,
    has no FLOPs to draw); ``emulator`` = ``[(intensity counted by the emulator, label)]`` marks the intensities the emulator
    counted (vertical lines)."""
    import numpy as np

    from ..specs import H200_SXM

    spec = spec or H200_SXM
    hz = (clock_ghz or spec.boost_clock_mhz / 1e3) * 1e9
    peak = spec.sm_count * 2 * spec.fp32_lanes_per_sm * hz
    fig, ax = figure(figsize=(7.2, 3.9))
    x = np.logspace(-1, 3, 300)
    ax.plot(x, np.minimum(peak, x * spec.hbm_bandwidth) / 1e12, color=PALETTE[0],
            label=f"roofline: {spec.hbm_bandwidth / 1e12:.1f} TB/s, FP32 {peak / 1e12:.1f} TFLOP/s")
    xs, ys = [], []
    for r in rows:
        inten = r["intensity (FLOP/B)"]
        if inten <= 0:           # the copy has no FLOPs: it has no point on a FLOP/s axis
            continue
        xs.append(inten)
        ys.append(r["H200 TFLOP/s"])
    ax.plot(xs, ys, "o", color=PALETTE[3], label="fma_stream on the H200 (K = 1 … 1024)")
    for inten, name in emulator or ():
        ax.axvline(inten, color="#777777", linestyle=":", linewidth=1)
        ax.text(inten * 1.07, peak / 1e12 * 0.02, name, fontsize=7, rotation=90, va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=8, loc="lower right")
    label(ax, "arithmetic intensity (FLOP/byte of HBM traffic)", "throughput (TFLOP/s)",
          "The roofline kernel: K FMAs per element, timed on the H200")
    return fig


def draw_overlap(copy_ns: float, compute_ns: float, tiles: int = 5, buffers=(1, 2), measured: dict | None = None):
    """One timeline per buffer count of :func:`h100lab.sim.overlap.schedule`: the copy engine's lane and the
    SM's lane, copies and computes of ``tiles`` tiles. ``measured`` = ``{buffers: ns per tile}`` (silicon) is
    written beside the model's period in each panel's title."""
    from ..sim.overlap import period, schedule
    from .timeline import draw_gantt

    fig, axes = figure(nrows=len(buffers), figsize=(7.6, 1.7 * len(buffers) + 0.9), sharex=True)
    axes = list(axes) if len(buffers) > 1 else [axes]
    for i, (ax, b) in enumerate(zip(axes, buffers)):
        tr = schedule(copy_ns, compute_ns, tiles, b)
        draw_gantt(ax, tr, lanes=["copy engine", "SM"], legend=i == len(buffers) - 1)
        for r in tr:
            if r.lane == "SM":
                ax.text((r.t0 + r.t1) / 2, 0, f"tile {r.label.split()[-1]}", ha="center", va="center", fontsize=7,
                        color="white")
        p = period(copy_ns, compute_ns, b)
        what = "one buffer: copy, then compute" if b == 1 else f"{b} buffers: the next copy overlaps this compute"
        m = f"; H200 {measured[b]:.0f}" if measured and b in measured else ""
        label(ax, "time (ns)", "unit (name)",
              f"{what} — model {p:.0f} ns per tile{m}")
        if i < len(buffers) - 1:
            ax.set_xlabel("")
    return fig


def draw_ladder(rows: Sequence[dict]):
    """Two panels from :func:`h100lab.validation.l01.ladder_rows`: the latency of one dependent step at each
    level (cycles, log scale) and the bandwidth of each level, the spec-derived model beside the measurement."""
    import numpy as np

    fig, (a1, a2) = figure(ncols=2, figsize=(9.0, 3.6))
    names = [r["level"] for r in rows]
    y = np.arange(len(rows))
    lat = [r["latency (cycles)"] or 0 for r in rows]
    a1.barh(y, lat, color=PALETTE[0])
    for yy, r in zip(y, rows):
        if r["latency (cycles)"]:
            a1.text(r["latency (cycles)"] * 1.1, yy, f"{r['latency (cycles)']:.0f} cyc ({r['latency (ns)']:.0f} ns)",
                    va="center", fontsize=7)
    a1.set_yticks(y, names)
    a1.invert_yaxis()
    a1.set_xscale("log")
    a1.set_xlim(1, 1e4)
    label(a1, "latency of one dependent step (cycles, log)", "level (name)", "Latency")
    h = 0.38
    model = [(r["bandwidth, model (B/s)"] or 0) / 1e12 for r in rows]
    meas = [(r["bandwidth, H200 (B/s)"] or 0) / 1e12 for r in rows]
    a2.barh(y - h / 2, model, height=h, color="#bbbbbb", label="model (spec)")
    a2.barh(y + h / 2, meas, height=h, color=PALETTE[1], label="H200 (measured)")
    for yy, v in zip(y, meas):
        if v:
            a2.text(v * 1.1, yy + h / 2, f"{v:.1f}", va="center", fontsize=7)
    a2.set_yticks(y, names)
    a2.invert_yaxis()
    a2.set_xscale("log")
    a2.set_xlim(1, 2e3)
    a2.legend(fontsize=8, loc="lower right")
    label(a2, "bandwidth, whole GPU (TB/s, log)", "level (name)", "Bandwidth")
    return fig


def draw_chase(records: Sequence[dict], l1_bytes: int | None = None, l2_bytes: int | None = None):
    """Pointer-chase latency against working-set size for ``ld.global.ca`` (L1 + L2) and ``ld.global.cg`` (L2
    only), with the L1 and L2 capacities marked: each plateau is one level of the hierarchy."""
    fig, ax = figure(figsize=(7.4, 3.6))
    for kernel, name, c in (("chase_ca", "ld.global.ca (L1 and L2)", PALETTE[2]),
                            ("chase_cg", "ld.global.cg (L2 only)", PALETTE[3])):
        pts = sorted((r["bytes"], r["cycles_per_step"]) for r in records
                     if r.get("kind") == "latency" and r.get("kernel") == kernel)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=c, markersize=3, label=name)
    for cap, name in ((l1_bytes, "L1 + shared (256 KiB)"), (l2_bytes, "L2")):
        if cap:
            ax.axvline(cap, color="#777777", linestyle=":", linewidth=1)
            ax.text(cap * 1.08, 0.35, name, fontsize=7, rotation=90, transform=ax.get_xaxis_transform())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.legend(fontsize=8, loc="upper left")
    label(ax, "working set (bytes, log)", "latency of one step (cycles, log)",
          "Pointer chase through global memory: latency against working set")
    return fig


def draw_littles_law(points: Sequence[tuple[float, float]], latency_s, peak: float, title: str | None = None):
    """Measured bandwidth against bytes in flight (``points`` = ``[(bytes in flight, bytes/s)]``) with Little's
    law ``min(peak, in flight / latency)`` drawn through them: ``latency_s`` is one latency (seconds) or a list
    of ``(seconds, name)``, one line each."""
    import numpy as np

    from ..memory.ladder import bandwidth_from_inflight

    lats = [(latency_s, "latency")] if isinstance(latency_s, (int, float)) else list(latency_s)
    fig, ax = figure(figsize=(7.2, 3.7))
    xs = np.logspace(4, 8.5, 200)
    for i, (lat, name) in enumerate(lats):
        ax.plot(xs, bandwidth_from_inflight(xs, lat, peak) / 1e12, color=PALETTE[i], linestyle=("-", "--", ":")[i % 3],
                label=f"Little's law, {name} {lat * 1e9:,.0f} ns")
    ax.plot([p[0] for p in points], [p[1] / 1e12 for p in points], "o", color=PALETTE[3], markersize=3,
            label="H200 TMA read streams (l03_stream.cu)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=8, loc="lower right")
    label(ax, "bytes in flight, whole GPU (B, log)", "bandwidth (TB/s, log)",
          title or f"Bandwidth needs bytes in flight (ceiling {peak / 1e12:.2f} TB/s)")
    return fig
