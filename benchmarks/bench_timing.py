"""The timing model and the copy kernels' performance goals, from the committed datasets (a report, not a test).

    python benchmarks/bench_timing.py [--fit] [--method analytic|sim]

1. Performance goals of the book's copy kernels, measured in one run on the H200 (``data/l05/ceilings``,
   ``python -m h100lab.measure.timing_sweep --steps ceilings``): the TMA copy (load + TMA store) against
   ``cuMemcpyDtoDAsync`` and the TMA read stream against the best ``ld.global.v4`` read stream, at ≥ 1 GiB;
   goal ≥ 1.00 for both. The measured cuBLAS GEMM ceiling per dtype beside the datasheet peak.
2. ``--fit``: memory model 2 fitted on the calibration part of the timing-sweep datasets and its agreement on
   the held-out rest (:mod:`h100lab.validation.timing`), with the time the fit and the validation take.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GIB = 1 << 30


def ratios(records) -> dict:
    """Best records and the two goal ratios (None where a side was not measured)."""
    big = [r for r in records if r.get("correct", True) and r.get("gbps") and r.get("bytes", 0) >= GIB - (64 << 20)]

    def best(kinds):
        rows = [r for r in big if r["kind"] in kinds]
        return max(rows, key=lambda r: r["gbps"]) if rows else None

    tma_copy, memcpy = best(("tma_copy_stream", "tma_copy")), best(("memcpy",))
    tma_read, ld_read = best(("tma_read",)), best(("read_stream",))
    gemm = {}
    for r in records:
        if r.get("kind") == "gemm" and r.get("tflops") and r.get("correct", True):
            gemm[r["dtype"]] = max(gemm.get(r["dtype"], 0.0), r["tflops"])
    return {"tma_copy": tma_copy, "memcpy": memcpy, "tma_read": tma_read, "ld_read": ld_read, "gemm_tflops": gemm,
            "copy_ratio": tma_copy["gbps"] / memcpy["gbps"] if tma_copy and memcpy else None,
            "read_ratio": tma_read["gbps"] / ld_read["gbps"] if tma_read and ld_read else None}


def race_report(ds) -> str:
    """The head-to-head runs (``--steps copyrace`` / ``copyoffset``): per variant the median over rounds of its
    ratio to the same round's memcpy (copies) or best ld.global.v4 stream (reads), best first."""
    import numpy as np

    groups: dict = {}
    for r in ds.records:
        if r.get("correct"):
            groups.setdefault((r["kind"], r["name"], r.get("dst_offset", 0)), []).append(r)
    rows = sorted(((float(np.median([x["ratio_round"] for x in v])), float(np.median([x["gbps"] for x in v])), k)
                   for k, v in groups.items() if k[0] not in ("memcpy",)), reverse=True)
    out = [f"{ds.name} ({ds.describe()}): median over rounds of the same-round ratio"]
    for ratio, gbps, (kind, name, off) in rows:
        goal = "" if kind in ("read_stream",) else f" ({'meets' if ratio >= 1.0 else 'below'} 1.00)"
        out.append(f"  {name}{f' dst + {off} B' if off else ''}: {gbps:.0f} GB/s = {ratio:.3f}{goal}")
    return "\n".join(out)


def _cfg(r) -> str:
    if r is None:
        return "not measured"
    if r["kind"] in ("tma_copy_stream", "tma_read"):
        return (f"{r['gbps']:.0f} GB/s ({r['tile_bytes'] // 1024} KiB × {r['stages']} stages × {r['ctas_per_sm']}/SM, "
                f"flags {r.get('flags', 0)}, {r['bytes'] / GIB:.2f} GiB)")
    if r["kind"] == "read_stream":
        return (f"{r['gbps']:.0f} GB/s ({r['variant']}, {r['unroll']} in flight, {r['blocks_per_sm']} × {r['threads']} "
                f"threads, {r['bytes'] / GIB:.2f} GiB)")
    if r["kind"] == "tma_copy":
        return f"{r['gbps']:.0f} GB/s (tensor box {r['box_x']}×{r['box_y']}, {r['stages']} stages, {r['ctas_per_sm']}/SM)"
    return f"{r['gbps']:.0f} GB/s ({r['bytes'] / GIB:.2f} GiB)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="fit memory model 2 and report the held-out agreement")
    ap.add_argument("--method", default="analytic", choices=("analytic", "sim"))
    a = ap.parse_args(argv)
    from h100lab import data
    from h100lab.specs import H200_SXM

    if not data.available("l05/ceilings"):
        print("no data/l05/ceilings: PYTHONPATH=. python3 -m h100lab.measure.timing_sweep --out data --steps ceilings")
        return 1
    ds = data.load("l05/ceilings")
    r = ratios(ds.records)
    print(f"measured on {ds.describe()}")
    print(f"  TMA copy   {_cfg(r['tma_copy'])}")
    print(f"  memcpy     {_cfg(r['memcpy'])}")
    print(f"  TMA read   {_cfg(r['tma_read'])}")
    print(f"  ld.v4 read {_cfg(r['ld_read'])}")
    for name, key in (("TMA copy / cuMemcpyDtoDAsync", "copy_ratio"), ("TMA read / best ld.global.v4", "read_ratio")):
        v = r[key]
        print(f"  {name}: " + ("not measured" if v is None else f"{v:.3f} ({'meets' if v >= 1.0 else 'below'} the "
                                                              "goal of 1.00)"))
    for d, tf in sorted(r["gemm_tflops"].items()):
        print(f"  cuBLAS {d}: {tf:.0f} TFLOP/s = {tf / H200_SXM.dense_tflops[d]:.0%} of the datasheet "
              f"{H200_SXM.dense_tflops[d]:.0f}")
    if not r["gemm_tflops"]:
        print("  cuBLAS: no GEMM record (python -m h100lab.measure.timing_sweep --steps ceilings)")
    if data.available("l05/copy_tune"):
        ct = data.load("l05/copy_tune").records
        fin = [x for x in ct if x.get("phase") == "C" and x.get("correct") and x["kind"] != "memcpy"]
        print(f"copy tuning (data/l05/copy_tune, {len(ct)} records, every copy verified; ratio to the memcpy of the "
              "same round):")
        for kind in ("copy_tune", "tma_copy", "device_copy"):
            rows = [x for x in fin if x["kind"] == kind]
            if rows:
                b = max(rows, key=lambda x: x["ratio_round"])
                cfg = (f"{b['tile_bytes'] // 1024} KiB × {b['stages']} stages × {b['ctas_per_sm']}/SM, lag {b['lag']}, "
                       f"flags {b['flags']}" if kind == "copy_tune" else kind)
                print(f"  best {kind}: {b['gbps']:.0f} GB/s = {b['ratio_round']:.3f} × cuMemcpyDtoDAsync ({cfg}; "
                      f"{'meets' if b['ratio_round'] >= 1.0 else 'below'} the goal of 1.00)")
    for name in ("l05/copy_race", "l05/copy_offset"):
        if data.available(name):
            print(race_report(data.load(name)))
    if a.fit:
        from h100lab.validation import timing as vt

        t0 = time.process_time()
        f = vt.fit()
        t1 = time.process_time()
        rep = vt.validate(f, method=a.method)
        t2 = time.process_time()
        print(f"\nmemory model 2: fit {t1 - t0:.1f} s CPU, validation ({a.method}) {t2 - t1:.1f} s CPU")
        for n in f.notes:
            print(f"  {n}")
        print(rep.summary())
        print(f"goal met: {rep.meets_goal()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
