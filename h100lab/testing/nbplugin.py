"""pytest plugin: hand the book's jupytext MyST notebooks (``.md``) to nbval.

nbval collects only ``.ipynb`` files. This plugin collects every ``.md`` file with a jupytext header
under ``chapters/`` and ``solutions/`` (never ``exercises/``, whose stubs are meant to fail), reads it
through ``jupytext.read`` and yields nbval's own cell items, so ``--nbval``/``--nbval-lax`` work on the
text notebooks unchanged. A graded cell tagged ``grade:L.N`` is named ``Cell 7 [L.N]`` in test ids,
e.g. ``solutions/03-async-barriers.md::Cell 7 [3.2]``.

Loaded through ``addopts = -p h100lab.testing.nbplugin`` in ``pyproject.toml``.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from pathlib import Path

NOTEBOOK_DIRS = ("chapters", "solutions")
KERNEL_START_ATTEMPTS = 3


def _is_jupytext_md(path: Path) -> bool:
    if path.suffix != ".md" or path.parent.name not in NOTEBOOK_DIRS:
        return False
    head = path.read_text(encoding="utf-8")[:600]
    return head.startswith("---") and "jupytext:" in head


def grade_id(cell) -> str | None:
    """The exercise id of a graded cell (tag ``grade:L.N``), or None."""
    for tag in cell.get("metadata", {}).get("tags", []):
        if tag.startswith("grade:"):
            return tag.split(":", 1)[1]
    return None


def pytest_collect_file(file_path, parent):
    opt = parent.config.option
    if not (getattr(opt, "nbval", False) or getattr(opt, "nbval_lax", False)):
        return None
    if not _is_jupytext_md(Path(file_path)):
        return None
    return JupytextNbFile.from_parent(parent, path=file_path)


def _make_class():
    from nbval.plugin import IPyNbCell, IPyNbFile, find_comment_markers, find_metadata_tags

    class _JupytextNbFile(IPyNbFile):
        """nbval's notebook collector, reading the notebook through jupytext."""

        def setup(self):
            # A kernel can die before its first reply when several start at once (jupyter_client
            # picks its ports before the kernel binds them, so two starting kernels can collide):
            # start again, a few times, rather than fail every cell of the notebook.
            for attempt in range(KERNEL_START_ATTEMPTS):
                try:
                    return super().setup()
                except RuntimeError as exc:
                    if "Kernel died" not in str(exc) or attempt == KERNEL_START_ATTEMPTS - 1:
                        raise
                    warnings.warn(f"{self.fspath}: kernel start failed ({exc}); starting again")

        def collect(self):
            import jupytext

            self.nb = jupytext.read(str(self.fspath))
            cell_num = 0
            for cell in self.nb.cells:
                if cell.cell_type != "code":
                    continue
                with warnings.catch_warnings():
                    options = defaultdict(bool, find_metadata_tags(cell.metadata))
                    options.update(dict(find_comment_markers(cell.source)))
                options.setdefault("check", self.compare_outputs)
                name = f"Cell {cell_num}"
                gid = grade_id(cell)
                if gid:
                    name += f" [{gid}]"
                yield IPyNbCell.from_parent(self, name=name, cell_num=cell_num, cell=cell, options=options)
                cell_num += 1

    return _JupytextNbFile


class _Lazy:
    cls = None

    def from_parent(self, parent, **kw):
        if _Lazy.cls is None:
            _Lazy.cls = _make_class()
        return _Lazy.cls.from_parent(parent, **kw)


JupytextNbFile = _Lazy()
