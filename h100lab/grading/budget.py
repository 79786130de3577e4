"""Time budgets for checks that run in the grader's own process.

Most exercises compare a value. Some (kernel exercises: the student's answer is a kernel, and the check
runs it on the emulator or the machine model) need to *run* something the student wrote, in the
grader's process, where an endless loop must not stop the grading of the whole class. Such an exercise
is registered with a budget::

    @exercise("6.1", points=3, budget=5.0, equal=lambda kernel, expected: emulate(kernel) == expected)
    def _():
        return reference_result()

:func:`~h100lab.grading.verdict.judge` then calls the comparison through :func:`run_with_budget` (in the
grader and in the notebook's ``check`` alike), and an answer whose check does not finish in time fails
with status "timeout". How the budget is enforced:

* **cooperatively**: the running check finds its :class:`Budget` with :func:`current` and calls
  :meth:`Budget.check` in its loops (an emulator should do so every few thousand steps; counting steps
  rather than seconds there keeps verdicts the same on a slow machine);
* **for Python code that does not cooperate**: once the time is up, :class:`BudgetExceeded` is raised
  inside the check's thread at its next bytecode (``PyThreadState_SetAsyncExc``);
* **otherwise** (a long call inside a C extension, or code that swallows the exception): after a grace
  period the grader stops waiting and the check's thread is left to finish in the background (a daemon
  thread: it never delays the end of the grader).

Either way :func:`run_with_budget` returns or raises within ``seconds + grace``.
"""
from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Budget", "BudgetExceeded", "current", "run_with_budget", "GRACE"]

GRACE = 1.0  # seconds a check gets to stop after the asynchronous BudgetExceeded


class BudgetExceeded(TimeoutError):
    """A check ran past its time budget."""


@dataclass(frozen=True)
class Budget:
    """The time budget of one running check: ``seconds`` in all, ending at ``deadline`` (monotonic)."""

    seconds: float
    deadline: float

    def left(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.deadline - time.monotonic())

    def expired(self) -> bool:
        """Whether the time is up."""
        return time.monotonic() >= self.deadline

    def check(self) -> None:
        """Raise :class:`BudgetExceeded` when the time is up (call it in long loops)."""
        if self.expired():
            raise BudgetExceeded(f"the check ran past its budget of {self.seconds:g} s")


_local = threading.local()


def current() -> Budget | None:
    """The budget of the check running in this thread, or None outside :func:`run_with_budget`."""
    return getattr(_local, "budget", None)


def _raise_in(thread: threading.Thread, exc_type: type[BaseException]) -> None:
    ident = thread.ident
    if ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc_type))


def run_with_budget(fn: Callable[..., Any], *args: Any, seconds: float, grace: float = GRACE, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a thread of its own with a budget of ``seconds``: its value, or the
    exception it raised, or :class:`BudgetExceeded` when it did not finish in time (see the module
    docstring for how it is stopped). Returns or raises within ``seconds + grace``.
    """
    if not seconds > 0:
        raise ValueError(f"a time budget must be > 0 seconds, got {seconds}")
    budget = Budget(float(seconds), time.monotonic() + seconds)
    outcome: dict[str, Any] = {}

    def target() -> None:
        _local.budget = budget
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="h100lab-budget", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        _raise_in(worker, BudgetExceeded)
        worker.join(grace)
        left = " (it did not stop and runs on in the background)" if worker.is_alive() else ""
        raise BudgetExceeded(f"the check ran past its budget of {seconds:g} s{left}")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
