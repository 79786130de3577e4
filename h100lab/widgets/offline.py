"""Explorers on a static page: the controls' values precomputed when the book is built.

A published page has no Python kernel behind it, so an ipywidget saved into it cannot recompute
anything. When the book is built, ``$H100LAB_EXPLORER_STATES`` names a folder (``tools/site.py``
sets it), and every :class:`~h100lab.widgets.base.Explorer` is displayed as HTML instead
(:class:`OfflineView`): its controls, the text and figure of the state the code above it created (so
the page shows the widget as it was *at its own cell*), and a set of precomputed states. Each state's
figure is a PNG in ``<folder>/explorers/`` (named by its content hash); the site serves that folder
as ``_static/explorers/`` and its script ``h100lab-explorer.js`` swaps figure and text when a reader
moves a control.

Which values are precomputed is decided by one registry, :data:`VALUES`: the control's class name
maps to its kind on the page and to the values worth computing (all options of a dropdown, both
states of a checkbox, a slider's range on a round grid of at most :data:`MAX_VALUES` values that
always holds its ends and its current value). A control type that is not registered is shown with
its value, fixed. Which combinations: all of them when there are at most :data:`MAX_PRODUCT`,
otherwise one control at a time from the displayed state; plus every state the notebook itself sets
later (a chapter's ``ex.controls["stride"].value = 32`` adds that state, so the chapter's own
examples can be replayed on the page). A combination that was not computed is never guessed: the
page picks the computed state closest to the reader's choice and moves the other controls to it.

Rendering the states is most of a book build's time (matplotlib's constrained layout, its tight bounding
box and the Agg drawing take ~0.3 s a state; the model's compute and the PNG's palette encoding little).
A state's figure is laid out, measured and drawn once (:func:`h100lab.viz.style.rgba`: the very pixels of
``savefig(bbox_inches="tight")``, which lays it out inside a second, undrawn pass) and its pixels go
straight into the palette PNG (:func:`_compact`; no full-colour PNG encoded and decoded between). Where
the operating system can fork (Linux), the states of an explorer with at least
:data:`MIN_PARALLEL` of them are rendered by :func:`workers` forked processes (``$H100LAB_EXPLORER_WORKERS``,
default: 2, or 1 on a one-core machine; ``1`` renders in the kernel's process). A forked worker inherits
the explorer as it is (nothing is pickled but the control values and the finished :class:`State`), writes
its PNGs under the content-hash names the kernel's process would write, and hands back what it printed;
the states keep the plan's order, so the page is the same byte for byte as with one process.
"""
from __future__ import annotations

import hashlib
import html
import itertools
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

__all__ = ["ENV", "MAX_VALUES", "MAX_PRODUCT", "STATE_SCALE", "VALUES", "WORKERS_ENV", "MIN_PARALLEL", "register",
           "control_values", "workers", "OfflineView"]

#: the environment variable naming the folder where a book build keeps the explorers' state figures
ENV = "H100LAB_EXPLORER_STATES"
#: at most this many values of one slider are precomputed (a round grid, plus its ends and current value)
MAX_VALUES = 9
#: every combination of the controls' values is precomputed when there are at most this many
MAX_PRODUCT = 24
#: the precomputed figures are drawn at this multiple of savefig.dpi (the displayed one at style.HIDPI)
STATE_SCALE = 1.5
#: the environment variable giving how many forked processes render an explorer's states (1: in this process)
WORKERS_ENV = "H100LAB_EXPLORER_WORKERS"
#: an explorer with fewer states than this renders them in the kernel's process (a fork costs more than it saves)
MIN_PARALLEL = 4

# ---------------------------------------------------------------------------------------------
# The registry: control class name -> (kind on the page, values worth precomputing)

Choice = tuple[str, Any]   # (label shown, value given to compute)
VALUES: dict[str, tuple[str, Callable[[Any], list[Choice]]]] = {}


def register(kind: str, *class_names: str):
    """Register ``fn(widget) -> [(label, value), ...]`` for controls of these ipywidgets classes.

    ``kind`` is how the page shows the control: ``"range"`` (a slider over the values, in order),
    ``"select"`` (a drop-down list) or ``"checkbox"``.
    """
    def deco(fn):
        for name in class_names:
            VALUES[name] = (kind, fn)
        return fn
    return deco


def _options(w) -> list[Choice]:
    out = []
    for opt in w.options:
        if isinstance(opt, (tuple, list)) and len(opt) == 2:
            out.append((str(opt[0]), opt[1]))
        else:
            out.append((str(opt), opt))
    return out


@register("select", "Dropdown", "Select", "RadioButtons", "ToggleButtons", "SelectionSlider")
def _choices(w) -> list[Choice]:
    return _options(w)


