"""Bar charts comparing the Hopper products (H100 SXM, H100 PCIe, H200 SXM) on one quantity."""
from __future__ import annotations

from .style import PALETTE, figure, label

__all__ = ["product_bars"]


def product_bars(values: dict[str, float], quantity: str, unit: str):
    """One bar per device; ``values`` maps device name to the quantity in ``unit``."""
    fig, ax = figure(figsize=(6.0, 2.8))
    names = list(values)
    bars = ax.barh(names, [values[n] for n in names], color=PALETTE[: len(names)])
    ax.bar_label(bars, labels=[f"{values[n]:,.4g}" for n in names], padding=3)
    ax.invert_yaxis()
    ax.margins(x=0.18)
    label(ax, f"{quantity} ({unit})", "device (name)")
    return fig
