"""Two-level accumulation of FP8 GEMMs: the tensor core sums a window of wgmmas into a partial sum, the CUDA cores
promote it to an f32 accumulator with the block scales (DeepSeek-V3 §3.3.2 "Increasing accumulation precision";
DeepGEMM's promotion every 128 K-elements).

The tensor core's FP8 accumulation keeps 13 fraction bits (:func:`h100lab.tensorcore.numerics.default_model`:
every term cut 13 bits below the largest, an f32 result truncated to 13 fraction bits — measured on the H200,
data/l06/numerics); a chain of wgmmas feeds the previous D back as one more term, so the error of a long
chain grows with K. Promoting every ``interval`` wgmmas (``interval × 32`` K-elements) restarts the partial sum
(scale-d = 0) and adds it to a true f32 accumulator with one rounding: ``acc = fma(P, sa·sb, acc)`` —
``cvt``-free, ``fma.rn.f32`` of PTX ISA §9.7.3.6 with the product of the two scales rounded to f32 first
(``mul.rn.f32``), exactly as ``l07_fp8_gemm.cu`` does it.
"""
from __future__ import annotations

import numpy as np

__all__ = ["fma_f32", "fp8_gemm", "fp8_gemm_exact", "promotion_error", "k_blocks", "accumulation_error"]

K_STEP = 32


