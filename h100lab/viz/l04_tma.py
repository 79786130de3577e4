"""Figures of lesson 4: a box's shared-memory image coloured by bank, column-read wavefronts, the box in
its tensor (out-of-bounds part marked), the driver's verdicts and the model-vs-silicon summary."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .style import PALETTE, figure, label

__all__ = ["bank_cmap", "draw_smem_image", "draw_column_wavefronts", "draw_box_in_tensor", "draw_verdict",
           "draw_promotion", "draw_agreement"]


def bank_cmap():
    """32 distinguishable colours, one per shared-memory bank."""
    import matplotlib as mpl

    base = mpl.colormaps["tab20"].colors + mpl.colormaps["tab20b"].colors
    return mpl.colors.ListedColormap(base[:32], name="banks")


def draw_smem_image(tm, dst: int = 0, *, max_rows: int = 16, title: str | None = None):
    """Left: the box as the program sees it (rows × 16-byte chunks), each chunk coloured by the bank its
    first word lands in. Right: the shared-memory lines (128 B = 32 banks per row), each 16-byte chunk
    labelled with the box row and chunk it holds. Absolute-address swizzle from ``dst`` [PTX §5.5.7]."""
    from ..tma import smem_address

    n = tm.box_elements
    rows = min(tm.rows, max_rows)
    chunks = tm.row_bytes // 16
    per_chunk = 16 // tm.elem_size
    fig, (a0, a1) = figure(1, 2, figsize=(9.5, 3.9), gridspec_kw={"width_ratios": [max(chunks, 2), 8]})
    cmap = bank_cmap()
    logical = np.zeros((rows, chunks), dtype=int)
    where = {}
    for r in range(rows):
        k = [0] * len(n)
        rem = r
        for d in range(1, len(n)):
            k[d] = rem % n[d]
            rem //= n[d]
        for c in range(chunks):
            k[0] = c * per_chunk
            a = smem_address(tm, k, dst)
            logical[r, c] = (a >> 2) & 31
            where[a - dst] = (r, c)
    a0.imshow(logical, cmap=cmap, vmin=0, vmax=31, aspect="auto", interpolation="nearest")
    for r in range(rows):
        for c in range(chunks):
            a0.text(c, r, str(logical[r, c]), ha="center", va="center", fontsize=7, color="black")
    a0.set_xticks(range(chunks))
    a0.grid(False)
    label(a0, "16-byte chunk of the box row (index)", "box row (index)", "logical box: bank of each chunk")
    lines = min(-(-(rows * tm.row_pitch) // 128), max_rows)
    phys = np.full((lines, 8), -1, dtype=int)
    for off, (r, c) in where.items():
        li, ch = off // 128, (off % 128) // 16
        if li < lines:
            phys[li, ch] = c
    shown = np.ma.masked_less(phys, 0)
    import matplotlib as mpl

    chunk_cmap = mpl.colors.ListedColormap(PALETTE[:8], name="chunks")
    a1.imshow(shown, cmap=chunk_cmap, aspect="auto", interpolation="nearest", vmin=-0.5, vmax=7.5)
    for off, (r, c) in where.items():
        li, ch = off // 128, (off % 128) // 16
        if li < lines:
            a1.text(ch, li, f"{r},{c}", ha="center", va="center", fontsize=6.5, color="white")
    a1.set_xticks(range(8), [f"{4 * i}-{4 * i + 3}" for i in range(8)], fontsize=7)
    a1.grid(False)
    label(a1, "banks of the 16-byte chunk (bank numbers)", f"128-byte line from 0x{dst:x} (index)",
          "shared memory: (box row, chunk) held, coloured by chunk")
    fig.suptitle(title or f"{tm.data_type.short} box {{{', '.join(map(str, tm.box_dim))}}}, "
                 f"{tm.swizzle.rsplit('_', 1)[1]} swizzle", fontsize=11)
    return fig


def draw_column_wavefronts(results: Sequence[dict], title: str | None = None):
    """Bars: wavefronts of one column read (per access width) for each configuration ``{"name", "width",
    "wavefronts", "ideal"}`` — lesson 1's bank model applied to the TMA image."""
    fig, ax = figure(figsize=(7, 3.2))
    names = [r["name"] for r in results]
    x = np.arange(len(results))
    ax.bar(x, [r["wavefronts"] for r in results], color=[PALETTE[i % len(PALETTE)] for i in range(len(results))])
    ax.plot(x, [r["ideal"] for r in results], "k_", markersize=28, label="ideal (no conflict)")
    for i, r in enumerate(results):
        ax.text(i, r["wavefronts"], str(r["wavefronts"]), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(x, names, fontsize=8)
    ax.legend(loc="upper right")
    label(ax, "configuration (swizzle, access width)", "wavefronts (count)", title or "reading one column of the box")
    return fig


def draw_box_in_tensor(tm, coords: Sequence[int], title: str | None = None):
    """The tensor's first two dimensions (elements) with the box at ``coords``: in-bounds part filled,
    out-of-bounds part hatched (filled with zeros / OOB-NaN in shared memory) [PTX §5.5.3.3]."""
    from matplotlib.patches import Rectangle

    fig, ax = figure(figsize=(6.5, 3.6))
    d0, d1 = tm.global_dim[0], tm.global_dim[1] if tm.rank > 1 else 1
    c0, c1 = coords[0], coords[1] if tm.rank > 1 else 0
    b0 = tm.box_dim[0]
    b1 = tm.box_dim[1] if tm.rank > 1 else 1
    ax.add_patch(Rectangle((0, 0), d0, d1, facecolor="#eeeeee", edgecolor="black", label="tensor"))
    ax.add_patch(Rectangle((c0, c1), b0, b1, facecolor="none", edgecolor=PALETTE[3], hatch="///", lw=1.5,
                           label="box (hatched: outside the tensor, filled)"))
    x0, x1 = max(c0, 0), min(c0 + b0, d0)
    y0, y1 = max(c1, 0), min(c1 + b1, d1)
    if x1 > x0 and y1 > y0:
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=PALETTE[0], alpha=0.6, label="box, in bounds"))
    lo_x, hi_x = min(0, c0) - 2, max(d0, c0 + b0) + 2
    lo_y, hi_y = min(0, c1) - 2, max(d1, c1 + b1) + 2
    ax.set_xlim(lo_x, hi_x)
    ax.set_ylim(hi_y, lo_y)
    ax.legend(loc="lower right", fontsize=8)
    label(ax, "dimension 0 (elements)", "dimension 1 (elements)", title or f"box at {tuple(coords)}")
    return fig


