"""The capstone GEMM built step by step (lesson 8): seven kernels from a naive CUDA-core loop to the finished
persistent, warp-specialized kernel, each one idea more than the step before, all with the capstone's conventions
(``C = A·Bᵀ``: A M × K and B N × K both K-major bf16, f32 accumulation, C M × N row-major bf16) so that they are
timed side by side (``benchmarks/bench_gemm_steps.py``) and each runs on the emulator at small size::

    from h100lab.design import steps
    s = steps.STEPS[2]                                   # "pipeline"
    stats = steps.launch_step(backend, s, dA, dB, dC, M, N, K)
    want = steps.reference(s, A, B)                      # raw bf16 bits, bit for bit what the kernel writes

Steps 1–3 are the kernels of ``h100lab/cuda/kernels/l08_steps.cu``; steps 4–7 are forms of the capstone
(``l08_gemm.cu``, :mod:`h100lab.design.capstone`) launched through :func:`h100lab.design.capstone.launch`, whose
``sms`` argument sets the grid (``min(sms, tiles)``) and ``group`` the tile order:

1. ``naive`` — one thread per output, K ``fma.rn.f32`` on the CUDA cores from global memory;
2. ``tma`` — a 128 × 256 tile per CTA of two warpgroups, TMA loads into 128B-swizzled shared memory, an mbarrier,
   SS wgmma m64n256k16; one stage, so loads and math alternate;
3. ``pipeline`` — the same CTA with a ring of 4 stages: 3 k-blocks in flight while one is multiplied;
4. ``warp_specialized`` — the capstone's cooperative form: a producer warpgroup (``setmaxnreg.dec``) and two
   consumers (``setmaxnreg.inc``) handing stages over through full/empty mbarriers; still one tile per CTA
   (grid = tiles, row-major tile order: ``sms = tiles``, ``group = 1``);
5. ``pingpong`` — 64 × 256 tiles, the two consumers on different tiles, their mainloops ordered by a barrier pair
   so one's epilogue hides under the other's mainloop; a CTA takes two tiles, one per consumer
   (``sms = ceil(tiles / 2)``);
6. ``persistent`` — the cooperative form again, now persistent (one CTA per SM walking tiles) in the grouped tile
   order (``group = 8`` tile-rows at a time, :mod:`h100lab.design.schedule`);
7. ``epilogue`` — the finished capstone (:data:`h100lab.design.capstone.DEFAULT`): the epilogue through
   ``stmatrix`` and a TMA store, with one wgmma group kept in flight in the mainloop, and the only step that fuses
   more than the conversion into its epilogue: a per-column bias and ReLU (``launch_step(..., bias=, relu=True)``,
   :func:`h100lab.design.capstone.launch`).

Shape rules (each broken one raises :class:`GemmShapeError` naming it): every step takes M, N, K ≥ 1 below 2³¹;
steps 2–7 need K a multiple of 8 (a TMA global stride is a multiple of 16 bytes, ``cuTensorMapEncodeTiled``);
the naive kernel's grid has ``ceil(M / 8)`` ≤ 65,535 rows of blocks (``gridDim.y``, CUDA C++ Programming Guide,
"Compute Capabilities").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import capstone as cap
from .capstone import GemmShapeError

__all__ = ["Step", "STEPS", "GemmShapeError", "step", "check_shape", "ring_smem_bytes", "RING_TILE", "RING_STAGES",
           "NAIVE_BLOCK", "RING_THREADS", "compile_step", "grid", "tensor_maps", "launch_step", "reference",
           "naive_reference"]

RING_STAGES = 4                     #: gemm_pipeline's ring depth (l08_steps.cu's STAGES default)
RING_THREADS = 256                  #: steps 2–3: two warpgroups, both computing
NAIVE_BLOCK = (32, 8)               #: step 1: 32 columns x 8 rows of C per block
#: the tile of steps 2–3 as a capstone Variant (128 × 256 × 64), so that capstone.tensor_maps encodes their maps
RING_TILE = cap.Variant("ring", False, 128, 256, 64, RING_STAGES)
_RING_OPTIONS = (f"-DSTAGES={RING_STAGES}",)   # one compile of l08_steps.cu serves steps 1-3


@dataclass(frozen=True)
class Step:
    """One step: ``number`` (1–7), ``name``, ``title``, ``changed`` (what it adds to the step before), the kernel
    file and entry point with its compile options, for the capstone's steps the ``variant`` of
    :data:`h100lab.design.capstone.VARIANTS`, the ``schedule`` (``"naive"``, ``"tiles"``: one tile per CTA,
    ``"pairs"``: two tiles per CTA, ``"persistent"``: ``min(SMs, tiles)`` CTAs) with its tile ``group``, ``fused``
    (its epilogue takes a bias and ReLU), and ``small`` — (M, N, K) shapes for the emulator: square and ragged
    (M, N, K no multiples of the tile) for steps 1–3 and 7, one shape for the capstone's steps 4–6 (whose
    variants tests/test_l08_gemm_emu.py runs on ragged shapes too); with one CTA, step 6's ragged shape has the
    CTA walk two tiles."""

    number: int
    name: str
    title: str
    changed: str
    kernel: str
    entry: str
    options: tuple[str, ...] = ()
    variant: str | None = None
    schedule: str = "tiles"
    group: int = 1
    fused: bool = False
    small: tuple[tuple[int, int, int], ...] = ((128, 256, 128), (200, 136, 72))

    @property
    def capstone(self) -> cap.Variant | None:
        """The capstone variant of steps 4–7 (None for steps 1–3)."""
        return cap.VARIANTS[self.variant] if self.variant else None

    @property
    def tile(self) -> tuple[int, int]:
        """The CTA tile (rows, columns) of C; step 1's block of threads covers 8 × 32 outputs."""
        if self.variant:
            v = self.capstone
            return v.bm, v.bn
        if self.schedule == "naive":
            return NAIVE_BLOCK[1], NAIVE_BLOCK[0]
        return RING_TILE.bm, RING_TILE.bn

    @property
    def stages(self) -> int:
        """Shared-memory stages of the k-block ring (0 for the naive kernel)."""
        if self.variant:
            return self.capstone.stages
        return {"naive": 0}.get(self.schedule, 1 if self.entry == "gemm_tma" else RING_STAGES)


