"""Lesson 8 benchmark: the capstone GEMM built step by step (h100lab.design.steps), every step next to cuBLAS in
one run on the H200.

    PYTHONPATH=. python3 benchmarks/bench_gemm_steps.py --out data

Writes ``data/l08/gemm_steps.json`` (h100lab.data, with the run's metadata and the list of steps). For each shape
(4096³ and 8192³) cuBLAS (``torch.matmul(A, B.T)``, bf16 in and out, f32 accumulation) and each of the seven steps
(naive → TMA → pipeline → warp-specialized → ping-pong → persistent + rasterized → fused epilogue) are timed: the
median and minimum of ``--repeats`` (≥ 20) launches after ``--warmup`` untimed ones, each between two CUDA events
on the default stream behind a GPU spin (bench_gemm.TorchCuda.time), TFLOP/s, the ratio to cuBLAS in throughput
and the largest |difference| from cuBLAS's output. The naive kernel is timed with ``--naive-repeats`` (5) launches
after one warm-up, and at a shape only when the step before predicts (its time per FLOP at the smaller shape) at
most ``--naive-limit`` seconds (1 s) per launch; otherwise a ``skip`` record says why. The fused step is timed
twice: plain, and with its bias + ReLU epilogue (``epilogue: "bias_relu"``, its ratio still against plain cuBLAS;
its output against relu(A·Bᵀ + bias) in f32; cuBLAS's own bias + ReLU forms are bench_gemm.py's epilogue run).
With ``--ablation``, capstone forms between the steps (:data:`ABLATION`:
one change at a time, e.g. ping-pong persistent or in the grouped order, the cooperative form persistent without
the grouped order) are timed after each shape's steps. Bit records: each step at its small emulator shapes, the GPU's output against the model's bits
(h100lab.design.steps.reference, which the emulator reproduces). Correctness records: ragged shapes (M, N, K not multiples of any tile) for every step, against an f32 reference
(``torch.matmul`` in float32, TF32 off), with bench_gemm's pass rule (bench_gemm._passes).

Each step, shape and check runs in its own try/except (a failure is recorded, the run goes on); h100lab.cuda raises
on any non-success CUDA return code and each timed group ends with a synchronize that raises a fault. The dataset
is rewritten after every shape, so a run cut short keeps what it measured (meta ``complete`` says whether it
finished). Whole run well under 3 minutes on an H200.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import numpy as np  # noqa: E402

import bench_gemm  # noqa: E402  (TorchCuda: inputs, cuBLAS, CUDA-event timing, errors; _passes)

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
CHECKS = [(1000, 1500, 1032), (333, 4000, 520)]
DATASET = "l08/gemm_steps"
#: --ablation: capstone forms between the steps, one change at a time (variant, schedule, group), to split what a
#: step changed into its parts: the ping-pong step's schedule and tile order (step 5 = pingpong, pairs, 1), and
#: persistence vs the grouped order (step 4 = cooperative, tiles, 1; step 6 = cooperative, persistent, 8)
ABLATION = (("pingpong", "persistent", 1), ("pingpong", "persistent", 8), ("pingpong", "pairs", 8),
            ("pingpong_inflight", "pairs", 1), ("pingpong_inflight", "persistent", 8), ("cooperative", "pairs", 1),
            ("cooperative", "tiles", 8), ("cooperative", "persistent", 1))


class StepsCuda(bench_gemm.TorchCuda):
    """bench_gemm's PyTorch + h100lab.cuda backend, plus each step's launch (kernels compiled once, tensor maps
    encoded once outside the timed region), the small shapes' bits and the fused step's f32 reference."""

    def step(self, name: str, A, B, C, M: int, N: int, K: int, sms: int, bias=None, relu: bool = False):
        """A callable that launches step ``name`` once on the tensors A, B, C (bias: N bf16 values or None)."""
        from h100lab.design import steps

        s = steps.step(name)
        if name not in self._kernels:
            self._kernels[name] = steps.compile_step(self.cuda, s)
        k = self._kernels[name]
        a, b, c = (np.uint64(t.data_ptr()) for t in (A, B, C))
        maps = steps.tensor_maps(self.cuda, s, a, b, M, N, K)
        if s.variant and s.capstone.tma_store:
            maps = (*maps, self.cap.c_map(self.cuda, s.capstone, c, M, N, 0.0))
        fused = {} if bias is None else {"bias": np.uint64(bias.data_ptr()), "relu": relu}
        return lambda: steps.launch_step(self.cuda, s, a, b, c, M, N, K, sms=sms, kernel=k, maps=maps, **fused)

    def step_bits(self, name: str, M: int, N: int, K: int, seed: int, sms: int):
        """(kernel's C, model's C) as raw bf16 bits for step ``name`` on seeded NumPy inputs: the step's small
        shapes on the GPU against h100lab.design.steps.reference, which the emulator reproduces bit for bit."""
        from h100lab.design import steps

        rng = np.random.default_rng(seed)
        A = self.cap.bf16_round(rng.standard_normal((M, K)).astype(np.float32))
        B = self.cap.bf16_round(rng.standard_normal((N, K)).astype(np.float32))
        dC = self.cuda.to_device(np.full((M, N), 0x7FC0, np.uint16))
        steps.launch_step(self.cuda, name, self.cuda.to_device(A), self.cuda.to_device(B), dC, M, N, K, sms=sms)
        self.cuda.synchronize()
        return dC.to_host().reshape(M, N), steps.reference(name, A, B)

    def reference_bias_relu(self, A, B, bias):
        """relu(A·Bᵀ + bias) in f32 (TF32 off): what the fused step's output is checked against."""
        t = self.torch
        return t.relu(t.matmul(A.float(), B.float().t()) + bias.float())


