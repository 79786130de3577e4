"""Lesson 8 benchmark: the book's capstone GEMM (h100lab/cuda/kernels/l08_gemm.cu) next to cuBLAS, same run, H200.

    PYTHONPATH=. python3 benchmarks/bench_gemm.py --out data

Writes ``data/l08/gemm_bench.json`` (h100lab.data, with the run's metadata). For each shape (4096³, 8192³,
16384³ and the wave-quantized 1280×3840×8192, 1408×3072×8192) and each variant of ``VARIANTS`` (h100lab.design.
capstone.VARIANTS: cooperative and ping-pong, each with and without one wgmma group kept in flight, and 128 × 128
tiles for both, the stmatrix + TMA-store epilogue, and clusters of 2 CTAs multicasting B; at 8192³ also the cooperative kernel without the grouped tile order) the record holds the median and minimum of ``--repeats`` (≥ 20) timed launches
after ``--warmup`` untimed ones, each between two CUDA events on the default stream, TFLOP/s, and cuBLAS's time
for the same shape (``torch.matmul(A, B.T)``, bf16 in, bf16 out, f32 accumulation) measured in the same run; the
ratio ours / cuBLAS in throughput; the kernel's tiles, grid and waves; and how far its output is from cuBLAS's.
Per shape a ``pick`` record names the fastest variant measured and the one the wave model picks
(h100lab.design.capstone.tile_choice), so the tile size can be chosen per shape.
Correctness records: square and ragged shapes (M, N, K not multiples of the tile) on random inputs, the book's
kernel and cuBLAS each against an f32 reference (``torch.matmul`` in float32 with TF32 off), with alpha/beta.

Each shape and variant runs in its own try/except (a failure is recorded, the run goes on); every CUDA call of
the book's kernel is checked (h100lab.cuda raises on a non-success return code) and each timed group ends with a
synchronize that raises the first fault. Whole run < 2 minutes on an H200 (measured: 10 s for 2 variants, 16 s for
7, 8 s for 3; a second process with ``--name`` keeps a fault of new code away from the first one's records).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (1280, 3840, 8192), (1408, 3072, 8192)]
CHECKS = [(2048, 2048, 2048, 1.0, 0.0), (1000, 1500, 1032, 1.0, 0.0), (333, 4000, 520, 0.5, -1.0),
          (4097, 3001, 2056, 2.0, 0.25)]
# every compiled form of the kernel timed in one run: the two of the first measurement and the switches of issue 17
# (INFLIGHT: one wgmma group in flight in the mainloop; n128: 128 x 128 tiles for wave-quantized shapes)
VARIANTS = ("cooperative", "cooperative_inflight", "cooperative_n128", "cooperative_n128_inflight", "pingpong",
            "pingpong_inflight", "pingpong_n128_inflight", "cooperative_inflight_tmastore",
            "cooperative_n128_inflight_tmastore", "cooperative_tmastore", "cooperative_inflight_cluster2",
            "cooperative_n128_inflight_cluster2")
DATASET = "l08/gemm_bench"


class TorchCuda:
    """The calls the benchmark makes: our kernel through h100lab.cuda, cuBLAS and the inputs through PyTorch (same
    primary context, same default stream). Tests substitute a fake with the same methods."""

    def __init__(self):
        import torch

        from h100lab import cuda
        from h100lab.design import capstone

        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA device")
        self.torch, self.cuda, self.cap = torch, cuda, capstone
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        torch.zeros(1, device="cuda")                   # the primary context exists before h100lab.cuda uses it
        self._kernels: dict = {}

    def metadata(self, command: str) -> dict:
        meta = self.cuda.run_metadata(command)
        meta["torch"] = self.torch.__version__
        meta["cublas"] = str(self.torch.backends.cuda.preferred_blas_library()) if hasattr(
            self.torch.backends.cuda, "preferred_blas_library") else "cublas"
        meta["torch_cuda"] = self.torch.version.cuda
        return meta

    def sm_count(self) -> int:
        return int(self.cuda.device_properties(0)["multiProcessorCount"])

    def slots(self, variant: str, sms: int) -> int:
        """CTAs of ``variant`` resident at once: the SMs, or for clusters of 2 twice the clusters the GPU can hold
        (cuOccupancyMaxActiveClusters: GPC granularity can leave SMs out), so the persistent grid is one wave."""
        v = self.cap.VARIANTS[variant]
        if v.cluster == 1:
            return sms
        k = self.kernel(variant)
        k.set_max_dynamic_shared_memory(v.smem_bytes)
        n = self.cuda.occupancy_max_active_clusters(k, (sms // v.cluster) * v.cluster, self.cap.THREADS,
                                                    (v.cluster, 1, 1), v.smem_bytes)
        return min(sms, v.cluster * max(1, int(n)))

    def kernel(self, variant: str):
        if variant not in self._kernels:
            v = self.cap.VARIANTS[variant]
            self._kernels[variant] = self.cuda.compile_kernel("l08_gemm", options=v.options).function("gemm_bf16")
        return self._kernels[variant]

    def inputs(self, M: int, N: int, K: int, seed: int):
        g = self.torch.Generator(device="cuda").manual_seed(seed)
        t = self.torch
        A = t.randn(M, K, device="cuda", generator=g).to(t.bfloat16)
        B = t.randn(N, K, device="cuda", generator=g).to(t.bfloat16)
        C = t.randn(M, N, device="cuda", generator=g).to(t.bfloat16)
        return A, B, C

    def empty_like(self, C):
        return self.torch.empty_like(C)

    def copy(self, dst, src) -> None:
        dst.copy_(src)

    def ours(self, variant: str, A, B, C, M, N, K, alpha=1.0, beta=0.0, group=8, raster=0, sms=132):
        """A callable that launches our kernel once (tensor maps encoded once, outside the timed region)."""
        v = self.cap.VARIANTS[variant]
        k = self.kernel(variant)
        maps = self.cap.tensor_maps(self.cuda, v, A.data_ptr(), B.data_ptr(), M, N, K)
        if v.tma_store:                                 # C's map too, encoded once
            maps = (*maps, self.cap.c_map(self.cuda, v, C.data_ptr(), M, N, beta))
        ptr = np.uint64(C.data_ptr())
        return lambda: self.cap.launch(self.cuda, k, v, None, None, ptr, M, N, K, alpha=alpha, beta=beta, sms=sms,
                                       group=group, raster=raster, maps=maps)

    def cublas(self, A, B, C, alpha=1.0, beta=0.0):
        """cuBLAS through PyTorch: C = alpha·A·Bᵀ + beta·C (torch.matmul into C when alpha = 1, beta = 0)."""
        t = self.torch
        if alpha == 1.0 and beta == 0.0:
            return lambda: t.matmul(A, B.t(), out=C)
        return lambda: C.addmm_(A, B.t(), beta=beta, alpha=alpha)

    def sync(self) -> None:
        self.torch.cuda.synchronize()
        self.cuda.synchronize()                         # raises the first fault of our kernel (cuCtxSynchronize)

    def time(self, fn, warmup: int, repeats: int) -> list[float]:
        t = self.torch
        for _ in range(warmup):
            fn()
        ev = [(t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)) for _ in range(repeats)]
        # keep the GPU busy (~20 ms spin) while the host enqueues every launch and event, so host launch overhead
        # never shows up between a start event and its kernel: the events time the kernels back to back
        t.cuda._sleep(40_000_000)
        for a, b in ev:
            a.record()
            fn()
            b.record()
        self.sync()
        return [a.elapsed_time(b) for a, b in ev]

    def errors(self, got, want, ref) -> dict:
        """Max and relative-Frobenius error of ``got`` and of ``want`` against ``ref`` (f32), and got vs want."""
        t = self.torch
        g, w, r = got.float(), want.float(), ref.float()
        scale = float(r.abs().max()) or 1.0
        return {"ours_max_abs": float((g - r).abs().max()), "cublas_max_abs": float((w - r).abs().max()),
                "ours_rel_fro": float(t.linalg.norm(g - r) / t.linalg.norm(r)),
                "cublas_rel_fro": float(t.linalg.norm(w - r) / t.linalg.norm(r)),
                "ours_vs_cublas_max_abs": float((g - w).abs().max()), "ref_max_abs": scale,
                "nonfinite": int((~t.isfinite(g)).sum())}

    def reference(self, A, B, C, alpha, beta):
        t = self.torch
        r = alpha * t.matmul(A.float(), B.float().t())
        return r + beta * C.float() if beta != 0 else r


def _passes(e: dict) -> bool:
    """Ours is correct when it has no non-finite values and its error against the f32 reference is within twice
    cuBLAS's plus one bf16 rounding of the largest output (2^-8 relative)."""
    tol = 2 * e["cublas_max_abs"] + e["ref_max_abs"] * 2.0 ** -8
    return e["nonfinite"] == 0 and e["ours_max_abs"] <= tol and e["ours_rel_fro"] <= 2 * e["cublas_rel_fro"] + 2e-3