@register("checkbox", "Checkbox", "ToggleButton")
def _boolean(w) -> list[Choice]:
    return [("off", False), ("on", True)]


def _grid(lo: float, hi: float, step: float, current: float) -> list[float]:
    """Values of a slider from ``lo`` to ``hi`` by ``step``: all of them if at most MAX_VALUES, else
    the multiples of a round multiple of ``step`` in the range, plus both ends and ``current``."""
    step = step or 1
    for mult in (1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000):
        if (hi - lo) / (step * mult) + 1 <= MAX_VALUES:
            break
    g = step * mult
    if mult == 1:
        vals = [lo + k * g for k in range(int(round((hi - lo) / g)) + 1)]
    else:
        vals = [k * g for k in range(math.ceil(lo / g - 1e-9), math.floor(hi / g + 1e-9) + 1)]
    vals = sorted({round(v, 10) for v in [*vals, lo, hi, current] if lo - 1e-9 <= v <= hi + 1e-9})
    return vals


def _label(w, v) -> str:
    fmt = getattr(w, "readout_format", None)
    try:
        return format(v, fmt) if fmt else str(v)
    except (TypeError, ValueError):
        return str(v)


@register("range", "IntSlider", "FloatSlider", "BoundedIntText", "BoundedFloatText")
def _linear(w) -> list[Choice]:
    vals = _grid(w.min, w.max, w.step, w.value)
    if isinstance(w.value, int) and not isinstance(w.value, bool):
        vals = [int(round(v)) for v in vals]
    return [(_label(w, v), v) for v in vals]


@register("range", "FloatLogSlider")
def _logarithmic(w) -> list[Choice]:
    exps = _grid(w.min, w.max, w.step, math.log(w.value, w.base))
    vals = [w.value if abs(e - math.log(w.value, w.base)) < 1e-9 else w.base ** e for e in exps]
    return [(_label(w, v), v) for v in vals]


@register("select", "SelectMultiple")
def _subsets(w) -> list[Choice]:
    opts = _options(w)
    label = dict((v, k) for k, v in opts)
    out = [("none", ())] + [(lab, (v,)) for lab, v in opts]
    cur = tuple(w.value)
    if cur not in [v for _, v in out]:
        out.append((" + ".join(label.get(v, str(v)) for v in cur), cur))
    return out


def control_values(w) -> tuple[str, list[Choice]]:
    """The kind of a control on the page and the values to precompute: from :data:`VALUES`, else its
    current value alone (``"fixed"``: shown, not changeable on the page)."""
    kind, fn = VALUES.get(type(w).__name__, ("fixed", None))
    values = fn(w) if fn is not None else [(str(w.value), w.value)]
    if not any(_same(v, w.value) for _, v in values):
        values.append((_label(w, w.value), w.value))
        if kind == "range":
            values.sort(key=lambda c: c[1])
    return kind, values


def _compact(image, text: dict[str, str] | None = None) -> bytes:
    """A figure as a 256-colour palette PNG (the book's flat-coloured plots lose nothing visible), about
    a third of the bytes. ``image``: PNG bytes (their text chunks, title and description, are kept) or an
    ``(h, w, 4)`` uint8 RGBA array with ``text`` the chunks to write (no PNG encoded and decoded between)."""
    import io

    from PIL import Image, PngImagePlugin

    if isinstance(image, (bytes, bytearray)):
        im = Image.open(io.BytesIO(image))
        text = getattr(im, "text", {})
    else:
        im = Image.fromarray(image, "RGBA")
    info = PngImagePlugin.PngInfo()
    for k, v in (text or {}).items():
        info.add_text(k, v)
    q = im.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    out = io.BytesIO()
    q.save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def _text_chunks(fig) -> dict[str, str]:
    """The text chunks :func:`h100lab.viz.style.png` writes (matplotlib's ``Software``, then title and
    description), so a state's PNG carries what it would carry when encoded by matplotlib first."""
    import matplotlib as mpl

    from ..viz import style

    return {"Software": f"Matplotlib version{mpl.__version__}, https://matplotlib.org/", **style._metadata(fig)}


def _key(v) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _same(a, b) -> bool:
    return _key(a) == _key(b)


def workers(n_states: int) -> int:
    """How many processes render ``n_states`` states: ``$H100LAB_EXPLORER_WORKERS`` if set, else 2 (1 on a
    machine with one core for this process); 1 where there is no ``fork`` (not Linux: macOS' fork is unsafe
    with its system frameworks) or fewer than :data:`MIN_PARALLEL` states; never more than the states."""
    env = os.environ.get(WORKERS_ENV, "").strip()
    if env:
        n = int(env)
        if n < 1:
            raise ValueError(f"${WORKERS_ENV} must be a whole number >= 1, not {env!r}")
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        n = min(2, cores)
    if n <= 1 or n_states < MIN_PARALLEL or not sys.platform.startswith("linux"):
        return 1
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(n, n_states)


