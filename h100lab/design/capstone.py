"""The capstone GEMM of lesson 8 (``h100lab/cuda/kernels/l08_gemm.cu``): its variants, launch shape, tensor maps,
and the bit-exact answer it must give on the tensor-core model.

``C = alpha·A·Bᵀ + beta·C`` with A (M × K) and B (N × K) both K-major bf16 (cuBLAS's "TN" case: ``A @ B.T`` in
PyTorch), f32 accumulation, C (M × N) row-major bf16. One launch on either backend (:mod:`h100lab.emu` or
:mod:`h100lab.cuda`)::

    v = VARIANTS["cooperative"]
    k = backend.compile_kernel("l08_gemm", options=v.options).function("gemm_bf16")
    launch(backend, k, v, A, B, C, M, N, K, alpha=1.0, beta=0.0, sms=132)

The epilogue fuses, in :data:`h100lab.design.epilogue.ORDER`, ``alpha`` → ``beta_c`` → ``bias`` (a bf16 vector of
N, per column: ``launch(..., bias=dev_bias)``) → ``activation`` (ReLU: ``relu=True``) → bf16.

The FP8 form (:data:`FP8_VARIANTS`, ``-DFP8=1``, entry ``gemm_e4m3``): A (M × K) and B (N × K) e4m3 bytes with
per-block dequantisation scales as DeepSeek-V3 / DeepGEMM — ``sa`` (M × ⌈K/128⌉, one f32 per row of A per 128-K
block) and ``sb`` (⌈N/128⌉ × ⌈K/128⌉, one per 128 × 128 block of B) — two-level accumulation per 128-K block
(:func:`h100lab.tensorcore.accumulate.fp8_gemm`, interval 4), bf16 out::

    v = FP8_VARIANTS[FP8_DEFAULT]              # or fp8_tile_choice(M, N)
    k = backend.compile_kernel("l08_gemm", options=v.options).function(v.entry)
    dsa, dsb = (backend.to_device(x) for x in fp8_scales(sa, sb))
    launch(backend, k, v, A8, B8, C, M, N, K, scales=(dsa, dsb))

Its tile: 128 × 192 (``-DBN_TILE=192``) by default. The 128 × 128 form ran at 847-921 TFLOP/s at 8192³ against cuBLAS
FP8's 1244-1346; the hypothesis that shared-memory bandwidth held it there (:func:`h100lab.design.tiles.
smem_bytes_per_clock`: 160 B/clk needed at the tensor rate, 128 available) led to the 128 × 192 and 256 × 128 tiles
(139 and 144 B/clk), which the H200 ran at 1202 and 1114 TFLOP/s (data/l08/gemm_bench_fp8_n192, _m256). The wider
tiles are confirmed; the mechanism is not: each gained more than lifting a shared-memory bound could give (×1.2-1.3
against ×1.15 / ×1.11), and 128 × 128 ran far under the 80 % of the FP8 peak its bound allows — the per-stage and
per-block fixed costs the wider tiles also cut per FLOP remain the suspect (tests/test_l08_fp8_data.py). One of
them, the consumers' scale loads (the first form's end-of-block register copies wait for the loads of the same
block, so a block lasts at least one load round trip), is lifted by ``scale_lead`` 2 or 3 (a register ring,
``-DSCALE_LEAD``): the 128 × 128 tile gained 2-8 % with it, the wider tiles lost 2-7 % at every shape
(data/l08/gemm_bench_fp8_lead), so the default keeps lead 1.

Rules it checks (each raises :class:`GemmShapeError` naming the rule): M, N, K ≥ 1; K a multiple of 8 (16 for
e4m3: a TMA global stride is a multiple of 16 bytes, CUDA Driver API ``cuTensorMapEncodeTiled``); the grid at most
the number of tiles (a persistent CTA with no tile would only wait); scales given exactly for an FP8 variant.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Variant", "VARIANTS", "FP8_VARIANTS", "DEFAULT", "FP8_DEFAULT", "TILE_CANDIDATES", "FP8_TILE_CANDIDATES",
           "GemmShapeError", "THREADS", "variant", "check_shape", "tile_counts", "grid_size", "waves", "tile_choice",
           "fp8_tile_choice", "tensor_maps", "c_map", "launch",
           "reference", "reference_fp8", "quantize_fp8", "fp8_scales", "epilogue_ops", "bf16_round", "fma_f32",
           "flops"]

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
    loading half of the shared B tile and multicasting it to both) and ``dtype`` of A and B (``"bf16"``, or
    ``"e4m3"``: ``-DFP8=1``, per-block scales and two-level accumulation, entry ``gemm_e4m3``; ``bk`` counts
    elements, 128 bytes of K per stage either way) and ``stagger`` (FP8, ``-DSTAGGER=1``: the two consumers issue
    their 128-K blocks in turn, so one promotes while the other's wgmmas run) and ``remote_cta_scope`` (cluster
    of 2, ``-DREMOTE_CTA_SCOPE=1``: the remote empty-barrier arrive with the default .release.cta semantics instead
    of .release.cluster) and ``scale_lead`` (FP8, ``-DSCALE_LEAD=n``: k-blocks ahead a consumer fetches its block
    scales — 1, the first form: loaded after the block's wgmmas are issued and copied into place at the block's end,
    a copy that waits for the load, so every 128-K block lasts at least one global-load round trip; 2 or 3: a
    register ring of that depth, the k-loop unrolled by it, each load issued after the promotion that last read its
    registers and first read ``scale_lead`` blocks later; the arithmetic, so the output, is the same)."""

    name: str
    pingpong: bool
    bm: int
    bn: int
    bk: int
    stages: int
    inflight: bool = False
    tma_store: bool = False
    cluster: int = 1
    dtype: str = "bf16"
    stagger: bool = False
    remote_cta_scope: bool = False
    scale_lead: int = 1

    @property
    def options(self) -> tuple[str, ...]:
        fp8 = ("-DFP8=1",) if self.dtype == "e4m3" else ()     # the bf16 forms keep their options (and PTX)
        fp8 += ("-DSTAGGER=1",) if self.stagger else ()
        fp8 += ("-DREMOTE_CTA_SCOPE=1",) if self.remote_cta_scope else ()
        fp8 += ("-DBM_TILE=256",) if self.bm == 256 and not self.pingpong else ()    # FP8 only (the kernel checks)
        fp8 += (f"-DSCALE_LEAD={self.scale_lead}",) if self.scale_lead != 1 else ()   # FP8 only (the kernel checks)
        return (f"-DPINGPONG={int(self.pingpong)}", f"-DSTAGES={self.stages}", f"-DBN_TILE={self.bn}",
                f"-DINFLIGHT={int(self.inflight)}", f"-DTMA_STORE={int(self.tma_store)}",
                f"-DCLUSTER={self.cluster}") + fp8

    @property
    def entry(self) -> str:
        """The kernel's entry point: ``gemm_bf16``, or ``gemm_e4m3`` for the FP8 form."""
        return "gemm_e4m3" if self.dtype == "e4m3" else "gemm_bf16"

    @property
    def elem_bytes(self) -> int:
        """Bytes per element of A and B: 2 (bf16) or 1 (e4m3)."""
        return 1 if self.dtype == "e4m3" else 2

    @property
    def epi_bytes(self) -> int:
        """Staging tiles of the TMA-store epilogue: 2 per consumer warpgroup, 64 × 64 bf16 each."""
        return 2 * 2 * 64 * 64 * 2 if self.tma_store else 0

    @property
    def a_bytes(self) -> int:
        return self.bm * self.bk * self.elem_bytes

    @property
    def b_bytes(self) -> int:
        return self.bn * self.bk * self.elem_bytes

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
    # the TMA-store epilogue without INFLIGHT (INFLIGHT without the TMA store cost the cooperative mainloop at 16384³)
    "cooperative_tmastore": Variant("cooperative_tmastore", False, 128, 256, 64, 4, False, True),
    "cooperative_inflight_cluster2": Variant("cooperative_inflight_cluster2", False, 128, 256, 64, 4, True, False, 2),
    "cooperative_n128_inflight_cluster2": Variant("cooperative_n128_inflight_cluster2", False, 128, 128, 64, 7, True,
                                                  False, 2),
    # the cluster pairs ran well below the default on the H200 (data/l08/gemm_bench_cluster2); with the cheaper
    # remote arrive (one per consumer warp and stage) and with the TMA-store epilogue of the default
    "cooperative_inflight_tmastore_cluster2_ctascope": Variant("cooperative_inflight_tmastore_cluster2_ctascope",
                                                               False, 128, 256, 64, 4, True, True, 2,
                                                               remote_cta_scope=True),
    "cooperative_inflight_tmastore_cluster2": Variant("cooperative_inflight_tmastore_cluster2", False, 128, 256, 64,
                                                      4, True, True, 2),
}


