"""The exercise registry: reference answers computed from the model, and the comparison rules.

Each lesson keeps its exercises in ``h100lab/grading/answers/lNN.py``; a module there registers every
exercise of its set with :func:`exercise`. The reference answer is *computed* by calling the model
(never typed in), so the answer key cannot drift from the model the book teaches.

    from h100lab.grading.registry import exercise

    @exercise("1.3", points=2, hint="Registers are allocated per warp in units of 256.")
    def _():
        from h100lab.occupancy import occupancy
        return occupancy(256, 64).active_blocks

Comparison (:func:`compare`): NumPy arrays and scalars, tuples and dataclass-free containers are
turned into plain Python values first; numbers compare exactly unless ``rtol``/``atol`` are given
(``math.isclose``); ``bool`` never equals ``int``; NaN equals NaN; ``unordered=True`` compares two
lists as multisets; ``equal=`` replaces all of this with the exercise's own predicate.

``mistakes=`` is the exercise's table of common mistakes (:class:`Mistake`): a wrong answer that one of
them recognises gets that mistake's hint instead of the general one, so the hint answers the mistake the
student made ("bytes, not elements"), never the arithmetic that yields the answer.

``budget=`` (seconds) runs the comparison under a time budget (:mod:`h100lab.grading.budget`): for an
``equal=`` that runs what the student wrote (a kernel on the emulator) in the grader's own process; an
answer whose check runs out of time fails with status "timeout".
"""
from __future__ import annotations

import importlib
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = ["Exercise", "Mistake", "Feedback", "exercise", "get", "all_exercises", "compare", "NO_ANSWER"]

NO_ANSWER = Ellipsis  # what a student stub holds until it is answered

_ID = re.compile(r"[0-9]+\.[0-9]+")


_NO_EXAMPLE = object()


@dataclass(frozen=True)
class Mistake:
    """One typical mistake of an exercise and the hint that answers it.

    ``answer`` is the wrong answer this mistake produces: for a value exercise it is recognised by
    equality under the exercise's comparison rules (an answer of the wrong *kind*, e.g. bytes instead of
    elements); ``when(answer, expected) -> bool`` recognises a family of wrong answers instead (e.g. "off
    by one register granule"). For a kernel exercise (:mod:`h100lab.grading.kernels`) the kernel check
    itself diagnoses the mistake; ``answer`` is then a planted example (a kernel source with the mistake)
    that the tests grade to prove the hint is given.
    """

    hint: str
    answer: Any = _NO_EXAMPLE
    when: Callable[[Any, Any], bool] | None = field(default=None, compare=False)

    @property
    def has_example(self) -> bool:
        """Whether the mistake carries an example wrong answer (the tests grade it)."""
        return self.answer is not _NO_EXAMPLE


@dataclass(frozen=True)
class Feedback:
    """What an exercise's own ``equal=`` may return instead of a bool: the verdict and why.

    ``message`` is shown to the student on a wrong answer (e.g. "element [3, 17] differs" or the
    emulator's report naming the CUDA line); it must never contain the reference answer.
    """

    ok: bool
    message: str = ""

    def __bool__(self) -> bool:
        return bool(self.ok)


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: its id ("L.N"), points, hint and how to compute the reference answer."""

    id: str
    reference: Callable[[], Any]
    points: int = 1
    hint: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    unordered: bool = False
    equal: Callable[[Any, Any], bool] | None = field(default=None, compare=False)
    budget: float | None = None  # seconds the comparison may take (None: no limit)
    mistakes: tuple[Mistake, ...] = ()

    @property
    def lesson(self) -> int:
        """The lesson number, the part of the id before the dot."""
        return int(self.id.split(".")[0])

    @property
    def key(self) -> tuple[int, int]:
        """Sort key: (lesson, exercise number), so "1.10" comes after "1.9"."""
        a, b = self.id.split(".")
        return int(a), int(b)

    def answer(self) -> Any:
        """The reference answer, computed by calling the model."""
        return self.reference()


_REGISTRY: dict[str, Exercise] = {}


def _origin(fn: Callable) -> tuple[str, str, int]:
    code = getattr(fn, "__code__", None)
    return (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", "?"),
            code.co_firstlineno if code is not None else -1)


def exercise(ex_id: str, *, points: int = 1, hint: str = "", rtol: float = 0.0, atol: float = 0.0,
             unordered: bool = False, equal: Callable[[Any, Any], bool] | None = None,
             budget: float | None = None, mistakes: tuple[Mistake, ...] | list[Mistake] = ()):
    """Register the decorated zero-argument function as the reference answer of exercise ``ex_id``.

    Re-importing the same module (same function, same place) re-registers silently; a second, different
    function for an id already taken raises ``ValueError``.
    """
    _check_id(ex_id)
    if not isinstance(points, int) or isinstance(points, bool) or points < 0:
        raise ValueError(f"exercise {ex_id!r}: points must be a non-negative int, got {points!r}")
    if rtol < 0 or atol < 0:
        raise ValueError(f"exercise {ex_id!r}: rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    if budget is not None and not budget > 0:
        raise ValueError(f"exercise {ex_id!r}: a time budget must be > 0 seconds, got {budget!r}")
    mistakes = tuple(mistakes)
    for m in mistakes:
        if not isinstance(m, Mistake) or not m.hint:
            raise ValueError(f"exercise {ex_id!r}: mistakes= holds Mistake(hint, answer=... | when=...) items")
        if equal is None and not m.has_example and m.when is None:
            raise ValueError(f"exercise {ex_id!r}: mistake {m.hint[:40]!r} needs answer= or when=")

    def deco(fn: Callable[[], Any]) -> Callable[[], Any]:
        old = _REGISTRY.get(ex_id)
        if old is not None and _origin(old.reference) != _origin(fn):
            m, q, line = _origin(old.reference)
            raise ValueError(f"exercise {ex_id!r} is registered twice (first by {m}.{q}, line {line})")
        _REGISTRY[ex_id] = Exercise(ex_id, fn, points, hint, rtol, atol, unordered, equal, budget, mistakes)
        return fn

    return deco


def _check_id(ex_id: str) -> None:
    if not isinstance(ex_id, str) or not _ID.fullmatch(ex_id):
        raise ValueError(f"exercise id {ex_id!r} must look like 'L.N' (lesson number, exercise number)")


def get(ex_id: str) -> Exercise:
    """The registered exercise ``ex_id``; imports its lesson's answer module on first use."""
    _check_id(ex_id)
    if ex_id not in _REGISTRY:
        lesson = int(ex_id.split(".")[0])
        name = f"h100lab.grading.answers.l{lesson:02d}"
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # the answer module exists but one of its imports is missing
                raise
            if not any(e.lesson == lesson for e in _REGISTRY.values()):
                raise KeyError(f"no exercise set for lesson {lesson} (exercise {ex_id!r})") from exc
    try:
        return _REGISTRY[ex_id]
    except KeyError:
        raise KeyError(f"unknown exercise {ex_id!r}") from None