STEPS: tuple[Step, ...] = (
    Step(1, "naive", "naive CUDA-core loop",
         "one thread per output element: K fma.rn.f32 on the CUDA cores, both operands from global memory",
         "l08_steps", "gemm_naive", _RING_OPTIONS, schedule="naive", small=((128, 128, 128), (100, 72, 37))),
    Step(2, "tma", "TMA + wgmma, one stage",
         "tensor cores: a CTA of two warpgroups per 128 x 256 tile; per k-block one thread's TMA loads into "
         "128B-swizzled shared memory, an mbarrier wait, SS wgmma m64n256k16; one stage, so loads and math alternate",
         "l08_steps", "gemm_tma", _RING_OPTIONS),
    Step(3, "pipeline", "multi-stage pipeline",
         f"a ring of {RING_STAGES} stages with a full mbarrier each (phase parity): {RING_STAGES - 1} k-blocks in "
         "flight while one is multiplied; the same CTA does both",
         "l08_steps", "gemm_pipeline", _RING_OPTIONS, small=((128, 256, 320), (200, 136, 72))),
    Step(4, "warp_specialized", "warp specialization",
         "a producer warpgroup issues the TMA (setmaxnreg.dec), two consumer warpgroups compute (setmaxnreg.inc); "
         "stages handed over through full and empty mbarriers; one tile per CTA",
         "l08_gemm", "gemm_bf16", variant="cooperative", small=((128, 256, 128),)),
    Step(5, "pingpong", "ping-pong consumers",
         "64 x 256 tiles, each consumer on its own tile, their mainloops ordered by a pair of mbarriers so one "
         "consumer's epilogue runs under the other's mainloop; two tiles per CTA",
         "l08_gemm", "gemm_bf16", variant="pingpong", schedule="pairs", small=((128, 256, 128),)),
    Step(6, "persistent", "persistent + rasterized",
         "back to the cooperative 128 x 256 tile, now persistent: one CTA per SM walks its tiles, in the grouped "
         "order (8 tile-rows at a time) so neighbouring CTAs share A and B panels in L2",
         "l08_gemm", "gemm_bf16", variant="cooperative", schedule="persistent", group=8,
         small=((200, 136, 72),)),
    Step(7, "epilogue", "fused epilogue",
         "the finished capstone: the epilogue fuses a per-column bias and ReLU and stages C through stmatrix into "
         "swizzled shared memory for one TMA store per 64 x 64 chunk; the mainloop keeps one wgmma group in flight",
         "l08_gemm", "gemm_bf16", variant=cap.DEFAULT, schedule="persistent", group=8, fused=True),
)

