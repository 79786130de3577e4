"""Drawing of one warp-wide shared-memory access: lanes coloured by bank, and each phase's banks
stacked by the distinct words they must serve (the height of the tallest stack is the phase's
wavefront count). A pure function of :func:`h100lab.memory.banks.bank_access`'s answer."""
from __future__ import annotations

from .style import figure, label

__all__ = ["draw_bank_access", "bank_colour", "draw_bank_latency"]


def bank_colour(bank: int):
    """A cyclic colour per bank (32 banks)."""
    import matplotlib as mpl

    return mpl.colormaps["hsv"]((bank % 32) / 32 * 0.92)


def draw_bank_access(addresses, r, title: str | None = None):
    """Top: the 32 lanes, each coloured by the bank of its first word (grey: inactive). Bottom: for each
    phase, the distinct 4-byte words per bank, stacked; labels are the lanes that touch each word."""
    from matplotlib.patches import Rectangle

    fig, (ax_l, ax_b) = figure(2, 1, figsize=(9.0, 4.4), gridspec_kw={"height_ratios": [1, 3.2]})
    for t in range(32):
        b = int(r.lane_bank[t])
        ax_l.add_patch(Rectangle((t + 0.05, 0), 0.9, 1, facecolor=bank_colour(b) if b >= 0 else "#dddddd",
                                 edgecolor="white"))
        ax_l.text(t + 0.5, 0.5, str(b) if b >= 0 else "-", ha="center", va="center", fontsize=7)
    ax_l.set_xlim(0, 32)
    ax_l.set_ylim(0, 1)
    ax_l.set_yticks([])
    ax_l.grid(False)
    label(ax_l, "lane (index; the number is its bank)", "lanes (row)")

    k = r.width // 4
    nph = r.per_bank.shape[0]
    words: list[dict[int, list]] = [dict() for _ in range(nph)]
    for t in range(32):
        if addresses[t] is None:
            continue
        p = int(r.lane_phase[t])
        for j in range(k):
            w = (int(addresses[t]) >> 2) + j
            words[p].setdefault(w, []).append(t)
    top = max(1, int(r.per_bank.max()))
    gap = top + 1
    for p in range(nph):
        stack = {}
        for w in sorted(words[p]):
            b = w & 31
            h = stack.get(b, 0)
            stack[b] = h + 1
            y = p * gap + h
            ax_b.add_patch(Rectangle((b + 0.05, y + 0.05), 0.9, 0.9, facecolor=bank_colour(b), edgecolor="white"))
            lanes = words[p][w]
            txt = str(lanes[0]) if len(lanes) == 1 else f"{lanes[0]}+{len(lanes) - 1}"
            ax_b.text(b + 0.5, y + 0.5, txt, ha="center", va="center", fontsize=6)
        if nph > 1:
            ax_b.axhline(p * gap - 0.05, color="#999999", linewidth=0.6)
            ax_b.text(32.2, p * gap + 0.3, f"phase {p}: {int(r.per_bank[p].max())}", fontsize=7)
    ax_b.set_xlim(0, 32 + (3 if nph > 1 else 0))
    ax_b.set_ylim(nph * gap - 1 + 0.2, -0.2)
    ax_b.grid(False)
    label(ax_b, "bank (index)", "distinct words (count, per phase)")
    fig.suptitle(title or f"{8 * r.width}-bit {'load' if r.op == 'ld' else 'store'}: {int(r)} wavefront"
                 f"{'s' if int(r) != 1 else ''} (ideal {r.ideal}, {r.conflicts} from bank conflicts)")
    return fig


def draw_bank_latency(records):
    """Measured cycles per dependent shared load against the model's wavefronts, one colour per width
    (records of the ``l01/bank_latency`` dataset)."""
    from .style import PALETTE

    fig, ax = figure(figsize=(6.5, 3.4))
    for i, w in enumerate(sorted({r["width"] for r in records})):
        rs = sorted((r for r in records if r["width"] == w), key=lambda r: r["model_wavefronts"])
        ax.plot([r["model_wavefronts"] for r in rs], [r["cycles_per_load"] for r in rs], "o-", color=PALETTE[i],
                label=f"{8 * w}-bit loads")
    ax.set_xscale("log", base=2)
    ax.legend()
    label(ax, "wavefronts predicted by the model (count)", "measured latency (cycles per load)",
          "Shared-memory load latency vs bank conflicts")
    return fig