#: the variant the book runs unless a shape asks for another; and the (large, small) tile pair :func:`tile_choice`
#: picks from per shape — both decided by the H200's data (data/l08/gemm_bench_tmastore.json, benchmarks/
#: bench_gemm.py): the stmatrix + TMA-store epilogue was the fastest variant measured at 4096³, 8192³, 16384³ and
#: 1408 × 3072 × 8192 in its run, its 128 × 128 form at the two-wave 1280 × 3840 × 8192, which is what the wave model
#: picks (tests/test_l08_bench.py replays this from the data). A later run (data/l08/gemm_bench_s4) kept the choice:
#: cooperative_tmastore (no INFLIGHT) came within 1 % of the default at every shape, 16384³ included; the cluster-of-2
#: variants (data/l08/gemm_bench_cluster2) ran correctly but slower than the default at every shape — the remote
#: empty-barrier arrive's .release.cluster fence, one per consumer warp and stage: without it (``_ctascope``,
#: data/l08/gemm_bench_cluster2_ctascope) a pair matches the default at the square shapes, yet gains nothing over it
#: and loses a wave where the tile rows are odd (1408 × 3072: :func:`waves`), so the default stays.
DEFAULT = "cooperative_inflight_tmastore"

#: the FP8 (e4m3) forms, kept apart from :data:`VARIANTS` (whose entries the bf16 tile calculator of
#: h100lab.design.tiles checks): cooperative tiles of 128 K-bytes per stage — 128 × 128 (a 64 × 128 accumulator and a
#: 64 × 128 partial sum per consumer thread: 128 of its 232 registers; 7 stages fill 227 KiB, 6 with the TMA-store
#: staging tiles), 128 × 192 (96 + 96 registers; 5 or 4 stages) and 256 × 128 (two 64 × 128 accumulators and one
#: partial sum; 4 stages) — direct or TMA-store epilogue, and B multicast across CTA pairs.
#: the FP8 form the book runs: the 128 × 192 tile with the TMA-store epilogue, the fastest FP8 form measured at 4096³,
#: 8192³, 16384³ and 1280 × 3840 × 8192 (data/l08/gemm_bench_fp8_n192: 1202 TFLOP/s at 8192³, 97 % of cuBLAS FP8
#: with the same block scales, 89 % of cuBLAS with per-tensor scales; the 128 × 128 forms 847-921); at
#: 1408 × 3072 × 8192 its 176 tiles leave the second wave two-thirds idle and the 128 × 128 form is faster, which
#: :func:`fp8_tile_choice` picks (tests/test_l08_fp8_data.py replays both from the data). Before it, the 128 × 128
#: staggered form with the TMA store (data/l08/gemm_bench_fp8_stagger).
FP8_DEFAULT = "fp8_cooperative_n192_tmastore"

