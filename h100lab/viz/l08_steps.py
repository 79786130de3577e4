"""Figure of lesson 8's step-by-step GEMM (:mod:`h100lab.design.steps`): each step's measured throughput next to
cuBLAS's in the same run. It draws what it is given; nothing here computes."""
from __future__ import annotations

import numpy as np

from .style import PALETTE, figure, label

__all__ = ["draw_steps"]


def draw_steps(rows: list[dict], cublas: dict):
    """Bars: TFLOP/s of each step (``rows``: dicts with ``number``, ``step``, ``shape``, ``tflops``), one bar per
    shape, on a log axis (the naive kernel sits orders of magnitude below the rest); a dashed line per shape at
    cuBLAS's TFLOP/s (``cublas``: shape → TFLOP/s) measured in the same run."""
    fig, ax = figure(1, 1, figsize=(8.0, 3.6))
    steps = sorted({(r["number"], r["step"]) for r in rows})
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    x = np.arange(len(steps))
    width = 0.8 / max(1, len(shapes))
    for k, shape in enumerate(shapes):
        ys = [next((r["tflops"] for r in rows if r["shape"] == shape and r["number"] == n), np.nan) for n, _ in steps]
        colour = PALETTE[k % len(PALETTE)]
        ax.bar(x + (k - (len(shapes) - 1) / 2) * width, ys, width=width, color=colour, label=f"{shape}")
        if shape in cublas:
            ax.axhline(cublas[shape], color=colour, linestyle="--", linewidth=1.0, label=f"cuBLAS {shape}")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"{n}. {name}" for n, name in steps], fontsize=8, rotation=20)
    ax.legend(fontsize=7, ncol=2)
    label(ax, "step (—)", "throughput (TFLOP/s)", "H200, same run: each step of the capstone and cuBLAS")
    return fig
