"""Grading of the book's exercises.

Graded cells in an exercise notebook call :func:`check`; the instructor's command line
(``python -m h100lab.grading``) builds student editions and grades submissions.
"""
from __future__ import annotations

from typing import Any

from .registry import NO_ANSWER, all_exercises, compare, exercise, get

__all__ = ["check", "exercise", "get", "all_exercises", "NO_ANSWER"]


def check(ex_id: str, value: Any) -> None:
    """Check an answer to exercise ``ex_id``; raise ``AssertionError`` with a hint when it is wrong.

    An unanswered stub (``...``) or a ``NotImplementedError`` raised before this cell never passes.
    """
    ex = get(ex_id)
    if value is NO_ANSWER:
        raise AssertionError(f"exercise {ex_id}: no answer yet: replace `...` with your answer")
    expected = ex.answer()
    if not compare(ex, value, expected):
        hint = f" Hint: {ex.hint}" if ex.hint else ""
        raise AssertionError(f"exercise {ex_id}: {value!r} is not right.{hint}")
    print(f"exercise {ex_id}: correct ({ex.points} point{'s' if ex.points != 1 else ''})")
