"""Run the lessons' measurement scripts: ``python -m h100lab.measure [lNN ...|all] [--out DIR]``.

Each lesson's ``h100lab/measure/lNN.py`` has ``main(argv=None)`` and writes its datasets with
``h100lab.data.write``. This runner calls them in lesson order (all of them when no lesson or ``all``
is named), forwards ``--out DIR`` to each, keeps going past a lesson that fails, prints a summary and
exits non-zero when any failed (1) or when no Hopper GPU is usable (2; ``--no-gpu-check`` skips that check).
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import time
import traceback
from typing import Sequence

__all__ = ["discover", "lesson_name", "run", "main"]


def discover(package: str = "h100lab.measure") -> list[str]:
    """The lesson modules ``lNN`` of ``package``, in lesson order."""
    pkg = importlib.import_module(package)
    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if re.fullmatch(r"l\d{2}", m.name))


def lesson_name(arg: str) -> str:
    """``"l01"``, ``"L1"``, ``"1"`` → ``"l01"``; anything else is a ValueError."""
    m = re.fullmatch(r"[lL]?(\d{1,2})", arg.strip())
    if not m or not 1 <= int(m.group(1)) <= 99:
        raise ValueError(f"{arg!r} is not a lesson: use lNN (l01 ... l12) or 'all'")
    return f"l{int(m.group(1)):02d}"


def _outcome(ret) -> str | None:
    """None for success, else a one-line reason (a main returning non-zero or raising SystemExit(non-zero))."""
    if ret is None or ret == 0 or ret is True:
        return None
    return f"main returned {ret!r}"


def run(lessons: Sequence[str], forward: Sequence[str] = (), package: str = "h100lab.measure",
        stream=sys.stdout) -> dict[str, str | None]:
    """Run ``package.<lesson>.main(forward)`` for each lesson in order; map lesson → None (ok) or the failure."""
    results: dict[str, str | None] = {}
    for name in lessons:
        print(f"== {package}.{name} {' '.join(forward)}", file=stream, flush=True)
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as exc:
            results[name] = (f"no measurement script {package}.{name}" if exc.name == f"{package}.{name}"
                             else f"import failed: {exc}")
            print(f"   FAILED: {results[name]}", file=stream, flush=True)
            continue
        except Exception as exc:
            results[name] = f"import failed: {type(exc).__name__}: {exc}"
            traceback.print_exc(file=stream)
            continue
        entry = getattr(mod, "main", None)
        if not callable(entry):
            results[name] = f"{package}.{name} has no main(argv)"
        else:
            try:
                results[name] = _outcome(entry(list(forward)))
            except SystemExit as exc:
                results[name] = None if exc.code in (None, 0) else f"SystemExit({exc.code!r})"
            except Exception as exc:
                traceback.print_exc(file=stream)
                results[name] = f"{type(exc).__name__}: {exc}"
        dt = time.perf_counter() - t0
        print(f"   {'ok' if results[name] is None else 'FAILED: ' + results[name]} ({dt:.1f} s)", file=stream,
              flush=True)
    return results


def main(argv: Sequence[str] | None = None, *, package: str = "h100lab.measure") -> int:
    p = argparse.ArgumentParser(prog="python -m h100lab.measure", description=__doc__.split("\n\n")[0])
    p.add_argument("lessons", nargs="*", help="lessons to measure (lNN), or 'all' (the default)")
    p.add_argument("--out", help="data folder to write into (forwarded to each lesson's main)")
    p.add_argument("--list", action="store_true", help="list the lessons that have a measurement script")
    p.add_argument("--no-gpu-check", action="store_true", help="run even when no Hopper GPU is usable")
    a = p.parse_args(argv)
    found = discover(package)
    if a.list:
        print("\n".join(found) if found else "(no measurement scripts yet)")
        return 0
    try:
        lessons = found if not a.lessons or a.lessons == ["all"] else [lesson_name(x) for x in a.lessons]
    except ValueError as exc:
        p.error(str(exc))
    if not a.no_gpu_check:
        from h100lab import cuda

        reason = cuda.unavailable_reason()
        if reason is not None:
            print(f"no usable Hopper GPU, nothing measured: {reason}", file=sys.stderr)
            return 2
    if not lessons:
        print("no measurement scripts yet (h100lab/measure/lNN.py)")
        return 0
    results = run(lessons, ["--out", a.out] if a.out else [], package)
    failed = {k: v for k, v in results.items() if v is not None}
    print(f"\nmeasurement scripts: {len(results) - len(failed)} ok, {len(failed)} failed" +
          ("".join(f"\n  {k}: {v}" for k, v in failed.items())))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