_BY_NAME = {s.name: s for s in STEPS}


def step(key) -> Step:
    """A step by number (1–7), name or the Step itself."""
    if isinstance(key, Step):
        return key
    if isinstance(key, (int, np.integer)) and 1 <= key <= len(STEPS):
        return STEPS[int(key) - 1]
    if key in _BY_NAME:
        return _BY_NAME[key]
    raise KeyError(f"step {key!r}: the steps are 1-{len(STEPS)} or {list(_BY_NAME)}")


def check_shape(s, M: int, N: int, K: int) -> None:
    """Raise :class:`GemmShapeError` unless step ``s`` takes (M, N, K) (the rules in the module docstring)."""
    s = step(s)
    if s.schedule != "naive":
        cap.check_shape(M, N, K)
        return
    for name, v in (("M", M), ("N", N), ("K", K)):
        if int(v) != v or v < 1:
            raise GemmShapeError(f"{name} = {v}: GEMM extents are positive integers")
        if v >= 2 ** 31:
            raise GemmShapeError(f"{name} = {v}: extents are passed as int: each must be below 2^31")
    if -(-M // NAIVE_BLOCK[1]) > 65535:
        raise GemmShapeError(f"M = {M}: the naive kernel's grid has ceil(M / {NAIVE_BLOCK[1]}) rows of blocks and "
                             "gridDim.y is at most 65535 (CUDA C++ Programming Guide, compute capability 9.0)")


def ring_smem_bytes(stages: int) -> int:
    """Dynamic shared memory of gemm_tma (1 stage) and gemm_pipeline (``stages``): 1024 B of slack to align the
    128B-swizzled tiles to 1024 B, ``stages`` × (128 × 64 + 256 × 64) bf16, one 8-byte mbarrier per stage."""
    return 1024 + stages * RING_TILE.stage_bytes + 8 * stages


def compile_step(backend, s):
    """The kernel function of step ``s`` on ``backend`` (h100lab.emu or h100lab.cuda)."""
    s = step(s)
    options = s.capstone.options if s.variant else s.options
    return backend.compile_kernel(s.kernel, options=options).function(s.entry)


def grid(s, M: int, N: int, sms: int = 132):
    """The launch grid of step ``s`` for an M × N output: the naive (ceil(N / 32), ceil(M / 8)); one CTA per tile
    (steps 2–4); ceil(tiles / 2) (ping-pong: a tile per consumer); min(sms, tiles) (persistent)."""
    s = step(s)
    if s.schedule == "naive":
        return (-(-N // NAIVE_BLOCK[0]), -(-M // NAIVE_BLOCK[1]))
    bm, bn = s.tile
    tiles = -(-M // bm) * -(-N // bn)
    if s.schedule == "tiles":
        return tiles
    if s.schedule == "pairs":
        return -(-tiles // 2)
    return cap.grid_size(s.capstone, M, N, sms)


def _sms_for(s: Step, M: int, N: int, sms: int) -> int:
    """The ``sms`` argument that makes capstone.launch (grid = min(sms, tiles)) use :func:`grid`."""
    return sms if s.schedule == "persistent" else grid(s, M, N, sms)


def _check_epilogue(s: Step, bias, relu) -> None:
    if (bias is not None or relu) and not s.fused:
        raise GemmShapeError(f"step {s.number} ({s.name}) writes C = A·Bᵀ: only the fused epilogue of step "
                             f"{next(x.number for x in STEPS if x.fused)} adds a bias and ReLU")


def launch_step(backend, s, A, B, C, M: int, N: int, K: int, *, sms: int = 132, kernel=None, maps=None, bias=None,
                relu: bool = False, **options):
    """Launch step ``s`` on ``backend``: ``A``, ``B``, ``C`` device arrays (or addresses, as np.uint64 / int; the
    naive kernel takes them as pointers). ``sms``: the persistent steps' CTA count bound (the GPU's SMs);
    ``kernel``: from :func:`compile_step` (compiled here when absent); ``maps``: the tensor maps of steps 2–7,
    made once by the caller to keep them out of a timed region (made here when absent). ``bias`` (N bf16 values,
    a device array or address) and ``relu``: the fused step's epilogue only. ``options`` go to the emulator's
    launch (seed, racecheck, ...). Returns what ``backend.launch`` returns."""
    s = step(s)
    check_shape(s, M, N, K)
    _check_epilogue(s, bias, relu)
    k = kernel if kernel is not None else compile_step(backend, s)
    if s.variant:
        fused = dict(bias=bias, relu=True) if relu else (dict(bias=bias) if bias is not None else {})
        return cap.launch(backend, k, s.capstone, A, B, C, M, N, K, sms=_sms_for(s, M, N, sms), group=s.group,
                          raster=0, maps=maps, **fused, **options)
    ptr = [np.uint64(x) if isinstance(x, (int, np.integer)) else x for x in (A, B, C)]
    if s.schedule == "naive":
        return backend.launch(k, grid(s, M, N), NAIVE_BLOCK, *ptr, np.int32(M), np.int32(N), np.int32(K), **options)
    ma, mb = maps if maps is not None else cap.tensor_maps(backend, RING_TILE, A, B, M, N, K)
    smem = ring_smem_bytes(s.stages)
    k.set_max_dynamic_shared_memory(smem)       # above 48 KiB a kernel opts in (CUDA C++ Programming Guide)
    return backend.launch(k, grid(s, M, N), RING_THREADS, ma, mb, ptr[2], np.int32(M), np.int32(N), np.int32(K),
                          shared_mem=smem, **options)


def tensor_maps(backend, s, A, B, M: int, N: int, K: int):
    """The tensor maps step ``s`` launches with (None for the naive kernel; with the capstone's TMA-store
    epilogue also C's map, which needs ``C``: use :func:`h100lab.design.capstone.c_map`)."""
    s = step(s)
    if s.schedule == "naive":
        return None
    return cap.tensor_maps(backend, s.capstone if s.variant else RING_TILE, A, B, M, N, K)


# ------------------------------------------------------------------------------------------------
# the answers, bit for bit

def naive_reference(A, B) -> np.ndarray:
    """Step 1's answer as raw bf16 bits: per output, ``acc = fma.rn.f32(a_k, b_k, acc)`` for k = 0 … K-1 from
    acc = +0 (:func:`h100lab.design.capstone.fma_f32`, one rounding per step, in K order), then
    ``cvt.rn.bf16.f32``. ``A``: (M, K), ``B``: (N, K) raw bf16 bits."""
    A = np.asarray(A, np.uint16)
    B = np.asarray(B, np.uint16)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise GemmShapeError(f"A {A.shape}, B {B.shape}: A is M x K and B is N x K with the same K")
    af = (A.astype(np.uint32) << 16).view(np.float32)
    bf = (B.astype(np.uint32) << 16).view(np.float32)
    acc = np.zeros((A.shape[0], B.shape[0]), np.float32)
    for k in range(A.shape[1]):
        acc = cap.fma_f32(af[:, k:k + 1], bf[None, :, k], acc)
    return cap.bf16_round(acc)


def reference(s, A, B, *, bias=None, relu: bool = False) -> np.ndarray:
    """What step ``s`` writes for C = A·Bᵀ, as raw bf16 bits: the naive step's f32 fma chain
    (:func:`naive_reference`), every other step's wgmma chain on the tensor-core model
    (:func:`h100lab.design.capstone.reference`: the same k16 steps in the same order, so steps 2–7 agree bit for
    bit with each other); the fused step with its ``bias`` (N raw bf16 bits) and ReLU."""
    s = step(s)
    _check_epilogue(s, bias, relu)
    if s.schedule == "naive":
        return naive_reference(A, B)
    fused = dict(bias=bias, relu=True) if relu else (dict(bias=bias) if bias is not None else {})
    return cap.reference(A, B, bk=s.capstone.bk if s.variant else RING_TILE.bk, **fused)
