"""Verdicts on one answer: passed or not, why, and a hint that helps without giving the answer away.

:func:`judge` is the single place where an answer becomes a verdict; the notebook's
:func:`h100lab.grading.check` and the instructor's grader (:mod:`h100lab.grading.grader`) both call it,
so a student sees in the notebook exactly the message the gradebook will hold.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .budget import BudgetExceeded, run_with_budget
from .registry import NO_ANSWER, Exercise, Feedback, _eq, _plain, compare, recognised_mistake

__all__ = ["Verdict", "judge", "failure", "short_repr",
           "CORRECT", "WRONG", "NO_ANSWER_YET", "ERROR", "TIMEOUT", "MISSING", "STATUSES"]

CORRECT = "correct"          # the answer equals the reference under the exercise's rules
WRONG = "wrong"              # an answer, not the reference
NO_ANSWER_YET = "no answer"  # the stub is untouched: `...` or NotImplementedError
ERROR = "error"              # the student's code raised, or the answer cannot be read
TIMEOUT = "timeout"          # a cell ran past the per-cell time limit
MISSING = "missing"          # the graded cell is not in the submission
STATUSES = (CORRECT, WRONG, NO_ANSWER_YET, ERROR, TIMEOUT, MISSING)

MESSAGE_LIMIT = 1000  # characters of a verdict message; reprs of huge answers are cut


@dataclass(frozen=True)
class Verdict:
    """The outcome of grading one exercise: ``points`` awarded out of ``max_points``."""

    exercise: str
    passed: bool
    status: str
    message: str
    points: int
    max_points: int


def short_repr(value: Any, limit: int = 120) -> str:
    """``repr(value)`` cut to ``limit`` characters (a student's answer may be megabytes long)."""
    try:
        text = repr(value)
    except Exception as exc:  # a student's object whose __repr__ raises
        text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 5] + " ...]"


def _kind(x: Any) -> str:
    if isinstance(x, bool):
        return "a bool (True/False)"
    if isinstance(x, (int, float)):
        return "a number"
    if isinstance(x, str):
        return "a string"
    if isinstance(x, list):
        return "a list"
    if isinstance(x, dict):
        return "a dict"
    if x is None:
        return "None"
    return f"a {type(x).__name__}"


def _shape_hint(value: Any, expected: Any, rtol: float = 0.0, atol: float = 0.0) -> str:
    """What kind of answer was expected, when the student's has the wrong kind or size."""
    v, e = _plain(value), _plain(expected)
    kv, ke = _kind(v), _kind(e)
    if kv != ke:
        return f" Expected {ke}, got {kv}."
    if isinstance(e, list) and len(v) != len(e):
        what = "a tuple of" if isinstance(expected, tuple) else ""
        return f" Expected {what + ' ' if what else ''}{len(e)} items, got {len(v)}."
    if isinstance(expected, tuple) and isinstance(e, list) and len(e) > 1:
        wrong = [i + 1 for i, (a, b) in enumerate(zip(v, e)) if not _eq(_plain(a), b, rtol, atol)]
        if 0 < len(wrong) < len(e):
            names = ", ".join(map(str, wrong))
            return f" Item{'s' if len(wrong) > 1 else ''} {names} of the {len(e)} {'are' if len(wrong) > 1 else 'is'} not right."
    if isinstance(e, dict) and v.keys() != e.keys():
        missing = sorted(map(str, e.keys() - v.keys()))
        extra = sorted(map(str, v.keys() - e.keys()))
        parts = []
        if missing:
            parts.append("missing keys " + ", ".join(missing[:8]))
        if extra:
            parts.append("unexpected keys " + ", ".join(extra[:8]))
        return " The dict has " + "; ".join(parts) + "."
    if isinstance(e, float) and isinstance(v, (int, float)) and not math.isnan(e) and e != 0 \
            and not (isinstance(v, float) and math.isnan(v)):
        rel = abs(v - e) / abs(e)
        if rel > 0.5:
            return " Off by more than 50%."
    return ""


def _cut(message: str) -> str:
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 4] + " ..."


def failure(ex: Exercise, status: str, message: str) -> Verdict:
    """A failed verdict for ``ex`` with ``status`` (one of :data:`STATUSES`) and a message."""
    if status not in STATUSES or status == CORRECT:
        raise ValueError(f"status {status!r} is not a failing status; use one of {STATUSES[1:]}")
    return Verdict(ex.id, False, status, _cut(message), 0, ex.points)


def judge(ex: Exercise, value: Any, expected: Any) -> Verdict:
    """Judge ``value`` against the reference ``expected`` with :func:`~h100lab.grading.registry.compare`.

    ``...`` (:data:`~h100lab.grading.registry.NO_ANSWER`) is the untouched stub: never correct. A wrong
    answer's message names the exercise's hint and, where the kind or size of the answer is off, what
    was expected ("Expected 4 items, got 3.") — never the reference value itself. An exercise with a
    ``budget`` is compared under that time budget; running out of it is a "timeout".
    """
    if value is NO_ANSWER:
        return failure(ex, NO_ANSWER_YET, f"exercise {ex.id}: no answer yet: replace `...` with your answer.")
    try:
        if ex.budget is None:
            ok = compare(ex, value, expected)
        else:  # a check that runs the student's work in this process (h100lab.grading.budget)
            ok = run_with_budget(compare, ex, value, expected, seconds=ex.budget)
    except BudgetExceeded:
        return failure(ex, TIMEOUT, f"exercise {ex.id}: checking your answer took longer than its budget of "
                                    f"{ex.budget:g} s")
    except Exception as exc:  # an answer the exercise's own `equal=` cannot handle
        ok = False
        detail = f" (comparing raised {type(exc).__name__}: {short_repr(str(exc), 80)})"
    else:
        detail = ""
    said = ok.message if isinstance(ok, Feedback) and ok.message else ""
    if ok:
        return Verdict(ex.id, True, CORRECT,
                       f"exercise {ex.id}: correct ({ex.points} point{'s' if ex.points != 1 else ''})",
                       ex.points, ex.points)
    mistake = None if detail else recognised_mistake(ex, value, expected)
    if mistake is not None:
        hint = f" Hint: {mistake.hint}"
    else:
        hint = f" Hint: {ex.hint}" if ex.hint and not said else ""
    if said:  # the exercise's own check said what is wrong (a kernel exercise: what the run showed)
        return failure(ex, WRONG, f"exercise {ex.id}: {said}{hint}")
    shape = "" if ex.equal is not None else _shape_hint(value, expected, ex.rtol, ex.atol)
    return failure(ex, WRONG, f"exercise {ex.id}: {short_repr(value)} is not right.{detail}{shape}{hint}")
