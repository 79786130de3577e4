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

``--bias-relu`` (dataset ``l08/gemm_bench_epilogue``): the fused bias + ReLU epilogue instead — correctness against
cuBLAS (``torch.addmm`` with the bias, then ReLU) and an f32 reference on square and ragged shapes, and its time at
8192³ next to the plain epilogue, with cuBLAS's fused ``torch._addmm_activation`` (bias + ReLU in cuBLASLt's epilogue)
timed beside it.

``--fp8`` (dataset ``l08/gemm_bench_fp8``): the FP8 form (h100lab.design.capstone.FP8_VARIANTS: e4m3, A scaled per
1 × 128 block, B per 128 × 128 block, two-level accumulation) against cuBLAS FP8 in the same run —
``torch._scaled_mm`` on e4m3 inputs (A row-major M × K, B column-major K × N = the N × K tensor's ``.t()``), bf16
out, with per-tensor scales (cuBLAS's default accumulation and ``use_fast_accum``), row-wise scales and the same
1 × 128 / 128 × 128 block scales where this torch and cuBLAS take them (each in try/except; what ran is recorded) —
and next to cuBLAS bf16 of the same shape. Its output is checked bit for bit against the tensor-core model
(h100lab.design.capstone.reference_fp8) on small square and ragged shapes and on a 32 × 128 sample of the 4096³
output (``model_mismatches``: 0), and against an f32 reference of the dequantised inputs at every shape.

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
            "cooperative_n128_inflight_cluster2", "cooperative_inflight_tmastore_cluster2",
            "cooperative_inflight_tmastore_cluster2_ctascope")
DATASET = "l08/gemm_bench"
# the bias + ReLU epilogue (--bias-relu): the default, its direct-store partner and a ping-pong form
EPI_VARIANTS = ("cooperative_inflight_tmastore", "cooperative_inflight", "cooperative_n128_inflight_tmastore",
                "pingpong_n128_inflight")
EPI_CHECKS = [(2048, 2048, 2048, 1.0, 0.0), (1000, 1504, 1032, 1.0, 0.0), (333, 4000, 520, 0.5, -1.0),
              (4097, 3001, 2056, 2.0, 0.0)]
EPI_SHAPE = (8192, 8192, 8192)
# the FP8 form (--fp8)
FP8_VARIANTS = ("fp8_cooperative_staggered_tmastore", "fp8_cooperative_tmastore", "fp8_cooperative_staggered",
                "fp8_cooperative", "fp8_cooperative_staggered_tmastore_cluster2_ctascope",
                "fp8_cooperative_tmastore_cluster2", "fp8_cooperative_n192_staggered_tmastore",
                "fp8_cooperative_n192_tmastore", "fp8_cooperative_n192_staggered", "fp8_cooperative_n192",
                "fp8_cooperative_m256_tmastore", "fp8_cooperative_m256", "fp8_cooperative_n192_tmastore_lead2",
                "fp8_cooperative_n192_tmastore_lead3", "fp8_cooperative_tmastore_lead2",
                "fp8_cooperative_m256_tmastore_lead2")
FP8_MODEL_CHECKS = [(256, 256, 1024, False), (200, 136, 528, False), (130, 300, 400, True)]   # + bias and ReLU
FP8_CHECKS = [(2048, 2048, 2048), (1000, 1504, 1040), (4097, 3001, 2064)]
CUBLAS_FP8 = ("tensor", "tensor_fast_accum", "rowwise", "block")


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
        v = self.cap.variant(variant)
        if v.cluster == 1:
            return sms
        k = self.kernel(variant)
        k.set_max_dynamic_shared_memory(v.smem_bytes)
        n = self.cuda.occupancy_max_active_clusters(k, (sms // v.cluster) * v.cluster, self.cap.THREADS,
                                                    (v.cluster, 1, 1), v.smem_bytes)
        return min(sms, v.cluster * max(1, int(n)))

    def kernel(self, variant: str):
        if variant not in self._kernels:
            v = self.cap.variant(variant)
            self._kernels[variant] = self.cuda.compile_kernel("l08_gemm", options=v.options).function(v.entry)
        return self._kernels[variant]

    def inputs(self, M: int, N: int, K: int, seed: int):
        g = self.torch.Generator(device="cuda").manual_seed(seed)
        t = self.torch
        A = t.randn(M, K, device="cuda", generator=g).to(t.bfloat16)
        B = t.randn(N, K, device="cuda", generator=g).to(t.bfloat16)
        C = t.randn(M, N, device="cuda", generator=g).to(t.bfloat16)
        return A, B, C

    def bias(self, N: int, seed: int):
        g = self.torch.Generator(device="cuda").manual_seed(seed)
        return self.torch.randn(N, device="cuda", generator=g).to(self.torch.bfloat16)

    def empty_like(self, C):
        return self.torch.empty_like(C)

    def copy(self, dst, src) -> None:
        dst.copy_(src)

    def ours(self, variant: str, A, B, C, M, N, K, alpha=1.0, beta=0.0, group=8, raster=0, sms=132, bias=None,
             relu=False, scales=None):
        """A callable that launches our kernel once (tensor maps encoded once, outside the timed region); FP8:
        ``scales`` = (sa, sb) device tensors in the kernel's layouts."""
        v = self.cap.variant(variant)
        k = self.kernel(variant)
        maps = self.cap.tensor_maps(self.cuda, v, A.data_ptr(), B.data_ptr(), M, N, K)
        if v.tma_store:                                 # C's map too, encoded once
            maps = (*maps, self.cap.c_map(self.cuda, v, C.data_ptr(), M, N, beta))
        ptr = np.uint64(C.data_ptr())
        b = None if bias is None else np.uint64(bias.data_ptr())
        sc = None if scales is None else tuple(np.uint64(x.data_ptr()) for x in scales)
        return lambda: self.cap.launch(self.cuda, k, v, None, None, ptr, M, N, K, alpha=alpha, beta=beta, sms=sms,
                                       group=group, raster=raster, maps=maps, bias=b, relu=relu, scales=sc)

    def cublas(self, A, B, C, alpha=1.0, beta=0.0, bias=None, relu=False, fused=False):
        """cuBLAS through PyTorch: C = alpha·A·Bᵀ + beta·C (torch.matmul into C when alpha = 1, beta = 0); with a
        bias: torch.addmm(bias, ...) (cuBLASLt's bias epilogue) then ReLU in place, or with ``fused`` (beta = 0,
        alpha = 1) torch._addmm_activation: bias and ReLU both in cuBLASLt's epilogue."""
        t = self.torch
        if bias is None and not relu:
            if alpha == 1.0 and beta == 0.0:
                return lambda: t.matmul(A, B.t(), out=C)
            return lambda: C.addmm_(A, B.t(), beta=beta, alpha=alpha)
        if fused:
            if alpha != 1.0 or beta != 0.0 or bias is None or not relu:
                raise ValueError("the fused cuBLASLt epilogue is timed for alpha = 1, beta = 0, bias and ReLU")
            try:                                        # the out= form when this torch has it (no copy timed)
                t._addmm_activation(bias, A, B.t(), use_gelu=False, out=C)
                return lambda: t._addmm_activation(bias, A, B.t(), use_gelu=False, out=C)
            except (TypeError, RuntimeError):
                return lambda: C.copy_(t._addmm_activation(bias, A, B.t(), use_gelu=False))

        def run():
            if beta != 0.0:
                C.addmm_(A, B.t(), beta=beta, alpha=alpha)
                if bias is not None:
                    C.add_(bias)
            elif bias is not None:
                t.addmm(bias, A, B.t(), alpha=alpha, out=C)
            else:
                t.mul(t.matmul(A, B.t()), alpha, out=C)
            if relu:
                C.relu_()
        return run

    # ---- FP8
    def _quant(self, x, br: int, bc: int):
        """x (R × C, f32) → (e4m3 codes, f32 scales per br × bc block, R/br × C/bc (ceil)): s = amax / 448,
        q = cvt(x / s) — h100lab.tensorcore.quant.quantize's recipe, on the GPU."""
        t = self.torch
        R, C = x.shape
        nr, nc = -(-R // br), -(-C // bc)
        pad = t.zeros(nr * br, nc * bc, device="cuda", dtype=t.float32)
        pad[:R, :C] = x
        am = pad.abs().view(nr, br, nc, bc).amax(dim=(1, 3))
        s = t.where(am > 0, am / 448.0, t.ones_like(am)).float()
        full = s.repeat_interleave(br, 0).repeat_interleave(bc, 1)[:R, :C]
        q = (x / full).clamp(-448.0, 448.0).to(t.float8_e4m3fn)
        return q, s

    def fp8_inputs(self, M: int, N: int, K: int, seed: int) -> dict:
        """x, w (f32, normal, rows of A scaled by powers of two), their bf16 copies, and their e4m3 forms: block
        scales (A 1 × 128, B 128 × 128: ours, and cuBLAS where it takes them), per tensor and per row / column."""
        t = self.torch
        g = t.Generator(device="cuda").manual_seed(seed)
        x = t.randn(M, K, device="cuda", generator=g)
        x = x * t.exp2(t.randint(-6, 7, (M, 1), device="cuda", generator=g).float())
        w = t.randn(N, K, device="cuda", generator=g)
        Q = {"x": x, "w": w, "xb": x.to(t.bfloat16), "wb": w.to(t.bfloat16), "M": M, "N": N, "K": K}
        Q["qa"], Q["sa"] = self._quant(x, 1, 128)
        Q["qb"], Q["sb"] = self._quant(w, 128, 128)
        Q["dsa"] = Q["sa"].t().contiguous()                 # the kernel's layout: block-major
        Q["qa_t"], Q["sa_t"] = self._quant(x, M, K)
        Q["qb_t"], Q["sb_t"] = self._quant(w, N, K)
        Q["qa_r"], Q["sa_r"] = self._quant(x, 1, K)
        Q["qb_r"], Q["sb_r"] = self._quant(w, 1, K)
        return Q

    def fp8_host(self, Q: dict, rows=None, col_block=None):
        """(qa, sa, qb, sb) as NumPy (raw e4m3 bytes, f32 scales) for the model; ``rows`` of A and one 128-row
        block of B (``col_block``) to sample a large output."""
        u8 = self.torch.uint8                           # bytes first: indexing need not know float8 types
        qa, sa, qb, sb = Q["qa"].view(u8), Q["sa"], Q["qb"].view(u8), Q["sb"]
        if rows is not None:
            idx = self.torch.as_tensor(rows, device="cuda")
            qa, sa = qa[idx], sa[idx]
        if col_block is not None:
            qb, sb = qb[128 * col_block:128 * (col_block + 1)], sb[col_block:col_block + 1]
        return qa.cpu().numpy(), sa.cpu().numpy(), qb.cpu().numpy(), sb.cpu().numpy()

    def fp8_out(self, M: int, N: int):
        return self.torch.full((M, N), float("nan"), device="cuda", dtype=self.torch.bfloat16)

    def bits(self, C, rows=None, cols=None) -> np.ndarray:
        c = C if rows is None else C[self.torch.as_tensor(rows, device="cuda")]
        if cols is not None:
            c = c[:, cols[0]:cols[1]]
        return c.contiguous().view(self.torch.int16).cpu().numpy().view(np.uint16)

    def ours_fp8(self, variant: str, Q: dict, C, alpha=1.0, bias=None, relu=False, sms=132):
        return self.ours(variant, Q["qa"], Q["qb"], C, Q["M"], Q["N"], Q["K"], alpha=alpha, sms=sms, bias=bias,
                         relu=relu, scales=(Q["dsa"], Q["sb"]))

    def cublas_fp8(self, Q: dict, C, mode: str):
        """torch._scaled_mm (cuBLASLt FP8) into C, bf16 out: ``mode`` tensor (per-tensor scales, cuBLAS's default
        accumulation), tensor_fast_accum (use_fast_accum=True), rowwise (A per row, B per column), block (A 1 × 128
        with M-major scales, B 128 × 128: DeepSeek-V3's scales, CUDA ≥ 12.9)."""
        t = self.torch
        bf = t.bfloat16
        if mode in ("tensor", "tensor_fast_accum"):
            a, b, sa, sb = Q["qa_t"], Q["qb_t"], Q["sa_t"].reshape(()), Q["sb_t"].reshape(())
        elif mode == "rowwise":
            a, b, sa, sb = Q["qa_r"], Q["qb_r"], Q["sa_r"].reshape(-1, 1), Q["sb_r"].reshape(1, -1)
        elif mode == "block":
            a, b, sa, sb = Q["qa"], Q["qb"], Q["sa"].t().contiguous().t(), Q["sb"].t()
        else:
            raise ValueError(f"cuBLAS FP8 mode {mode!r}: one of {CUBLAS_FP8}")
        fast = mode == "tensor_fast_accum"
        return lambda: C.copy_(t._scaled_mm(a, b.t(), sa, sb, out_dtype=bf, use_fast_accum=fast))

    def fp8_reference(self, Q: dict, mode: str = "block"):
        """f32 (TF32 off) product of the dequantised inputs of ``mode`` ("exact": of x and w themselves)."""
        t = self.torch
        if mode == "exact":
            return t.matmul(Q["x"], Q["w"].t())
        M, N, K = Q["M"], Q["N"], Q["K"]
        if mode == "block":
            a = Q["qa"].float() * Q["sa"].repeat_interleave(128, 1)[:, :K]
            b = Q["qb"].float() * Q["sb"].repeat_interleave(128, 0).repeat_interleave(128, 1)[:N, :K]
        elif mode == "rowwise":
            a, b = Q["qa_r"].float() * Q["sa_r"], Q["qb_r"].float() * Q["sb_r"]
        else:
            a, b = Q["qa_t"].float() * Q["sa_t"], Q["qb_t"].float() * Q["sb_t"]
        return t.matmul(a, b.t())

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

    def reference(self, A, B, C, alpha, beta, bias=None, relu=False):
        t = self.torch
        r = alpha * t.matmul(A.float(), B.float().t())
        r = r + beta * C.float() if beta != 0 else r
        r = r + bias.float()[None, :] if bias is not None else r
        return t.relu(r) if relu else r


# -- what every GEMM benchmark of lesson 8 does around its runs (bench_gemm, bench_gemm_steps, bench_gemm_orders,
# trace_gemm): a failure recorded and the run going on, the dataset rewritten after each part, the closing line

def attempt(rec: dict, body, label: str, log) -> dict:
    """Run ``body()`` (which fills ``rec``); an exception is recorded in ``rec`` (ok False) and the run goes on."""
    try:
        body()
    except Exception as exc:                                           # noqa: BLE001 - recorded, the run goes on
        traceback.print_exc()
        rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        log(f"{label}: FAILED {rec['error']}")
    return rec


def attempt_all(part, rec: dict, label: str, log) -> list[dict]:
    """``part()``'s records; a part that fails before its own records exist (inputs, cuBLAS) leaves ``rec`` as one
    failed record."""
    out: list[dict] = []
    attempt(rec, lambda: out.extend(part()), label, log)
    return out if "error" not in rec else out + [rec]


def parse_shapes(ap: argparse.ArgumentParser, text: str) -> list[tuple]:
    """A ``--shapes`` value, comma-separated MxNxK (``6144x6144x6144,2048x12288x8192``), as (M, N, K) tuples;
    anything else is refused through ``ap.error`` (exit status 2)."""
    try:
        shapes = [tuple(int(x) for x in s.lower().split("x")) for s in text.split(",")]
    except ValueError:
        ap.error(f"--shapes {text!r}: comma-separated MxNxK, e.g. 6144x6144x6144")
    if any(len(s) != 3 or min(s) < 1 for s in shapes):
        ap.error(f"--shapes {text!r}: each shape three positive sizes MxNxK")
    return shapes


def dataset_saver(name: str, recs: list, meta: dict, t0: float):
    """``save(done)``: the records so far written to dataset ``name`` with ``meta``, the wall time since ``t0`` and
    ``complete`` = done — called after each part, so a run cut short (a hang, a time limit) keeps its data."""
    from h100lab import data

    def save(done: bool) -> Path:
        return data.write(name, recs, dict(meta, wall_s=round(time.time() - t0, 1), complete=done))
    return save


def finish(path, recs: list, t0: float, log, bad: list | None = None) -> dict:
    """The closing line and ``main``'s result; ``bad``: the failed records (default: every record not ok)."""
    bad = [r for r in recs if not r.get("ok")] if bad is None else bad
    log(f"wrote {path} ({len(recs)} records, {len(bad)} failed) in {time.time() - t0:.0f} s")
    return {"path": str(path), "records": recs, "failed": len(bad)}


def _close_to_cublas(err: dict) -> bool:
    """A timed output next to cuBLAS's: finite and within 2^-6 of the largest |output| (a few bf16 roundings)."""
    return err["nonfinite"] == 0 and err["ours_vs_cublas_max_abs"] <= err["ref_max_abs"] * 2.0 ** -6


def _passes(e: dict) -> bool:
    """Ours is correct when it has no non-finite values and its error against the f32 reference is within twice
    cuBLAS's plus one bf16 rounding of the largest output (2^-8 relative)."""
    tol = 2 * e["cublas_max_abs"] + e["ref_max_abs"] * 2.0 ** -8
    return e["nonfinite"] == 0 and e["ours_max_abs"] <= tol and e["ours_rel_fro"] <= 2 * e["cublas_rel_fro"] + 2e-3


def _slots(be, variant: str, sms: int) -> int:
    return be.slots(variant, sms) if hasattr(be, "slots") else sms


def run_checks(be, checks, sms: int, log=print, variants=VARIANTS, bias_relu: bool = False) -> list[dict]:
    """Each check shape with each variant against cuBLAS and an f32 reference; ``bias_relu``: with a bias and ReLU
    in the epilogue (cuBLAS: addmm with the bias, then ReLU)."""
    recs = []
    for i, (M, N, K, alpha, beta) in enumerate(checks):
        for variant in variants:
            rec = {"kind": "check", "variant": variant, "M": M, "N": N, "K": K, "alpha": alpha, "beta": beta}
            if bias_relu:
                rec.update(bias=True, relu=True)
            try:
                A, B, C0 = be.inputs(M, N, K, seed=100 + i)
                bias = be.bias(N, seed=200 + i) if bias_relu else None
                ref = be.reference(A, B, C0, alpha, beta, bias=bias, relu=bias_relu) if bias_relu else \
                    be.reference(A, B, C0, alpha, beta)
                ours, theirs = be.empty_like(C0), be.empty_like(C0)
                be.copy(ours, C0)
                be.copy(theirs, C0)
                extra = dict(bias=bias, relu=True) if bias_relu else {}
                be.ours(variant, A, B, ours, M, N, K, alpha=alpha, beta=beta, sms=_slots(be, variant, sms), **extra)()
                be.cublas(A, B, theirs, alpha, beta, **extra)()
                be.sync()
                rec.update(be.errors(ours, theirs, ref))
                rec["ok"] = _passes(rec)
            except Exception as exc:                                   # noqa: BLE001 - recorded, the run goes on
                rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
                traceback.print_exc()
            log(f"check {variant:25s} {M}x{N}x{K} alpha={alpha} beta={beta}{' +bias +relu' if bias_relu else ''}: "
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
            v = cap.variant(variant)
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
                   "tiles": tm * tn, "grid": grid, "waves": cap.waves(v, M, N, grid), "repeats": repeats,
                   "warmup": warmup, "cublas_ms": cub_ms, "cluster": v.cluster, "inflight": v.inflight,
                   "tma_store": v.tma_store}
            try:
                C = be.empty_like(C0)
                fn = be.ours(variant, A, B, C, M, N, K, group=group, raster=raster, sms=vsms)
                ms = be.time(fn, warmup, repeats)
                med = statistics.median(ms)
                err = be.errors(C, ref_c, ref_c)
                rec.update(ok=_close_to_cublas(err),
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


def _timed(be, fn, warmup, repeats, flop) -> dict:
    ms = be.time(fn, warmup, repeats)
    med = statistics.median(ms)
    return {"median_ms": med, "min_ms": min(ms), "samples_ms": [round(x, 5) for x in ms], "tflops": flop / med / 1e9,
            "repeats": repeats, "warmup": warmup}


def run_epilogue_timing(be, shape, sms: int, warmup: int, repeats: int, log=print, variants=EPI_VARIANTS) -> list[dict]:
    """At ``shape``: cuBLAS plain, cuBLAS + bias then ReLU (two kernels after the GEMM's), cuBLASLt's fused bias +
    ReLU epilogue, and each variant with the plain and the bias + ReLU epilogue, all in one run."""
    from h100lab.design import capstone as cap

    M, N, K = shape
    flop = cap.flops(M, N, K)
    recs = []
    try:
        A, B, C0 = be.inputs(M, N, K, seed=0)
        bias = be.bias(N, seed=1)
        ref_c = be.empty_like(C0)
        be.cublas(A, B, ref_c)()
        be.sync()
    except Exception as exc:                                           # noqa: BLE001
        traceback.print_exc()
        return [{"kind": "time", "variant": "cublas", "M": M, "N": N, "K": K, "ok": False,
                 "error": f"{type(exc).__name__}: {exc}"}]
    base = {}
    for name, kw in (("cublas", {}), ("cublas_bias_relu", dict(bias=bias, relu=True)),
                     ("cublas_fused_bias_relu", dict(bias=bias, relu=True, fused=True))):
        rec = {"kind": "time", "variant": name, "M": M, "N": N, "K": K, "epilogue": "plain" if not kw else "bias_relu"}
        try:
            out = be.empty_like(C0)
            rec.update(_timed(be, be.cublas(A, B, out, **kw), warmup, repeats, flop), ok=True)
            base[name] = rec["median_ms"]
            log(f"{name:34s} {M}x{N}x{K}: {rec['median_ms']:.3f} ms  {rec['tflops']:.0f} TFLOP/s")
        except Exception as exc:                                       # noqa: BLE001
            traceback.print_exc()
            rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
            log(f"{name:34s} {M}x{N}x{K}: FAILED {rec['error']}")
        recs.append(rec)
    for variant in variants:
        for epi in ("plain", "bias_relu"):
            v = cap.variant(variant)
            rec = {"kind": "time", "variant": variant, "M": M, "N": N, "K": K, "epilogue": epi, "group": 8,
                   "raster": 0, "tma_store": v.tma_store, "inflight": v.inflight, "cluster": v.cluster}
            try:
                C = be.empty_like(C0)
                kw = dict(bias=bias, relu=True) if epi == "bias_relu" else {}
                rec.update(_timed(be, be.ours(variant, A, B, C, M, N, K, sms=_slots(be, variant, sms), **kw), warmup,
                                  repeats, flop))
                cub = base.get("cublas_bias_relu" if kw else "cublas")
                if kw:
                    want = be.empty_like(C0)
                    be.cublas(A, B, want, **kw)()
                    be.sync()
                else:
                    want = ref_c
                err = be.errors(C, want, want)
                rec.update(ok=_close_to_cublas(err),
                           max_abs_vs_cublas=err["ours_vs_cublas_max_abs"], ref_max_abs=err["ref_max_abs"],
                           cublas_ms=cub, ratio_cublas=(cub / rec["median_ms"]) if cub else None)
                log(f"{variant:25s} {epi:9s} {M}x{N}x{K}: {rec['median_ms']:.3f} ms  {rec['tflops']:.0f} TFLOP/s"
                    f"{'' if rec['ok'] else '  WRONG OUTPUT'}")
            except Exception as exc:                                   # noqa: BLE001
                traceback.print_exc()
                rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
                log(f"{variant:25s} {epi:9s} {M}x{N}x{K}: FAILED {rec['error']}")
            recs.append(rec)
    return recs


def _fp8_ok(e: dict) -> bool:
    """FP8 output against the f32 product of its own dequantised inputs: finite, within a few bf16 roundings (the
    accumulation is f32 after each 128-K block; the bf16 output rounding, 2^-9 relative, dominates)."""
    return e["nonfinite"] == 0 and e["ours_max_abs"] <= e["ref_max_abs"] * 2.0 ** -6 and e["ours_rel_fro"] <= 2.0 ** -7


def run_fp8_model_checks(be, checks, sms: int, log=print, variants=FP8_VARIANTS) -> list[dict]:
    """Bit for bit against the tensor-core model (h100lab.design.capstone.reference_fp8) at small shapes."""
    from h100lab.design import capstone as cap

    recs = []
    for i, (M, N, K, br) in enumerate(checks):
        try:
            Q = be.fp8_inputs(M, N, K, seed=300 + i)
            bias = be.bias(N, seed=400 + i) if br else None
            qa, sa, qb, sb = be.fp8_host(Q)
            want = cap.reference_fp8(qa, qb, sa, sb, alpha=1.5, bias=None if bias is None else be.bits(bias[None, :])[0],
                                     relu=br)
        except Exception as exc:                                       # noqa: BLE001
            traceback.print_exc()
            recs.append({"kind": "fp8_model", "M": M, "N": N, "K": K, "ok": False,
                         "error": f"{type(exc).__name__}: {exc}"})
            continue
        for variant in variants:
            rec = {"kind": "fp8_model", "variant": variant, "M": M, "N": N, "K": K, "alpha": 1.5, "bias": br,
                   "relu": br}
            try:
                C = be.fp8_out(M, N)
                be.ours_fp8(variant, Q, C, alpha=1.5, bias=bias, relu=br, sms=_slots(be, variant, sms))()
                be.sync()
                got = be.bits(C)
                rec.update(model_mismatches=int((got != want).sum()), outputs=int(got.size))
                rec["ok"] = rec["model_mismatches"] == 0
            except Exception as exc:                                   # noqa: BLE001
                traceback.print_exc()
                rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
            log(f"fp8 model {variant:34s} {M}x{N}x{K}{' +bias +relu' if br else ''}: "
                f"{rec.get('model_mismatches', '-')} mismatches {rec.get('error', '')}")
            recs.append(rec)
    return recs


def run_fp8(be, checks, shapes, sms: int, warmup: int, repeats: int, log=print, variants=FP8_VARIANTS,
            save=lambda recs: None) -> list[dict]:
    """FP8: accuracy at ``checks`` (ours and cuBLAS FP8 against f32 references), then per shape cuBLAS bf16, each
    cuBLAS FP8 mode and each variant timed; the first shape's output (4096³) also sampled against the model: its
    first and last 16 rows in one 128-column block."""
    from h100lab.design import capstone as cap

    recs = []
    shapes_all = [(M, N, K, "check") for M, N, K in checks] + [(M, N, K, "time") for M, N, K in shapes]
    for i, (M, N, K, what) in enumerate(shapes_all):
        flop = cap.flops(M, N, K)
        try:
            Q = be.fp8_inputs(M, N, K, seed=500 + i)
            exact = be.fp8_reference(Q, "exact")
            deq = be.fp8_reference(Q, "block")
        except Exception as exc:                                       # noqa: BLE001
            traceback.print_exc()
            recs.append({"kind": f"fp8_{what}", "variant": "inputs", "M": M, "N": N, "K": K, "ok": False,
                         "error": f"{type(exc).__name__}: {exc}"})
            continue
        base = {}
        if what == "time":
            rec = {"kind": "fp8_time", "variant": "cublas_bf16", "M": M, "N": N, "K": K}
            try:
                out = be.fp8_out(M, N)
                rec.update(_timed(be, be.cublas(Q["xb"], Q["wb"], out), warmup, repeats, flop), ok=True)
                base["cublas_bf16"] = rec["median_ms"]
            except Exception as exc:                                   # noqa: BLE001
                traceback.print_exc()
                rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
            recs.append(rec)
        for mode in CUBLAS_FP8:
            rec = {"kind": f"fp8_{what}", "variant": f"cublas_fp8_{mode}", "M": M, "N": N, "K": K, "scales": mode}
            try:
                out = be.fp8_out(M, N)
                fn = be.cublas_fp8(Q, out, mode)
                fn()
                be.sync()
                e = be.errors(out, out, be.fp8_reference(Q, mode if mode != "tensor_fast_accum" else "tensor"))
                ex = be.errors(out, out, exact)
                rec.update(ok=_fp8_ok(e), max_abs_vs_deq=e["ours_max_abs"], rel_fro_vs_deq=e["ours_rel_fro"],
                           rel_fro_vs_exact=ex["ours_rel_fro"], nonfinite=e["nonfinite"])
                if what == "time" and rec["ok"]:                # a wrong answer is no speed to compare with
                    rec.update(_timed(be, fn, warmup, repeats, flop))
                    base[mode] = rec["median_ms"]
                log(f"fp8 {what} {rec['variant']:32s} {M}x{N}x{K}: rel err {rec['rel_fro_vs_deq']:.2e} (own inputs), "
                    f"{rec['rel_fro_vs_exact']:.2e} (exact)" + (f"  {rec['median_ms']:.3f} ms {rec['tflops']:.0f} "
                                                                  "TFLOP/s" if "median_ms" in rec else ""))
            except Exception as exc:                                   # noqa: BLE001 - this torch / cuBLAS lacks it
                rec.update(ok=False, unsupported=True, error=f"{type(exc).__name__}: {str(exc)[:300]}")
                log(f"fp8 {what} {rec['variant']:32s} {M}x{N}x{K}: not run ({rec['error'][:120]})")
            recs.append(rec)
        for variant in variants:
            v = cap.variant(variant)
            tm, tn = cap.tile_counts(v, M, N)
            rec = {"kind": f"fp8_{what}", "variant": variant, "M": M, "N": N, "K": K, "dtype": v.dtype, "bm": v.bm,
                   "bn": v.bn, "bk": v.bk, "stages": v.stages, "tma_store": v.tma_store, "cluster": v.cluster,
                   "stagger": v.stagger, "scale_lead": v.scale_lead, "smem_bytes": v.smem_bytes, "tiles": tm * tn}
            try:
                vsms = _slots(be, variant, sms)
                rec.update(grid=cap.grid_size(v, M, N, vsms))
                rec["waves"] = cap.waves(v, M, N, rec["grid"])
                C = be.fp8_out(M, N)
                fn = be.ours_fp8(variant, Q, C, sms=vsms)
                fn()
                be.sync()
                e, ex = be.errors(C, C, deq), be.errors(C, C, exact)
                rec.update(ok=_fp8_ok(e), max_abs_vs_deq=e["ours_max_abs"], rel_fro_vs_deq=e["ours_rel_fro"],
                           rel_fro_vs_exact=ex["ours_rel_fro"], ref_max_abs=e["ref_max_abs"], nonfinite=e["nonfinite"])
                if shapes and (M, N, K) == tuple(shapes[0]) and what == "time" and M >= 32:
                    rows = list(range(0, 16)) + list(range(M - 16, M))
                    cb = min(5, (N - 1) // 128)
                    qa, sa, qb, sb = be.fp8_host(Q, rows=rows, col_block=cb)
                    want = cap.reference_fp8(qa, qb, sa, sb)
                    got = be.bits(C, rows=rows, cols=(128 * cb, min(N, 128 * cb + 128)))
                    rec.update(model_sample=f"rows {rows[0]}-{rows[15]}, {rows[16]}-{rows[-1]}; columns "
                                            f"{128 * cb}-{128 * cb + 127}", model_mismatches=int((got != want).sum()))
                    rec["ok"] = rec["ok"] and rec["model_mismatches"] == 0
                if what == "time":
                    rec.update(_timed(be, fn, warmup, repeats, flop))
                    ref_mode = "block" if "block" in base else "tensor"
                    rec.update(cublas_bf16_ms=base.get("cublas_bf16"), cublas_fp8_ms={m: base[m] for m in CUBLAS_FP8
                                                                                       if m in base},
                               ratio_cublas_fp8_mode=ref_mode,
                               ratio_cublas_fp8=(base[ref_mode] / rec["median_ms"]) if ref_mode in base else None,
                               ratio_cublas_fp8_best=(min(base[m] for m in CUBLAS_FP8 if m in base) / rec["median_ms"])
                               if any(m in base for m in CUBLAS_FP8) else None,
                               ratio_cublas_bf16=(base["cublas_bf16"] / rec["median_ms"]) if "cublas_bf16" in base
                               else None)
                log(f"fp8 {what} {variant:32s} {M}x{N}x{K}: rel err {rec['rel_fro_vs_deq']:.2e} (own inputs), "
                    f"{rec['rel_fro_vs_exact']:.2e} (exact)"
                    + (f"  {rec['median_ms']:.3f} ms {rec['tflops']:.0f} TFLOP/s" if what == "time" else "")
                    + ("" if rec["ok"] else "  WRONG OUTPUT"))
            except Exception as exc:                                   # noqa: BLE001
                traceback.print_exc()
                rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
                log(f"fp8 {what} {variant:32s} {M}x{N}x{K}: FAILED {rec['error']}")
            recs.append(rec)
        save(recs)
    return recs


def main(argv=None, backend=None, shapes=None, checks=None, log=print, variants=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="data folder to write l08/gemm_bench.json into (default: the repo's)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="only 4096³ and the ragged checks, and (unless --variants "
                    "says otherwise) only the default variant, its 128-column partner and the first cooperative form")
    ap.add_argument("--variants", default=None, help="comma-separated variants (default: all of VARIANTS)")
    ap.add_argument("--shapes", default=None, help="comma-separated MxNxK shapes to time (default: SHAPES; with "
                    "--quick its first)")
    ap.add_argument("--bias-relu", action="store_true", help="the bias + ReLU epilogue: checks and its time at "
                    "8192^3 next to the plain one (default variants: EPI_VARIANTS; dataset l08/gemm_bench_epilogue)")
    ap.add_argument("--fp8", action="store_true", help="the FP8 form against cuBLAS FP8 (default variants: "
                    "FP8_VARIANTS; dataset l08/gemm_bench_fp8)")
    ap.add_argument("--name", default=None, help="dataset name under the data folder (default: %s; with --bias-relu "
                    "or --fp8 their own); "
                    % DATASET + 
                    "a second process with other --variants keeps a fault of one variant (a sticky CUDA error "
                    "poisons its process) from costing the other's records")
    args = ap.parse_args(argv)
    if args.repeats < 20 and backend is None:
        ap.error("--repeats: the median of at least 20 launches")
    if args.bias_relu and args.fp8:
        ap.error("--bias-relu and --fp8 are separate runs (separate datasets)")
    mode = "fp8" if args.fp8 else "epilogue" if args.bias_relu else "bf16"
    if args.name is None:
        args.name = {"bf16": DATASET, "epilogue": "l08/gemm_bench_epilogue", "fp8": "l08/gemm_bench_fp8"}[mode]
    t0 = time.time()
    be = backend if backend is not None else TorchCuda()
    sms = be.sm_count()
    if shapes is None and args.shapes:
        shapes = parse_shapes(ap, args.shapes)
    shapes = shapes if shapes is not None else (SHAPES[:1] if args.quick else SHAPES)
    from h100lab.design import capstone as cap
    known = cap.FP8_VARIANTS if mode == "fp8" else cap.VARIANTS
    if variants is None:
        if args.variants:
            variants = tuple(args.variants.split(","))
        elif mode == "fp8":
            variants = FP8_VARIANTS
        elif mode == "epilogue":
            variants = EPI_VARIANTS
        elif args.quick:
            variants = tuple(dict.fromkeys((cap.DEFAULT, *cap.TILE_CANDIDATES, "cooperative")))
        else:
            variants = VARIANTS
    checks = checks if checks is not None else {"bf16": CHECKS, "epilogue": EPI_CHECKS, "fp8": FP8_CHECKS}[mode]
    unknown = [v for v in variants if v not in known]
    if unknown:
        ap.error(f"--variants: unknown {unknown}; known: {sorted(known)}")
    cmd = "PYTHONPATH=. python3 benchmarks/bench_gemm.py " + " ".join(argv if argv is not None else sys.argv[1:])
    meta = be.metadata(cmd.strip())
    notes = {"bf16": "ours: C = alpha*A*B^T + beta*C, A MxK and B NxK bf16 K-major, f32 accumulate, bf16 out; "
                     "cuBLAS: torch.matmul(A, B.T) bf16 in the same run; CUDA events, median of repeats",
             "epilogue": "ours: C = relu(alpha*A*B^T + beta*C + bias) fused (bias: bf16 per column); cuBLAS: "
                         "torch.addmm(bias, A, B.T) then relu_, and torch._addmm_activation (cuBLASLt bias+ReLU "
                         "epilogue); plain epilogues timed beside them; CUDA events, median of repeats",
             "fp8": "ours: C = alpha * sum_kb (A_kb B_kb^T) sa sb, A MxK and B NxK e4m3 K-major, sa per 1x128 and sb "
                    "per 128x128 block, two-level accumulation per 128-K block, bf16 out; cuBLAS FP8: "
                    "torch._scaled_mm (modes in CUBLAS_FP8, what ran recorded per record) and cuBLAS bf16 "
                    "(torch.matmul) in the same run; CUDA events, median of repeats"}
    meta.update(kernel="h100lab/cuda/kernels/l08_gemm.cu", variants=list(variants), mode=mode, note=notes[mode])
    if args.out:
        os.environ["H100LAB_DATA"] = str(Path(args.out).resolve())
    recs: list[dict] = []
    save = dataset_saver(args.name, recs, meta, t0)        # after the checks and after every shape

    if mode == "fp8":
        recs += run_fp8_model_checks(be, FP8_MODEL_CHECKS if backend is None else getattr(be, "fp8_model_checks",
                                                                                           FP8_MODEL_CHECKS),
                                     sms, log, variants)
        save(False)
        n0 = len(recs)

        def progress(new):                  # after every shape: the records so far go to disk
            del recs[n0:]
            recs.extend(new)
            save(False)
        new = run_fp8(be, checks, shapes, sms, args.warmup, args.repeats, log, variants, save=progress)
        del recs[n0:]
        recs.extend(new)
    elif mode == "epilogue":
        recs += run_checks(be, checks, sms, log, variants, bias_relu=True)
        save(False)
        shape = EPI_SHAPE if backend is None else getattr(be, "epi_shape", EPI_SHAPE)
        recs += run_epilogue_timing(be, shape, sms, args.warmup, args.repeats, log, variants)
    else:
        recs += run_checks(be, checks, sms, log, variants)
        save(False)
        for shape in shapes:
            recs += run_timing(be, [shape], sms, args.warmup, args.repeats, log, variants, seed0=shapes.index(shape))
            save(False)
    path = save(True)
    # cuBLAS's own records (a mode this torch / cuBLAS refuses, or answers wrongly) are references: recorded, not
    # counted as failures of the book's kernel
    return finish(path, recs, t0, log,
                  [r for r in recs if not r.get("ok") and not str(r.get("variant", "")).startswith("cublas_")])


if __name__ == "__main__":
    out = main()
    sys.exit(1 if out["failed"] else 0)
