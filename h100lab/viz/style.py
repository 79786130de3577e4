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


#: Figures are drawn at this multiple of ``savefig.dpi`` and shown at their 1x size (sharp on
#: high-DPI screens); the output's ``width`` metadata tells the page how wide to draw them.
HIDPI = 2.0


def _texts(fig) -> tuple[str, list[str]]:
    """The figure's title (suptitle, else its axes' titles) and one phrase per axes."""
    sup = fig._suptitle.get_text().strip() if getattr(fig, "_suptitle", None) is not None else ""
    titles, parts = [], []
    for ax in fig.get_axes():
        if not ax.get_visible() or not ax.axison and not ax.get_title():
            continue
        t = ax.get_title().strip() or ax.get_title(loc="left").strip()
        if t:
            titles.append(t)
        x, y = ax.get_xlabel().strip(), ax.get_ylabel().strip()
        what = f"{y} against {x}" if x and y else (y or x)
        legend = ax.get_legend()
        keys = [tx.get_text() for tx in legend.get_texts()] if legend is not None else []
        phrase = (f"“{t}”" if t else "a panel") + (f" plotting {what}" if what else "")
        if keys:
            phrase += " (legend: " + ", ".join(keys[:6]) + (", …" if len(keys) > 6 else "") + ")"
        parts.append(phrase)
    return sup or "; ".join(dict.fromkeys(titles)), parts


def figure_title(fig) -> str:
    """A one-line title for ``fig``: its suptitle, else its axes' titles (``""`` when it has none)."""
    return _texts(fig)[0]


def describe_figure(fig) -> str:
    """Alt text for ``fig``: what it shows, from its titles, axis labels (with units) and legends."""
    title, parts = _texts(fig)
    n = len(parts)
    head = f"Figure: {title}." if title else "Figure."
    if not parts:
        return head
    if title:   # a panel titled like the whole figure is named once
        parts = [p.replace(f"“{title}” ", "", 1) if p.startswith(f"“{title}” ") else p for p in parts]
    return head + f" {n} panel{'s' if n != 1 else ''}: " + "; ".join(parts) + "."


_PINNED = "_h100lab_png"


def png(fig, scale: float = HIDPI, pin: bool = False) -> tuple[bytes, int]:
    """``fig`` as PNG bytes drawn at ``scale`` times ``savefig.dpi``, and its width in CSS pixels.

    The PNG carries the figure's title and :func:`describe_figure` as ``Title`` / ``Description``
    text chunks, so a page built from it can give the image a caption and alt text.

    Drawing a constrained-layout figure twice can shift its tight bounding box by a pixel, so
    ``pin=True`` keeps this rendering on the figure and later calls (the notebook's display of the
    same, unchanged figure) return exactly these bytes; an explorer pins the figure it shows first.
    """
    import io
    import struct

    pinned = getattr(fig, _PINNED, {})
    if scale in pinned:
        return pinned[scale]
    apply()
    buf = io.BytesIO()
    meta = {"Title": figure_title(fig), "Description": describe_figure(fig)}
    fig.savefig(buf, format="png", dpi=RC["savefig.dpi"] * scale, bbox_inches="tight",
                metadata={k: v for k, v in meta.items() if v})
    data = buf.getvalue()
    width_px = struct.unpack(">I", data[16:20])[0]   # IHDR width
    out = data, max(1, round(width_px / scale))
    if pin:
        setattr(fig, _PINNED, {**pinned, scale: out})
    return out


def _png_output(fig):
    """IPython's PNG formatter for a Figure: high-DPI bytes plus the width to show them at."""
    data, width = png(fig)
    return data, {"width": width}


def _register_png() -> None:
    """Make IPython render a bare ``matplotlib.figure.Figure`` as a high-DPI PNG.

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
    from matplotlib.figure import Figure

    fmt = ip.display_formatter.formatters["image/png"]
    if fmt.type_printers.get(Figure) is not _png_output:
        fmt.for_type(Figure, _png_output)


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