def _slots(be, variant: str, sms: int) -> int:
    return be.slots(variant, sms) if hasattr(be, "slots") else sms


def run_checks(be, checks, sms: int, log=print, variants=VARIANTS) -> list[dict]:
    recs = []
    for i, (M, N, K, alpha, beta) in enumerate(checks):
        for variant in variants:
            rec = {"kind": "check", "variant": variant, "M": M, "N": N, "K": K, "alpha": alpha, "beta": beta}
            try:
                A, B, C0 = be.inputs(M, N, K, seed=100 + i)
                ref = be.reference(A, B, C0, alpha, beta)
                ours, theirs = be.empty_like(C0), be.empty_like(C0)
                be.copy(ours, C0)
                be.copy(theirs, C0)
                be.ours(variant, A, B, ours, M, N, K, alpha=alpha, beta=beta, sms=_slots(be, variant, sms))()
                be.cublas(A, B, theirs, alpha, beta)()
                be.sync()
                rec.update(be.errors(ours, theirs, ref))
                rec["ok"] = _passes(rec)
            except Exception as exc:                                   # noqa: BLE001 - recorded, the run goes on
                rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
                traceback.print_exc()
            log(f"check {variant:25s} {M}x{N}x{K} alpha={alpha} beta={beta}: "
                f"{'ok' if rec.get('ok') else 'FAILED'} {rec.get('error', '')}")
            recs.append(rec)
    return recs


