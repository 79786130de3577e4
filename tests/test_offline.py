"""Static-page explorers (h100lab.widgets.offline): the states rendered by forked workers are the states one
process renders, byte for byte (same order, same texts, same PNG files), a second build gives the same PNGs,
and what a worker prints reaches the kernel's streams."""
from __future__ import annotations

import hashlib
import sys

import pytest

pytest.importorskip("ipywidgets")

from h100lab.widgets import offline  # noqa: E402
from h100lab.widgets.base import Explorer  # noqa: E402


def _compute(n: int = 2, kind: str = "line", loud: bool = False) -> dict:
    if n == 5:
        raise ValueError("n = 5 is refused by the model")
    if loud:
        print(f"computing n={n} kind={kind}")
    return {"n": n, "kind": kind}


def _draw(r: dict):
    from h100lab.viz import style

    fig, ax = style.figure(figsize=(3, 2))
    x = list(range(r["n"] + 2))
    (ax.plot if r["kind"] == "line" else ax.bar)(x, [v * v for v in x])
    style.label(ax, "x (1)", "x squared (1)", title=f"n = {r['n']}, {r['kind']}")
    return fig


def _explorer(loud: bool = False, max_n: int = 5) -> Explorer:
    import ipywidgets as W

    ctl = {"n": W.IntSlider(value=2, min=0, max=max_n, description="n"),
           "kind": W.Dropdown(options=["line", "bar"], value="line", description="kind"),
           "loud": W.Checkbox(value=loud, description="loud")}
    return Explorer(ctl, _compute, _draw, title="Test explorer", describe=lambda r: f"n is {r['n']}")


def _build(tmp_path, monkeypatch, workers: int, name: str, loud: bool = False):
    monkeypatch.setenv(offline.WORKERS_ENV, str(workers))
    folder = tmp_path / name
    view = offline.OfflineView(_explorer(loud), folder)
    pngs = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (folder / "explorers").iterdir()}
    return view, pngs


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers only on Linux")
def test_forked_workers_render_what_one_process_renders(tmp_path, monkeypatch):
    one, pngs1 = _build(tmp_path, monkeypatch, 1, "one")
    two, pngs2 = _build(tmp_path, monkeypatch, 2, "two")
    assert offline.workers(len(two.states)) == 2
    assert len(one.states) == 6 * 2 * 2 == offline.MAX_PRODUCT and list(one.states) == list(two.states)
    assert one.states == two.states                       # images (content hashes), widths, texts, alt texts
    assert pngs1 == pngs2 and all(name.startswith(h[:24]) for name, h in pngs1.items())
    refused = [s for s in one.states.values() if s.image is None]
    assert len(refused) == 4 and all("refused" in s.text for s in refused)    # n = 5: 2 kinds x 2 loud
    m1, m2 = one.manifest(), two.manifest()
    assert {k: v for k, v in m1.items() if k != "id"} == {k: v for k, v in m2.items() if k != "id"}
    assert not list((tmp_path / "two" / "explorers").glob("*.tmp"))


def test_a_second_build_draws_the_same_pngs(tmp_path, monkeypatch):
    _, a = _build(tmp_path, monkeypatch, 2, "a")
    _, b = _build(tmp_path, monkeypatch, 2, "b")
    assert a == b and len(a) == 5 * 2     # n = 5 refused; "loud" draws the same figures


def test_what_a_worker_prints_reaches_the_kernel(tmp_path, monkeypatch, capsys):
    _build(tmp_path, monkeypatch, 2, "loud", loud=True)
    out = capsys.readouterr().out
    assert "computing n=2 kind=line" in out and "computing n=4 kind=bar" in out


def test_capture_adds_the_state_the_notebook_sets(tmp_path, monkeypatch):
    monkeypatch.setenv(offline.WORKERS_ENV, "2")
    import IPython.display

    monkeypatch.setattr(IPython.display, "update_display", lambda *a, **k: None)
    ex = _explorer(max_n=40)      # n on a grid of 5s (and 2, the value shown): 3 is not precomputed
    view = offline.OfflineView(ex, tmp_path)
    ex._offline = view
    n = len(view.states)
    ex.controls["kind"].value = "bar"
    ex.controls["n"].value = 3
    assert len(view.states) == n + 1 and list(view.states)[-1] == tuple(offline._key(v) for v in (3, "bar", False))


