"""One plotting style for the whole book: every figure of every chapter goes through here."""
from __future__ import annotations

from contextlib import contextmanager

# A colour-blind-safe qualitative palette (Okabe–Ito), used in this order everywhere.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")

RC = {
    "figure.figsize": (7.0, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "image.cmap": "viridis",
    "svg.hashsalt": "h100lab",  # deterministic SVG ids
}


def apply() -> None:
    """Apply the book's style to matplotlib's global settings."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(RC)
    mpl.rcParams["axes.prop_cycle"] = cycler(color=PALETTE)


@contextmanager
def styled():
    """Context manager: the book's style for the figures made inside it."""
    import matplotlib as mpl
    from cycler import cycler

    with mpl.rc_context(RC | {"axes.prop_cycle": cycler(color=PALETTE)}):
        yield


def _register_png() -> None:
    """Make IPython render a bare ``matplotlib.figure.Figure`` as PNG.

    The book's figures are built without pyplot, so no backend registers a display formatter for
    them (and ``MPLBACKEND=Agg``, set for reproducible builds, would not either).
    """
    import sys

    if "IPython" not in sys.modules:
        return
    from IPython import get_ipython

    ip = get_ipython()
    if ip is None:
        return
    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    fmt = ip.display_formatter.formatters["image/png"]
    if Figure not in fmt.type_printers:
        fmt.for_type(Figure, lambda f: print_figure(f, "png", bbox_inches="tight"))


def figure(nrows: int = 1, ncols: int = 1, **kw):
    """``plt.subplots`` in the book's style, returning ``(fig, axes)``.

    Figures are created through ``matplotlib.figure.Figure`` (not pyplot) so a widget or a test
    never accumulates open pyplot figures.
    """
    from matplotlib.figure import Figure

    apply()
    _register_png()
    fig = Figure(figsize=kw.pop("figsize", RC["figure.figsize"]), layout="constrained")
    axes = fig.subplots(nrows, ncols, **kw)
    return fig, axes


def label(ax, x: str, y: str, title: str | None = None) -> None:
    """Label both axes; every axis of the book names its unit, e.g. ``"time (ns)"``."""
    if "(" not in x or "(" not in y:
        raise ValueError(f"axis labels must name their unit in parentheses: {x!r}, {y!r}")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if title:
        ax.set_title(title)
