"""Kernel exercises: the student's answer is CUDA C++ source, graded by running it on the emulator.

An exercise of this kind hands the student a kernel to write or to fix; the graded cell passes the
source text (``check("3.9", SRC)``). The grader compiles it with NVRTC, launches it on
:mod:`h100lab.emu` **in the grader's own process** on inputs the student has never seen, and judges

1. that it compiles (the NVRTC diagnostics, with the student's line numbers, are the message);
2. that it runs: a fault, a deadlock, a race or a missing proxy fence is reported with the emulator's
   message, which names the broken PTX rule and the CUDA line;
3. that every output equals the reference bit for bit (or within the exercise's tolerance) — the
   message says which output and how many elements differ, never their reference values;
4. the property the lesson is about (``properties``: no bank conflicts, the number of TMA bytes, a
   throughput) — each property answers a message when it is violated;
5. which typical mistake produced a wrong result (``symptoms``: predicates on the outputs and counters,
   each with the hint that answers that mistake).

Register one with :func:`kernel_exercise` in ``h100lab/grading/answers/lNN.py``::

    def _run(program):                       # hidden inputs, the launch the exercise specifies
        x = np.random.default_rng(7).standard_normal(4096).astype(np.float32)
        ...
        stats = emu.launch(program.function("scale"), 16, 256, d_x, d_y, 4096)
        return KernelRun({"y": d_y.to_host()}, stats)

    kernel_exercise("1.9", run=_run, reference=SOLUTION_1_9, points=3,
                    symptoms=[Symptom(lambda out, ref, stats: ..., "hint")],
                    mistakes=[Mistake("hint", answer=PLANTED_SOURCE)])

The reference outputs come from running ``reference`` (the solution kernel's source, which stays in the
answer module, on the grader's side) through the same ``run``, or from a ``expect`` function (NumPy).
Every check runs under the exercise's time budget (:mod:`h100lab.grading.budget`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .registry import Feedback, Mistake, exercise

__all__ = ["KernelRun", "Symptom", "Property", "KernelCheck", "kernel_exercise", "run_source"]

#: warp-instructions a student's launch may issue before the emulator stops it (an endless loop)
MAX_INSTRUCTIONS = 5_000_000


@dataclass
class KernelRun:
    """What one launch of the student's kernel produced: named output arrays and the emulator's counters
    (:class:`h100lab.emu.launch.LaunchStats`, or a list of them for several launches)."""

    outputs: Mapping[str, np.ndarray]
    stats: Any = None


@dataclass(frozen=True)
class Symptom:
    """A typical mistake recognised from its effect: ``test(outputs, expected, stats) -> bool`` on a wrong
    run (``outputs``/``expected``: dicts of arrays); ``hint`` answers the mistake. When the emulator stopped
    the run (a deadlock, a race, a missing fence), ``test(None, expected, error)`` gets the
    :class:`~h100lab.emu.errors.EmuError` instead, so a symptom can recognise a report (a deadlock on an
    "empty" barrier) and answer it."""

    test: Callable[[Mapping[str, np.ndarray], Mapping[str, np.ndarray], Any], bool]
    hint: str


@dataclass(frozen=True)
class Property:
    """A property the lesson is about, checked on a run whose outputs are right:
    ``test(outputs, stats) -> str | None`` answers what is violated (None: holds)."""

    test: Callable[[Mapping[str, np.ndarray], Any], "str | None"]
    name: str = ""


def _first_line(text: str, limit: int = 600) -> str:
    text = str(text).strip()
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def run_source(source: str, run: Callable[[Any], KernelRun], *, name: str = "exercise.cu",
               options: Sequence[str] = ()) -> KernelRun:
    """Compile ``source`` for the emulator and hand the program to ``run``; exceptions propagate."""
    from h100lab import emu

    program = emu.compile(source, name=name, options=tuple(options))
    with emu.limits(max_instructions=MAX_INSTRUCTIONS):
        return run(program)


@dataclass
class KernelCheck:
    """The ``equal=`` of a kernel exercise (module docstring): ``check(source, expected) -> Feedback``."""

    run: Callable[[Any], KernelRun]
    symptoms: Sequence[Symptom] = ()
    properties: Sequence[Property] = ()
    rtol: float = 0.0
    atol: float = 0.0
    name: str = "exercise.cu"
    options: Sequence[str] = ()
    must_contain: Sequence[tuple[str, str]] = ()  # (regular expression, message when absent)
    _expected_cache: dict = field(default_factory=dict, repr=False)

    def __call__(self, source: Any, expected: Mapping[str, np.ndarray]) -> Feedback:
        import re

        from h100lab.nvrtc import CompileError, NvrtcUnavailable
        from h100lab.emu.errors import EmuError

        if not isinstance(source, str) or "__global__" not in source:
            return Feedback(False, f"the answer must be the kernel's CUDA C++ source as a string (with its "
                                   f"__global__ function), got {type(source).__name__}")
        for pattern, message in self.must_contain:
            if not re.search(pattern, source):
                return Feedback(False, message)
        try:
            got = run_source(source, self.run, name=self.name, options=self.options)
        except CompileError as exc:
            return Feedback(False, "your kernel does not compile: " + _first_line(exc))
        except NvrtcUnavailable as exc:
            return Feedback(False, "NVRTC is not available in the grader: " + _first_line(exc))
        except EmuError as exc:
            said = _emu_message(exc)
            for s in self.symptoms:       # a symptom may recognise the report: test(None, expected, error)
                try:
                    if s.test(None, expected, exc):
                        return Feedback(False, f"{said} Hint: {s.hint}")
                except Exception:  # a symptom written for outputs does not apply to a stopped run
                    continue
            return Feedback(False, said)
        except (TypeError, ValueError, KeyError) as exc:
            return Feedback(False, f"your kernel cannot be launched as the exercise says "
                                   f"({type(exc).__name__}: {_first_line(exc, 300)})")
        outputs = {k: np.asarray(v) for k, v in got.outputs.items()}
        wrong = _differences(outputs, expected, self.rtol, self.atol)
        if wrong:
            for s in self.symptoms:
                try:
                    if s.test(outputs, expected, got.stats):
                        return Feedback(False, f"{wrong} Hint: {s.hint}")
                except Exception:  # a symptom that cannot judge this output does not apply
                    continue
            return Feedback(False, wrong)
        for p in self.properties:
            said = p.test(outputs, got.stats)
            if said:
                return Feedback(False, f"the outputs are right, but {said}")
        return Feedback(True, "")


def _emu_message(exc) -> str:
    """The emulator's report, shortened for a verdict: the kind, the CUDA line, the broken rule."""
    import re

    where = getattr(exc, "where", "") or ""
    m = re.search(r"CUDA source: [^:\n]*:(\d+)\n\s*(.*)", where)
    at = f" at line {m.group(1)} (`{m.group(2).strip()[:120]}`)" if m else ""
    rule = getattr(exc, "rule", str(exc))
    return f"the emulator stopped your kernel{at} — {type(exc).__name__}: {_first_line(rule, 700)}"


