"""Measurement scripts, one per lesson (``python -m h100lab.measure.lNN``), writing datasets to data/.

Every script starts the same way: :func:`begin` parses the standard arguments (``--out``,
``--quick``), checks that a Hopper GPU is usable, points :func:`h100lab.data.write` at ``--out``
and returns the metadata (GPU, driver, CUDA, date and the exact command) that every dataset records.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["Session", "begin"]


@dataclass(frozen=True)
class Session:
    args: argparse.Namespace
    meta: dict[str, Any]


def begin(lesson: str, argv: Sequence[str] | None, description: str, quick_help: str,
          add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> Session | None:
    """Start lesson ``lesson``'s measurement; ``None`` (after saying why on stderr) when no GPU is usable."""
    prog = f"python -m h100lab.measure.{lesson}"
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--out", help="data folder to write into (default: the repository's data/)")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    if add_arguments:
        add_arguments(ap)
    argv = list(argv) if argv is not None else sys.argv[1:]
    args = ap.parse_args(argv)
    from .. import cuda

    if not cuda.available():
        print(f"no usable GPU: {cuda.unavailable_reason()}", file=sys.stderr)
        return None
    if args.out:
        os.environ["H100LAB_DATA"] = args.out
    return Session(args, cuda.run_metadata(" ".join([prog, *argv])))
