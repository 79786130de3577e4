"""The capstone GEMM of lesson 8 (``h100lab/cuda/kernels/l08_gemm.cu``): its variants, launch shape, tensor maps,
and the bit-exact answer it must give on the tensor-core model.

``C = alpha·A·Bᵀ + beta·C`` with A (M × K) and B (N × K) both K-major bf16 (cuBLAS's "TN" case: ``A @ B.T`` in
PyTorch), f32 accumulation, C (M × N) row-major bf16. One launch on either backend (:mod:`h100lab.emu` or
:mod:`h100lab.cuda`)::

    v = VARIANTS["cooperative"]
    k = backend.compile_kernel("l08_gemm", options=v.options).function("gemm_bf16")
    launch(backend, k, v, A, B, C, M, N, K, alpha=1.0, beta=0.0, sms=132)

Rules it checks (each raises :class:`GemmShapeError` naming the rule): M, N, K ≥ 1; K a multiple of 8 (a TMA
global stride is a multiple of 16 bytes, CUDA Driver API ``cuTensorMapEncodeTiled``); the grid at most the number
of tiles (a persistent CTA with no tile would only wait).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Variant", "VARIANTS", "DEFAULT", "TILE_CANDIDATES", "GemmShapeError", "THREADS", "check_shape", "tile_counts", "grid_size",
           "tile_choice", "tensor_maps", "c_map", "launch", "reference", "bf16_round", "fma_f32", "flops"]

THREADS = 384                  #: one producer + two consumer warpgroups


class GemmShapeError(ValueError):
    """A GEMM shape or launch the capstone kernel cannot take."""


@dataclass(frozen=True)
class Variant:
    """One compiled form of ``l08_gemm.cu``: ``pingpong`` (``-DPINGPONG=1``), the CTA tile ``bm × bn × bk``
    (``-DBN_TILE``: 256 or 128), the ring depth ``stages`` (``-DSTAGES``) and ``inflight`` (``-DINFLIGHT=1``: one
    wgmma group kept in flight in the mainloop, the previous stage released after ``wgmma.wait_group 1``) and
    ``tma_store`` (``-DTMA_STORE=1``: stmatrix + TMA-store epilogue through two 64 × 64 staging tiles per consumer
    when beta = 0 and N % 8 = 0) and ``cluster`` (``-DCLUSTER=2``: CTA pairs on vertically adjacent tiles, each
    loading half of the shared B tile and multicasting it to both)."""

    name: str
    pingpong: bool
    bm: int
    bn: int
    bk: int
    stages: int
    inflight: bool = False
    tma_store: bool = False
    cluster: int = 1

    @property
    def options(self) -> tuple[str, ...]:
        return (f"-DPINGPONG={int(self.pingpong)}", f"-DSTAGES={self.stages}", f"-DBN_TILE={self.bn}",
                f"-DINFLIGHT={int(self.inflight)}", f"-DTMA_STORE={int(self.tma_store)}", f"-DCLUSTER={self.cluster}")

    @property
    def epi_bytes(self) -> int:
        """Staging tiles of the TMA-store epilogue: 2 per consumer warpgroup, 64 × 64 bf16 each."""
        return 2 * 2 * 64 * 64 * 2 if self.tma_store else 0

    @property
    def a_bytes(self) -> int:
        return self.bm * self.bk * 2

    @property
    def b_bytes(self) -> int:
        return self.bn * self.bk * 2

    @property
    def stage_bytes(self) -> int:
        """Bytes one ring stage holds (the ``expect_tx`` count: OOB-filled elements count too)."""
        return self.a_bytes + self.b_bytes

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory to launch with: 1024 B of slack to align the 128B-swizzled tiles, the ring,
        the staging tiles of the TMA-store epilogue and 2S + 2 mbarriers of 8 B."""
        return 1024 + self.stages * self.stage_bytes + self.epi_bytes + 8 * (2 * self.stages + 2)