def fma_f32(a, b, c) -> np.ndarray:
    """``fma.rn.f32 d, a, b, c`` on float32 arrays: a·b + c rounded once to nearest even (PTX ISA §9.7.3.6).

    a·b is exact in float64 (24 + 24 bits); the sum with c is made exact with TwoSum and rounded once to f32
    (a float64 sum sitting exactly on an f32 rounding midpoint is nudged toward the TwoSum remainder)."""
    a = np.asarray(a, np.float32).astype(np.float64)
    b = np.asarray(b, np.float32).astype(np.float64)
    c = np.asarray(c, np.float32).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        x = a * b
        s = x + c
        bb = s - x
        err = (x - (s - bb)) + (c - bb)
        f = s.astype(np.float32)
        # midpoint test: s exactly halfway between two f32 neighbours
        lo = np.where(f.astype(np.float64) > s, np.nextafter(f, np.float32(-np.inf)), f)
        hi = np.nextafter(lo, np.float32(np.inf))
        mid = (lo.astype(np.float64) + hi.astype(np.float64)) / 2
        tie = np.isfinite(s) & (s == mid) & (err != 0)
        s2 = np.where(tie, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        out = s2.astype(np.float32)
    return out


def k_blocks(K: int, interval: int) -> int:
    """Scale / promotion windows along K: K / (32 · interval); raises when they do not tile K."""
    if interval < 1 or K % (K_STEP * interval):
        raise ValueError(f"K = {K} is not a whole number of promotion windows of {interval} × 32 K-elements")
    return K // (K_STEP * interval)


def fp8_gemm(a, b, sa, sb, *, atype: str = "e4m3", btype: str = "e4m3", interval: int = 4, model=None) -> np.ndarray:
    """The f32 result (float32 (M, N)) of an FP8 GEMM with two-level accumulation, bit for bit.

    ``a``: (M, K) raw fp8 bytes (K-major), ``b``: (N, K) raw fp8 bytes (B stored N × K, K-major); ``sa``: (M, W)
    or (W,) f32 dequantisation scales of A per row and window, ``sb``: (N, W) or (W,) of B, W = K / (32·interval).
    Each window chains ``interval`` m64nNk32 wgmmas (:func:`h100lab.tensorcore.numerics.mma`, scale-d 0 on the
    first) into P, then ``acc = fma(P, sa·sb, acc)`` in f32. ``interval = K/32`` with one window is the
    one-level (tensor-core only) accumulation, followed by one scaling."""
    from .numerics import mma

    a = np.asarray(a, np.uint8)
    b = np.asarray(b, np.uint8)
    M, K = a.shape
    N = b.shape[0]
    W = k_blocks(K, interval)
    sa = np.broadcast_to(np.asarray(sa, np.float32).reshape(-1, W) if np.ndim(sa) > 1 else
                         np.asarray(sa, np.float32)[None, :], (M, W))
    sb = np.broadcast_to(np.asarray(sb, np.float32).reshape(-1, W) if np.ndim(sb) > 1 else
                         np.asarray(sb, np.float32)[None, :], (N, W))
    acc = np.zeros((M, N), np.float32)
    for w in range(W):
        P = None
        for s in range(interval):
            k0 = (w * interval + s) * K_STEP
            P = mma(a[:, k0:k0 + K_STEP], b[:, k0:k0 + K_STEP].T, P, atype=atype, btype=btype, dtype="f32",
                    scale_d=P is not None, model=model)
        scale = (sa[:, w][:, None] * sb[:, w][None, :]).astype(np.float32)     # mul.rn.f32
        acc = fma_f32(P.view(np.float32), scale, acc)
    return acc


def fp8_gemm_exact(a, b, sa, sb, *, atype: str = "e4m3", btype: str = "e4m3", interval: int = 4) -> np.ndarray:
    """The same product in float64 (no tensor-core truncation): the reference the errors are measured against."""
    from .numerics import to_float
    a = np.asarray(a, np.uint8)
    b = np.asarray(b, np.uint8)
    M, K = a.shape
    W = k_blocks(K, interval)
    av = to_float(a, atype) * np.repeat(np.broadcast_to(np.asarray(sa, np.float64).reshape(-1, W), (M, W)),
                                        K // W, axis=1)
    N = b.shape[0]
    bv = to_float(b, btype) * np.repeat(np.broadcast_to(np.asarray(sb, np.float64).reshape(-1, W), (N, W)),
                                        K // W, axis=1)
    return av @ bv.T


def promotion_error(a, b, sa, sb, intervals, *, atype="e4m3", btype="e4m3") -> dict[int, float]:
    """Relative error ‖model − exact‖₂ / ‖exact‖₂ of :func:`fp8_gemm` for each promotion interval (the scales
    must be per-window for the smallest interval and are repeated for the larger ones by the caller)."""
    out = {}
    for it in intervals:
        got = fp8_gemm(a, b, sa[it], sb[it], atype=atype, btype=btype, interval=it).astype(np.float64)
        ref = fp8_gemm_exact(a, b, sa[it], sb[it], atype=atype, btype=btype, interval=it)
        out[it] = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))
    return out


def accumulation_error(K: int, interval: int, *, seed: int = 0, m: int = 64, n: int = 16, atype: str = "e4m3",
                       btype: str = "e4m3") -> float:
    """Max relative error (max |model − exact| / max |exact|) of an m × n × K FP8 GEMM of positive, per-tensor
    quantised random inputs, promoted every ``interval`` wgmmas (``interval = K/32``: one level). The error of
    the tensor-core accumulation alone: the inputs are the quantised values, so quantisation error is excluded."""
    from .quant import quantize
    rng = np.random.default_rng(seed)
    x = np.abs(rng.standard_normal((m, K))).astype(np.float32)
    w = np.abs(rng.standard_normal((n, K))).astype(np.float32)
    qa, sa = quantize(x, atype, "tensor")
    qb, sb = quantize(w, btype, "tensor")
    W = k_blocks(K, interval)
    s_a, s_b = np.full(W, sa[0, 0], np.float32), np.full(W, sb[0, 0], np.float32)
    got = fp8_gemm(qa, qb, s_a, s_b, atype=atype, btype=btype, interval=interval).astype(np.float64)
    ref = fp8_gemm_exact(qa, qb, s_a, s_b, atype=atype, btype=btype, interval=interval)
    return float(np.abs(got - ref).max() / np.abs(ref).max())
