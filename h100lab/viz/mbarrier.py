"""Pictures of an mbarrier's life: pending arrivals, tx-count and phases after each operation."""
from __future__ import annotations

from typing import Sequence

from .style import PALETTE, figure, label

__all__ = ["draw_steps", "steps_figure"]


def draw_steps(axes, steps: Sequence) -> None:
    """Draw :func:`h100lab.sync.mbarrier.run_ops` steps on two axes (arrivals, tx-count)."""
    ax1, ax2 = axes
    x = list(range(len(steps)))
    pend = [s.state.pending for s in steps]
    exp = [s.state.expected for s in steps]
    tx = [s.state.tx for s in steps]
    start = 0
    for i in range(1, len(steps) + 1):
        if i == len(steps) or steps[i].phase_number != steps[start].phase_number:
            k = steps[start].phase_number
            for ax in (ax1, ax2):
                ax.axvspan(start - 0.5, i - 0.5, color=PALETTE[5] if k % 2 == 0 else PALETTE[6], alpha=0.15, lw=0)
            ax1.text((start + i - 1) / 2, max(max(exp), 1) * 1.12, f"phase {k} (parity {k & 1})",
                     ha="center", va="bottom", fontsize=8)
            start = i
    ax1.step(x, pend, where="mid", color=PALETTE[0], label="pending arrivals")
    ax1.plot(x, pend, ".", color=PALETTE[0])
    ax1.plot(x, exp, ls="--", color=PALETTE[7], lw=1, label="expected arrivals")
    ax1.set_ylim(-0.2, max(max(exp), 1) * 1.35)
    ax2.step(x, tx, where="mid", color=PALETTE[3], label="tx-count")
    ax2.plot(x, tx, ".", color=PALETTE[3])
    ax2.axhline(0, color="black", lw=0.6)
    done = [i for i, s in enumerate(steps) if s.completed]
    ax1.plot(done, [pend[i] for i in done], "o", color=PALETTE[2], label="phase completed")
    ax2.plot(done, [tx[i] for i in done], "o", color=PALETTE[2])
    ax2.set_xticks(x)
    ax2.set_xticklabels([s.op.replace("mbarrier.", "") for s in steps], rotation=35, ha="right", fontsize=8)
    ax1.legend(loc="lower left", fontsize=8, framealpha=0.8)
    label(ax1, "operation (step)", "arrivals (threads)")
    label(ax2, "operation (step)", "tx-count (bytes)")


def steps_figure(steps: Sequence, title: str | None = None):
    """A two-panel figure of an operation sequence's effect on one mbarrier."""
    fig, axes = figure(2, 1, figsize=(7.0, 4.6), sharex=True)
    draw_steps(axes, steps)
    if title:
        axes[0].set_title(title)
    return fig