def draw_verdict(verdict, tm=None):
    """A text panel with the driver's verdict, the broken rule or the map's sizes, and documentation warnings."""
    import textwrap

    fig, ax = figure(figsize=(7, 2.2))
    ax.axis("off")
    ok = verdict.ok
    ax.text(0.0, 0.95, verdict.result, color=PALETTE[2] if ok else PALETTE[3], fontsize=13, weight="bold",
            va="top", transform=ax.transAxes)
    body = tm.describe() if (ok and tm is not None) else verdict.rule
    lines = textwrap.wrap(body, 82)
    for w in verdict.doc_warnings:
        lines += textwrap.wrap("documentation: " + w, 82)
    ax.text(0.0, 0.7, "\n".join(lines[:8]), fontsize=8.5, va="top", transform=ax.transAxes, family="monospace")
    return fig


def draw_promotion(rows: Sequence[dict], title: str | None = None):
    """Bytes fetched from HBM per L2 promotion, for boxes of different row widths ``{"row_bytes", "promotion",
    "hbm_bytes", "requested"}``."""
    fig, ax = figure(figsize=(7, 3.2))
    widths = sorted({r["row_bytes"] for r in rows})
    promos = sorted({r["promotion"] for r in rows})
    w = 0.8 / len(promos)
    for j, p in enumerate(promos):
        ys = [next(r["hbm_bytes"] for r in rows if r["row_bytes"] == rb and r["promotion"] == p) for rb in widths]
        ax.bar(np.arange(len(widths)) + j * w, ys, w, label=f"{p} B fills", color=PALETTE[j % len(PALETTE)])
    req = [next(r["requested"] for r in rows if r["row_bytes"] == rb) for rb in widths]
    ax.plot(np.arange(len(widths)) + 0.4 - w / 2, req, "k_", markersize=30, label="bytes the box needs")
    ax.set_xticks(np.arange(len(widths)) + 0.4 - w / 2, [f"{rb} B rows" for rb in widths])
    ax.legend(fontsize=8)
    label(ax, "box row width (bytes)", "bytes fetched from HBM (bytes)", title or "L2 promotion")
    return fig


def draw_agreement(rows: Sequence[tuple[str, int, int]], title: str | None = None):
    """Model vs silicon: for each category ``(name, cases, mismatches)`` the cases that agree and differ."""
    fig, ax = figure(figsize=(7, 0.5 + 0.45 * len(rows)))
    names = [r[0] for r in rows]
    y = np.arange(len(rows))
    ok = [r[1] - r[2] for r in rows]
    bad = [r[2] for r in rows]
    ax.barh(y, ok, color=PALETTE[2], label="model = silicon")
    ax.barh(y, bad, left=ok, color=PALETTE[3], label="differs")
    ax.set_yticks(y, names, fontsize=8)
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    label(ax, "cases (count)", "comparison (kind)", title or "model vs silicon")
    return fig