def _record_time(rec: dict, ms: list[float], flop: int, cub_ms: float | None) -> dict:
    med = statistics.median(ms)
    rec.update(median_ms=med, min_ms=min(ms), samples_ms=[round(x, 5) for x in ms], tflops=flop / med / 1e9)
    if cub_ms is not None:
        rec["ratio_cublas"] = cub_ms / med
    return rec


def run_bits(be, names, sms: int, log=print) -> list[dict]:
    """Each step at its small emulator shapes (h100lab.design.steps.Step.small), persistent steps with one CTA:
    the kernel's output against the model's bits."""
    from h100lab.design import steps

    recs = []
    for name in names:
        for j, (M, N, K) in enumerate(steps.step(name).small):
            rec = {"kind": "bits", "step": name, "M": M, "N": N, "K": K, "seed": 300 + j}

            def body(rec=rec, name=name, M=M, N=N, K=K, j=j):
                got, want = be.step_bits(name, M, N, K, 300 + j, 1)
                diff = int((np.asarray(got) != np.asarray(want)).sum())
                rec.update(ok=diff == 0, identical=diff == 0, differing=diff)
                log(f"bits  {name:18s} {M}x{N}x{K}: {'identical' if diff == 0 else f'{diff} outputs DIFFER'}")
            recs.append(bench_gemm.attempt(rec, body, f"bits  {name:18s} {M}x{N}x{K}", log))
    return recs


def run_checks(be, checks, sms: int, names, log=print) -> list[dict]:
    """Ragged shapes: every step and cuBLAS against the f32 reference (bench_gemm._passes)."""
    recs = []
    for i, (M, N, K) in enumerate(checks):
        base = {"kind": "check", "M": M, "N": N, "K": K, "alpha": 1.0, "beta": 0.0}
        ctx = {}

        def prepare(i=i, M=M, N=N, K=K):
            A, B, C0 = be.inputs(M, N, K, seed=200 + i)
            theirs = be.empty_like(C0)
            be.cublas(A, B, theirs)()
            be.sync()
            ctx.update(A=A, B=B, C0=C0, ref=be.reference(A, B, C0, 1.0, 0.0), theirs=theirs)
        failed = bench_gemm.attempt(dict(base, step="cublas"), prepare, f"check cuBLAS {M}x{N}x{K}", log)
        if "error" in failed:
            recs.append(failed)
            continue
        for name in names:
            rec = dict(base, step=name)

            def body(rec=rec, name=name, M=M, N=N, K=K):
                ours = be.empty_like(ctx["C0"])
                be.step(name, ctx["A"], ctx["B"], ours, M, N, K, sms)()
                be.sync()
                rec.update(be.errors(ours, ctx["theirs"], ctx["ref"]))
                rec["ok"] = bench_gemm._passes(rec)
                log(f"check {name:18s} {M}x{N}x{K}: {'ok' if rec['ok'] else 'WRONG OUTPUT'}")
            recs.append(bench_gemm.attempt(rec, body, f"check {name:18s} {M}x{N}x{K}", log))
    return recs


