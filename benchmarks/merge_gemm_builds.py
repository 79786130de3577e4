"""Lesson 8 (issue 17): the A/B run of ``benchmarks/ab_gemm_builds.sh`` as one dataset, every process kept.

    python3 benchmarks/merge_gemm_builds.py RESDIR [--old-tree c91776e --old-kernel efb78df --new-tree REV]

RESDIR holds ``A0`` … ``A2`` and ``B0`` … ``B2`` (each ``l08/gemm_bench.json`` and ``l08/gemm_bench_tmastore.json`` of
one process: A the tree that ran ``l08/gemm_bench``, B today's), ``log.txt`` (start times and return codes),
``smi_before.txt`` and ``smi_trace.csv``. Writes ``data/l08/gemm_bench_builds`` (h100lab.data): every record, its
``kind`` prefixed ``build_`` (``build_time``, ``build_check``: never a timing kind of
:data:`h100lab.design.perf.TIME_KINDS`, so nothing of it enters the model's calibration or per-record report;
:func:`h100lab.validation.l08.build_rows` reads it), with ``build`` (``"old"``/``"new"``), ``process`` (0–2),
``run`` (its place in the session's order) and ``table``; the metadata of the first B process with ``command``,
``builds`` (tree and kernel commit of each) and the trace's SM clock (min, median, max) and its clock-event reasons.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from h100lab.measure import smi  # noqa: E402

ORDER = ("A0", "B0", "B1", "A1", "A2", "B2")
TABLES = ("gemm_bench", "gemm_bench_tmastore")
COMMAND = ("git archive --format=tar.gz -o devsnapA.tgz c91776e; OUT=<out> bash benchmarks/ab_gemm_builds.sh "
           "(on the H200, today's tree; each side's own benchmarks/bench_gemm.py --name l08/<table> --variants <the "
           "table's>, order A B B A A B); python3 benchmarks/merge_gemm_builds.py <out>/res")


def merge(res: Path, old_tree: str, old_kernel: str, new_tree: str) -> tuple[list, dict]:
    recs, meta = [], None
    for run, tag in enumerate(ORDER):
        side, proc = tag[0], int(tag[1])
        for t in TABLES:
            d = json.loads((res / tag / "l08" / f"{t}.json").read_text())
            if side == "B" and meta is None:
                meta = dict(d["meta"])
            for r in d["records"]:
                recs.append(dict(r, kind=f"build_{r.get('kind', '')}", build="old" if side == "A" else "new",
                                 process=proc, run=run, table=f"l08/{t}"))
    trace = (res / "smi_trace.csv").read_text()
    reasons = smi.event_reasons(trace)
    rcs = [ln.split()[-1] for ln in (res / "log.txt").read_text().splitlines()
           if " rc " in ln and ln.split()[1][:1] in "AB" and ln.split()[1][1:].isdigit()]
    meta.update(command=COMMAND, builds={"old": {"tree": old_tree, "kernel": old_kernel},
                                         "new": {"tree": new_tree, "kernel": new_tree}},
                smi_trace_mhz=smi.clock_range(smi.sm_clock_mhz(trace)),
                smi_reasons=reasons, return_codes=rcs, variants=None, order=list(ORDER),
                note=meta.get("note", "") + "; A/B: the tree that ran l08/gemm_bench (its own bench_gemm.py, kernel "
                     "and launch) and today's, alternating processes in one session")
    meta.pop("wall_s", None)
    return recs, meta


def main(argv=None) -> int:
    from h100lab import data

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("res")
    ap.add_argument("--old-tree", default="c91776e")
    ap.add_argument("--old-kernel", default="efb78df")
    ap.add_argument("--new-tree", required=True)
    ap.add_argument("--ran", default=None, help="a line on where and when it ran (into the metadata)")
    args = ap.parse_args(argv)
    recs, meta = merge(Path(args.res), args.old_tree, args.old_kernel, args.new_tree)
    if args.ran:
        meta["ran"] = args.ran
    if any(rc != "0" for rc in meta["return_codes"]):
        raise SystemExit(f"a process failed: {meta['return_codes']}")
    data.write("l08/gemm_bench_builds", recs, meta)
    print(f"wrote l08/gemm_bench_builds: {len(recs)} records, {len(meta['return_codes'])} processes rc 0")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
