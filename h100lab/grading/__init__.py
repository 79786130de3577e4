"""Grading of the book's exercises.

Graded cells in an exercise notebook call :func:`check`; the instructor's command line builds student
editions and grades submissions::

    python -m h100lab.grading student solutions/ exercises/ [--check]
    python -m h100lab.grading grade SUBMISSIONS_DIR --set NN [--out DIR] [--timeout S] [--jobs N]
                                   [--sandbox auto|on|off] [--max-output MB] [--memory MB]

(``python -m h100lab.grading --help`` says more.)
"""
from __future__ import annotations

from typing import Any

from .registry import NO_ANSWER, all_exercises, compare, exercise, get

__all__ = ["check", "exercise", "get", "all_exercises", "compare", "NO_ANSWER"]


def check(ex_id: str, value: Any) -> None:
    """Check an answer to exercise ``ex_id``; raise ``AssertionError`` with a hint when it is wrong.

    The reference answer is computed from the model (``h100lab/grading/answers/lNN.py``) and compared by
    :func:`h100lab.grading.registry.compare`. An unanswered stub (``...``) never passes; a stub that still
    raises ``NotImplementedError`` fails before this cell is reached. A correct answer prints
    ``exercise L.N: correct (P points)``.

    The instructor's grader does not call this function: it evaluates the same expression in the
    student's kernel and judges it in its own process, so rebinding ``check`` changes no grade.
    """
    from .verdict import judge

    ex = get(ex_id)
    verdict = judge(ex, value, ex.answer() if value is not NO_ANSWER else None)
    if not verdict.passed:
        raise AssertionError(verdict.message)
    print(verdict.message)