def run_shape(be, M: int, N: int, K: int, seed: int, sms: int, names, args, naive_s_per_flop, log=print):
    """The records of one shape: cuBLAS, each step, and the fused step once more with its bias + ReLU.
    ``naive_s_per_flop``: a one-item list holding the naive step's seconds per FLOP measured at an earlier shape
    (None before), which decides whether it is timed here."""
    from h100lab.design import capstone as cap
    from h100lab.design import steps

    flop = cap.flops(M, N, K)
    ctx = {}
    cub = {"kind": "time", "step": "cublas", "number": 0, "M": M, "N": N, "K": K, "repeats": args.repeats,
           "warmup": args.warmup}

    def cublas():
        A, B, C0 = be.inputs(M, N, K, seed=seed)
        ref_c = be.empty_like(C0)
        _record_time(cub, be.time(be.cublas(A, B, ref_c), args.warmup, args.repeats), flop, None)
        cub["ok"] = True
        ctx.update(A=A, B=B, C0=C0, ref_c=ref_c)
        log(f"{'cuBLAS':18s} {M}x{N}x{K}: {cub['median_ms']:.3f} ms  {cub['tflops']:.0f} TFLOP/s")
    recs = [bench_gemm.attempt(cub, cublas, f"cuBLAS {M}x{N}x{K}", log)]
    if not cub.get("ok"):
        return recs
    A, B, C0, cub_ms = ctx["A"], ctx["B"], ctx["C0"], cub["median_ms"]
    runs = [(name, None) for name in names]
    runs += [(s.name, "bias_relu") for s in steps.STEPS if s.fused and s.name in names]
    for name, epi in runs:
        s = steps.step(name)
        naive = s.schedule == "naive"
        warmup, repeats = (1, args.naive_repeats) if naive else (args.warmup, args.repeats)
        rec = {"kind": "time", "step": name, "number": s.number, "M": M, "N": N, "K": K, "repeats": repeats,
               "warmup": warmup, "cublas_ms": cub_ms, "grid": steps.grid(s, M, N, sms), "tile": list(s.tile),
               "stages": s.stages, "group": s.group, "schedule": s.schedule, "variant": s.variant,
               "epilogue": epi or "plain"}
        if naive and naive_s_per_flop[0] is not None and naive_s_per_flop[0] * flop > args.naive_limit:
            pred = naive_s_per_flop[0] * flop
            recs.append({"kind": "skip", "step": name, "number": s.number, "M": M, "N": N, "K": K, "ok": True,
                         "predicted_s": pred, "limit_s": args.naive_limit,
                         "reason": f"predicted {pred:.2f} s per launch from the smaller shape's time per FLOP "
                                   f"(limit {args.naive_limit} s)"})
            log(f"{name:18s} {M}x{N}x{K}: skipped, predicted {pred:.2f} s per launch")
            continue
        label = f"{s.number} {name:16s} {M}x{N}x{K}{' + bias, ReLU' if epi else ''}"

        def body(rec=rec, s=s, epi=epi, naive=naive, warmup=warmup, repeats=repeats, label=label):
            C = be.empty_like(C0)
            if epi:                        # the fused step's bias + ReLU: bias = a row of the random C0
                bias = C0[0]
                fn = be.step(s.name, A, B, C, M, N, K, sms, bias=bias, relu=True)
                want = be.reference_bias_relu(A, B, bias)
            else:
                fn, want = be.step(s.name, A, B, C, M, N, K, sms), ctx["ref_c"]
            _record_time(rec, be.time(fn, warmup, repeats), flop, cub_ms)
            err = be.errors(C, want, want)
            rec.update(ok=bench_gemm._close_to_cublas(err), ref_max_abs=err["ref_max_abs"], nonfinite=err["nonfinite"])
            rec["max_abs_vs_f32" if epi else "max_abs_vs_cublas"] = err["ours_vs_cublas_max_abs"]
            if naive:
                naive_s_per_flop[0] = rec["median_ms"] / 1e3 / flop
            log(f"{label}: {rec['median_ms']:.3f} ms  {rec['tflops']:.1f} TFLOP/s  "
                f"{100 * rec['ratio_cublas']:.1f} % of cuBLAS{'' if rec['ok'] else '  WRONG OUTPUT'}")
        recs.append(bench_gemm.attempt(rec, body, label, log))
    return recs