def test_workers(monkeypatch):
    monkeypatch.setenv(offline.WORKERS_ENV, "1")
    assert offline.workers(100) == 1
    monkeypatch.setenv(offline.WORKERS_ENV, "3")
    assert offline.workers(offline.MIN_PARALLEL - 1) == 1
    if sys.platform.startswith("linux"):
        assert offline.workers(100) == 3 and offline.workers(offline.MIN_PARALLEL) == 3
    monkeypatch.setenv(offline.WORKERS_ENV, "0")
    with pytest.raises(ValueError, match="WORKERS"):
        offline.workers(100)
    monkeypatch.delenv(offline.WORKERS_ENV)
    assert 1 <= offline.workers(100) <= 2


def test_the_figure_area_is_filled_only_once_the_ipywidget_is_used(monkeypatch):
    """An explorer shown as HTML (a book build) never renders its ipywidget's figure (a high-DPI PNG per change);
    once ``.widget`` is read (displayed live, or composed into another widget) it follows every change."""
    ex = _explorer()
    shown = []
    monkeypatch.setattr(ex, "_show_figure", lambda: shown.append(ex.figure))
    ex.controls["n"].value = 3
    assert not shown and ex.figure is not None and ex.result["n"] == 3
    w = ex.widget
    assert w is ex.widget and shown == [ex.figure]
    ex.controls["n"].value = 4
    assert len(shown) == 2 and shown[-1] is ex.figure and ex.result["n"] == 4


# ---- one drawing per figure (style._one_pass) -------------------------------------------------------------------

def _book_explorers():
    """A sample of the book's explorers, chapters 1, 6, 7 and 8 (each as its chapter first shows it)."""
    from h100lab.widgets import banks, l06_wgmma, l07_wgmma, l08_design, occupancy

    return {"ch1 bank": banks.bank_explorer, "ch1 occupancy": occupancy.occupancy_explorer,
            "ch6 kstep": l06_wgmma.kstep_explorer, "ch6 fragment": l06_wgmma.fragment_explorer,
            "ch7 quantisation": l07_wgmma.quantisation_lab, "ch7 sparsity": l07_wgmma.sparsity_packer,
            "ch8 pipeline": l08_design.pipeline_explorer, "ch8 order": l08_design.order_explorer}


def _decode(png: bytes):
    import io

    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def _matplotlib_tight(fig, dpi: float):
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return _decode(buf.getvalue())


def _ink(a):
    """The box (x0, y0, x1, y1) of the pixels that are not the white background."""
    import numpy as np

    ys, xs = np.nonzero((a[..., :3] != 255).any(-1))
    return xs.min(), ys.min(), xs.max(), ys.max()


@pytest.mark.parametrize("name", list(_book_explorers()))
def test_one_drawing_is_matplotlibs_tight_image(name):
    """A book explorer's state figure laid out, measured and drawn once (style._one_pass) is, pixel for pixel,
    the image ``savefig(bbox_inches="tight")`` draws in its two passes: the same crop (size and corner, not
    within a pixel but exactly) and the same marks; and png() writes the very bytes savefig writes."""
    import io

    from h100lab.viz import style

    ex = _book_explorers()[name]()
    result = ex._compute(**ex.values)
    dpi = style.RC["savefig.dpi"] * offline.STATE_SCALE
    style.apply()
    ref = _matplotlib_tight(ex._draw(result), dpi)
    mine = style._one_pass(ex._draw(result), dpi)
    assert mine is not None and mine.shape == ref.shape and _ink(mine) == _ink(ref)
    assert (mine == ref).all(), f"{(mine != ref).any(-1).sum()} pixels differ"
    fig = ex._draw(result)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata=style._metadata(fig))
    assert style.png(ex._draw(result), scale=offline.STATE_SCALE)[0] == buf.getvalue()