def all_exercises(lesson: int | None = None) -> list[Exercise]:
    """Every registered exercise (of one lesson if given), importing all answer modules, in id order."""
    import pkgutil

    from . import answers

    for mod in pkgutil.iter_modules(answers.__path__):
        if re.fullmatch(r"l\d+", mod.name) and (lesson is None or int(mod.name[1:]) == lesson):
            importlib.import_module(f"h100lab.grading.answers.{mod.name}")
    exs = [e for e in _REGISTRY.values() if lesson is None or e.lesson == lesson]
    return sorted(exs, key=lambda e: e.key)


def _plain(x: Any) -> Any:
    """Turn NumPy scalars/arrays and tuples into plain Python values for comparison."""
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {_plain_key(k): _plain(v) for k, v in x.items()}
    return x


def _plain_key(k: Any) -> Any:
    if isinstance(k, np.generic):
        return k.item()
    return k


def compare(ex: Exercise, value: Any, expected: Any) -> bool | Feedback:
    """Whether ``value`` answers ``ex`` given the reference ``expected`` (rules in the module docstring).

    An exercise's own ``equal=`` may answer a :class:`Feedback` (truthy when correct) carrying a message.
    """
    if ex.equal is not None:
        got = ex.equal(value, expected)
        return got if isinstance(got, Feedback) else bool(got)
    v, e = _plain(value), _plain(expected)
    if ex.unordered and isinstance(v, list) and isinstance(e, list):
        try:
            v, e = sorted(v), sorted(e)
        except TypeError:
            return False
    return _eq(v, e, ex.rtol, ex.atol)


def recognised_mistake(ex: Exercise, value: Any, expected: Any) -> Mistake | None:
    """The first of ``ex.mistakes`` that recognises the wrong answer ``value``, or None.

    A mistake with ``when=`` is asked; one with an example ``answer`` matches a value exercise's answer
    equal to it (the exercise's comparison rules). Kernel exercises diagnose in their own check.
    """
    for m in ex.mistakes:
        try:
            if m.when is not None:
                if m.when(value, expected):
                    return m
            elif m.has_example and ex.equal is None:
                probe = Exercise(ex.id, ex.reference, rtol=ex.rtol, atol=ex.atol, unordered=ex.unordered)
                if compare(probe, value, m.answer):
                    return m
        except Exception:  # a student's answer the predicate cannot handle is not that mistake
            continue
    return None


def _eq(v: Any, e: Any, rtol: float, atol: float) -> bool:
    if isinstance(e, bool) or isinstance(v, bool):
        return type(v) is type(e) and v == e
    if isinstance(e, (int, float)) and isinstance(v, (int, float)):
        if isinstance(e, float) and math.isnan(e):
            return isinstance(v, float) and math.isnan(v)
        if isinstance(v, float) and math.isnan(v):
            return False
        if rtol == 0 and atol == 0:
            return v == e
        return math.isclose(v, e, rel_tol=rtol, abs_tol=atol)
    if isinstance(e, list) and isinstance(v, list):
        return len(v) == len(e) and all(_eq(a, b, rtol, atol) for a, b in zip(v, e))
    if isinstance(e, dict) and isinstance(v, dict):
        return v.keys() == e.keys() and all(_eq(v[k], e[k], rtol, atol) for k in e)
    try:
        return bool(v == e)
    except Exception:  # an object whose == raises or returns an array never answers
        return False
