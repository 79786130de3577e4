"""Lesson 8: a repeated l08 timing table (device requests n128b, repeats2; issue 17) as one dataset, every repeat kept.

    PYTHONPATH=. python3 benchmarks/merge_gemm_repeats.py OUTDIR [--table NAME] [--ran LINE]

OUTDIR holds what the request wrote for one table: ``r0`` … ``r4`` (each ``l08/<table>.json`` of one process running
the table's own meta command with ``--out OUTDIR/rN --name l08/<table>``, the variant order rotated by N where the
script takes ``--variants``), ``smi_clocks.csv`` (nvidia-smi before and after each repeat) and ``smi_trace.csv``
(every 100 ms; in OUTDIR or, when one trace ran through a request of several tables, in its parent). ``--table``
(default ``gemm_bench``: request n128b) names the table: ``gemm_bench`` (the bf16 table), ``gemm_bench_fp8_stagger``,
``gemm_bench_fp8_m256``, ``gemm_bench_tmastore`` (``bench_gemm.py``), ``gemm_steps_ablation``
(``bench_gemm_steps.py --ablation``). Writes ``data/l08/<table>_repeats`` (h100lab.data): every record of every
repeat, its ``kind`` prefixed ``repeat_`` (``repeat_time``, ``repeat_fp8_time``, ``repeat_ablation``,
``repeat_check`` … — never a timing kind of :data:`h100lab.design.perf.TIME_KINDS`, so these records never enter the
model's calibration or its per-record held-out report; :func:`h100lab.validation.l08.repeat_median_rows` reads
them), with ``repeat`` (0–4) and ``order`` (the repeat's variant order, None without ``--variants``); one ``smi``
record per nvidia-smi line of ``smi_clocks.csv``; the metadata of repeat 0 (GPU, driver, CUDA, date) with
``command`` the request's loop, ``original`` (the dataset repeated), ``repeats`` (each repeat's own exact command,
wall time, completeness) and the SM-clock range of the trace during the request (``smi_trace_mhz``: min, median,
max).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from h100lab.measure import smi  # noqa: E402

COMMAND = ("for r in 0..4: PYTHONPATH=. python3 benchmarks/bench_gemm.py --out $OUT/r$r --name l08/gemm_bench "
           "--variants <the 7 variants of l08/gemm_bench's meta command, rotated by r> (one process each, nvidia-smi "
           "before/after each, a 100 ms nvidia-smi trace throughout); then PYTHONPATH=. python3 "
           "benchmarks/merge_gemm_repeats.py $OUT (device request n128b)")
_LOOP = ("for r in 0..4, for each table in (gemm_bench_fp8_stagger, gemm_steps_ablation, gemm_bench_fp8_m256, "
         "gemm_bench_tmastore) (repeat r of every table, then r+1; one process each, nvidia-smi before/after each, a "
         "100 ms nvidia-smi trace through the whole request): ")
_MERGE = "; then PYTHONPATH=. python3 benchmarks/merge_gemm_repeats.py $OUT/{t} --table {t} (device request repeats2)"
#: each table's loop body (device request repeats2): the original dataset's meta command with --out/--name
COMMANDS = {
    "gemm_bench": COMMAND,
    "gemm_bench_fp8_stagger": _LOOP + "PYTHONPATH=. python3 benchmarks/bench_gemm.py --out $OUT/gemm_bench_fp8_stagger"
    "/r$r --fp8 --name l08/gemm_bench_fp8_stagger --variants <the 6 variants of its meta, rotated by r>" + _MERGE,
    "gemm_bench_fp8_m256": _LOOP + "PYTHONPATH=. python3 benchmarks/bench_gemm.py --out $OUT/gemm_bench_fp8_m256/r$r "
    "--fp8 --name l08/gemm_bench_fp8_m256 --variants <its meta command's 4 variants, rotated by r>" + _MERGE,
    "gemm_bench_tmastore": _LOOP + "PYTHONPATH=. python3 benchmarks/bench_gemm.py --out $OUT/gemm_bench_tmastore/r$r "
    "--name l08/gemm_bench_tmastore --variants <its meta command's 3 variants, rotated by r>" + _MERGE,
    "gemm_steps_ablation": _LOOP + "PYTHONPATH=. python3 benchmarks/bench_gemm_steps.py --out "
    "$OUT/gemm_steps_ablation/r$r --name l08/gemm_steps_ablation --ablation" + _MERGE,
}


def merge(outdir: Path, table: str = "gemm_bench") -> tuple[list, dict]:
    outdir = Path(outdir)
    recs, runs, meta0 = [], [], None
    for r in range(10):
        f = outdir / f"r{r}" / "l08" / f"{table}.json"
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
        raise SystemExit(f"no repeat of {table} under {outdir}")
    clocks = outdir / "smi_clocks.csv"
    if clocks.exists():
        rows = list(csv.reader(clocks.read_text().splitlines()))
        head = [h.strip() for h in rows[0]]
        for row in rows[1:]:
            recs.append(dict(zip(head, (c.strip() for c in row)), kind="smi"))
    meta = {k: meta0[k] for k in meta0 if k not in ("command", "wall_s", "complete", "variants")}
    cmd = COMMANDS.get(table) or f"{_LOOP}<l08/{table}'s meta command with --out $OUT/{table}/r$r>" + _MERGE
    meta.update(command=cmd.format(t=table), repeats=runs,
                note=meta0.get("note", "") + "; every repeat its own process")
    if table != "gemm_bench":
        meta["original"] = f"l08/{table}"
    tr = outdir / "smi_trace.csv"
    if not tr.exists() and (outdir.parent / "smi_trace.csv").exists():
        tr = outdir.parent / "smi_trace.csv"
        meta["smi_trace_scope"] = "the whole request (every table's repeats)"
    if tr.exists():
        rng = smi.clock_range(smi.sm_clock_mhz(tr.read_text()))
        if rng:
            meta["smi_trace_mhz"] = rng
    return recs, meta


def main(argv=None) -> None:
    from h100lab import data

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--table", default="gemm_bench", help="the repeated dataset under l08/ (default %(default)s)")
    ap.add_argument("--ran", default=None, help="how the request ran (the lead's .done line), kept in meta.ran")
    args = ap.parse_args(argv)
    recs, meta = merge(Path(args.outdir), args.table)
    if args.ran:
        meta["ran"] = args.ran
    print(data.write(f"l08/{args.table}_repeats", recs, meta))


if __name__ == "__main__":
    main()
