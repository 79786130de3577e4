"""Figures of the capstone's time model against the H200 (lesson 8): predicted vs measured time per record, and the
gap to the datasheet peak in named parts. Every figure draws what :mod:`h100lab.design.perf` and
:mod:`h100lab.validation.l08` computed; nothing here computes."""
from __future__ import annotations

import numpy as np

from .style import PALETTE, figure, label

__all__ = ["draw_agreement", "draw_gap", "draw_lead_ratio", "draw_lonely_share", "draw_round_errors", "draw_reuse_bytes"]


def draw_agreement(rows, tol: float = 0.10, by: str = "shape"):
    """Model error (predicted / measured − 1, %) per record against the measured time (log scale): calibration
    records filled, held-out records open, the ±``tol`` band shaded, one colour per ``by`` (``"shape"`` or
    ``"family"``). ``rows``: :class:`h100lab.validation.l08.Row`."""
    fig, ax = figure(1, 1, figsize=(8.0, 3.6))
    ax.axhspan(-100 * tol, 100 * tol, color=PALETTE[2], alpha=0.12, lw=0)
    ax.axhline(0, color="0.4", lw=0.8)
    if by not in ("shape", "family"):
        raise ValueError(f"by = {by!r}: 'shape' or 'family'")
    key = (lambda r: r.shape) if by == "shape" else (lambda r: r.family)
    groups = list(dict.fromkeys(key(r) for r in rows))
    for i, s in enumerate(groups):
        c = PALETTE[i % len(PALETTE)]
        name = "×".join(map(str, s)) if by == "shape" else s
        for part, filled in (("calibration", True), ("held-out", False)):
            rs = [r for r in rows if key(r) == s and r.part == part]
            if not rs:
                continue
            ax.scatter([r.measured_ms for r in rs], [100 * r.error for r in rs], s=30, marker="o",
                       facecolors=c if filled else "none", edgecolors=c, linewidths=1.2,
                       label=f"{name} ({part})")
    ax.set_xscale("log")
    lim = max(100 * tol * 1.6, 100 * max(abs(r.error) for r in rows) * 1.1)
    ax.set_ylim(-lim, lim)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    label(ax, "H200 median time (ms)", "model error (%)",
          f"The model vs the H200: filled = calibration, open = held out; band ±{100 * tol:.0f} %")
    return fig


def draw_gap(gaps: dict, parts: dict):
    """Horizontal stacked bars, one per case: the datasheet peak time, then each part of the gap (µs) in the order
    of ``parts`` (name → meaning, :data:`h100lab.design.perf.GAP_PARTS`); a negative part (a clock above the
    datasheet's) is drawn left of the peak. ``gaps``: case label → :class:`h100lab.design.perf.Gap`."""
    names = list(gaps)
    fig, ax = figure(1, 1, figsize=(8.0, 0.9 + 0.55 * len(names)))
    y = np.arange(len(names))[::-1]
    colours = {"peak": "0.75", **{p: PALETTE[i % len(PALETTE)] for i, p in enumerate(parts)}}
    for yi, n in zip(y, names):
        g = gaps[n]
        scale = 100.0 / g.total_us
        left = 0.0
        ax.barh(yi, g.peak_us * scale, left=left, color=colours["peak"], edgecolor="white",
                label="datasheet peak" if yi == y[0] else None)
        left += g.peak_us * scale
        neg = 0.0
        for p in parts:
            v = g.parts[p] * scale
            if v >= 0:
                ax.barh(yi, v, left=left, color=colours[p], edgecolor="white", label=p if yi == y[0] else None)
                left += v
            else:
                neg += v
                ax.barh(yi, v, left=g.peak_us * scale, color=colours[p], edgecolor="white", hatch="//",
                        label=p if yi == y[0] else None)
        ax.text(101, yi, f"{g.total_us:.0f} µs", va="center", fontsize=8)
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlim(min(0.0, ax.get_xlim()[0]), 118)
    ax.grid(axis="y", visible=False)
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.28), frameon=False)
    label(ax, "share of the predicted time (%)", "case (—)",
          "Where the time goes (model): the datasheet peak, then each loss")
    return fig


def draw_lead_ratio(rows):
    """The lead-1 128 × 128 FP8 form's time over the scale ring's (lead 2) per shape against the depth K, coloured
    by the first wave's working set (MB); 1 (equal times) drawn. ``rows``:
    :func:`h100lab.validation.l08_issue.lead_ratio_rows`."""
    fig, ax = figure(1, 1, figsize=(7.0, 3.4))
    ax.axhline(1.0, color="0.4", lw=0.8)
    sc = ax.scatter([r["K"] for r in rows], [r["ratio"] for r in rows], c=[r["ws_mb"] for r in rows], cmap="viridis",
                    s=30, edgecolors="0.2", linewidths=0.5)
    fig.colorbar(sc, ax=ax).set_label("first wave's working set (MB)")
    label(ax, "K (elements)", "lead 1 time / lead 2 time (ratio)",
          "Lead-1 scale loads against the ring, per shape: below 1 the lead-1 loads are hidden")
    return fig


