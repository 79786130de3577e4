"""Plots of producer/consumer pipelines: utilisation against the number of buffers, model against
measurement."""
from __future__ import annotations

from typing import Sequence

from .style import PALETTE, figure, label

__all__ = ["utilization_figure", "model_vs_measured_figure"]


def utilization_figure(stages: Sequence[int], curves: dict[str, Sequence[float]], title: str | None = None):
    """Utilisation (0–1) against the number of buffers, one line per named curve."""
    fig, ax = figure()
    for i, (name, ys) in enumerate(curves.items()):
        ax.plot(list(stages), list(ys), marker="o", color=PALETTE[i % len(PALETTE)], label=name)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    label(ax, "buffers (stages)", "consumer utilisation (fraction)", title)
    return fig


def model_vs_measured_figure(measured: Sequence[float], predicted: Sequence[float], groups: Sequence[str],
                             title: str | None = None):
    """Predicted against measured time per iteration (ns), one colour per group, with the y = x line."""
    fig, ax = figure(figsize=(5.2, 4.2))
    names = list(dict.fromkeys(groups))
    for i, g in enumerate(names):
        xs = [m for m, gg in zip(measured, groups) if gg == g]
        ys = [p for p, gg in zip(predicted, groups) if gg == g]
        ax.plot(xs, ys, "o", color=PALETTE[i % len(PALETTE)], label=g, alpha=0.85)
    lo = min(min(measured), min(predicted)) * 0.9
    hi = max(max(measured), max(predicted)) * 1.1
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls="--", label="model = silicon")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    label(ax, "measured time per iteration (ns)", "simulated time per iteration (ns)", title)
    return fig
