"""Time budgets for checks run in the grader's own process (h100lab.grading.budget), the hook for
exercises whose check runs what the student wrote (kernel exercises)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from h100lab.grading import budget
from h100lab.grading.grader import grade_notebook
from h100lab.grading.notebook import load_exercise_set
from h100lab.grading.registry import Exercise, exercise
from h100lab.grading.verdict import judge
from mystkit import MYST_HEADER


def test_a_check_within_its_budget_returns_its_value_or_raises_its_error():
    assert budget.run_with_budget(lambda a, b=0: a + b, 1, b=2, seconds=5) == 3
    with pytest.raises(KeyError):
        budget.run_with_budget({}.__getitem__, "x", seconds=5)
    with pytest.raises(ValueError, match="> 0 seconds"):
        budget.run_with_budget(print, seconds=0)
    assert budget.current() is None


@pytest.mark.parametrize("kind", ["spins", "cooperates", "sleeps in C", "swallows the exception"])
def test_a_check_past_its_budget_is_stopped_or_left_behind_in_time(kind):
    seen = {}

    def spins():
        while True:
            pass

    def cooperates():
        b = budget.current()
        seen["budget"] = b
        while True:
            b.check()

    def sleeps():
        time.sleep(3)

    def swallows():  # abandoned after the grace period; ends by itself a little later
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            try:
                while time.monotonic() < end:
                    pass
            except budget.BudgetExceeded:
                pass

    fn = {"spins": spins, "cooperates": cooperates, "sleeps in C": sleeps, "swallows the exception": swallows}[kind]
    t0 = time.monotonic()
    with pytest.raises(budget.BudgetExceeded, match="budget of 0.2 s"):
        budget.run_with_budget(fn, seconds=0.2, grace=0.3)
    assert time.monotonic() - t0 < 0.2 + 0.3 + 0.3
    if kind == "cooperates":
        assert seen["budget"].seconds == 0.2 and seen["budget"].expired() and seen["budget"].left() == 0


def test_judge_runs_an_exercise_with_a_budget_under_it():
    def emulate(value, expected):  # a stand-in for running the student's kernel on the emulator
        while value == "loop":
            pass
        return value == expected

    ex = Exercise("97.3", lambda: "ok", points=2, equal=emulate, budget=0.2)
    assert judge(ex, "ok", "ok").passed
    v = judge(ex, "loop", "ok")
    assert (v.status, v.points) == ("timeout", 0)
    assert v.message == "exercise 97.3: checking your answer took longer than its budget of 0.2 s"
    assert judge(ex, "nope", "ok").status == "wrong"
    with pytest.raises(ValueError, match="time budget must be > 0"):
        exercise("97.4", budget=0)


SET_94 = MYST_HEADER + """
```{code-cell} ipython3
from h100lab.grading import check
kernel_a = "fast"
kernel_b = "loop"
```

```{code-cell} ipython3
:tags: [grade:94.1]

check("94.1", kernel_a)
```

```{code-cell} ipython3
:tags: [grade:94.2]

check("94.2", kernel_b)
```
"""


def _runs(source, expected):
    while source == "loop":  # an endless kernel, run by the check in the grader's process
        pass
    return source == expected


@exercise("94.1", budget=0.5, equal=_runs)
def _fast():
    return "fast"


@exercise("94.2", budget=0.5, equal=_runs)
def _also_fast():
    return "fast"


def test_the_grader_judges_a_budgeted_exercise_in_its_own_process(tmp_path: Path):
    path = tmp_path / "94-budget.md"
    path.write_text(SET_94, encoding="utf-8")
    exset = load_exercise_set(path)
    t0 = time.monotonic()
    verdicts = grade_notebook(path, exset, timeout=30)
    assert [(v.exercise, v.status) for v in verdicts] == [("94.1", "correct"), ("94.2", "timeout")]
    assert "longer than its budget of 0.5 s" in verdicts[1].message
    assert time.monotonic() - t0 < 60
