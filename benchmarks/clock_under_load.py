"""The SM clock and board power while a GEMM runs, read (never set) on the H200 — the check of the clocks lesson 8's
time model fits (h100lab.design.perf: a sustained tensor clock on short runs, a lower one past the power limit).

    PYTHONPATH=. python3 benchmarks/clock_under_load.py --out data

For each shape (8192³, 16384³) and each GEMM (the book's default capstone form and cuBLAS bf16, both as in
benchmarks/bench_gemm.py) it launches back to back for ``--seconds`` while ``nvidia-smi --query-gpu=... -lms 50``
samples clocks.sm, power.draw, temperature.gpu and clocks_event_reasons.active in a child process; every 10
launches a pair of CUDA events times them. Writes ``data/l08/clock_under_load.json`` (h100lab.data): per run the
samples (time from the run's start in s, MHz, W, °C, reason bits) and the launch times, with the run's metadata.
Nothing is changed on the GPU: nvidia-smi only reads. Each run is in its own try/except (a failure is recorded).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from h100lab import data  # noqa: E402

DATASET = "l08/clock_under_load"
SHAPES = [(8192, 8192, 8192), (16384, 16384, 16384)]
QUERY = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


def parse_samples(text: str) -> list[dict]:
    """nvidia-smi's CSV lines (no header, no units) → samples; rows whose four fields after the timestamp are not
    all numbers (a "[N/A]", a cut-off last line) are dropped."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 5:
            continue
        try:
            mhz, watts, temp = float(parts[1]), float(parts[2]), float(parts[3])
            reasons = int(parts[4], 16) if parts[4].startswith("0x") else int(parts[4])
        except ValueError:
            continue
        out.append({"sm_mhz": mhz, "power_w": watts, "temp_c": temp, "reasons": reasons})
    return out


def run_one(gpu, which: str, M: int, N: int, K: int, seconds: float) -> dict:
    t = gpu.torch
    if which.startswith("fp8") or which.startswith("cublas_fp8"):          # e4m3 with block scales (bench_gemm)
        Q = gpu.fp8_inputs(M, N, K, seed=1)
        C = gpu.fp8_out(M, N)
        fn = (gpu.cublas_fp8(Q, C, which[len("cublas_fp8_"):]) if which.startswith("cublas_fp8")
              else gpu.ours_fp8(which, Q, C, sms=gpu.slots(which, gpu.sm_count())))
    elif which == "cublas":
        A, B, C = gpu.inputs(M, N, K, seed=1)
        fn = gpu.cublas(A, B, C)
    else:
        A, B, C = gpu.inputs(M, N, K, seed=1)
        fn = gpu.ours(which, A, B, C, M, N, K, sms=gpu.slots(which, gpu.sm_count()))
    for _ in range(3):
        fn()
    t.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", "-lms", "50"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    times_ms = []
    try:
        while time.time() - t0 < seconds:
            s, e = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(10):
                fn()
            e.record()
            e.synchronize()
            times_ms.append(s.elapsed_time(e) / 10)
    finally:
        time.sleep(0.1)
        smi.terminate()
        out, err = smi.communicate(timeout=10)
    samples = parse_samples(out)
    if not samples:
        raise RuntimeError(f"nvidia-smi returned no samples (rc {smi.returncode}): {err.strip()[:300]}")
    mhz = sorted(s["sm_mhz"] for s in samples)
    return {"kind": "run", "gemm": which, "M": M, "N": N, "K": K, "seconds": round(time.time() - t0, 2),
            "launch_ms": [round(x, 5) for x in times_ms], "samples": samples,
            "median_sm_mhz": mhz[len(mhz) // 2], "median_launch_ms": sorted(times_ms)[len(times_ms) // 2],
            "ok": True}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="data folder (default: the repo's)")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--gemms", default=None, help="comma-separated: capstone variants (bf16 or FP8_VARIANTS), "
                    "cublas, cublas_fp8_<mode> (default: the bf16 default form and cublas)")
    ap.add_argument("--shapes", default=None, help="comma-separated cubes, e.g. 8192,16384 (default: both)")
    ap.add_argument("--name", default=DATASET)
    args = ap.parse_args(argv)
    if args.out:
        os.environ["H100LAB_DATA"] = str(Path(args.out).resolve())
    from benchmarks.bench_gemm import TorchCuda    # torch, only on the GPU machine
    gpu = TorchCuda()
    cmd = "PYTHONPATH=. python3 benchmarks/clock_under_load.py " + " ".join(argv if argv is not None else sys.argv[1:])
    meta = dict(gpu.metadata(cmd), query=QUERY, note="clocks and power read by nvidia-smi -lms 50 while the GEMM "
                "launches back to back; nothing set")
    recs, failed = [], 0
    gemms = args.gemms.split(",") if args.gemms else [gpu.cap.DEFAULT, "cublas"]
    shapes = [(int(x),) * 3 for x in args.shapes.split(",")] if args.shapes else SHAPES
    for M, N, K in shapes:
        for which in gemms:
            try:
                r = run_one(gpu, which, M, N, K, args.seconds)
                print(f"{which:32s} {M}x{N}x{K}: {r['median_launch_ms']:.3f} ms, SM clock median "
                      f"{r['median_sm_mhz']:.0f} MHz over {len(r['samples'])} samples", flush=True)
            except Exception as exc:              # recorded, the run goes on
                failed += 1
                traceback.print_exc()
                r = {"kind": "run", "gemm": which, "M": M, "N": N, "K": K, "ok": False, "error": repr(exc)[:500]}
            recs.append(r)
    path = data.write(args.name, recs, dict(meta, complete=True))
    print(f"wrote {path} ({len(recs)} records, {failed} failed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
