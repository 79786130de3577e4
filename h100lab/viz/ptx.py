"""Plots of lesson 2's PTX and memory topics: a packed register bit by bit, inline-asm operand numbering, banks."""
from __future__ import annotations

from .style import PALETTE, figure, label

__all__ = ["packed_register", "operand_numbering", "bank_heatmap"]


def packed_register(values, type_name: str):
    """The bits of a packed register (``.f16x2``, ``.bf16x2``, ``.e4m3x2``, ``.e5m2x2``): element 0 in the low
    half (right), element 1 in the high half (left); sign / exponent / mantissa fields coloured."""
    from matplotlib.patches import Rectangle

    from ..ptx import bit_fields, pack, ptx_type

    t = ptx_type(type_name)
    e = t.element_type
    bits = pack(values, t)
    fig, ax = figure(figsize=(7.0, 2.1))
    colours = {"sign": PALETTE[3], "exponent": PALETTE[0], "mantissa": PALETTE[2]}
    for lane, v in enumerate(values):
        f = bit_fields(v, e)
        m, x = f["mantissa_bits"], f["exponent_bits"]
        for b in range(e.bits):
            pos = lane * e.bits + b
            field = "mantissa" if b < m else ("exponent" if b < m + x else "sign")
            bit = (bits >> pos) & 1
            ax.add_patch(Rectangle((t.bits - 1 - pos, 0), 1, 1, facecolor=colours[field], alpha=0.25 + 0.6 * bit,
                                   edgecolor="white"))
            if t.bits <= 32:
                ax.text(t.bits - 1 - pos + 0.5, 0.5, str(bit), ha="center", va="center", fontsize=7)
        ax.text(t.bits - (lane + 0.5) * e.bits, 1.25, f"element {lane}: {v:g} → 0x{(bits >> (lane * e.bits)) & ((1 << e.bits) - 1):0{e.bits // 4}x}",
                ha="center", fontsize=8)
    ax.set_xlim(0, t.bits)
    ax.set_ylim(0, 1.6)
    ax.set_yticks([])
    ax.set_xticks([t.bits - 1 - p + 0.5 for p in range(0, t.bits, 4)])
    ax.set_xticklabels([str(p) for p in range(0, t.bits, 4)], fontsize=7)
    ax.grid(False)
    label(ax, "bit (index; bit 0 is the least significant)", "register (bits)",
          f"{t.name} = 0x{bits:0{t.bits // 4}x}: sign / exponent / mantissa")
    return fig


def operand_numbering(statement):
    """One box per asm operand in numbering order (%0 first): outputs, then inputs, with their constraints."""
    from matplotlib.patches import FancyBboxPatch

    nums = statement.numbering
    fig, ax = figure(figsize=(7.0, 1.8))
    ax.axis("off")
    n = max(1, len(nums))
    for i, (k, name, expr, cons) in enumerate(nums):
        out = cons.startswith(("=", "+"))
        ax.add_patch(FancyBboxPatch((i / n + 0.01, 0.15), 1 / n - 0.02, 0.6, boxstyle="round,pad=0.01",
                                    facecolor=PALETTE[1] if out else PALETTE[5], alpha=0.5))
        ax.text(i / n + 0.5 / n, 0.58, f"%{k}", ha="center", fontsize=10, fontweight="bold")
        ax.text(i / n + 0.5 / n, 0.33, f'"{cons}"({expr})', ha="center", fontsize=7)
    if not nums:
        ax.text(0.5, 0.45, "no operands", ha="center")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title("operand numbering: outputs (orange) first, then inputs (blue)", fontsize=9)
    return fig


def bank_heatmap(banks, title: str = ""):
    """The bank of every element of a shared-memory tile (rows × columns)."""
    fig, ax = figure(figsize=(5.2, 4.2))
    im = ax.imshow(banks, cmap="twilight", vmin=0, vmax=31, interpolation="nearest", aspect="auto")
    fig.colorbar(im, ax=ax, label="bank (index)")
    ax.grid(False)
    label(ax, "column (element)", "row (element)", title or None)
    return fig
