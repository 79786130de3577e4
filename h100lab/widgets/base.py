"""The one pattern every widget of the book follows.

A widget is a thin view over two pure functions: ``compute(**values) -> result`` (the model's
answer for the controls' current values) and ``draw(result) -> matplotlib Figure``. The widget keeps
``.result`` and ``.figure`` current, so a headless test sets ``.value`` on a control and asserts on
``.result``; ``static()`` returns the figure of the current (by default the initial) state, which
the book displays so that the published page is complete without a kernel.

In a book build (``$H100LAB_EXPLORER_STATES`` set) an explorer is displayed as a static page's
explorer instead of an ipywidget: the state at the cell that displays it, plus precomputed states
the page swaps in when a control moves (:mod:`h100lab.widgets.offline`).

The ipywidget's figure area (an ``Output``) is filled only once the ipywidget is used (``.widget`` read,
e.g. to display it): showing a figure there renders it as a high-DPI PNG (~0.3-0.5 s), which an explorer
of a book build, shown as HTML, never needs — neither when it is made nor when a later cell moves a control.
"""
from __future__ import annotations

from typing import Any, Callable


class Explorer:
    """Controls + compute + draw, wired together.

    ``controls`` maps keyword names of ``compute`` to ipywidgets value widgets.
    """

    def __init__(self, controls: dict[str, Any], compute: Callable[..., Any],
                 draw: Callable[[Any], Any], title: str = "", describe: Callable[[Any], str] | None = None):
        import ipywidgets as W

        self.controls = controls
        self._compute = compute
        self._draw = draw
        self._describe = describe
        self.title = title
        self._offline = None   # the static page's copy, in a book build (see _ipython_display_)
        self._shown = False    # whether the ipywidget was used: only then its figure area is kept filled
        self.output = W.Output()
        self.text = W.HTML()
        self.result: Any = None
        self.figure: Any = None
        for w in controls.values():
            w.observe(self._on_change, names="value")
        header = [W.HTML(f"<b>{title}</b>")] if title else []
        self._widget = W.VBox(header + [W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap")),
                                        self.text, self.output])
        self.update()

    @property
    def widget(self):
        """The ipywidget (controls, text, figure); from the first use on, its figure follows every change."""
        if not self._shown:
            self._shown = True
            self._show_figure()
        return self._widget

    @widget.setter
    def widget(self, value) -> None:
        self._widget = value

    @property
    def values(self) -> dict[str, Any]:
        return {k: w.value for k, w in self.controls.items()}

    def update(self) -> None:
        """Recompute the result and redraw the figure for the controls' current values."""
        try:
            self.result = self._compute(**self.values)
            self.error = None
        except ValueError as exc:  # a clear model error is shown, not raised, in the widget
            self.result, self.error = None, str(exc)
        self.text.value = (f"<span style='color:#D55E00'>{self.error}</span>" if self.error
                           else (self._describe(self.result) if self._describe else ""))
        self.figure = None if self.error else self._draw(self.result)
        if self._shown:
            self._show_figure()

    def _show_figure(self) -> None:
        self.output.clear_output(wait=True)
        if self.figure is not None:
            with self.output:
                from IPython.display import display

                display(self.figure)

    def _on_change(self, _change) -> None:
        self.update()
        if self._offline is not None:   # a state the notebook set: the page can show it too
            self._offline.capture()

    def static(self):
        """The figure of the current state (the initial state unless a control was moved)."""
        return self.figure

    def _ipython_display_(self):
        import os

        from IPython.display import display

        from . import offline

        folder = os.environ.get(offline.ENV)
        if not folder:
            display(self.widget)
            return
        self._offline = offline.OfflineView(self, folder)
        self._offline.show()