def draw_lonely_share(calibration, held, threshold: float):
    """L2 → SM bytes over every tile's requested bytes against the lonely share (:func:`h100lab.design.traffic.
    lonely_rows`) of each ping-pong counter run: ``calibration`` (circles) and ``held`` (squares) rows, the fitted
    threshold drawn (:func:`h100lab.design.traffic.fit_lonely_share`) and 1 (every requested byte delivered)."""
    fig, ax = figure(1, 1, figsize=(7.0, 3.4))
    ax.axhline(1.0, color="0.4", lw=0.8)
    ax.axvline(threshold, color="C3", lw=1.0, ls="--", label=f"threshold {threshold:.2f}")
    for rows, marker, name in ((calibration, "o", "calibration (l08/gemm_l2_traffic)"),
                               (held, "s", "held out (l08/gemm_l2_delivery)")):
        ax.scatter([r["lonely"] for r in rows], [r["delivered"] for r in rows], marker=marker, s=30,
                   edgecolors="0.2", linewidths=0.5, label=name)
    ax.legend(loc="lower right", fontsize=8)
    label(ax, "lonely share of the requested bytes (fraction)", "L2 → SM bytes / requested bytes (ratio)",
          "Ping-pong runs: past the threshold no request merges")
    return fig


def draw_round_errors(rows, tol: float = 0.10, labels: tuple = ("without the bound", "with the delivery bound"),
                      title: str = "Registered before the run: six shapes never timed"):
    """A registered round's records (:func:`h100lab.validation.l08.delivery_round_rows`, or any rows with ``model``
    and ``plain`` errors): the error of each registered prediction (``labels``: the plain one's, the model's) per
    record, the records ordered by the plain prediction's error; the ±``tol`` band drawn."""
    rs = sorted(rows, key=lambda r: r["plain"])
    x = list(range(len(rs)))
    fig, ax = figure(1, 1, figsize=(7.0, 3.4))
    ax.axhspan(-100 * tol, 100 * tol, color="0.9")
    ax.axhline(0.0, color="0.4", lw=0.8)
    ax.scatter(x, [100 * r["plain"] for r in rs], marker="x", s=22, color="C1", label=labels[0])
    ax.scatter(x, [100 * r["model"] for r in rs], marker="o", s=18, edgecolors="0.2", linewidths=0.5, color="C0",
               label=labels[1])
    ax.legend(loc="upper left", fontsize=8)
    label(ax, f"record (ordered by the error {labels[0]})", "predicted / measured − 1 (%)", title)
    return fig


def draw_reuse_bytes(rows):
    """The DRAM bytes of a registered round's runs (:func:`h100lab.validation.l08_reuse.reuse_rows`): Nsight
    Compute's median per run against the capacity estimate with each form's own drift and the in-step estimate, on
    log axes with the diagonal and its ±25 % band."""
    rs = [r for r in rows if "ncu_gb" in r]
    x = np.array([r["ncu_gb"] for r in rs])
    fig, ax = figure(1, 1, figsize=(5.6, 4.2))
    lo, hi = 0.8 * x.min(), 1.25 * x.max()
    g = np.geomspace(lo, hi, 50)
    ax.fill_between(g, 0.75 * g, 1.25 * g, color="0.9", lw=0)
    ax.plot(g, g, color="0.4", lw=0.8)
    ax.scatter(x, x * np.array([1 + r["in_step_err"] for r in rs]), marker="x", s=22, color="C1",
               label="in step (no capacity, no drift)")
    inflight = np.array(["inflight" in r["variant"] and "cluster" not in r["variant"] for r in rs])
    est = x * np.array([1 + r["gb_err"] for r in rs])
    ax.scatter(x[~inflight], est[~inflight], marker="o", s=18, edgecolors="0.2", linewidths=0.5, color="C0",
               label="each form's drift: the other forms")
    ax.scatter(x[inflight], est[inflight], marker="s", s=22, edgecolors="0.2", linewidths=0.5, color="C2",
               label="each form's drift: in flight")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(loc="upper left", fontsize=8)
    label(ax, "DRAM bytes read, Nsight Compute (GB)", "estimated (GB)", "DRAM reads of the registered runs")
    return fig
