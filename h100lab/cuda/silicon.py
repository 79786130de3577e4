"""The "model vs silicon" report: every registered silicon check, its dataset and its verdict, as rows.

The checks themselves live in ``h100lab/validation/lNN.py`` (``@silicon_check``); this module only runs
them through :func:`h100lab.validation.run_all`, turns the results into plain rows and Markdown for the
appendix, and — on a machine with a Hopper GPU — re-measures datasets into a scratch folder and runs the
same checks against the fresh data. No model logic here; nothing imports cuda-python at import time.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

__all__ = ["Row", "rows", "failures", "missing", "markdown_table", "measure_command", "remeasure",
           "kernels_markdown", "data_dir_override"]

MATCH, MISMATCH, NO_CASES, NO_DATASET = "match", "MISMATCH", "no cases", "no dataset"


@dataclass(frozen=True)
class Row:
    """One line of the appendix table."""

    behaviour: str
    lesson: int
    dataset: str
    measured_on: str            # GPU, driver, CUDA, date and command of the dataset ("" when missing)
    cases: int | None
    mismatches: int | None
    verdict: str                # match | MISMATCH | no cases | no dataset
    examples: list[Any] = field(default_factory=list)
    note: str = ""


def measure_command(lesson: int) -> str:
    """The command that (re)makes lesson ``lesson``'s datasets on a Hopper GPU."""
    return f"python -m h100lab.measure l{int(lesson):02d}"


def rows(results: Iterable[tuple[Any, Any, Any]] | None = None) -> list[Row]:
    """Rows for :func:`h100lab.validation.run_all`'s ``(check, dataset | None, result | None)`` triples
    (``run_all()`` itself when ``results`` is None). A present dataset whose check found no case is a
    failure, like a mismatch (``CheckResult.ok`` needs ``cases > 0``)."""
    if results is None:
        from h100lab.validation import run_all

        results = run_all()
    out = []
    for check, ds, res in results:
        if ds is None:
            out.append(Row(check.title, check.lesson, check.dataset, "", None, None, NO_DATASET,
                           note=f"make it with `{measure_command(check.lesson)}` on a Hopper GPU"))
            continue
        verdict = MATCH if res.ok else (NO_CASES if res.cases <= 0 else MISMATCH)
        out.append(Row(check.title, check.lesson, check.dataset, ds.describe(), res.cases, res.mismatches, verdict,
                       list(res.examples), res.note))
    return out


def failures(table: Sequence[Row]) -> list[Row]:
    """Rows whose dataset exists and disagrees with the model (or holds no case)."""
    return [r for r in table if r.verdict not in (MATCH, NO_DATASET)]


def missing(table: Sequence[Row]) -> list[Row]:
    """Rows whose dataset has not been measured yet."""
    return [r for r in table if r.verdict == NO_DATASET]


def _cell(x: Any) -> str:
    return "" if x is None else str(x).replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Sequence[Row]) -> str:
    """A Markdown table: behaviour, lesson, dataset, measured on, cases, mismatches, verdict."""
    if not table:
        return "_No silicon check is registered yet (`h100lab/validation/lNN.py`)._"
    head = "| behaviour | lesson | dataset | measured on | cases | mismatches | verdict |\n|---|---|---|---|---|---|---|"
    lines = [head]
    for r in table:
        # text-presentation symbols (✓ U+2713, ✗ U+2717): emoji would need an emoji font to show
        verdict = {MATCH: "✓ match", NO_DATASET: f"– no dataset ({r.note})"}.get(r.verdict, f"✗ {r.verdict}")
        lines.append("| " + " | ".join(_cell(v) for v in (r.behaviour, r.lesson, f"`data/{r.dataset}.json`",
                                                              r.measured_on or "—", r.cases, r.mismatches, verdict))
                     + " |")
    return "\n".join(lines)


def kernels_markdown() -> str:
    """A Markdown table of the shipped kernels: file, lesson, and the first line of what it proves."""
    from .compiler import kernel_info, list_kernels

    lines = ["| kernel | lesson | what it is for |", "|---|---|---|"]
    for name in list_kernels():
        info = kernel_info(name)
        first = " ".join(info.header.split("\n\n")[0].split())
        if len(first) > 240:
            first = first[:first.rfind(" ", 0, 240)] + " …"
        lines.append(f"| `{name}.cu` | {info.lesson or '—'} | {_cell(first)} |")
    return "\n".join(lines)


@contextlib.contextmanager
def data_dir_override(path: str | os.PathLike):
    """Within the block, :func:`h100lab.data.data_dir` (``$H100LAB_DATA``) is ``path``."""
    old = os.environ.get("H100LAB_DATA")
    os.environ["H100LAB_DATA"] = str(path)
    try:
        yield Path(path)
    finally:
        if old is None:
            os.environ.pop("H100LAB_DATA", None)
        else:
            os.environ["H100LAB_DATA"] = old


def remeasure(lessons: Sequence[int], out_dir: str | os.PathLike, timeout_s: float = 600) -> list[Row]:
    """Re-measure ``lessons`` on this machine's GPU into ``out_dir`` (``python -m h100lab.measure lNN ... --out
    out_dir``, with ``$H100LAB_DATA`` pointing there too) and return the checks' rows against the fresh data.
    Needs a Hopper GPU; raises :class:`~h100lab.cuda.CudaUnavailable` otherwise and RuntimeError when a
    measurement script fails."""
    from . import device
    from .errors import CudaUnavailable

    reason = device.unavailable_reason()
    if reason is not None:
        raise CudaUnavailable(f"cannot re-measure: {reason}")
    names = [f"l{int(n):02d}" for n in sorted(set(lessons))]
    if not names:
        raise ValueError("name at least one lesson to re-measure")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "H100LAB_DATA": str(out)}
    r = subprocess.run([sys.executable, "-m", "h100lab.measure", *names, "--out", str(out)], env=env,
                       capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise RuntimeError(f"measurement failed (exit {r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    from h100lab.validation import run_all

    wanted = {int(n[1:]) for n in names}
    with data_dir_override(out):
        res = [t for t in run_all() if t[0].lesson in wanted]
    return rows(res)