FP8_VARIANTS = {
    "fp8_cooperative": Variant("fp8_cooperative", False, 128, 128, 128, 7, dtype="e4m3"),
    "fp8_cooperative_tmastore": Variant("fp8_cooperative_tmastore", False, 128, 128, 128, 6, tma_store=True,
                                        dtype="e4m3"),
    "fp8_cooperative_tmastore_cluster2": Variant("fp8_cooperative_tmastore_cluster2", False, 128, 128, 128, 6,
                                                 tma_store=True, cluster=2, dtype="e4m3"),
    "fp8_cooperative_staggered_tmastore": Variant("fp8_cooperative_staggered_tmastore", False, 128, 128, 128, 6,
                                                  tma_store=True, dtype="e4m3", stagger=True),
    "fp8_cooperative_staggered": Variant("fp8_cooperative_staggered", False, 128, 128, 128, 7, dtype="e4m3",
                                         stagger=True),
    "fp8_cooperative_staggered_tmastore_cluster2_ctascope": Variant(
        "fp8_cooperative_staggered_tmastore_cluster2_ctascope", False, 128, 128, 128, 6, tma_store=True, cluster=2,
        dtype="e4m3", stagger=True, remote_cta_scope=True),
    # 128 x 192 tiles (-DBN_TILE=192, m64n192k32: 96 accumulators + a 96-register partial sum per consumer thread):
    # fewer shared-memory bytes per FLOP than 128 x 128 (h100lab.design.tiles.smem_bytes_per_clock); 40 KB stages,
    # 5 fit 227 KiB, 4 with the TMA-store staging tiles
    "fp8_cooperative_n192_staggered_tmastore": Variant("fp8_cooperative_n192_staggered_tmastore", False, 128, 192,
                                                       128, 4, tma_store=True, dtype="e4m3", stagger=True),
    "fp8_cooperative_n192_tmastore": Variant("fp8_cooperative_n192_tmastore", False, 128, 192, 128, 4,
                                             tma_store=True, dtype="e4m3"),
    "fp8_cooperative_n192_staggered": Variant("fp8_cooperative_n192_staggered", False, 128, 192, 128, 5,
                                              dtype="e4m3", stagger=True),
    "fp8_cooperative_n192": Variant("fp8_cooperative_n192", False, 128, 192, 128, 5, dtype="e4m3"),
    # 256 x 128 tiles (-DBM_TILE=256): each consumer runs two m64 blocks through its one partial sum (2 x 64
    # accumulators + 64); TMA traffic per FLOP as low as a 128 x 256 tile; 48 KB stages, 4 fit either epilogue
    "fp8_cooperative_m256_tmastore": Variant("fp8_cooperative_m256_tmastore", False, 256, 128, 128, 4,
                                             tma_store=True, dtype="e4m3"),
    "fp8_cooperative_m256": Variant("fp8_cooperative_m256", False, 256, 128, 128, 4, dtype="e4m3"),
    # the block scales fetched 2 or 3 k-blocks ahead through a register ring (-DSCALE_LEAD): the first form's
    # end-of-block register copy (and, for B's warp-uniform scales, the R2UR into a uniform register) waits for the
    # load issued in the same block (nvdisasm of -DFP8=1 -DBN_TILE=128 / 192 -DTMA_STORE=1). Measured
    # (data/l08/gemm_bench_fp8_lead): 128 x 128 gains 2-8 % (not at 4096³), 128 x 192 and 256 x 128 lose 2-7 % at
    # every shape -- no new default
    "fp8_cooperative_n192_tmastore_lead2": Variant("fp8_cooperative_n192_tmastore_lead2", False, 128, 192, 128, 4,
                                                   tma_store=True, dtype="e4m3", scale_lead=2),
    "fp8_cooperative_n192_tmastore_lead3": Variant("fp8_cooperative_n192_tmastore_lead3", False, 128, 192, 128, 4,
                                                   tma_store=True, dtype="e4m3", scale_lead=3),
    "fp8_cooperative_tmastore_lead2": Variant("fp8_cooperative_tmastore_lead2", False, 128, 128, 128, 6,
                                              tma_store=True, dtype="e4m3", scale_lead=2),
    "fp8_cooperative_m256_tmastore_lead2": Variant("fp8_cooperative_m256_tmastore_lead2", False, 256, 128, 128, 4,
                                                   tma_store=True, dtype="e4m3", scale_lead=2),
    # the cluster pair with the ring: its .release.cluster fence after wait_group waits for the ring's loads still
    # in flight (issued a block earlier) rather than the block's own (h100lab.validation.l08_fence)
    "fp8_cooperative_tmastore_cluster2_lead2": Variant("fp8_cooperative_tmastore_cluster2_lead2", False, 128, 128, 128,
                                                       6, tma_store=True, cluster=2, dtype="e4m3", scale_lead=2),
}
TILE_CANDIDATES = ("cooperative_inflight_tmastore", "cooperative_n128_inflight_tmastore")
#: the FP8 (large, small) tile pair :func:`fp8_tile_choice` picks from
FP8_TILE_CANDIDATES = ("fp8_cooperative_n192_tmastore", "fp8_cooperative_tmastore")


