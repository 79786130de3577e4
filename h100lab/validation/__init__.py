"""Model-vs-silicon checks: each compares one behaviour of the model with a dataset in ``data/``.

A lesson registers its checks in ``h100lab/validation/lNN.py``:

    from h100lab.validation import silicon_check, CheckResult

    @silicon_check("Occupancy: active blocks per SM", lesson=1, dataset="l01/occupancy")
    def _(ds):
        bad = [r for r in ds.records if model(r) != r["active_blocks"]]
        return CheckResult(cases=len(ds.records), mismatches=len(bad), examples=bad[:3])

The appendix "Model vs silicon" runs every check when the book builds and fails on a mismatch;
``tests/test_validation.py`` runs them on every CI run.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import data

__all__ = ["CheckResult", "SiliconCheck", "silicon_check", "all_checks", "run_all", "beyond_floor"]


@dataclass(frozen=True)
class CheckResult:
    cases: int
    mismatches: int
    examples: list[Any] = field(default_factory=list)
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.cases > 0 and self.mismatches == 0


def first_process(name: str) -> str:
    """The dataset name of a run's first process: ``name`` less its ``_b`` (a run repeated in a second process)."""
    return name[:-2] if name.endswith("_b") else name


def beyond_floor(n: int, misses: int, floor: float) -> int:
    """A floor check's mismatches: of ``n`` cases at least ``floor`` (a fraction) must agree, so
    ``n − ceil(floor · n)`` may miss; the ``misses`` beyond that (0 when the floor is met)."""
    return max(0, misses - (n - math.ceil(floor * n)))


@dataclass(frozen=True)
class SiliconCheck:
    title: str
    lesson: int
    dataset: str
    run: Callable[[data.Dataset], CheckResult]


_CHECKS: list[SiliconCheck] = []


def silicon_check(title: str, *, lesson: int, dataset: str):
    def deco(fn: Callable[[data.Dataset], CheckResult]):
        if not any(c.title == title for c in _CHECKS):
            _CHECKS.append(SiliconCheck(title, lesson, dataset, fn))
        return fn

    return deco


def all_checks() -> list[SiliconCheck]:
    """Every registered check, importing each lesson's ``lNN`` module."""
    pkg = importlib.import_module(__name__)
    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name.startswith("l"):
            importlib.import_module(f"{__name__}.{mod.name}")
    return sorted(_CHECKS, key=lambda c: (c.lesson, c.title))


def run_all() -> list[tuple[SiliconCheck, data.Dataset | None, CheckResult | None]]:
    """Run every check whose dataset exists; a missing dataset gives ``(check, None, None)``."""
    out = []
    for c in all_checks():
        if not data.available(c.dataset):
            out.append((c, None, None))
            continue
        ds = data.load(c.dataset)
        out.append((c, ds, c.run(ds)))
    return out