VARIANTS = {
    "cooperative": Variant("cooperative", False, 128, 256, 64, 4),
    "pingpong": Variant("pingpong", True, 64, 256, 64, 5),
    # the switches of issue 17, measured next to the two above in one run (benchmarks/bench_gemm.py)
    "cooperative_inflight": Variant("cooperative_inflight", False, 128, 256, 64, 4, True),
    "cooperative_n128": Variant("cooperative_n128", False, 128, 128, 64, 7, False),
    "cooperative_n128_inflight": Variant("cooperative_n128_inflight", False, 128, 128, 64, 7, True),
    "pingpong_inflight": Variant("pingpong_inflight", True, 64, 256, 64, 5, True),
    "pingpong_n128_inflight": Variant("pingpong_n128_inflight", True, 128, 128, 64, 7, True),
    "cooperative_inflight_tmastore": Variant("cooperative_inflight_tmastore", False, 128, 256, 64, 4, True, True),
    "cooperative_n128_inflight_tmastore": Variant("cooperative_n128_inflight_tmastore", False, 128, 128, 64, 6, True,
                                                  True),
    # not yet on silicon: the TMA-store epilogue without INFLIGHT (which cost the cooperative mainloop at 16384³)
    "cooperative_tmastore": Variant("cooperative_tmastore", False, 128, 256, 64, 4, False, True),
    "cooperative_inflight_cluster2": Variant("cooperative_inflight_cluster2", False, 128, 256, 64, 4, True, False, 2),
    "cooperative_n128_inflight_cluster2": Variant("cooperative_n128_inflight_cluster2", False, 128, 128, 64, 7, True,
                                                  False, 2),
}


#: the variant the book runs unless a shape asks for another; and the (large, small) tile pair :func:`tile_choice`
#: picks from per shape — both decided by the H200's data (data/l08/gemm_bench_tmastore.json, benchmarks/
#: bench_gemm.py): the stmatrix + TMA-store epilogue was the fastest variant measured at 4096³, 8192³, 16384³ and
#: 1408 × 3072 × 8192 in its run, its 128 × 128 form at the two-wave 1280 × 3840 × 8192, which is what the wave model
#: picks (tests/test_l08_bench.py replays this from the data). The cluster-of-2 variants are not measured on silicon.
DEFAULT = "cooperative_inflight_tmastore"
TILE_CANDIDATES = ("cooperative_inflight_tmastore", "cooperative_n128_inflight_tmastore")


def check_shape(M: int, N: int, K: int) -> None:
    """Raise :class:`GemmShapeError` unless the kernel takes (M, N, K)."""
    for name, v in (("M", M), ("N", N), ("K", K)):
        if int(v) != v or v < 1:
            raise GemmShapeError(f"{name} = {v}: GEMM extents are positive integers")
    if K % 8:
        raise GemmShapeError(f"K = {K}: A and B rows are K bf16 elements and a TMA global stride must be a multiple "
                             "of 16 bytes (cuTensorMapEncodeTiled), so K must be a multiple of 8")
    if max(M, N, K) >= 2 ** 31:
        raise GemmShapeError("extents are passed as int: each must be below 2^31")


