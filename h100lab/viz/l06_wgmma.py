"""Figures of lesson 6 (WGMMA): register fragments on the 64 × N tile, the 64-bit matrix descriptor and the
shared-memory bytes it reads, a swizzle atom with the chunks one K-step reads. Every figure draws a result the
model computed (:mod:`h100lab.widgets.l06_wgmma`); nothing here computes an address or a layout."""
from __future__ import annotations

import numpy as np

from .style import PALETTE, figure, label

__all__ = ["draw_fragment", "draw_descriptor", "draw_kstep"]

_WARP_TINTS = ("#dbe9f6", "#fbe8c8", "#d5efe6", "#f7dccb")


def draw_fragment(r: dict):
    """The tile (64 × N for D, 64 × K for an RS A operand), each element tinted by the warp that holds it; the
    chosen thread's elements in a strong colour, labelled with their register (``r`` or ``r.h`` for the half of
    a packed register) when the tile is narrow enough to read [PTX §9.7.15.5.1.1]."""
    from matplotlib.colors import ListedColormap

    owner = r["owner_warp"]
    rows, cols = owner.shape
    fig, ax = figure(1, 1, figsize=(min(11.0, 3.0 + cols * 0.09), 4.6))
    img = owner.astype(float)
    mine = r["mine"]
    img[mine] = 4
    ax.imshow(img, cmap=ListedColormap(list(_WARP_TINTS) + [PALETTE[3]]), vmin=0, vmax=4, aspect="auto",
              interpolation="nearest")
    if cols <= 64:
        for (row, col), text in r["labels"].items():
            ax.text(col, row, text, ha="center", va="center", fontsize=5.5 if cols > 32 else 7, color="white")
    for w in range(1, 4):
        ax.axhline(16 * w - 0.5, color="0.4", lw=0.8)
    ax.grid(False)
    label(ax, f"{r['col_name']} (element)", "row m (element)", r["title"])
    return fig


def _bits_panel(ax, fields: list[dict], value: int):
    """One bar of 64 bits, one coloured span per descriptor field, its value written in it."""
    ax.set_xlim(64, 0)
    ax.set_ylim(0, 1)
    for i, f in enumerate(fields):
        lo, hi = f["bits"]
        ax.axvspan(lo, hi + 1, color=PALETTE[i % len(PALETTE)], alpha=0.35)
        ax.text((lo + hi + 1) / 2, 0.5, f"{f['name']}\n{f['raw']}", ha="center", va="center", fontsize=7)
    ax.set_yticks([])
    ax.set_xticks([0, 14, 16, 30, 32, 46, 49, 52, 62, 64])
    ax.grid(False)
    label(ax, "bit of the descriptor (bit index)", "field (—)", f"descriptor value 0x{value:016x}")


def draw_descriptor(r: dict):
    """Top: the 64-bit value with its fields. Bottom left: the operand tile the descriptor reads, each element
    marked right (it is the element the kernel meant) or wrong. Bottom right: the shared-memory image as
    128-byte lines × 16-byte chunks, shaded by how many operand elements the descriptor read from each chunk,
    the chunks it should have read outlined [PTX §9.7.15.5.1.2]."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Rectangle

    fig = figure(1, 1, figsize=(10, 5.6))[0]
    fig.clear()
    gs = fig.add_gridspec(2, 2, height_ratios=[0.9, 4], width_ratios=[1.0, 1.4])
    a0 = fig.add_subplot(gs[0, :])
    _bits_panel(a0, r["fields"], r["value"])
    a1 = fig.add_subplot(gs[1, 0])
    ok = r["right"]
    a1.imshow(ok.astype(int), cmap=ListedColormap([PALETTE[3], PALETTE[2]]), vmin=0, vmax=1, aspect="auto",
              interpolation="nearest")
    a1.grid(False)
    label(a1, "k (element)", "row m (element)",
          f"{int(ok.sum())} of {ok.size} elements right")
    a2 = fig.add_subplot(gs[1, 1])
    reads = r["chunk_reads"]
    a2.imshow(reads, cmap="Blues", vmin=0, vmax=max(1, int(reads.max())), aspect="auto", interpolation="nearest")
    ys, xs = np.nonzero(r["chunk_want"])
    for y, x in zip(ys, xs):
        a2.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, ec=PALETTE[1], lw=1.2))
    a2.grid(False)
    label(a2, "16-byte chunk of the line (index)", "128-byte line of shared memory (index)",
          "chunks read (blue) and meant (orange outline)")
    return fig


def draw_kstep(r: dict):
    """One swizzle atom (8 rows × swizzle-width bytes, in 16-byte chunks): each chunk labelled with the logical
    chunk of its row it holds; the chunks K-step ``j`` reads (its 32 bytes of K in every row) highlighted
    [PTX §9.7.15.5.1.2.1.3; CuTe ``DescriptorIterator``]."""
    from matplotlib.colors import ListedColormap

    grid = r["logical"]
    hit = r["hit"]
    rows, chunks = grid.shape
    fig, ax = figure(1, 1, figsize=(2.2 + 0.75 * chunks, 3.8))
    ax.imshow(hit.astype(int), cmap=ListedColormap(["#eeeeee", PALETTE[0]]), vmin=0, vmax=1, aspect="auto",
              interpolation="nearest")
    for y in range(rows):
        for x in range(chunks):
            ax.text(x, y, f"c{grid[y, x]}", ha="center", va="center", fontsize=8,
                    color="white" if hit[y, x] else "black")
    ax.set_xticks(range(chunks))
    ax.set_yticks(range(rows))
    ax.grid(False)
    label(ax, "stored 16-byte chunk of the row (index)", "row of the atom (index)", r["title"])
    return fig
