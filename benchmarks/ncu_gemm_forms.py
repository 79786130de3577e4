"""Issue 17: the capstone's bf16 forms under Nsight Compute — the cycles, the clock and the tensor pipe's busy
fraction of each form at each shape of the bf16 tables, so the time model's cycle count can be checked apart from
its clock (``h100lab.validation.l08.form_counter_rows``).

    python3 benchmarks/ncu_gemm_forms.py --out data            # ncu on the --launch child -> l08/gemm_ncu_forms

One child process, run under ``ncu --clock-control none`` (the GPU's own clocks, as the timed tables ran) with the
counters of :data:`METRICS` (ncu replays each launch once per pass; the L2 is flushed before each pass, ncu's
default), launches each form of :data:`FORMS` ``--launches`` times per shape of :data:`SHAPES` (group 8, raster M,
132 CTAs), synchronizing after each. The parent writes one record per profiled launch (kind ``ncu_form``: variant,
shape, launch, the counters) with the run's metadata. Every CUDA call is checked (h100lab.cuda raises); a failed
ncu run or a launch count other than expected fails the script."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: the bf16 forms of l08/gemm_bench and l08/gemm_bench_tmastore
FORMS = ("cooperative", "cooperative_inflight", "cooperative_n128", "cooperative_n128_inflight", "pingpong",
         "pingpong_inflight", "pingpong_n128_inflight", "cooperative_inflight_tmastore",
         "cooperative_n128_inflight_tmastore")
#: the shapes of the bf16 tables (16384³: three forms, the longest launches)
SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (1280, 3840, 8192), (1408, 3072, 8192))
BIG = ((16384, 16384, 16384), ("cooperative", "cooperative_n128", "pingpong"))
#: ``--fp8``: the FP8 forms of the FP8 tables (128 × 128 with direct and TMA stores, staggered, 128 × 192, 256 × 128,
#: the scale ring, the cluster pair) at the same shapes, two at 16384³
FORMS_FP8 = ("fp8_cooperative", "fp8_cooperative_tmastore", "fp8_cooperative_staggered_tmastore",
             "fp8_cooperative_n192_tmastore", "fp8_cooperative_n192_staggered_tmastore", "fp8_cooperative_m256_tmastore",
             "fp8_cooperative_tmastore_lead2", "fp8_cooperative_tmastore_cluster2")
BIG_FP8 = ((16384, 16384, 16384), ("fp8_cooperative_tmastore", "fp8_cooperative_n192_tmastore"))
#: the counters kept per launch
METRICS = ("gpu__time_duration.sum", "gpc__cycles_elapsed.max", "gpc__cycles_elapsed.max.per_second",
           "sm__cycles_active.avg", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
           "lts__t_sector_hit_rate.pct", "dram__bytes_read.sum")


def plan(fp8: bool = False, shapes=None, variants=None):
    """(shape, variant) in launch order: the tables' shapes and forms, or every one of ``variants`` (default the
    mode's forms) at each of ``shapes`` when shapes are given."""
    forms, big = (FORMS_FP8, BIG_FP8) if fp8 else (FORMS, BIG)
    if shapes:
        return [(tuple(s), v) for s in shapes for v in (variants or forms)]
    out = [(s, v) for s in SHAPES for v in (variants or forms)]
    return out + [(big[0], v) for v in big[1] if not variants or v in variants]