def tile_counts(v: Variant, M: int, N: int) -> tuple[int, int]:
    """(tiles along M, tiles along N): ceil(M / bm), ceil(N / bn)."""
    return -(-M // v.bm), -(-N // v.bn)


def grid_size(v: Variant, M: int, N: int, sms: int) -> int:
    """The persistent grid: min(SMs, tiles) CTAs (one CTA per SM: the ring takes most of the shared memory); with
    clusters of 2, twice min(SMs // 2, tile pairs) (pairs: ceil(tiles along M / 2) × tiles along N)."""
    tm, tn = tile_counts(v, M, N)
    if v.cluster == 2:
        return 2 * max(1, min(int(sms) // 2, -(-tm // 2) * tn))
    return max(1, min(int(sms), tm * tn))


def tile_choice(M: int, N: int, sms: int = 132, candidates=None, margin: float = 0.1) -> str:
    """The variant a wave model picks for an M × N output: each candidate costs waves × bm × bn (a persistent CTA
    takes ceil(tiles / grid) tiles one after another, each in time ∝ its area); the first candidate (the largest
    tile, the most efficient per tile) stays unless another costs at least ``margin`` less. [model: per-tile
    efficiency differences beyond ``margin`` are not modelled; benchmarks/bench_gemm.py records the measured pick
    next to this one.]"""
    candidates = TILE_CANDIDATES if candidates is None else tuple(candidates)

    def cost(name):
        v = VARIANTS[name]
        tm, tn = tile_counts(v, M, N)
        grid = grid_size(v, M, N, sms)
        return -(-(tm * tn) // grid) * v.bm * v.bn
    first = candidates[0]
    best = min(candidates, key=cost)
    return best if cost(best) <= (1 - margin) * cost(first) else first


def _addr(x) -> int:
    return int(x) if isinstance(x, (int, np.integer)) else int(x.ptr)


def tensor_maps(backend, v: Variant, A, B, M: int, N: int, K: int):
    """The two tensor maps (A: dims {K, M}, box {64, bm}; B: dims {K, N}, box {64, bn / cluster}; bf16, SWIZZLE_128B, zero
    OOB fill) on ``backend`` (h100lab.emu or h100lab.cuda); ``A``/``B`` are device arrays or addresses."""
    check_shape(M, N, K)
    common = dict(element_strides=[1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_128B",
                  oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE", l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_L2_256B")
    ma = backend.encode_tiled("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2, _addr(A), [K, M], [2 * K], [v.bk, v.bm],
                              **common)
    mb = backend.encode_tiled("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2, _addr(B), [K, N], [2 * K], [v.bk, v.bn // v.cluster],
                              **common)
    return ma, mb


def c_map(backend, v: Variant, C, M: int, N: int, beta: float):
    """(tensor map, flag) for the TMA-store epilogue: C (dims {N, M}, box {64, 64}, bf16, SWIZZLE_128B) and 1 when
    it is used (beta = 0 and 2N bytes a multiple of 16, cuTensorMapEncodeTiled); else a small unused map and 0 (the
    kernel then stores directly)."""
    if beta == 0 and N % 8 == 0:
        return backend.encode_tiled("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2, _addr(C), [N, M], [2 * N], [64, 64],
                                    element_strides=[1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_128B",
                                    oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"), 1
    return backend.encode_tiled("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2, _addr(C), [8, 1], [16], [8, 1],
                                element_strides=[1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_NONE",
                                oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"), 0


def launch(backend, kernel, v: Variant, A, B, C, M: int, N: int, K: int, *, alpha: float = 1.0, beta: float = 0.0,
           sms: int = 132, group: int = 8, raster: int = 0, maps=None, **options):
    """Launch the capstone on ``backend``: ``C`` is a device array or an address (np.uint64 / int). ``group``:
    tiles per raster group (≥ 1); ``raster`` 0 walks M inside a group, 1 walks N. ``options`` go to the
    emulator's launch (seed, racecheck, ...). ``maps``: (map_a, map_b) from :func:`tensor_maps`, plus
    :func:`c_map`'s pair for a ``tma_store`` variant (made here when absent). Returns what ``backend.launch``
    returns."""
    check_shape(M, N, K)
    if group < 1 or raster not in (0, 1):
        raise GemmShapeError(f"group = {group}, raster = {raster}: a raster group holds >= 1 tiles and the raster "
                             "direction is 0 (along M) or 1 (along N)")
    maps = tuple(maps) if maps is not None else tensor_maps(backend, v, A, B, M, N, K)
    ma, mb = maps[:2]
    c_arg = np.uint64(_addr(C)) if isinstance(C, (int, np.integer)) else C
    extra = ()
    if v.tma_store:
        mc, flag = maps[2] if len(maps) > 2 else c_map(backend, v, C, M, N, beta)
        extra = (mc, np.int32(flag))
    grid = grid_size(v, M, N, sms)
    kernel.set_max_dynamic_shared_memory(v.smem_bytes)    # above 48 KiB a kernel opts in (CUDA C++ Guide)
    if v.cluster > 1:
        options = dict(options, cluster=(v.cluster, 1, 1))
    return backend.launch(kernel, grid, THREADS, ma, mb, c_arg, np.int32(M), np.int32(N), np.int32(K),
                          np.float32(alpha), np.float32(beta), np.int32(group), np.int32(raster), *extra,
                          shared_mem=v.smem_bytes, **options)


def flops(M: int, N: int, K: int) -> int:
    """2·M·N·K floating-point operations."""
    return 2 * int(M) * int(N) * int(K)


# ------------------------------------------------------------------------------------------------
# the answer, bit for bit

def bf16_round(x) -> np.ndarray:
    """``cvt.rn.bf16.f32`` on float32 values: round to nearest even (overflow to ±inf), every NaN → 0x7FFF as
    the H200 converts (data/l01/cvt_bits; PTX ISA §9.7.9.21)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, np.float32)), np.uint16(0x7FFF), r)


def fma_f32(a, b, c) -> np.ndarray:
    """``fma.rn.f32`` (``__fmaf_rn``, PTX ISA §9.7.3.6): a·b + c rounded once to nearest even. a·b is exact in
    float64; the float64 sum's error is recovered by TwoSum and decides the f32 rounding when the sum lies exactly
    on an f32 midpoint."""
    a, b, c = (np.asarray(z, np.float32).astype(np.float64) for z in (a, b, c))
    with np.errstate(invalid="ignore", over="ignore"):
        p = a * b
        s = p + c
        bv = s - p
        err = (p - (s - bv)) + (c - bv)
        f = s.astype(np.float32)
        lo = np.where(f.astype(np.float64) > s, np.nextafter(f, np.float32(-np.inf)), f)
        hi = np.nextafter(lo, np.float32(np.inf))
        mid = (lo.astype(np.float64) + hi.astype(np.float64)) / 2
        tie = np.isfinite(s) & (s == mid) & (err != 0)
        return np.where(tie, np.nextafter(s, s + err), s).astype(np.float32)


def reference(A, B, C=None, *, alpha: float = 1.0, beta: float = 0.0, bk: int = 64) -> np.ndarray:
    """What the kernel writes, as raw bf16 bits: per output, ``wgmma`` k16 steps chained on
    :func:`h100lab.tensorcore.mma` (scale-d = 0 on the first; K zero-padded to a multiple of ``bk`` like the TMA's OOB
    fill), then ``alpha·acc`` (``mul.rn.f32``), ``+ beta·C`` by ``fma.rn.f32`` when beta ≠ 0, ``cvt.rn.bf16``.
    ``A``: (M, K) raw bf16 bits, ``B``: (N, K), ``C``: (M, N) raw bf16 bits (read only when beta ≠ 0)."""
    from ..tensorcore import mma

    A = np.asarray(A, np.uint16)
    B = np.asarray(B, np.uint16)
    M, K = A.shape
    N = B.shape[0]
    Kp = -(-K // bk) * bk
    Ap = np.zeros((M, Kp), np.uint16)
    Ap[:, :K] = A
    Bp = np.zeros((Kp, N), np.uint16)
    Bp[:K] = B.T
    acc = None
    for k in range(0, Kp, 16):
        acc = mma(Ap[:, k:k + 16], Bp[k:k + 16], acc, atype="bf16", dtype="f32", scale_d=k > 0)
    v = (np.float32(alpha) * acc.view(np.float32)).astype(np.float32)
    if beta != 0:
        cold = (np.asarray(C, np.uint16).astype(np.uint32) << 16).view(np.float32)
        v = fma_f32(np.float32(beta), cold, v)
    return bf16_round(v)