def run_ablation(be, M: int, N: int, K: int, seed: int, sms: int, args, log=print) -> list[dict]:
    """:data:`ABLATION` at one shape, with cuBLAS re-timed for its ratio: each capstone form through
    bench_gemm.TorchCuda.ours with the grid of its schedule (one CTA per tile, per two tiles, or min(SMs, tiles))
    and tile order ``group`` (raster along M). Records of kind ``ablation`` (not step records: the time model reads
    a record's schedule from its step)."""
    from h100lab.design import capstone as cap

    flop = cap.flops(M, N, K)
    A, B, C0 = be.inputs(M, N, K, seed=seed)
    ref_c = be.empty_like(C0)
    cub_ms = statistics.median(be.time(be.cublas(A, B, ref_c), args.warmup, args.repeats))
    recs = []
    for variant, schedule, group in ABLATION:
        v = cap.VARIANTS[variant]
        tm, tn = cap.tile_counts(v, M, N)
        arg = {"tiles": tm * tn, "pairs": -(-tm * tn // 2), "persistent": sms}[schedule]
        rec = {"kind": "ablation", "variant": variant, "schedule": schedule, "group": group, "raster": 0, "M": M,
               "N": N, "K": K, "grid": cap.grid_size(v, M, N, arg), "tiles": tm * tn, "cublas_ms": cub_ms,
               "repeats": args.repeats, "warmup": args.warmup}
        label = f"ablation {variant:18s} {schedule:10s} group {group} {M}x{N}x{K}"

        def body(rec=rec, variant=variant, group=group, arg=arg, label=label):
            C = be.empty_like(C0)
            _record_time(rec, be.time(be.ours(variant, A, B, C, M, N, K, group=group, sms=arg), args.warmup,
                                      args.repeats), flop, cub_ms)
            err = be.errors(C, ref_c, ref_c)
            rec.update(ok=bench_gemm._close_to_cublas(err), max_abs_vs_cublas=err["ours_vs_cublas_max_abs"], ref_max_abs=err["ref_max_abs"])
            log(f"{label}: {rec['median_ms']:.3f} ms  {rec['tflops']:.1f} TFLOP/s  {100 * rec['ratio_cublas']:.1f} % "
                f"of cuBLAS{'' if rec['ok'] else '  WRONG OUTPUT'}")
        recs.append(bench_gemm.attempt(rec, body, label, log))
    return recs


def main(argv=None, backend=None, shapes=None, checks=None, log=print) -> dict:
    from h100lab.design import steps

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="data folder to write l08/gemm_steps.json into (default: the repo's)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--naive-repeats", type=int, default=5, help="timed launches of the naive kernel (%(default)s)")
    ap.add_argument("--naive-limit", type=float, default=1.0,
                    help="seconds per launch above which the naive kernel is not timed at a larger shape")
    ap.add_argument("--steps", default=None, help="comma-separated step names (default: all seven)")
    ap.add_argument("--name", default=DATASET, help="dataset name under the data folder (default: %(default)s)")
    ap.add_argument("--ablation", action="store_true", help="after each shape's steps, the capstone forms of "
                    "ABLATION between them (records of kind 'ablation')")
    args = ap.parse_args(argv)
    if args.repeats < 20 and backend is None:
        ap.error("--repeats: the median of at least 20 launches")
    names = tuple(args.steps.split(",")) if args.steps else tuple(s.name for s in steps.STEPS)
    unknown = [n for n in names if n not in {s.name for s in steps.STEPS}]
    if unknown:
        ap.error(f"--steps: unknown {unknown}; known: {[s.name for s in steps.STEPS]}")
    t0 = time.time()
    be = backend if backend is not None else StepsCuda()
    sms = be.sm_count()
    shapes = SHAPES if shapes is None else shapes
    checks = CHECKS if checks is None else checks
    cmd = "PYTHONPATH=. python3 benchmarks/bench_gemm_steps.py " + " ".join(argv if argv is not None else sys.argv[1:])
    meta = be.metadata(cmd.strip())
    meta.update(kernels=["h100lab/cuda/kernels/l08_steps.cu", "h100lab/cuda/kernels/l08_gemm.cu"], sm_count=sms,
                steps=[{"number": s.number, "name": s.name, "title": s.title, "changed": s.changed,
                        "kernel": s.kernel, "entry": s.entry, "variant": s.variant, "schedule": s.schedule,
                        "group": s.group, "stages": s.stages, "tile": list(s.tile)}
                       for s in steps.STEPS if s.name in names],
                note="C = A*B^T, A MxK and B NxK bf16 K-major, f32 accumulate, bf16 out; cuBLAS: torch.matmul(A, "
                     "B.T) bf16 in the same run; CUDA events, median of repeats (the naive kernel: naive_repeats)")
    if args.out:
        os.environ["H100LAB_DATA"] = str(Path(args.out).resolve())
    recs: list[dict] = []
    save = bench_gemm.dataset_saver(args.name, recs, meta, t0)

    naive_s_per_flop = [None]
    parts = [lambda: run_bits(be, names, sms, log), lambda: run_checks(be, checks, sms, names, log)]
    for i, shape in enumerate(shapes):
        parts.append(lambda i=i, shape=shape: run_shape(be, *shape, i, sms, names, args, naive_s_per_flop, log))
        if args.ablation:
            parts.append(lambda i=i, shape=shape: bench_gemm.attempt_all(
                lambda: run_ablation(be, *shape, 500 + i, sms, args, log),
                {"kind": "ablation", "M": shape[0], "N": shape[1], "K": shape[2]}, f"ablation {shape}", log))
    for part in parts:                     # the dataset rewritten after each part: a run cut short keeps its data
        recs += part()
        save(False)
    return bench_gemm.finish(save(True), recs, t0, log)


if __name__ == "__main__":
    sys.exit(1 if main()["failed"] else 0)
