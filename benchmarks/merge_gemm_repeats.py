"""Lesson 8: the repeated gemm_bench table (device request n128b, issue 17) as one dataset, every repeat kept.

    PYTHONPATH=. python3 benchmarks/merge_gemm_repeats.py OUTDIR [--request FILE]

OUTDIR holds what the request wrote: ``r0`` … ``r4`` (each ``l08/gemm_bench.json`` of one
``benchmarks/bench_gemm.py --out OUTDIR/rN --name l08/gemm_bench --variants ...`` process, the variant order rotated
by N), ``smi_clocks.csv`` (nvidia-smi before and after each repeat) and ``smi_trace.csv`` (every 100 ms). Writes
``data/l08/gemm_bench_repeats`` (h100lab.data): every record of every repeat, its ``kind`` prefixed ``repeat_``
(``repeat_time``, ``repeat_check``, ``repeat_pick`` — not a timing kind of :data:`h100lab.design.perf.TIME_KINDS`,
so these records never enter the model's calibration or its per-record held-out report; the check of
:func:`h100lab.validation.l08.repeat_median_rows` reads them), with ``repeat`` (0–4) and ``order`` (the repeat's
variant order); one ``smi`` record per nvidia-smi line of ``smi_clocks.csv``; the metadata of repeat 0 (GPU, driver,
CUDA, date) with ``command`` the request's loop, ``repeats`` (each repeat's own command, wall time, completeness)
and the SM-clock range of the trace during the request (``smi_trace_mhz``: min, median, max).
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

COMMAND = ("for r in 0..4: PYTHONPATH=. python3 benchmarks/bench_gemm.py --out $OUT/r$r --name l08/gemm_bench "
           "--variants <the 7 variants of l08/gemm_bench's meta command, rotated by r> (one process each, nvidia-smi "
           "before/after each, a 100 ms nvidia-smi trace throughout); then PYTHONPATH=. python3 "
           "benchmarks/merge_gemm_repeats.py $OUT (device request n128b)")


def _mhz(x: str):
    try:
        return float(str(x).strip().split()[0])
    except (ValueError, IndexError):
        return None


def merge(outdir: Path) -> tuple[list, dict]:
    recs, runs, meta0 = [], [], None
    for r in range(10):
        f = outdir / f"r{r}" / "l08" / "gemm_bench.json"
        if not f.exists():
            continue
        d = json.loads(f.read_text())
        meta0 = meta0 or d["meta"]
        order = d["meta"].get("variants")
        runs.append({"repeat": r, "command": d["meta"].get("command"), "wall_s": d["meta"].get("wall_s"),
                     "complete": d["meta"].get("complete"), "date": d["meta"].get("date"), "variants": order})
        for x in d["records"]:
            recs.append(dict(x, kind=f"repeat_{x.get('kind')}", repeat=r, order=order))
    if meta0 is None:
        raise SystemExit(f"no repeat under {outdir}")
    smi = outdir / "smi_clocks.csv"
    if smi.exists():
        rows = list(csv.reader(smi.read_text().splitlines()))
        head = [h.strip() for h in rows[0]]
        for row in rows[1:]:
            recs.append(dict(zip(head, (c.strip() for c in row)), kind="smi"))
    meta = {k: meta0[k] for k in meta0 if k not in ("command", "wall_s", "complete", "variants")}
    meta.update(command=COMMAND, repeats=runs, note=meta0.get("note", "") + "; every repeat its own process")
    tr = outdir / "smi_trace.csv"
    if tr.exists():
        mhz = [m for m in (_mhz(row[1]) for row in csv.reader(tr.read_text().splitlines()[1:]) if len(row) > 1)
               if m is not None]
        if mhz:
            meta["smi_trace_mhz"] = [min(mhz), statistics.median(mhz), max(mhz)]
    return recs, meta


def main(argv=None) -> None:
    from h100lab import data

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--ran", default=None, help="how the request ran (the lead's .done line), kept in meta.ran")
    args = ap.parse_args(argv)
    recs, meta = merge(Path(args.outdir))
    if args.ran:
        meta["ran"] = args.ran
    print(data.write("l08/gemm_bench_repeats", recs, meta))


if __name__ == "__main__":
    main()