def variant(name: str) -> Variant:
    """The variant called ``name``, bf16 (:data:`VARIANTS`) or FP8 (:data:`FP8_VARIANTS`)."""
    if name in VARIANTS:
        return VARIANTS[name]
    if name in FP8_VARIANTS:
        return FP8_VARIANTS[name]
    raise KeyError(f"no capstone variant {name!r}; known: {sorted(VARIANTS) + sorted(FP8_VARIANTS)}")


def check_shape(M: int, N: int, K: int, dtype: str = "bf16") -> None:
    """Raise :class:`GemmShapeError` unless the kernel takes (M, N, K) with A and B of ``dtype``."""
    for name, v in (("M", M), ("N", N), ("K", K)):
        if int(v) != v or v < 1:
            raise GemmShapeError(f"{name} = {v}: GEMM extents are positive integers")
    if dtype not in ("bf16", "e4m3"):
        raise GemmShapeError(f"dtype {dtype!r}: the capstone takes bf16 or e4m3 inputs")
    per16 = 16 if dtype == "e4m3" else 8
    if K % per16:
        raise GemmShapeError(f"K = {K}: A and B rows are K {dtype} elements and a TMA global stride must be a "
                             f"multiple of 16 bytes (cuTensorMapEncodeTiled), so K must be a multiple of {per16}")
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


