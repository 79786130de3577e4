"""Command line of the grading package.

    python -m h100lab.grading student SRC DST [--check]
        Write the student edition of every solutions file SRC/NN-*.md into DST/NN-*.md (SRC may be one
        file). With --check nothing is written; exit status 1 when a student edition is missing, out of
        date, or has no source.

    python -m h100lab.grading grade SUBMISSIONS_DIR --set NN [--out DIR] [--timeout S] [--jobs N]
                                   [--sandbox auto|on|off] [--max-output MB] [--memory MB]
                                   [--solutions DIR] [--answers-module MODULE_OR_FILE ...]
        Grade every submission of exercise set NN (SUBMISSIONS_DIR/<student>.ipynb|.md or
        SUBMISSIONS_DIR/<student>/NN-*.ipynb|.md), each in its own kernel with a per-cell time limit, an
        output limit and a memory limit, sandboxed where Linux namespaces allow it, and write
        DIR/gradebook-NN.csv and DIR/gradebook-NN.json (default DIR: ./gradebook), last and atomically.
        Exit status 0; 1 when the submissions folder changed while it was graded; 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import sys

from .notebook import GradingFormatError


def _student(args) -> int:
    from .student import generate

    try:
        outcomes = generate(args.src, args.dst, check=args.check)
    except (GradingFormatError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bad = 0
    for o in outcomes:
        if o.action == "written":
            print(f"wrote {o.target}")
        elif o.action in ("out of date", "missing"):
            bad += 1
            print(f"{o.target}: {o.action} (source {o.source})")
            if o.diff:
                lines = o.diff.splitlines()
                print("\n".join(lines[:40]) + (f"\n... {len(lines) - 40} more diff lines" if len(lines) > 40 else ""))
        elif o.action == "orphan":
            bad += args.check
            print(f"{o.target}: no source file in {args.src}" + ("" if args.check else " (left alone)"))
    if args.check and bad:
        print(f"{bad} student edition(s) differ from what `python -m h100lab.grading student {args.src} "
              f"{args.dst}` generates; run it and commit the result", file=sys.stderr)
        return 1
    if args.check:
        print(f"{len(outcomes)} student edition(s) up to date")
    return 0


def _grade(args) -> int:
    from .grader import Limits, grade

    try:
        lesson = int(args.set)
    except ValueError:
        print(f"error: --set takes a lesson number such as 01, got {args.set!r}", file=sys.stderr)
        return 2
    try:
        limits = Limits(max_output=round(args.max_output * 1e6), memory=round(args.memory * 1e6))
        book = grade(args.submissions, lesson, out_dir=args.out, timeout=args.timeout,
                     solutions_dir=args.solutions, answers_modules=args.answers_module, jobs=args.jobs,
                     progress=lambda s: print(f"grading {s} ...", file=sys.stderr, flush=True),
                     isolation=args.sandbox, limits=limits, warn=lambda m: print(m, file=sys.stderr, flush=True))
    except (GradingFormatError, FileNotFoundError, KeyError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    marks = {"correct": "+", "wrong": "x", "no answer": ".", "error": "E", "timeout": "T", "missing": "-"}
    by_student: dict[str, str] = {}
    for r in book.rows:
        by_student[r["student"]] = by_student.get(r["student"], "") + marks.get(r["status"], "?")
    width = max([len(s) for s in by_student] + [7])
    print(f"{'student':{width}}  points  {' '.join(book.exercises)}")
    for student, t in book.totals().items():
        print(f"{student:{width}}  {t['points']:>3}/{t['max_points']:<3} {by_student[student]}")
    print("(+ correct, x wrong, . no answer, E error, T timeout, - graded cell missing)")
    print(f"kernels: {book.isolation}")
    if book.csv_path:
        print(f"wrote {book.csv_path} and {book.json_path}")
    return 1 if book.submissions_changed else 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m h100lab.grading`` (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m h100lab.grading", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("student", help="generate the student editions of exercise sets")
    p.add_argument("src", help="solutions folder (or one solutions file)")
    p.add_argument("dst", help="student-edition folder")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when DST is not what SRC generates")
    p.set_defaults(func=_student)
    g = sub.add_parser("grade", help="grade submitted notebooks and write a gradebook")
    g.add_argument("submissions", help="folder of submissions: <student>.ipynb|.md or <student>/NN-*.ipynb|.md")
    g.add_argument("--set", required=True, help="exercise set (lesson number), e.g. 01")
    g.add_argument("--out", default="gradebook", help="gradebook folder (default: ./gradebook)")
    g.add_argument("--timeout", type=float, default=60.0, help="seconds per cell (default 60)")
    g.add_argument("--jobs", type=int, default=1, help="notebooks graded at a time (default 1)")
    g.add_argument("--sandbox", choices=["auto", "on", "off"], default="auto",
                   help="run each kernel in a namespace sandbox: auto (where possible, else warn), on (or "
                        "refuse to grade), off (default auto)")
    g.add_argument("--max-output", type=float, default=100.0, metavar="MB",
                   help="output a notebook may print before its kernel is stopped (default 100 MB)")
    g.add_argument("--memory", type=float, default=4000.0, metavar="MB",
                   help="memory each kernel may allocate (RLIMIT_DATA: heap and private writable mappings), "
                        "0 for no limit (default 4000 MB)")
    g.add_argument("--solutions", default=None, help="folder of the solutions files (default: ./solutions)")
    g.add_argument("--answers-module", action="append", default=[], metavar="MODULE_OR_FILE",
                   help="extra module registering exercises (a dotted name or a .py file); repeatable")
    g.set_defaults(func=_grade)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
