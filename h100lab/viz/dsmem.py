"""Lesson 2's kernel figures: the DSMEM histogram against global atomics, the cost of ``cluster.sync()``, and
the 128-byte swizzle as a map of 16-byte chunks. Pure functions of records and of
:mod:`h100lab.memory.swizzle`."""
from __future__ import annotations

from typing import Sequence

from .style import PALETTE, figure, label

__all__ = ["draw_histogram", "draw_cluster_sync", "draw_swizzle_chunks"]


def draw_histogram(rows: Sequence[dict]):
    """Values counted per second (log) against the histogram's size for each variant of
    :func:`h100lab.validation.l02.histogram_rows`: global atomics, one shared copy per CTA, clusters of 2–16."""
    fig, ax = figure(figsize=(7.6, 3.9))
    keys = ["global atomics", "shared, 1 CTA"] + [f"cluster of {c}" for c in (2, 4, 8, 16)]
    styles = {"global atomics": ("s-", PALETTE[3]), "shared, 1 CTA": ("o-", PALETTE[2])}
    for i, k in enumerate(keys):
        pts = [(r["KiB of counts"], r[k]) for r in rows if r.get(k)]   # None: the variant cannot run
        if not pts:
            continue
        st, c = styles.get(k, ("^--", PALETTE[(i - 2) % 4 + 4 if i < 6 else 0]))
        if k.startswith("cluster"):
            c = (PALETTE[0], PALETTE[5], PALETTE[4], PALETTE[1])[keys.index(k) - 2]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], st, color=c, markersize=4, label=k)
    ax.axvline(227, color="#777777", linestyle=":", linewidth=1)
    ax.text(235, ax.get_ylim()[0] * 1.3, "227 KB: one CTA's limit", fontsize=7, rotation=90, va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.legend(fontsize=8, ncol=2, loc="upper right")
    label(ax, "histogram size (KiB of 4-byte counts)", "values counted (10^9 per s, log)",
          "A histogram of 64 Mi uniform values on the H200")
    return fig


def draw_cluster_sync(rows: Sequence[dict]):
    """ns per ``barrier.cluster.arrive`` + ``wait`` against the cluster size (rows of
    :func:`h100lab.validation.l02.cluster_sync_rows`), each arrive flavour a line, ``bar.sync`` for scale."""
    fig, ax = figure(figsize=(7.0, 3.5))
    sizes = [r["cluster size"] for r in rows]
    cols = [k for k in rows[0] if k.endswith("(ns)") and not k.startswith("bar.sync")] if rows else []
    for i, k in enumerate(cols):
        ax.plot(sizes, [r.get(k) for r in rows], "o-", color=PALETTE[i], markersize=4,
                label="arrive." + k.replace(" (ns)", ""))
    if rows and rows[0].get("bar.sync, one CTA (ns)"):
        ax.axhline(rows[0]["bar.sync, one CTA (ns)"], color="#777777", linestyle=":",
                   label="bar.sync (__syncthreads), one CTA")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_ylim(0, None)
    ax.legend(fontsize=8, loc="upper left")
    label(ax, "cluster size (CTAs)", "time per cluster barrier (ns)",
          "What cluster.sync() costs on the H200 (128-thread CTAs)")
    return fig


def draw_swizzle_chunks(rows: int = 32, row_bytes: int = 128, mode: str = "128B"):
    """Two maps of a tile with ``row_bytes``-byte rows: which 16-byte chunk position (0–7 within its 128-byte
    line, i.e. which group of 4 banks) each logical chunk of the first ``rows`` rows occupies, plain and under
    the ``mode`` swizzle. Column 0 — what a warp reading a column touches — is outlined in both."""
    import numpy as np
    from matplotlib.patches import Rectangle

    from ..memory.swizzle import swizzle_address

    chunks = row_bytes // 16
    plain = np.array([[((r * row_bytes + 16 * c) % 128) // 16 for c in range(chunks)] for r in range(rows)])
    swz = np.array([[(int(swizzle_address(r * row_bytes + 16 * c, mode)) % 128) // 16 for c in range(chunks)]
                    for r in range(rows)])
    fig, axes = figure(ncols=2, figsize=(7.8, 4.6))
    for ax, img, title in ((axes[0], plain, "plain layout"), (axes[1], swz, f"SWIZZLE_{mode}")):
        im = ax.imshow(img, cmap="tab10", vmin=0, vmax=9, interpolation="nearest", aspect="auto")
        ax.add_patch(Rectangle((-0.5, -0.5), 1, rows, fill=False, edgecolor="black", linewidth=1.6))
        for r in range(rows):
            ax.text(0, r, str(img[r, 0]), ha="center", va="center", fontsize=6, color="white")
        for r in range(8, rows, 8):
            ax.axhline(r - 0.5, color="white", linewidth=0.8)
        ax.grid(False)
        label(ax, "logical 16-byte chunk of the row (index)", "row (index)", title)
    fig.colorbar(im, ax=axes, label="chunk position in the 128-byte line (bank group)", shrink=0.8)
    fig.suptitle("Where each row's 16-byte chunks land: column 0 outlined, 8-row periods marked")
    return fig