def waves(v: Variant, M: int, N: int, grid: int) -> int:
    """Rounds of work the persistent grid runs: ceil(tiles / grid), or for clusters of 2 ceil(tile pairs / clusters)
    (a pair covers tile rows 2p and 2p + 1, so odd tile rows leave half a pair idle)."""
    tm, tn = tile_counts(v, M, N)
    if v.cluster == 2:
        return -(-(-(-tm // 2) * tn) // max(1, grid // 2))
    return -(-(tm * tn) // max(1, grid))


def tile_choice(M: int, N: int, sms: int = 132, candidates=None, margin: float = 0.1) -> str:
    """The variant a wave model picks for an M × N output: each candidate costs waves × bm × bn (a persistent CTA
    takes ceil(tiles / grid) tiles one after another, each in time ∝ its area); the first candidate (the largest
    tile, the most efficient per tile) stays unless another costs at least ``margin`` less. [model: per-tile
    efficiency differences beyond ``margin`` are not modelled; benchmarks/bench_gemm.py records the measured pick
    next to this one.]"""
    candidates = TILE_CANDIDATES if candidates is None else tuple(candidates)

    def cost(name):
        v = variant(name)
        tm, tn = tile_counts(v, M, N)
        grid = grid_size(v, M, N, sms)
        return -(-(tm * tn) // grid) * v.bm * v.bn
    first = candidates[0]
    best = min(candidates, key=cost)
    return best if cost(best) <= (1 - margin) * cost(first) else first


def fp8_tile_choice(M: int, N: int, sms: int = 132) -> str:
    """:func:`tile_choice` between the FP8 tiles of :data:`FP8_TILE_CANDIDATES` (128 × 192 first, 128 × 128), with
    the margin the shared-memory model grants the wider tile per FLOP: 1 − bound(128 × 128) / bound(128 × 192)
    (h100lab.design.tiles.smem_bytes_per_clock: 0.8 / 0.92 of the tensor rate, a margin of 0.13). [model: the
    measured per-FLOP gain of 128 × 192 at full waves is larger (data/l08/gemm_bench_fp8_n192: ×1.22-1.31 at 8192³
    and 16384³), so this margin keeps the 128 × 192 tile only where it loses at most 13 % of wave area, a
    conservative pick.]"""
    from .tiles import smem_bytes_per_clock

    big, small = (variant(n) for n in FP8_TILE_CANDIDATES)
    margin = 1 - (smem_bytes_per_clock(small.dtype, small.bm, small.bn).bound
                  / smem_bytes_per_clock(big.dtype, big.bm, big.bn).bound)
    return tile_choice(M, N, sms, FP8_TILE_CANDIDATES, margin)


def _addr(x) -> int:
    return int(x) if isinstance(x, (int, np.integer)) else int(x.ptr)


def tensor_maps(backend, v: Variant, A, B, M: int, N: int, K: int):
    """The two tensor maps (A: dims {K, M}, box {bk, bm}; B: dims {K, N}, box {bk, bn / cluster}; bf16, or uint8
    for e4m3 bytes; SWIZZLE_128B, zero OOB fill) on ``backend`` (h100lab.emu or h100lab.cuda); ``A``/``B`` are
    device arrays or addresses."""
    check_shape(M, N, K, v.dtype)
    common = dict(element_strides=[1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_128B",
                  oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE", l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_L2_256B")
    dt = "CU_TENSOR_MAP_DATA_TYPE_UINT8" if v.dtype == "e4m3" else "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
    row = v.elem_bytes * K
    ma = backend.encode_tiled(dt, 2, _addr(A), [K, M], [row], [v.bk, v.bm], **common)
    mb = backend.encode_tiled(dt, 2, _addr(B), [K, N], [row], [v.bk, v.bn // v.cluster], **common)
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


def _ptr(x):
    """A pointer argument: a device array as is, an address (int / np.uint64) as np.uint64, None as nullptr."""
    if x is None:
        return np.uint64(0)
    return np.uint64(_addr(x)) if isinstance(x, (int, np.integer)) else x


def launch(backend, kernel, v: Variant, A, B, C, M: int, N: int, K: int, *, alpha: float = 1.0, beta: float = 0.0,
           sms: int = 132, group: int = 8, raster: int = 0, maps=None, bias=None, relu: bool = False, scales=None,
           **options):
    """Launch the capstone on ``backend``: ``C`` is a device array or an address (np.uint64 / int). ``group``:
    tiles per raster group (≥ 1); ``raster`` 0 walks M inside a group, 1 walks N. ``bias``: N bf16 values (device
    array or address) added per column, None for none; ``relu``: ReLU after the bias. ``scales``: (sa, sb) in the
    kernel's layouts (:func:`fp8_scales`), for an FP8 variant only. ``options`` go to the emulator's launch (seed,
    racecheck, ...). ``maps``: (map_a, map_b) from :func:`tensor_maps`, plus :func:`c_map`'s pair for a
    ``tma_store`` variant (made here when absent). Returns what ``backend.launch`` returns."""
    check_shape(M, N, K, v.dtype)
    if group < 1 or raster not in (0, 1):
        raise GemmShapeError(f"group = {group}, raster = {raster}: a raster group holds >= 1 tiles and the raster "
                             "direction is 0 (along M) or 1 (along N)")
    if (scales is None) != (v.dtype != "e4m3") or (scales is not None and len(scales) != 2):
        raise GemmShapeError(f"{v.name}: an FP8 variant takes scales=(sa, sb) (per-block dequantisation scales), "
                             "a bf16 variant none")
    maps = tuple(maps) if maps is not None else tensor_maps(backend, v, A, B, M, N, K)
    ma, mb = maps[:2]
    c_arg = _ptr(C)
    extra = (_ptr(bias), np.int32(1 if relu else 0))
    if scales is not None:
        extra += (_ptr(scales[0]), _ptr(scales[1]))
    if v.tma_store:
        mc, flag = maps[2] if len(maps) > 2 else c_map(backend, v, C, M, N, beta)
        extra += (mc, np.int32(flag))
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


def epilogue_ops(beta: float = 0.0, bias=None, relu: bool = False, fp8: bool = False) -> tuple[str, ...]:
    """The kernel's epilogue as an operation list of :mod:`h100lab.design.epilogue`, checked against its fixed
    order (:func:`h100lab.design.epilogue.plan`): [scale_ab (FP8: the promotion)], alpha, [beta_c], [bias],
    [activation]."""
    from . import epilogue
    ops = (("scale_ab",) if fp8 else ()) + ("alpha",) + (("beta_c",) if beta != 0 else ()) + \
        (("bias",) if bias is not None else ()) + (("activation",) if relu else ())
    return epilogue.plan(ops, 1, 1).ops


def _epilogue(acc, C, alpha, beta, bias, relu, fp8=False) -> np.ndarray:
    """f32 accumulators (M, N) → bf16 bits through :func:`epilogue_ops` in :data:`h100lab.design.epilogue.ORDER`:
    alpha (``mul.rn.f32``), beta_c (``fma.rn.f32`` with the old C), bias (bf16 → f32, ``add.rn.f32``),
    activation (ReLU as ``max.f32`` with 0: NaN and −0 give +0), then ``cvt.rn.bf16``."""
    def f32(bits):
        return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)

    def bias_add(v):
        b = f32(bias).reshape(-1)
        if b.shape[0] != v.shape[1]:
            raise GemmShapeError(f"bias has {b.shape[0]} values: one per column of C ({v.shape[1]})")
        return (v + b[None, :]).astype(np.float32)

    steps = {"scale_ab": lambda v: v,                      # done by the caller's model (the promotion)
             "alpha": lambda v: (np.float32(alpha) * v).astype(np.float32),
             "beta_c": lambda v: fma_f32(np.float32(beta), f32(C), v),
             "bias": bias_add,
             "activation": lambda v: np.where(v > 0, v, np.float32(0)).astype(np.float32)}
    v = np.asarray(acc, np.float32)
    for op in epilogue_ops(beta, bias, relu, fp8):          # already in the fixed order
        with np.errstate(over="ignore", invalid="ignore"):
            v = steps[op](v)
    return bf16_round(v)


def reference(A, B, C=None, *, alpha: float = 1.0, beta: float = 0.0, bk: int = 64, bias=None,
              relu: bool = False) -> np.ndarray:
    """What the kernel writes, as raw bf16 bits: per output, ``wgmma`` k16 steps chained on
    :func:`h100lab.tensorcore.mma` (scale-d = 0 on the first; K zero-padded to a multiple of ``bk`` like the TMA's OOB
    fill), then the epilogue (:func:`epilogue_ops`): ``alpha·acc`` (``mul.rn.f32``), ``+ beta·C`` by ``fma.rn.f32``
    when beta ≠ 0, ``+ bias`` per column, ReLU, ``cvt.rn.bf16``. ``A``: (M, K) raw bf16 bits, ``B``: (N, K), ``C``:
    (M, N) raw bf16 bits (read only when beta ≠ 0), ``bias``: N raw bf16 bits or None."""
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
    return _epilogue(acc.view(np.float32), C, alpha, beta, bias, relu)


SCALE_BLOCK = 128              #: K-elements per scale block (A: 1 × 128, B: 128 × 128), one ring stage of FP8


def quantize_fp8(x, w):
    """(qa, sa, qb, sb): ``x`` (M × K) and ``w`` (N × K) float32 quantised to e4m3 as DeepSeek-V3 / DeepGEMM
    scale them (:func:`h100lab.tensorcore.quant.quantize`): A per 1 × 128 block (sa: M × ⌈K/128⌉), B per 128 × 128
    block (sb: ⌈N/128⌉ × ⌈K/128⌉); dequantised value = decode(q) · s."""
    from ..tensorcore.quant import quantize
    qa, sa = quantize(x, "e4m3", "block_1x128")
    qb, sb = quantize(w, "e4m3", "block_128x128")
    return qa, sa, qb, sb


def _check_scales(sa, sb, M: int, N: int, K: int):
    W = -(-K // SCALE_BLOCK)
    sa, sb = np.asarray(sa, np.float32), np.asarray(sb, np.float32)
    if sa.shape != (M, W) or sb.shape != (-(-N // SCALE_BLOCK), W):
        raise GemmShapeError(f"scales {sa.shape}, {sb.shape}: sa is M × ceil(K/128) = {(M, W)} (1 × 128 blocks of "
                             f"A), sb ceil(N/128) × ceil(K/128) = {(-(-N // SCALE_BLOCK), W)} (128 × 128 blocks of B)")
    return sa, sb


def fp8_scales(sa, sb):
    """The scales in the kernel's layouts: sa block-major (⌈K/128⌉ × M, so a warp's rows of one block are
    contiguous), sb as is (⌈N/128⌉ × ⌈K/128⌉), both contiguous float32."""
    sa, sb = np.asarray(sa, np.float32), np.asarray(sb, np.float32)
    if sa.ndim != 2 or sb.ndim != 2 or sa.shape[1] != sb.shape[1]:
        raise GemmShapeError(f"scales {sa.shape}, {sb.shape}: sa (M, blocks of K), sb (blocks of N, blocks of K)")
    return np.ascontiguousarray(sa.T), np.ascontiguousarray(sb)


def reference_fp8(A, B, sa, sb, C=None, *, alpha: float = 1.0, beta: float = 0.0, bias=None,
                  relu: bool = False) -> np.ndarray:
    """What the FP8 form writes, as raw bf16 bits: K zero-padded to whole 128-blocks (the TMA's OOB fill), per block
    four k32 e4m3 wgmmas chained into a partial sum and promoted, ``acc = fma(P, sa·sb, acc)``
    (:func:`h100lab.tensorcore.accumulate.fp8_gemm`, interval 4: the tensor core's FP8 accumulation as the H200
    does it), then the epilogue (:func:`epilogue_ops`). ``A``: (M, K) e4m3 bytes, ``B``: (N, K); ``sa``: (M, ⌈K/128⌉),
    ``sb``: (⌈N/128⌉, ⌈K/128⌉) f32 (:func:`quantize_fp8`)."""
    from ..tensorcore.accumulate import fp8_gemm

    A = np.asarray(A, np.uint8)
    B = np.asarray(B, np.uint8)
    M, K = A.shape
    N = B.shape[0]
    sa, sb = _check_scales(sa, sb, M, N, K)
    Kp = -(-K // SCALE_BLOCK) * SCALE_BLOCK
    Ap = np.zeros((M, Kp), np.uint8)
    Ap[:, :K] = A
    Bp = np.zeros((N, Kp), np.uint8)
    Bp[:, :K] = B
    sb_rows = np.repeat(sb, SCALE_BLOCK, axis=0)[:N]         # B's scale for each of its rows
    acc = fp8_gemm(Ap, Bp, sa, sb_rows, atype="e4m3", btype="e4m3", interval=SCALE_BLOCK // 32)
    return _epilogue(acc, C, alpha, beta, bias, relu, fp8=True)