def launch(launches: int, fp8: bool = False, shapes=None, variants=None) -> None:
    """The child ncu profiles: every (shape, variant) of :func:`plan`, ``launches`` times each."""
    from bench_gemm import TorchCuda

    be = TorchCuda()
    sms = be.sm_count()
    for i, ((M, N, K), variant) in enumerate(plan(fp8, shapes, variants)):
        C = be.torch.empty((M, N), device="cuda", dtype=be.torch.bfloat16)
        ctas = be.slots(variant, sms)              # a cluster pair's grid: the pairs the GPU holds at once
        if fp8:
            fn = be.ours_fp8(variant, be.fp8_inputs(M, N, K, seed=i), C, sms=ctas)
        else:
            A, B, _ = be.inputs(M, N, K, seed=i)
            fn = be.ours(variant, A, B, C, M, N, K, sms=ctas)
        for _ in range(launches):
            fn()
            be.sync()
        print(f"launched {M}x{N}x{K} {variant} x{launches} on {ctas} CTAs", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="data folder (default: the repo's)")
    ap.add_argument("--name", default="l08/gemm_ncu_forms")
    ap.add_argument("--launches", type=int, default=2)
    ap.add_argument("--fp8", action="store_true", help="the FP8 forms (FORMS_FP8) into l08/gemm_ncu_forms_fp8")
    ap.add_argument("--shapes", default=None, help="comma-separated MxNxK: every form at each (default: the tables')")
    ap.add_argument("--variants", default=None, help="comma-separated forms (default: every form of the mode)")
    ap.add_argument("--launch", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    from bench_gemm import parse_shapes

    shapes = parse_shapes(ap, a.shapes) if a.shapes else None
    variants = tuple(a.variants.split(",")) if a.variants else None
    known = FORMS_FP8 if a.fp8 else FORMS
    if variants and not set(variants) <= set(known):
        ap.error(f"--variants: each one of {', '.join(known)}")
    sel = (["--shapes", a.shapes] if a.shapes else []) + (["--variants", a.variants] if a.variants else [])
    if a.out:
        os.environ["H100LAB_DATA"] = str(Path(a.out).resolve())    # the data folder of a device run
    if a.fp8 and a.name == "l08/gemm_ncu_forms":
        a.name = "l08/gemm_ncu_forms_fp8"
    if a.launch:
        launch(a.launches, a.fp8, shapes, variants)
        return 0
    from bench_gemm import TorchCuda

    from h100lab import data
    from h100lab.measure.l01 import find_ncu, parse_ncu_csv

    ncu = find_ncu()
    if ncu is None:
        raise SystemExit("Nsight Compute (ncu) not found")
    entry = "gemm_e4m3" if a.fp8 else "gemm_bf16"
    cmd = [ncu, "--clock-control", "none", "--kernel-name", f"regex:^{entry}$", "--metrics", ",".join(METRICS),
           "--csv", "--print-units", "base", sys.executable, str(Path(__file__).resolve()), "--launch", "--launches",
           str(a.launches)] + (["--fp8"] if a.fp8 else []) + sel
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"ncu exited {p.returncode}: {p.stderr[-2000:]} {p.stdout[-2000:]}")
    launches = parse_ncu_csv(p.stdout)
    order = [(s, v, j) for s, v in plan(a.fp8, shapes, variants) for j in range(a.launches)]
    if len(launches) != len(order):
        raise SystemExit(f"{len(launches)} profiled launches, expected {len(order)}")
    be = TorchCuda()
    grid = {v: be.slots(v, be.sm_count()) for _, v, _ in order}
    recs = [dict(kind="ncu_form", M=M, N=N, K=K, variant=v, launch=j, group=8, raster=0, grid=grid[v],
                 metrics={k: float(x["metrics"][k]) for k in METRICS})
            for ((M, N, K), v, j), x in zip(order, launches)]
    meta = be.metadata("PYTHONPATH=. python3 benchmarks/ncu_gemm_forms.py " + " ".join(argv or sys.argv[1:]))
    meta.update(kernel="h100lab/cuda/kernels/l08_gemm.cu", ncu_command=" ".join(
        ["ncu", *cmd[1:cmd.index(sys.executable)], "python3 benchmarks/ncu_gemm_forms.py --launch --launches",
         str(a.launches)] + (["--fp8"] if a.fp8 else []) + sel),
        ncu_version=subprocess.run([ncu, "--version"], capture_output=True, text=True)
        .stdout.strip().splitlines()[-1], metrics=list(METRICS), sm_count=be.sm_count(),
        wall_s=round(time.time() - t0, 1),
        note=("C = A*B^T " + ("e4m3 with per-block scales (A 1x128, B 128x128)" if a.fp8 else "bf16")
              + ", f32 accumulate, bf16 out; group 8, raster M, 132 CTAs; each launch profiled by Nsight Compute "
             "(--clock-control none; one replay pass per counter group, L2 flushed before each)"))
    path = data.write(a.name, recs, meta)
    print(f"wrote {path} ({len(recs)} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