def run_timing(be, shapes, sms: int, warmup: int, repeats: int, log=print, variants=VARIANTS,
               seed0: int = 0) -> list[dict]:
    from h100lab.design import capstone as cap

    recs = []
    for i, (M, N, K) in enumerate(shapes, start=seed0):
        flop = cap.flops(M, N, K)
        try:
            A, B, C0 = be.inputs(M, N, K, seed=i)
            ref_c = be.empty_like(C0)
            cub = be.time(be.cublas(A, B, ref_c), warmup, repeats)
            cub_ms = statistics.median(cub)
        except Exception as exc:                                       # noqa: BLE001
            traceback.print_exc()
            recs.append({"kind": "time", "variant": "cublas", "M": M, "N": N, "K": K, "ok": False,
                         "error": f"{type(exc).__name__}: {exc}"})
            continue
        recs.append({"kind": "time", "variant": "cublas", "M": M, "N": N, "K": K, "ok": True, "median_ms": cub_ms,
                     "min_ms": min(cub), "tflops": flop / cub_ms / 1e9, "repeats": repeats, "warmup": warmup})
        log(f"{'cuBLAS':25s} {M}x{N}x{K}: {cub_ms:.3f} ms  {flop / cub_ms / 1e9:.0f} TFLOP/s")
        runs = [(v, 8, 0) for v in variants]
        if (M, N, K) == (8192, 8192, 8192) and "cooperative" in variants:
            runs += [("cooperative", 1, 0), ("cooperative", 8, 1)]
        timed = []
        for variant, group, raster in runs:
            v = cap.VARIANTS[variant]
            tm, tn = cap.tile_counts(v, M, N)
            try:
                vsms = _slots(be, variant, sms)
            except Exception as exc:                                   # noqa: BLE001
                traceback.print_exc()
                recs.append({"kind": "time", "variant": variant, "M": M, "N": N, "K": K, "group": group,
                             "raster": raster, "ok": False, "error": f"{type(exc).__name__}: {exc}"})
                continue
            grid = cap.grid_size(v, M, N, vsms)
            rec = {"kind": "time", "variant": variant, "M": M, "N": N, "K": K, "group": group, "raster": raster,
                   "bm": v.bm, "bn": v.bn, "bk": v.bk, "stages": v.stages, "smem_bytes": v.smem_bytes,
                   "tiles": tm * tn, "grid": grid, "waves": -(-(tm * tn) // grid), "repeats": repeats,
                   "warmup": warmup, "cublas_ms": cub_ms, "cluster": v.cluster, "inflight": v.inflight,
                   "tma_store": v.tma_store}
            try:
                C = be.empty_like(C0)
                fn = be.ours(variant, A, B, C, M, N, K, group=group, raster=raster, sms=vsms)
                ms = be.time(fn, warmup, repeats)
                med = statistics.median(ms)
                err = be.errors(C, ref_c, ref_c)
                rec.update(ok=err["nonfinite"] == 0 and err["ours_vs_cublas_max_abs"] <= err["ref_max_abs"] * 2.0 ** -6,
                           median_ms=med, min_ms=min(ms), samples_ms=[round(x, 5) for x in ms],
                           tflops=flop / med / 1e9, ratio_cublas=cub_ms / med,
                           max_abs_vs_cublas=err["ours_vs_cublas_max_abs"], ref_max_abs=err["ref_max_abs"])
                if rec["ok"] and group == 8 and raster == 0:
                    timed.append((med, variant))
                log(f"{variant:25s} {M}x{N}x{K} g{group} r{raster}: {med:.3f} ms  {flop / med / 1e9:.0f} TFLOP/s  "
                    f"{100 * cub_ms / med:.1f} % of cuBLAS{'' if rec['ok'] else '  WRONG OUTPUT'}")
            except Exception as exc:                                   # noqa: BLE001
                traceback.print_exc()
                rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
                log(f"{variant:25s} {M}x{N}x{K}: FAILED {rec['error']}")
            recs.append(rec)
        if timed:
            best_ms, best = min(timed)
            model = cap.tile_choice(M, N, sms)
            ms_of = dict((v, m) for m, v in timed)
            recs.append({"kind": "pick", "M": M, "N": N, "K": K, "ok": True, "best": best, "best_ms": best_ms,
                         "best_ratio_cublas": cub_ms / best_ms, "model_pick": model,
                         "model_pick_ms": ms_of.get(model), "default": cap.DEFAULT,
                         "default_ms": ms_of.get(cap.DEFAULT)})
            log(f"{'fastest':25s} {M}x{N}x{K}: {best} ({100 * cub_ms / best_ms:.1f} % of cuBLAS); wave model picks "
                f"{model}; the default ({cap.DEFAULT}): "
                + (f"{100 * cub_ms / ms_of[cap.DEFAULT]:.1f} %" if cap.DEFAULT in ms_of else "not timed"))
    return recs


def main(argv=None, backend=None, shapes=None, checks=None, log=print, variants=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="data folder to write l08/gemm_bench.json into (default: the repo's)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="only 4096³ and the ragged checks, and (unless --variants "
                    "says otherwise) only the default variant, its 128-column partner and the first cooperative form")
    ap.add_argument("--variants", default=None, help="comma-separated variants (default: all of VARIANTS)")
    ap.add_argument("--name", default=DATASET, help="dataset name under the data folder (default: %(default)s); "
                    "a second process with other --variants keeps a fault of one variant (a sticky CUDA error "
                    "poisons its process) from costing the other's records")
    args = ap.parse_args(argv)
    if args.repeats < 20 and backend is None:
        ap.error("--repeats: the median of at least 20 launches")
    t0 = time.time()
    be = backend if backend is not None else TorchCuda()
    sms = be.sm_count()
    shapes = shapes if shapes is not None else (SHAPES[:1] if args.quick else SHAPES)
    checks = checks if checks is not None else CHECKS
    from h100lab.design import capstone as cap
    if variants is None:
        if args.variants:
            variants = tuple(args.variants.split(","))
        elif args.quick:
            variants = tuple(dict.fromkeys((cap.DEFAULT, *cap.TILE_CANDIDATES, "cooperative")))
        else:
            variants = VARIANTS
    unknown = [v for v in variants if v not in cap.VARIANTS]
    if unknown:
        ap.error(f"--variants: unknown {unknown}; known: {sorted(cap.VARIANTS)}")
    cmd = "PYTHONPATH=. python3 benchmarks/bench_gemm.py " + " ".join(argv if argv is not None else sys.argv[1:])
    meta = be.metadata(cmd.strip())
    meta.update(kernel="h100lab/cuda/kernels/l08_gemm.cu", variants=list(variants),
                note="ours: C = alpha*A*B^T + beta*C, A MxK and B NxK bf16 K-major, f32 accumulate, bf16 out; "
                     "cuBLAS: torch.matmul(A, B.T) bf16 in the same run; CUDA events, median of repeats")
    from h100lab import data
    if args.out:
        os.environ["H100LAB_DATA"] = str(Path(args.out).resolve())
    recs: list[dict] = []

    def save(done: bool) -> Path:
        # written after the checks and after every shape, so a run cut short (a hang, a time limit) keeps its data;
        # meta["complete"] says whether every shape ran
        return data.write(args.name, recs, dict(meta, wall_s=round(time.time() - t0, 1), complete=done))

    recs += run_checks(be, checks, sms, log, variants)
    save(False)
    for shape in shapes:
        recs += run_timing(be, [shape], sms, args.warmup, args.repeats, log, variants, seed0=shapes.index(shape))
        save(False)
    path = save(True)
    bad = [r for r in recs if not r.get("ok")]
    log(f"wrote {path} ({len(recs)} records, {len(bad)} failed) in {time.time() - t0:.0f} s")
    return {"path": str(path), "records": recs, "failed": len(bad)}


if __name__ == "__main__":
    out = main()
    sys.exit(1 if out["failed"] else 0)
