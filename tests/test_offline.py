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