def _differences(outputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                 rtol: float, atol: float) -> str:
    """A message naming each wrong output (how many elements differ and the first index), or ""."""
    parts = []
    for key, ref in expected.items():
        ref = np.asarray(ref)
        if key not in outputs:
            parts.append(f"output {key!r} is missing")
            continue
        out = outputs[key]
        if out.shape != ref.shape:
            parts.append(f"output {key!r} has shape {out.shape}, expected {ref.shape}")
            continue
        if rtol == 0 and atol == 0:
            if ref.dtype.kind == "f":
                bad = ~((out.view(f"u{ref.dtype.itemsize}") == ref.view(f"u{ref.dtype.itemsize}"))
                        if out.dtype == ref.dtype else (out == ref))
            else:
                bad = out != ref
        else:
            bad = ~np.isclose(out.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
        n = int(np.count_nonzero(bad))
        if n:
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            idx = first[0] if len(first) == 1 else list(first)
            parts.append(f"{n} of {ref.size} elements of {key!r} are wrong (the first at index {idx})")
    return ("; ".join(parts) + ".") if parts else ""


def kernel_exercise(ex_id: str, *, run: Callable[[Any], KernelRun], reference: str | None = None,
                    expect: Callable[[], Mapping[str, np.ndarray]] | None = None, points: int = 3,
                    budget: float = 60.0, hint: str = "", symptoms: Sequence[Symptom] = (),
                    properties: Sequence[Property] = (), mistakes: Sequence[Mistake] = (),
                    rtol: float = 0.0, atol: float = 0.0, options: Sequence[str] = (),
                    must_contain: Sequence[tuple[str, str]] = ()) -> KernelCheck:
    """Register kernel exercise ``ex_id`` (module docstring). Exactly one of ``reference`` (the solution
    kernel's source, run through ``run``) and ``expect`` (a function answering the outputs) gives the
    reference outputs. ``mistakes`` carry planted example sources (tests prove each gets its hint; the
    hint itself comes from the matching ``symptoms`` or ``properties``)."""
    if (reference is None) == (expect is None):
        raise ValueError(f"exercise {ex_id!r}: give exactly one of reference= (solution source) or expect=")
    checker = KernelCheck(run, tuple(symptoms), tuple(properties), rtol, atol, f"exercise_{ex_id.replace('.', '_')}.cu",
                          tuple(options), tuple(must_contain))

    def _reference():
        if expect is not None:
            out = expect()
        else:
            out = run_source(reference, run, name=checker.name, options=checker.options).outputs
        return {k: np.asarray(v) for k, v in out.items()}

    _reference.__qualname__ = f"kernel_exercise_{ex_id.replace('.', '_')}"
    _reference.__module__ = _caller_module()
    exercise(ex_id, points=points, hint=hint, budget=budget, equal=checker, mistakes=tuple(mistakes))(_reference)
    return checker


def _caller_module() -> str:
    import sys

    frame = sys._getframe(2)
    return frame.f_globals.get("__name__", "?")
