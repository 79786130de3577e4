"""Exercise notebooks: reading them, finding graded cells, and the exercise set a solutions file defines.

Conventions (DEVELOPERS.md, "Exercises"):

* A graded cell carries the tag ``grade:L.N`` (jupytext MyST: ``:tags: [grade:1.3]``) and ends with one
  call ``check("L.N", <expr>)``; statements before the call are allowed and run first.
* A solutions file ``solutions/NN-<slug>.md`` holds exercise set NN; every graded id in it starts with
  lesson NN.

jupytext and nbformat are imported inside the functions that need them, so importing
:mod:`h100lab.grading` stays light.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GradedCell", "ExerciseSet", "GradingFormatError", "read_notebook", "grade_ids",
           "parse_graded_cell", "load_exercise_set", "find_source", "lesson_of_file", "SOURCE_GLOB"]

GRADE_TAG = re.compile(r"grade:([0-9]+\.[0-9]+)")
SOURCE_GLOB = "[0-9][0-9]-*.md"
_CHECK_NAMES = {"check"}


class GradingFormatError(ValueError):
    """An exercise notebook breaks the grading conventions (graded cells, solution regions)."""


@dataclass(frozen=True)
class GradedCell:
    """A graded cell of the exercise set: ``setup`` statements, then ``check(id, expr)``."""

    id: str
    expr: str
    setup: str = ""
    cell_index: int = -1


@dataclass(frozen=True)
class ExerciseSet:
    """The graded cells of one solutions file, in notebook order."""

    lesson: int
    path: Path
    cells: tuple[GradedCell, ...]

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.cells]

    def cell(self, ex_id: str) -> GradedCell:
        for c in self.cells:
            if c.id == ex_id:
                return c
        raise KeyError(f"exercise {ex_id!r} has no graded cell in {self.path}")


def read_notebook(path: str | Path):
    """Read an ``.ipynb`` (nbformat 4, upgraded from older versions) or a jupytext text notebook as a
    notebook node. Text notebooks go through jupytext's format detection: the header's
    ``text_representation``, else the content (MyST: ```` ```{code-cell} ```` directives with cell options
    such as ``:tags:`` as YAML; jupytext docs, "MyST Markdown"), so a student's notebook saved as plain
    jupytext Markdown reads too."""
    path = Path(path)
    if path.suffix == ".ipynb":
        import nbformat

        with open(path, encoding="utf-8") as fh:
            return nbformat.read(fh, as_version=4)
    import jupytext

    return jupytext.read(path)


def grade_ids(cell) -> list[str]:
    """The exercise ids a cell's ``grade:L.N`` tags name (a graded cell has exactly one).

    Tags live in the cell metadata's ``tags`` list (nbformat 4 cell metadata, "tags"), which jupytext
    MyST maps to and from ``:tags: [...]``."""
    tags = cell.get("metadata", {}).get("tags", []) or []
    out = []
    for tag in tags:
        m = GRADE_TAG.fullmatch(str(tag).strip())
        if m:
            out.append(m.group(1))
    return out


def _is_check_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id in _CHECK_NAMES) or (isinstance(f, ast.Attribute) and f.attr in _CHECK_NAMES)


def parse_graded_cell(source: str, ex_id: str, where: str = "graded cell") -> GradedCell:
    """Split a graded cell into its setup statements and the expression passed to ``check``.

    The rule: the cell's last statement is ``check("<ex_id>", <expr>)`` (or ``check("<ex_id>", value=<expr>)``),
    its id a string literal equal to the cell's tag; no other statement calls ``check``.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise GradingFormatError(f"{where}: graded cell {ex_id} is not valid Python: {exc.msg} (line {exc.lineno})") from None
    if not tree.body:
        raise GradingFormatError(f"{where}: graded cell {ex_id} is empty; it must end with check({ex_id!r}, <answer>)")
    last = tree.body[-1]
    if not (isinstance(last, ast.Expr) and _is_check_call(last.value)):
        raise GradingFormatError(f"{where}: graded cell {ex_id} must end with check({ex_id!r}, <answer>)")
    call = last.value
    args = list(call.args)
    kw = {k.arg: k.value for k in call.keywords}
    if len(args) == 1 and set(kw) == {"value"}:
        args.append(kw.pop("value"))
    if len(args) != 2 or kw or any(isinstance(a, ast.Starred) for a in args):
        raise GradingFormatError(f"{where}: graded cell {ex_id} must call check({ex_id!r}, <answer>) with two arguments")
    if not (isinstance(args[0], ast.Constant) and args[0].value == ex_id):
        raise GradingFormatError(f"{where}: graded cell tagged grade:{ex_id} checks "
                                 f"{ast.get_source_segment(source, args[0])}, not {ex_id!r}")
    for stmt in tree.body[:-1]:
        if any(_is_check_call(n) for n in ast.walk(stmt)):
            raise GradingFormatError(f"{where}: graded cell {ex_id} calls check more than once")
    expr = ast.get_source_segment(source, args[1])
    setup = ""
    if len(tree.body) > 1:
        lines = source.splitlines()
        head = lines[last.lineno - 1].encode("utf-8")[: last.col_offset].decode("utf-8")
        setup = "\n".join(lines[: last.lineno - 1] + [head]).rstrip().rstrip(";").strip("\n")
    return GradedCell(ex_id, expr, setup)


def lesson_of_file(path: str | Path) -> int:
    """The lesson number NN of a file named ``NN-<slug>.<ext>``."""
    m = re.match(r"([0-9]{2})-", Path(path).name)
    if not m:
        raise GradingFormatError(f"{path}: an exercise file is named NN-<slug>.md (two-digit lesson number first)")
    return int(m.group(1))


def load_exercise_set(path: str | Path) -> ExerciseSet:
    """The exercise set of a solutions file: its graded cells, each parsed by :func:`parse_graded_cell`.

    Rules checked: each graded cell has one ``grade:`` tag; ids are unique; every id belongs to the
    file's lesson; there is at least one graded cell.
    """
    path = Path(path)
    lesson = lesson_of_file(path)
    nb = read_notebook(path)
    cells: list[GradedCell] = []
    seen: set[str] = set()
    for i, cell in enumerate(nb.cells):
        ids = grade_ids(cell)
        if not ids:
            continue
        where = f"{path}, cell {i}"
        if cell.cell_type != "code":
            raise GradingFormatError(f"{where}: a grade:{ids[0]} tag is on a {cell.cell_type} cell, not a code cell")
        if len(ids) > 1:
            raise GradingFormatError(f"{where}: a graded cell has one grade: tag, this one has {ids}")
        ex_id = ids[0]
        if ex_id in seen:
            raise GradingFormatError(f"{where}: exercise {ex_id} has two graded cells")
        if int(ex_id.split(".")[0]) != lesson:
            raise GradingFormatError(f"{where}: exercise {ex_id} is not in lesson {lesson} (file {path.name})")
        seen.add(ex_id)
        g = parse_graded_cell(cell.source, ex_id, where)
        cells.append(GradedCell(g.id, g.expr, g.setup, i))
    if not cells:
        raise GradingFormatError(f"{path}: no graded cells (tag a cell grade:{lesson}.1 holding check(\"{lesson}.1\", ...))")
    return ExerciseSet(lesson, path, tuple(cells))


def find_source(solutions_dir: str | Path, lesson: int) -> Path:
    """The solutions file of exercise set ``lesson`` in ``solutions_dir`` (``NN-*.md``, exactly one)."""
    solutions_dir = Path(solutions_dir)
    found = sorted(solutions_dir.glob(f"{lesson:02d}-*.md"))
    if not found:
        raise FileNotFoundError(f"no solutions file {lesson:02d}-*.md in {solutions_dir}")
    if len(found) > 1:
        raise GradingFormatError(f"exercise set {lesson:02d} has several solutions files: {[p.name for p in found]}")
    return found[0]