#: the view whose states a forked worker renders (set in the parent just before the fork; the worker
#: inherits it, so neither the explorer nor its compute and draw functions need to be picklable)
_FORKED: "OfflineView | None" = None


def _render_forked(values: dict) -> tuple["State", str, str]:
    """In a forked worker: one state of :data:`_FORKED`, and what rendering it wrote to stdout and to stderr
    (warnings included): the kernel's streams belong to the parent, which writes it out."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        state = _FORKED._render(values)
    return state, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------------------------
# One explorer on the page

@dataclass(frozen=True)
class State:
    image: str | None   # file name under explorers/, or None (the model refused these values)
    width: int          # the width to show it at, in CSS pixels
    text: str           # the explorer's describe() HTML, or the model's error
    alt: str            # what the figure shows


class OfflineView:
    """An Explorer shown as HTML with its precomputed states; see the module docstring."""

    _serial = itertools.count(1)

    def __init__(self, explorer, folder: str | Path):
        from ..viz import style

        self.ex = explorer
        self.folder = Path(folder) / "explorers"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.display_id = f"h100lab-explorer-{next(OfflineView._serial)}"
        self.names = list(explorer.controls)
        self.kinds, self.choices = {}, {}
        for name, w in explorer.controls.items():
            self.kinds[name], self.choices[name] = control_values(w)
        self.base = tuple(explorer.values[n] for n in self.names)
        self.states: dict[tuple[str, ...], State] = {}
        # the state shown first is the one the code above created: its figure as the cell shows it
        self.initial = None
        if explorer.figure is not None:
            data, width = style.png(explorer.figure, pin=True)   # static() shows these very bytes
            self.initial = (data, width)
        self._add_all(self._plan())

    # which states
    def _plan(self) -> list[tuple]:
        lists = [[v for _, v in self.choices[n]] for n in self.names]
        if math.prod(len(x) for x in lists) <= MAX_PRODUCT:
            return list(itertools.product(*lists))
        out = [self.base]
        for i, vals in enumerate(lists):
            for v in vals:
                combo = self.base[:i] + (v,) + self.base[i + 1:]
                if not _same(combo, self.base):
                    out.append(combo)
        return out

    def _add(self, combo: tuple) -> None:
        self._add_all([combo])

    def _add_all(self, combos: list[tuple]) -> None:
        """Render the states of ``combos`` not rendered yet, in :func:`workers` processes; ``self.states``
        gets them in the order of ``combos`` whichever process rendered them."""
        todo: dict[tuple[str, ...], dict[str, Any]] = {}
        for combo in combos:
            key = tuple(_key(v) for v in combo)
            if key not in self.states and key not in todo:
                todo[key] = dict(zip(self.names, combo))
        n = workers(len(todo))
        if n <= 1:
            for key, values in todo.items():
                self.states[key] = self._render(values)
            return
        global _FORKED
        import multiprocessing

        _FORKED = self
        try:
            with multiprocessing.get_context("fork").Pool(n) as pool:
                done = pool.map(_render_forked, list(todo.values()), chunksize=1)
        finally:
            _FORKED = None
        for key, (state, out, err) in zip(todo, done):
            if out:
                sys.stdout.write(out)
            if err:
                sys.stderr.write(err)
            self.states[key] = state

    def _render(self, values: dict[str, Any]) -> State:
        from ..viz import style

        ex = self.ex
        try:
            result, error = ex._compute(**values), None
        except Exception as exc:   # the model's refusal of these values is what the page shows
            result, error = None, str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        if error:
            return State(None, 0, f"<span style='color:#D55E00'>{html.escape(error)}</span>", error)
        text = ex._describe(result) if ex._describe else ""
        fig = ex._draw(result)
        if fig is None:
            return State(None, 0, text, "")
        pixels, width = style.rgba(fig, scale=STATE_SCALE)   # one drawing, cropped (style._one_pass)
        data = _compact(pixels, _text_chunks(fig))
        name = hashlib.sha256(data).hexdigest()[:24] + ".png"
        path = self.folder / name
        if not path.exists():   # written whole, then renamed: another worker may write the same figure
            tmp = path.with_name(f"{name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return State(name, width, text, style.describe_figure(fig))

    def capture(self) -> None:
        """Add the explorer's current state (a value the notebook set after displaying it) and update
        the page's copy of the explorer."""
        for name, w in self.ex.controls.items():
            if not any(_same(v, w.value) for _, v in self.choices[name]):
                self.choices[name].append((_label(w, w.value), w.value))
                if self.kinds[name] == "range":
                    self.choices[name].sort(key=lambda c: c[1])
                elif self.kinds[name] == "fixed":
                    self.kinds[name] = "select"
        self._add(tuple(self.ex.values[n] for n in self.names))
        from IPython.display import update_display

        update_display(self.bundle(), raw=True, display_id=self.display_id)

    def show(self) -> None:
        from IPython.display import display

        display(self.bundle(), raw=True, display_id=self.display_id)

    # the page's copy
    def manifest(self) -> dict:
        """What the page's script needs: controls (kind, labels), the displayed state's value indices,
        and every state as ``"i,j,k" -> [image index or -1, text index, alt index]``."""
        index = {n: {_key(v): i for i, (_, v) in enumerate(self.choices[n])} for n in self.names}
        images, texts, alts = [], [], []

        def intern(table, x):
            if x not in table:
                table.append(x)
            return table.index(x)

        states = {}
        for key, st in self.states.items():
            idx = ",".join(str(index[n][k]) for n, k in zip(self.names, key))
            states[idx] = [intern(images, [st.image, st.width]) if st.image else -1, intern(texts, st.text),
                           intern(alts, st.alt)]
        controls = [{"name": n, "label": self._description(n), "kind": self.kinds[n],
                     "labels": [lab for lab, _ in self.choices[n]]} for n in self.names]
        base = [index[n][_key(v)] for n, v in zip(self.names, self.base)]
        return {"id": self.display_id, "controls": controls, "base": base, "images": images, "texts": texts,
                "alts": alts, "states": states}

    def _description(self, name: str) -> str:
        return getattr(self.ex.controls[name], "description", "") or name

    def html(self) -> str:
        m = self.manifest()
        base_state = m["states"][",".join(map(str, m["base"]))]
        title = getattr(self.ex, "title", "")
        parts = [f'<div class="h100lab-explorer" id="{self.display_id}" data-states="{len(m["states"])}">']
        if title:
            parts.append(f'<p class="h100lab-explorer-title">{html.escape(title)}</p>')
        parts.append('<div class="h100lab-explorer-controls">')
        for i, c in enumerate(m["controls"]):
            parts.append(self._control_html(i, c, m["base"][i]))
        parts.append("</div>")
        parts.append(f'<div class="h100lab-explorer-text">{m["texts"][base_state[1]]}</div>')
        if self.initial is not None:
            import base64

            data, width = self.initial
            alt = html.escape(m["alts"][base_state[2]], quote=True)
            parts.append(f'<img class="h100lab-explorer-figure" width="{width}" alt="{alt}" '
                         f'src="data:image/png;base64,{base64.b64encode(data).decode()}">')
        n = len(m["states"])
        parts.append(f'<p class="h100lab-explorer-note">Static page: {n} settings of this explorer were computed '
                     "when the book was built (each control's values from the setting shown, and the settings the "
                     "chapter uses); another combination moves the other controls to the nearest one computed. "
                     "Every setting runs live when you open the chapter as a notebook in Jupyter.</p>")
        body = json.dumps(m, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
        parts.append(f'<script type="application/json" class="h100lab-explorer-data">{body}</script>')
        parts.append("</div>")
        return "\n".join(parts)

    @staticmethod
    def _control_html(i: int, c: dict, value: int) -> str:
        label = html.escape(c["label"])
        labels = c["labels"]
        attrs = f'data-control="{i}" disabled'   # the page's script enables the controls it drives
        if c["kind"] == "range" and len(labels) > 1:
            field = (f'<input type="range" min="0" max="{len(labels) - 1}" step="1" value="{value}" {attrs} '
                     f'aria-label="{label}"><output>{html.escape(labels[value])}</output>')
        elif c["kind"] == "checkbox":
            checked = " checked" if labels[value] == "on" else ""
            field = f'<input type="checkbox"{checked} {attrs}>'
        elif c["kind"] in ("select", "range") and len(labels) > 1:
            opts = "".join(f'<option value="{k}"{" selected" if k == value else ""}>{html.escape(lab)}</option>'
                           for k, lab in enumerate(labels))
            field = f'<select {attrs}>{opts}</select>'
        else:
            field = (f'<input type="text" value="{html.escape(labels[value], quote=True)}" readonly '
                     f'data-fixed="{i}" title="changes only when the notebook runs in Jupyter">')
        return f'<label class="h100lab-control h100lab-control-{c["kind"]}"><span>{label}</span>{field}</label>'

    def bundle(self) -> dict:
        """The display data: the page's HTML, and a plain-text fallback."""
        return {"text/html": self.html(),
                "text/plain": f"<{type(self.ex).__name__} {getattr(self.ex, 'title', '')!r}: {len(self.states)} "
                              "precomputed states>"}
