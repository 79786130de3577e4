"""Lesson 1 benchmark (a report, not a timed test).

    python benchmarks/bench_l01.py [--accesses N] [--no-chapter]

Reports warp-accesses per second of ``h100lab.memory.banks.wavefronts_trace`` (32-, 64- and 128-bit,
loads and stores) and ``h100lab.memory.coalescing.sectors_trace`` on a trace of N random warp-wide
accesses (default 1,048,576; goal: at least 1 M accesses/s on one core; one 128-bit load case mixes
pair-uniform accesses and inactive lanes), occupancy calls per second, and the wall time of
executing ``chapters/01-architecture.md`` (goal: under 30 s). Set
``OMP_NUM_THREADS=1`` etc. for a strict one-core measurement; NumPy's sorts and reductions used here
are single-threaded anyway.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _rate(fn, n: int, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return n / best


def bench_trace(n: int) -> list[tuple[str, float]]:
    from h100lab.memory.banks import wavefronts_trace
    from h100lab.memory.coalescing import sectors_trace

    rng = np.random.default_rng(0)
    out = []
    for width in (4, 8, 16):
        trace = rng.integers(0, 49152 // width, size=(n, 32)) * width       # anywhere in 48 KB
        for op in ("ld", "st"):
            out.append((f"wavefronts {8 * width}-bit {op}", _rate(lambda: wavefronts_trace(trace, width, op), n)))
    mixed = trace.copy()                          # 128-bit: every other access pair-uniform, 10% lanes off
    mixed[::2] = mixed[::2][:, np.arange(32) & ~1]
    off = rng.random((n, 32)) > 0.1
    out.append(("wavefronts 128-bit ld, pairs + masks", _rate(lambda: wavefronts_trace(mixed, 16, "ld", off), n)))
    strided = (np.arange(n)[:, None] * 128 + np.arange(32) * 4).astype(np.int64)
    out.append(("wavefronts 32-bit ld, contiguous", _rate(lambda: wavefronts_trace(strided, 4), n)))
    g = rng.integers(0, 1 << 26, size=(n, 32)) * 4
    out.append(("sectors 32-bit, random", _rate(lambda: sectors_trace(g, 4), n)))
    out.append(("sectors 32-bit, contiguous", _rate(lambda: sectors_trace(strided, 4), n)))
    return out


def bench_occupancy() -> float:
    from h100lab.occupancy import occupancy

    cases = [(t, r, s) for t in (64, 128, 256, 512, 1024) for r in range(24, 256, 8) for s in (0, 20000, 100000)]
    return _rate(lambda: [occupancy(*c) for c in cases], len(cases))


def bench_chapter() -> float:
    env = dict(os.environ, MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "jupytext", "--to", "ipynb", "--execute", "-o",
                        str(Path(d) / "ch.ipynb"), str(ROOT / "chapters" / "01-architecture.md")],
                       check=True, cwd=ROOT, env=env, capture_output=True)
        return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accesses", type=int, default=1 << 20)
    ap.add_argument("--no-chapter", action="store_true")
    args = ap.parse_args(argv)
    print(f"trace of {args.accesses:,} warp-wide accesses")
    for name, r in bench_trace(args.accesses):
        print(f"  {name:36s} {r / 1e6:6.2f} M accesses/s {'ok' if r >= 1e6 else 'below the 1 M/s goal'}")
    print(f"  {'occupancy() calls':36s} {bench_occupancy() / 1e3:6.1f} k calls/s")
    if not args.no_chapter:
        t = bench_chapter()
        print(f"chapter 01-architecture executes in {t:.1f} s ({'ok' if t < 30 else 'over the 30 s goal'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