def _figure_with(outside: bool = False, hatched: bool = False, edge: bool = False):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    from h100lab.viz import style

    fig, ax = style.figure(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    if outside:
        fig.text(1.15, 0.5, "outside the canvas")
    if hatched:
        ax.add_patch(Rectangle((0.2, 0.2), 0.5, 0.5, facecolor="none", hatch="///"))
    if edge:   # a thick line whose ends (its tight box) are inside the canvas, its projecting caps past the edge
        fig.add_artist(Line2D([0.01, 0.99], [0.5, 0.5], lw=10, transform=fig.transFigure))
    return fig


@pytest.mark.parametrize("case", ["outside", "hatched", "edge"])
def test_one_drawing_falls_back_to_matplotlibs_box_canvas(case, monkeypatch):
    """Where the figure's own canvas cannot hold matplotlib's image (text right of the figure: inside the tight
    box, outside the canvas; a line reaching the canvas's edge) or Agg would lay a hatch from another corner,
    the one drawing is on matplotlib's box-sized canvas (adjust_bbox), and the image is savefig's exactly."""
    from matplotlib import _tight_bbox

    from h100lab.viz import style

    dpi = style.RC["savefig.dpi"] * offline.STATE_SCALE
    style.apply()
    ref = _matplotlib_tight(_figure_with(**{case: True}), dpi)
    boxes = []
    real = _tight_bbox.adjust_bbox
    monkeypatch.setattr(_tight_bbox, "adjust_bbox", lambda fig, box, *a: boxes.append(box.size) or real(fig, box, *a))
    mine = style._one_pass(_figure_with(**{case: True}), dpi)
    assert mine.shape == ref.shape and (mine == ref).all()
    assert abs(boxes[-1][0] * dpi - ref.shape[1]) < 1          # the last drawing was on the box-sized canvas
    assert len(boxes) == (2 if case == "edge" else 1)          # the edge is seen only once drawn
    if case == "outside":
        assert ref.shape[1] > 3 * dpi                           # the text is in
    boxes.clear()
    plain = style._one_pass(_figure_with(), dpi)               # an ordinary figure: one drawing on its own canvas
    assert len(boxes) == 1 and tuple(boxes[0]) == (3, 2)
    assert (plain == _matplotlib_tight(_figure_with(), dpi)).all()


def test_savefig_draws_what_one_drawing_cannot():
    """A see-through background: matplotlib's savefig draws it (png() and rgba() give its image)."""
    from h100lab.viz import style

    def clear():
        fig = _figure_with()
        fig.patch.set_alpha(0.5)
        return fig

    dpi = style.RC["savefig.dpi"] * offline.STATE_SCALE
    style.apply()
    assert style._one_pass(clear(), dpi) is None
    ref = _matplotlib_tight(clear(), dpi)
    assert (_decode(style.png(clear(), scale=offline.STATE_SCALE)[0]) == ref).all()
    assert (style.rgba(clear(), scale=offline.STATE_SCALE)[0] == ref).all()


def test_a_state_png_is_the_png_of_its_pixels():
    """_compact straight from the drawn pixels writes the bytes it writes from the PNG matplotlib would encode
    of them (no encoding and decoding between): the same pixels, the same text chunks."""
    import io

    from matplotlib.image import imsave

    from h100lab.viz import style

    fig = _draw({"n": 3, "kind": "bar"})
    pixels, width = style.rgba(fig, scale=offline.STATE_SCALE)
    buf = io.BytesIO()
    imsave(buf, pixels, format="png", dpi=style.RC["savefig.dpi"] * offline.STATE_SCALE,
           metadata=style._metadata(fig))
    assert offline._compact(pixels, offline._text_chunks(fig)) == offline._compact(buf.getvalue())
    data, width_png = style.png(_draw({"n": 3, "kind": "bar"}), scale=offline.STATE_SCALE)
    assert (_decode(data) == pixels).all() and width_png == width


def test_a_matplotlib_without_the_private_pieces_draws_through_savefig(monkeypatch):
    """Where a matplotlib release has moved what the one drawing uses (``_tight_bbox.adjust_bbox``,
    ``Figure._cm_set``), png() and rgba() fall back to savefig's image instead of failing."""
    from h100lab.viz import style

    def moved(fig, dpi):   # what _one_pass_exact meets in such a release
        raise AttributeError("module 'matplotlib._tight_bbox' has no attribute 'adjust_bbox'")

    dpi = style.RC["savefig.dpi"] * offline.STATE_SCALE
    style.apply()
    ref = _matplotlib_tight(_figure_with(), dpi)
    monkeypatch.setattr(style, "_one_pass_exact", moved)
    assert style._one_pass(_figure_with(), dpi) is None
    assert (_decode(style.png(_figure_with(), scale=offline.STATE_SCALE)[0]) == ref).all()
    assert (style.rgba(_figure_with(), scale=offline.STATE_SCALE)[0] == ref).all()
