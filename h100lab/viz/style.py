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


def _hatched(fig) -> bool:
    """Whether an artist of ``fig`` is hatched (Agg lays a hatch pattern from the canvas's corner)."""
    return bool(fig.findobj(lambda a: bool(getattr(a, "get_hatch", None) and a.get_hatch())))


def _one_pass(fig, dpi: float):
    """:func:`_one_pass_exact`, or ``None`` (matplotlib's own ``savefig`` draws the figure) where this matplotlib
    lacks the private pieces it uses (``_tight_bbox.adjust_bbox``, ``Figure._cm_set``): a newer release may
    move them, and the figure must still be drawn, the slower way."""
    try:
        return _one_pass_exact(fig, dpi)
    except (ImportError, AttributeError):
        return None


def _one_pass_exact(fig, dpi: float):
    """``fig`` as ``savefig(bbox_inches="tight", dpi=dpi)`` draws it, as an ``(h, w, 4)`` uint8 RGBA array
    (rows top-down), with the figure laid out, measured and drawn once; ``None`` where matplotlib's own
    ``savefig`` must draw it (the figure's background is not opaque or has an edge, or ``savefig.facecolor``,
    ``edgecolor`` or ``transparent`` are set).

    Why: ``savefig(bbox_inches="tight")`` (matplotlib 3.11 ``FigureCanvasBase.print_figure``) runs the layout
    engine inside a whole drawing pass with rasterisation disabled, takes the tight box
    (``Figure.get_tightbbox`` padded by ``savefig.pad_inches``), moves the figure so the box's corner is the
    origin (``_tight_bbox.adjust_bbox``) and draws it again, layout off, on a canvas of the box's size
    (``int(width * dpi)`` by ``int(height * dpi)``: ``RendererAgg`` truncates). Here the layout engine runs
    alone (as ``Figure.draw`` runs it), then the tight box is taken, then one drawing:

    * usually on the figure's own canvas moved by the box corner's fraction of a pixel, then cut at the
      corner's whole pixel: every mark lies on the pixel grid exactly where matplotlib's smaller canvas puts
      it (Agg draws the same under a whole-pixel translation), the renderer and its cache of text
      metrics are the ones the layout and the tight box used, and where the padded box passes the canvas's
      edge the background colour fills it (matplotlib stretches the figure's background patch over the box);
    * on matplotlib's own box-sized canvas (what ``print_figure`` does after its layout pass) when an
      artist sticks out of the figure's canvas (the tight box is not inside it with a pixel to spare) or
      reaches its edge (a line's width or a marker past its box), or the figure is hatched (Agg aligns
      hatch patterns to the canvas's corner).
    """
    import math

    import matplotlib as mpl
    import numpy as np
    from matplotlib import _tight_bbox
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgba
    from matplotlib.transforms import Bbox

    rc = mpl.rcParams
    if rc["savefig.transparent"] or any(str(rc[f"savefig.{k}"]) != "auto" for k in ("facecolor", "edgecolor")):
        return None
    patch = fig.patch
    face = to_rgba(patch.get_facecolor())
    if (not patch.get_visible() or face[3] != 1.0
            or (patch.get_linewidth() > 0 and to_rgba(patch.get_edgecolor())[3] > 0)):
        return None
    background = np.floor(np.asarray(face) * 255 + 0.5).astype(np.uint8)   # Agg's rgba8 rounding
    old_canvas, old_dpi = fig.canvas, fig.dpi
    try:
        fig.dpi = dpi
        canvas = FigureCanvasAgg(fig)   # sets fig.canvas; the old one is put back below, as savefig does
        canvas._is_saving = True
        renderer = canvas.get_renderer()
        engine = fig.get_layout_engine()
        if fig.axes and engine is not None:   # as Figure.draw runs it
            try:
                engine.execute(fig)
            except ValueError:
                pass
        ink = fig.get_tightbbox(renderer)   # inches
        box = ink.padded(rc["savefig.pad_inches"])

        def draw(target):
            restore = _tight_bbox.adjust_bbox(fig, target, renderer, canvas.fixed_dpi)
            try:
                with fig._cm_set(layout_engine="none"):
                    canvas.draw()
                return np.asarray(canvas.buffer_rgba())
            finally:
                restore()

        cols, rows = canvas.get_width_height(physical=True)
        w, h = int(box.width * dpi), int(box.height * dpi)
        fx, fy = math.floor(box.x0 * dpi), math.floor(box.y0 * dpi)
        c0, r0 = fx, rows - h - fy   # the figure canvas's pixel that is the crop's top-left one
        inside = ink.x0 * dpi >= 1 and ink.y0 * dpi >= 1 and ink.x1 * dpi <= cols - 1 and ink.y1 * dpi <= rows - 1
        if not inside or _hatched(fig):
            return draw(box).copy()
        buf = draw(Bbox.from_bounds((box.x0 * dpi - fx) / dpi, (box.y0 * dpi - fy) / dpi, *fig.get_size_inches()))
        if c0 >= 0 and r0 >= 0 and c0 + w <= cols and r0 + h <= rows:
            return buf[r0:r0 + h, c0:c0 + w].copy()
        if not all((edge == background).all() for edge in (buf[:, 0], buf[:, -1], buf[0], buf[-1])):
            return draw(box).copy()   # something reaches the canvas's edge, so it may go past it
    finally:
        fig.dpi = old_dpi
        fig.set_canvas(old_canvas)
    out = np.empty((h, w, 4), np.uint8)
    out[...] = background
    rs, re, cs, ce = max(r0, 0), min(r0 + h, rows), max(c0, 0), min(c0 + w, cols)
    out[rs - r0:re - r0, cs - c0:ce - c0] = buf[rs:re, cs:ce]
    return out


def _metadata(fig) -> dict:
    meta = {"Title": figure_title(fig), "Description": describe_figure(fig)}
    return {k: v for k, v in meta.items() if v}


def rgba(fig, scale: float = HIDPI):
    """``fig`` as :func:`png` draws it, undecoded: an ``(h, w, 4)`` uint8 array (rows top-down) and its width
    in CSS pixels, for a caller that encodes the image its own way (an explorer's palette PNGs)."""
    import io

    import numpy as np

    apply()
    dpi = RC["savefig.dpi"] * scale
    arr = _one_pass(fig, dpi)
    if arr is None:
        from PIL import Image

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        arr = np.asarray(Image.open(buf).convert("RGBA"))
    return arr, max(1, round(arr.shape[1] / scale))


def png(fig, scale: float = HIDPI, pin: bool = False) -> tuple[bytes, int]:
    """``fig`` as PNG bytes drawn at ``scale`` times ``savefig.dpi``, and its width in CSS pixels.

    The figure is cropped to its tight bounding box in one drawing (:func:`_one_pass`; matplotlib's
    ``bbox_inches="tight"`` where that cannot be done exactly), encoded as matplotlib encodes it.
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
    dpi = RC["savefig.dpi"] * scale
    buf = io.BytesIO()
    arr = _one_pass(fig, dpi)
    if arr is None:
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata=_metadata(fig))
    else:
        from matplotlib.image import imsave

        imsave(buf, arr, format="png", origin="upper", dpi=dpi, metadata=_metadata(fig))
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
