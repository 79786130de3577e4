"""The timing model's measurements on an H200, in one run: ``python -m h100lab.measure.timing_sweep``.

``PYTHONPATH=. python3 -m h100lab.measure.timing_sweep --out data [--quick] [--steps a,b,...] [--budget-s S]``
runs these steps in this order (``--steps`` picks some) and writes one dataset per step with ``h100lab.data``
(metadata: GPU, driver, CUDA, date, the exact command, plus the step's constants and ``complete``):

``cvt``      → ``l01/cvt_bits``: the bits ``l01_cvt_probe.cu`` produces for every op of :data:`CVT_OPS` (FP8
               conversions with and without ``.relu``, FP8 → f16x2 decoding, f32 → f16 / bf16 / tf32 in every
               rounding mode, f16 / bf16 → f32) on :func:`cvt_inputs` — for the emulator's ALU.
``encode``   → ``l04/encode_enum_values``: ``cuTensorMapEncodeTiled`` called through ``ctypes`` with enum
               *integers* (the C API takes any ``int``), those with and without an enumerator (:func:`enum_cases`).
``latency``  → ``l03/tma_latency``: single TMA loads (bulk and 2-D tensor) cold (DRAM) and warm (L2) against
               bytes, back-to-back issue from one thread, ``try_wait`` / ``test_wait`` on a completed phase,
               ``mbarrier.arrive``, and the wake-up of a waiting warp (``l03_tma_latency.cu``).
``sync``     → ``l03/sync_cost``: ``bar.sync`` against threads, ``barrier.cluster`` round trips (``.release`` /
               ``.relaxed``, with and without a preceding store) against cluster size and threads, DSMEM dependent
               loads and streaming against local shared memory (``l03_sync_cost.cu``).
``stream``   → ``l03/stream_sweep``: the TMA + mbarrier streaming pipeline ``l03_stream.cu`` for stages
               {1,2,3,4,6,8} × tiles {1,…,64} KiB × CTAs/SM {1,2,4} × {load, consume, copy}, on the whole GPU
               (``scope = "gpu"``) and on one CTA reading DRAM (``"cta"``) or L2 (``"cta_warm"``); every case
               that fits in shared memory (:func:`stream_cases`), data checked.
``ceilings`` → ``l05/ceilings``: at ≥ 1 GiB, ``cuMemcpyDtoDAsync``, ``ld.global.v4`` read streams
               (``l05_read_stream.cu``), the vectorised copy kernel, the TMA read stream and TMA copy stream
               (``l03_stream.cu`` modes 0 and 2, cache-hint variants), the book's tensor copy (``l05_tma_copy.cu``),
               and cuBLAS GEMMs through PyTorch — the roofline's measured ceilings
               (:func:`h100lab.roofline.measured_ceilings`) and the copy kernel's performance goal.
``copytune`` → ``l05/copy_tune``: tuned TMA copies (``l05_copy_tune.cu``: bulk loads + bulk stores from one thread,
               more bytes in flight per SM, several CTAs per SM, store/load overlap through ``wait_group.read``
               lag, contiguous chunks, L2 prefetch, ``evict_first`` cache hints) and ``cuMemcpyDtoDAsync``
               interleaved in the same run, each copy checked word by word; every record carries its ratio to the
               run's memcpy (:func:`copytune_cases`, :meth:`Runner.step_copytune`).
``latency2`` → ``l03/tma_latency_clean``: single bulk copies with every address outside the timed window
               (``l03_copy_latency.cu``): issue window and landing apart, cold (with and without the page's TLB entry
               warmed by a touch 1 MiB away) then three warm repeats, 128-byte aligned and 16 bytes off; back-to-back
               issue of ``count`` copies with aligned and misaligned sources (:func:`latency2_cases`).
``coldround`` → ``l03/tma_latency_cold``: the cold rounds of ``latency2`` again (and single copies of the round
               sizes as anchors), each sample on 128-byte lines never read before in the run (a buffer of its own,
               one 2 MiB page per sample: ``latency2``'s cursor wrapped its 2 GiB buffer after reading only ~96 MiB,
               so its later "cold" rounds re-read lines a case of the first pass had read, 5–60 MiB of traffic
               earlier, within the 60 MiB L2), in :data:`COLD_PASSES` fresh passes to show how far a median of 64
               samples reproduces, every sample kept, and right after the first a re-read pass: every case once
               more on its pages, which shows what re-reading does (:func:`coldround_plan`). Between the step's
               zeroing of its buffer and pass 0 it reads (never writes) 256 MiB of another buffer, so pass 0 does
               not meet the zeroing's dirty L2 lines (:data:`COLD_FLUSH_BYTES`; ``step_coldround(flush=False)``:
               the step as ``l03/tma_latency_cold`` ran it).
``copyrace`` → ``l05/copy_race``: the copy-kernel goal head to head, 3 rounds at 1 GiB, each round
               ``cuMemcpyDtoDAsync`` then every variant of :data:`RACE_VARIANTS` (the tuned bulk copy, the book's
               tensor copy with each L2 promotion and box, the warp-specialised copies of ``l05_copy_ws.cu``, the
               vectorised copy) and the read ceilings (best ``ld.global.v4`` streams and TMA read streams at 2 GiB);
               every copy checked word by word, every record with its ratio to the round's memcpy.
``copyoffset`` → ``l05/copy_offset``: the same race with the destination moved by :data:`OFFSET_CASES` bytes
               (does where the destination lies against the source change a copy's speed, memcpy's or ours?).

Conventions: the source buffer's 32-bit word *i* holds *i* (``fill_index``), so a checksum or a copied word
can be checked against its address; "cold" sources are read once per run (a cursor walks the 2 GiB
buffer, far more than the 60 MiB L2); bandwidths count bytes read + bytes written per ns (1 B/ns = 1 GB/s);
kernel times are CUDA events (median of the timed launches); per-CTA times come from ``%globaltimer`` and
``clock64`` stamps in the kernels. Every CUDA call's result is checked (``h100lab.cuda``); clocks are
never touched; every wait in the kernels is bounded (a timeout sets an error bit, recorded as ``ok = False``).
Each step writes its dataset when it ends; when the ``--budget-s`` wall-clock budget runs out the current step
stops early and writes what it has with ``complete = False`` in the metadata, and the later steps are skipped.

All the logic that is not a CUDA call (case lists, sizes, expected checksums, summaries, the order of the
kernels' parameters) is plain Python driven through a small backend object (:class:`CudaBackend`), so
``tests/test_timing_sweep.py`` runs every step on a fake backend. Expected wall time on an H200: about
3 minutes (:func:`estimate_seconds`).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .l04 import pack

__all__ = ["STEPS", "STAGES", "TILE_KIB", "CTAS_PER_SM", "MODES", "NSTATS", "CVT_OPS", "cvt_inputs", "enum_cases",
           "stream_smem", "stream_fits", "stream_cases", "plan_tiles", "stream_tile_ids", "expected_stream_sums",
           "summarize_stream", "latency_cases", "sync_cases", "read_configs", "copytune_cases", "copytune_fits",
           "latency2_cases", "latency2_offsets", "latency2_plan", "reuse_distances", "latency_sources",
           "coldround_cases", "coldround_plan", "issuecold_cases", "ISSUECOLD_SHAPES",
           "COLD_PASSES", "COLD_FLUSH_BYTES", "RACE_VARIANTS",
           "Budget", "CudaBackend", "Runner", "estimate_seconds", "DATASETS", "main"]

STEPS = ("cvt", "encode", "latency", "sync", "stream", "ceilings", "copytune", "latency2", "coldround", "copyrace",
         "copyoffset")
DATASETS = {"cvt": "l01/cvt_bits", "encode": "l04/encode_enum_values", "latency": "l03/tma_latency",
            "sync": "l03/sync_cost", "stream": "l03/stream_sweep", "ceilings": "l05/ceilings",
            "copytune": "l05/copy_tune", "latency2": "l03/tma_latency_clean", "coldround": "l03/tma_latency_cold", "copyrace": "l05/copy_race",
            "copyoffset": "l05/copy_offset"}

BUF_BYTES = 2 << 30          # source and destination buffers of the streams: 2 GiB each (34 × the L2)
QUICK_BUF_BYTES = 256 << 20
TIMEOUT_NS = 2_000_000_000   # every bounded wait in the kernels gives up after 2 s
STAGES = (1, 2, 3, 4, 6, 8)
TILE_KIB = (1, 2, 4, 8, 16, 32, 64)
CTAS_PER_SM = (1, 2, 4)
MODES = ("load", "consume", "copy")
MODE_CODE = {"load": 0, "consume": 1, "copy": 2}
STREAM_THREADS = 96          # warp 0 producer, warps 1-2 consumers (l03_stream.cu)
STREAM_HEADER = 1024         # full/empty barriers before the tiles
NSTATS = 16                  # stats words per CTA (l03_stream.cu)
SMEM_PER_SM = 233_472        # sharedMemPerMultiprocessor of the H200
SMEM_OPTIN = 232_448         # sharedMemPerBlockOptin
SMEM_RESERVED = 1024         # reservedSharedMemPerBlock
GIB = 1 << 30


# ------------------------------------------------------------------------------------------------
# the wall-clock budget

@dataclass
class Budget:
    """A wall-clock budget: ``left()`` seconds remain; ``over()`` once spent. ``clock`` is injectable (tests)."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    start: float = field(default=0.0)

    def __post_init__(self):
        self.start = self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.start

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def over(self) -> bool:
        return self.left() <= 0


# ------------------------------------------------------------------------------------------------
# step "cvt": conversion bits

#: (op code, PTX instruction, operand kind) — the case labels of ``l01_cvt_probe.cu``. Kinds: ``f32x2_b16`` (two
#: f32 operands a, b → 16 bits), ``b32_b16`` (an f16x2 → 16 bits), ``b16_b32`` (16 bits → f16x2),
#: ``f32_b16``, ``f32x2_b32``, ``b16_f32``, ``f32_b32``. Codes ≥ ``CVT_CORE`` need a newer PTX ISA.
CVT_OPS = [
    (0, "cvt.rn.satfinite.e4m3x2.f32", "f32x2_b16"), (1, "cvt.rn.satfinite.relu.e4m3x2.f32", "f32x2_b16"),
    (2, "cvt.rn.satfinite.e5m2x2.f32", "f32x2_b16"), (3, "cvt.rn.satfinite.relu.e5m2x2.f32", "f32x2_b16"),
    (4, "cvt.rn.satfinite.e4m3x2.f16x2", "b32_b16"), (5, "cvt.rn.satfinite.relu.e4m3x2.f16x2", "b32_b16"),
    (6, "cvt.rn.satfinite.e5m2x2.f16x2", "b32_b16"), (7, "cvt.rn.satfinite.relu.e5m2x2.f16x2", "b32_b16"),
    (8, "cvt.rn.f16x2.e4m3x2", "b16_b32"), (9, "cvt.rn.relu.f16x2.e4m3x2", "b16_b32"),
    (10, "cvt.rn.f16x2.e5m2x2", "b16_b32"), (11, "cvt.rn.relu.f16x2.e5m2x2", "b16_b32"),
    (12, "cvt.rn.f16.f32", "f32_b16"), (13, "cvt.rn.relu.f16.f32", "f32_b16"), (14, "cvt.rz.f16.f32", "f32_b16"),
    (15, "cvt.rm.f16.f32", "f32_b16"), (16, "cvt.rp.f16.f32", "f32_b16"), (17, "cvt.rn.bf16.f32", "f32_b16"),
    (18, "cvt.rn.relu.bf16.f32", "f32_b16"), (19, "cvt.rz.bf16.f32", "f32_b16"),
    (20, "cvt.rn.f16x2.f32", "f32x2_b32"), (21, "cvt.rn.relu.f16x2.f32", "f32x2_b32"),
    (22, "cvt.rn.bf16x2.f32", "f32x2_b32"), (23, "cvt.rn.relu.bf16x2.f32", "f32x2_b32"),
    (24, "cvt.f32.f16", "b16_f32"), (25, "cvt.f32.bf16", "b16_f32"), (26, "cvt.rna.tf32.f32", "f32_b32"),
    (27, "cvt.rn.satfinite.f16.f32", "f32_b16"), (28, "cvt.rn.relu.satfinite.f16.f32", "f32_b16"),
    (29, "cvt.rn.satfinite.bf16.f32", "f32_b16"), (30, "cvt.rn.satfinite.f16x2.f32", "f32x2_b32"),
    (31, "cvt.rn.satfinite.bf16x2.f32", "f32x2_b32"), (32, "cvt.rna.satfinite.tf32.f32", "f32_b32"),
    (33, "cvt.rn.tf32.f32", "f32_b32"),
]
CVT_CORE = 27

_F32_SPECIAL = [
    0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000,            # ±0, ±1, ±inf
    0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF,  # NaNs: quiet, signalling
    0x7FC00001, 0x7FE00000, 0x7FC02000, 0x7F802000, 0x7F801000, 0x7FD55555, 0xFFAAAAAA,  # NaN payloads
    0x7F840000, 0x7FA00000, 0x7F900000, 0xFF880000,
    0x00000001, 0x807FFFFF, 0x007FFFFF, 0x00800000,                                      # f32 subnormals, min normal
    0x43E00000, 0x43E08000, 0x43E80000, 0x43F00000, 0x43FA0000, 0x49742400, 0x7F7FFFFF,  # 448, 449, 464, 480, 500, 1e6, max
    0xC3FA0000, 0x47600000, 0x477FEF00, 0x47700000, 0x47800000,                          # -500, 57344, 61423, 61440, 65536
    0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x477FFFFF,                          # 65504 and the f16 overflow tie
    0x3B000000, 0x3A800000, 0x3AC00000, 0x37800000, 0x37000000, 0x3701B4A0,              # 2^-9, 2^-10, 1.5·2^-10, 2^-16, 2^-17
    0x33800000, 0x33000000, 0x33400000, 0x32800000, 0x387FC000, 0x38800000,              # f16 subnormal ties, min normal
    0x3F801000, 0x3F803000, 0x3F808000, 0x3F818000, 0x3F800001, 0x3F807FFF,              # f16 / bf16 rounding ties
    0xBF808000, 0xBF818000, 0x3F80A000, 0x3F812000,
]


def cvt_inputs(seed: int = 11) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The operands ``(a, b)`` (uint32 arrays) of each operand kind.

    ``f32``: :data:`_F32_SPECIAL` (zeros, infinities, NaNs with many payloads, FP8 / f16 / bf16 limits, rounding
    ties, subnormals), every FP8-representable magnitude ± a little, and 4,096 seeded random bit patterns plus
    4,096 seeded random values of many magnitudes; ``b`` is ``a`` rotated by one (so the two halves of a pair
    differ). ``b32`` (an f16x2): every 16-bit pattern in the low half, a permutation of them in the high half.
    ``b16``: every 16-bit pattern (every pair of FP8 codes, every f16 / bf16)."""
    rng = np.random.default_rng(seed)
    grid = []
    for e in range(-20, 17):
        for m in range(8):
            v = np.float32((1 + m / 8) * 2.0 ** e)
            for f in (1.0, 1 + 2 ** -6, 1 - 2 ** -6, 1 + 2 ** -4):
                grid.append(np.float32(v * f).view(np.uint32))
    grid = np.array(grid, np.uint32)
    mags = (rng.standard_normal(4096) * 10.0 ** rng.integers(-8, 6, 4096)).astype(np.float32).view(np.uint32)
    f32 = np.concatenate([np.array(_F32_SPECIAL, np.uint32), grid, grid | np.uint32(1 << 31),
                          rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32), mags])
    lo = np.arange(1 << 16, dtype=np.uint32)
    hi = (lo * np.uint32(40503)) & np.uint32(0xFFFF)          # odd multiplier: a permutation of 0..65535
    b32 = lo | (hi << np.uint32(16))
    return {"f32": (f32, np.roll(f32, -1)), "b32": (b32, np.zeros_like(b32)), "b16": (lo, np.zeros_like(lo))}


def _cvt_source(kind: str) -> str:
    return {"f32x2_b16": "f32", "f32_b16": "f32", "f32x2_b32": "f32", "f32_b32": "f32", "b32_b16": "b32",
            "b16_b32": "b16", "b16_f32": "b16"}[kind]


# ------------------------------------------------------------------------------------------------
# step "encode": enum integers through the C API

#: the valid 2-D BF16 map every enum case starts from (256 × 128 elements, 512-byte rows, box 64 × 32)
ENCODE_BASE = dict(dtype=9, rank=2, global_dim=[256, 128], global_strides=[512], box_dim=[64, 32],
                   element_strides=[1, 1], interleave=0, swizzle=3, l2_promotion=2, oob_fill=0)


def enum_cases() -> list[dict[str, Any]]:
    """``cuTensorMapEncodeTiled`` parameter sets differing from :data:`ENCODE_BASE` in one enum *integer*: the
    last values that have an enumerator and the first ones that do not (and a few far ones), plus the base
    itself as the control (it must succeed, or the ``ctypes`` call is wrong)."""
    rows = [("control", {})]
    for param, values in (("dtype", (12, 13, 15, 16, 17, 255, -1)), ("interleave", (1, 2, 3, 7)),
                          ("swizzle", (0, 3, 4, 6, 7, 8, 255)), ("l2_promotion", (0, 3, 4, 5)),
                          ("oob_fill", (1, 2, 3, -1))):
        for v in values:
            rows.append((f"{param}_{v}", {param: v}))
    out = []
    for cid, change in rows:
        c = dict(ENCODE_BASE, **change, id=cid)
        il = change.get("interleave")
        if "dtype" in change:                    # element sizes up to 8 B: no swizzle span to exceed, 2 KiB rows
            c.update(swizzle=0, global_strides=[2048])
        if il == 2:                              # INTERLEAVE_32B: rank 3, 32-byte strides and slices, SWIZZLE_32B
            c.update(rank=3, global_dim=[16, 64, 16], global_strides=[32, 2048], box_dim=[16, 16, 2],
                     element_strides=[1, 1, 1], swizzle=1)
        elif il:                                 # INTERLEAVE_16B and the values with no enumerator: rank 3, no swizzle
            c.update(rank=3, global_dim=[8, 64, 16], global_strides=[16, 1024], box_dim=[8, 16, 2],
                     element_strides=[1, 1, 1], swizzle=0)
        out.append(c)
    return out


# ------------------------------------------------------------------------------------------------
# step "stream": the streaming pipeline

def stream_smem(stages: int, tile_bytes: int) -> int:
    """Dynamic shared memory of one ``stream`` CTA: 1 KiB of barriers, then the tiles."""
    if not 1 <= stages <= 8:
        raise ValueError(f"stages = {stages}: l03_stream.cu has barriers for 1 … 8 stages")
    if tile_bytes <= 0 or tile_bytes % 16:
        raise ValueError(f"tile of {tile_bytes} B: cp.async.bulk moves a positive multiple of 16 B (PTX §9.7.9.25.4.1)")
    return STREAM_HEADER + stages * tile_bytes


def stream_fits(stages: int, tile_bytes: int, ctas_per_sm: int, *, smem_per_sm: int = SMEM_PER_SM,
                optin: int = SMEM_OPTIN, reserved: int = SMEM_RESERVED) -> bool:
    """Whether ``ctas_per_sm`` such CTAs fit on one SM: each at most ``sharedMemPerBlockOptin`` and all of them,
    each with the 1 KiB the system reserves per block, at most ``sharedMemPerMultiprocessor`` (CPG §20.8.3)."""
    n = stream_smem(stages, tile_bytes)
    return n <= optin and ctas_per_sm * (n + reserved) <= smem_per_sm


def stream_cases(quick: bool = False) -> list[dict[str, Any]]:
    """Every streaming case: ``{mode, scope, stages, tile_bytes, ctas_per_sm}``. The whole GPU (``gpu``) for every
    mode × stages × tile × CTAs/SM that fits; one CTA (``cta``: DRAM, ``cta_warm``: L2) for every mode × stages ×
    tile that fits. ``quick``: a few of each."""
    stages = (1, 4) if quick else STAGES
    tiles = (4, 16, 64) if quick else TILE_KIB
    per_sm = (1, 2) if quick else CTAS_PER_SM
    out = []
    for mode in MODES:
        for scope in ("gpu", "cta", "cta_warm"):
            for c in (per_sm if scope == "gpu" else (1,)):
                for s in stages:
                    for t in tiles:
                        if stream_fits(s, t * 1024, c):
                            out.append(dict(mode=mode, scope=scope, stages=s, tile_bytes=t * 1024, ctas_per_sm=c))
    return out


def plan_tiles(case: dict[str, Any], num_sms: int, buf_bytes: int = BUF_BYTES, *, target_ns: float = 400_000.0) -> int:
    """Tiles per CTA for one launch: enough for about ``target_ns`` of kernel time by a rough period estimate
    (1.5 µs of latency spread over the stages, 3.5 TB/s shared by the GPU's CTAs, 150 B/ns for one CTA), at least
    4 rounds of the stages plus 32, at most 8192; a launch reads at most half the buffer (so consecutive launches
    read fresh data), and a ``cta_warm`` launch at most 8 MiB (it must stay in L2)."""
    tile, stages = case["tile_bytes"], case["stages"]
    grid = num_sms * case["ctas_per_sm"] if case["scope"] == "gpu" else 1
    if case["scope"] == "gpu":
        est = max(1500.0 / stages, grid * tile / 3500.0 * (2 if case["mode"] == "copy" else 1), 50.0)
    else:
        est = max(1500.0 / stages, tile / 150.0, 50.0)
    n = int(min(max(np.ceil(target_ns / est), 4 * stages + 32), 8192))
    cap = (buf_bytes // 2) // (grid * tile)
    if case["scope"] == "cta_warm":
        cap = min(cap, (8 << 20) // tile)
    return int(max(min(n, cap), 1))


def stream_grid(case: dict[str, Any], num_sms: int) -> int:
    return num_sms * case["ctas_per_sm"] if case["scope"] == "gpu" else 1


def stream_tile_ids(base_tile: int, grid: int, tiles: int, buf_tiles: int) -> np.ndarray:
    """Source tile of every (CTA, k): ``(base_tile + k · grid + cta) mod buf_tiles`` — ``l03_stream.cu``'s order."""
    k = np.arange(tiles, dtype=np.int64)[None, :]
    b = np.arange(grid, dtype=np.int64)[:, None]
    return (base_tile + k * grid + b) % buf_tiles


def expected_stream_sums(base_tile: int, grid: int, tiles: int, tile_bytes: int, buf_tiles: int) -> np.ndarray:
    """The checksum each CTA's consumers must produce in mode 1: the sum of the 32-bit words of its tiles, each
    word holding its own index (``fill_index``): a tile ``g`` of ``W`` words sums to ``W·g·W + W(W−1)/2``."""
    w = np.uint64(tile_bytes // 4)
    g = stream_tile_ids(base_tile, grid, tiles, buf_tiles).astype(np.uint64)
    per = w * (g * w) + w * (w - np.uint64(1)) // np.uint64(2)
    return per.sum(axis=1, dtype=np.uint64)


def summarize_stream(stats: np.ndarray, tiles: int) -> dict[str, float]:
    """Medians of the kernel's per-CTA stamps (``stats``: launches × CTAs × :data:`NSTATS` words, see
    ``l03_stream.cu``) in ns: time per tile (``%globaltimer`` span / tiles; median over every CTA of every launch,
    and the median over launches of the slowest CTA), the consumer's busy / waiting time, the producer's waiting
    and issue time per tile, the first tile's latency (producer's issue → consumer's wait returned), the store
    read-wait per tile and the final drain, the clock rate (clock64 cycles / ns) and the spread of CTA start times."""
    s = np.asarray(stats, dtype=np.float64).reshape(-1, stats.shape[-2] if stats.ndim == 3 else 1, NSTATS)
    span = s[..., 1] - s[..., 0]
    cyc = s[..., 3] - s[..., 2]
    if np.any(span <= 0) or np.any(cyc <= 0):
        raise ValueError("stream statistics are empty: the kernel did not record its stamps")
    ghz = cyc / span
    per = lambda k: float(np.median(s[..., k] / ghz / tiles))
    first = (s[..., 9] - s[..., 8]) / ghz
    start_spread = np.median(s[..., 0].max(axis=1) - s[..., 0].min(axis=1))
    return {"ns_per_tile": float(np.median(span / tiles)),
            "ns_per_tile_max": float(np.median((span / tiles).max(axis=1))),
            "span_ns": float(np.median(span)),
            "consumer_busy_ns": per(4), "consumer_wait_ns": per(5), "producer_wait_ns": per(6),
            "issue_ns": per(7), "first_tile_ns": float(np.median(first)), "store_wait_ns": per(10),
            "drain_ns": float(np.median(s[..., 11] / ghz)), "clock_ghz": float(np.median(ghz)),
            "start_spread_ns": float(start_spread)}


# ------------------------------------------------------------------------------------------------
# steps "latency" and "sync": case lists

LAT_BULK_BYTES = (16, 64, 256, 1024, 4096, 16384, 32768, 65536, 131072)
LAT_TENSOR_BYTES = (16, 64, 256, 1024, 4096, 16384, 65536)
COLD_STRIDE = (1 << 20) + 256      # bytes between the sources of consecutive cold loads
ROW_BYTES = 1024                   # the 2-D tensor map over the buffer: uint32, 256 per row


def tensor_box(nbytes: int) -> tuple[int, int]:
    """The 2-D uint32 box of ``nbytes``: ``(nbytes/4, 1)`` up to one 1 KiB row, then ``(256, nbytes/1024)``."""
    if nbytes < 16 or nbytes % 16 or (nbytes > ROW_BYTES and nbytes % ROW_BYTES) or nbytes > 256 * ROW_BYTES:
        raise ValueError(f"{nbytes} B is not a box of whole 16-byte granules / 1 KiB rows (at most 256 rows)")
    return (nbytes // 4, 1) if nbytes <= ROW_BYTES else (256, nbytes // ROW_BYTES)


def latency_cases(quick: bool = False) -> list[dict[str, Any]]:
    """The cases of step ``latency``: ``{kind: "bulk" | "tensor", bytes, iters}``, ``{kind: "issue", bytes, count,
    cold, iters}`` (count × bytes ≤ 128 KiB) and ``{kind: "mbarrier", iters}``."""
    it = 16 if quick else 64
    out = [dict(kind="bulk", bytes=b, iters=it) for b in (LAT_BULK_BYTES[::3] if quick else LAT_BULK_BYTES)]
    out += [dict(kind="tensor", bytes=b, iters=it) for b in (LAT_TENSOR_BYTES[::3] if quick else LAT_TENSOR_BYTES)]
    for b in ((256, 4096) if quick else (16, 256, 1024, 4096, 16384)):
        for n in ((1, 8) if quick else (1, 2, 4, 8, 16, 32)):
            if n * b <= 128 * 1024:
                for cold in (True, False):
                    out.append(dict(kind="issue", bytes=b, count=n, cold=cold, iters=it // 2))
    out.append(dict(kind="mbarrier", iters=1024 if quick else 8192))
    return out


def latency_sources(quick: bool = False, buf_bytes: int = BUF_BYTES) -> list[int]:
    """The first source offset of every case of :func:`latency_cases`, as step ``latency`` took them from its
    cursor (the step is the first to read the buffer in a full run). The ``issue`` cases take only ``bytes × count``
    bytes when warm, so every case after the first warm one starts 16–112 bytes past a 128-byte line: their copies
    are misaligned (what ``l03/tma_latency``'s issue records measured)."""
    cur, out = 0, []
    for c in latency_cases(quick):
        if c["kind"] == "mbarrier":
            out.append(0)
            continue
        n = c["iters"] * COLD_STRIDE if c["kind"] in ("bulk", "tensor") or c["cold"] else c["bytes"] * c["count"]
        off = cur % buf_bytes
        if off + n > buf_bytes:
            off = 0
            cur += buf_bytes - cur % buf_bytes
        cur += n
        out.append(off)
    return out


def sync_cases(quick: bool = False) -> list[dict[str, Any]]:
    """The cases of step ``sync``: ``bar_sync`` (threads), ``cluster_barrier`` (cluster, threads, sem, store),
    ``dsmem_chase`` (cluster, target rank, remote), ``dsmem_stream`` (cluster, threads, remote, clusters)."""
    out = [dict(kind="bar_sync", threads=t, iters=4096) for t in ((32, 256, 1024) if quick else
                                                                  (32, 64, 128, 256, 512, 1024))]
    for n in ((1, 2, 8) if quick else (1, 2, 4, 8, 16)):
        for t in ((32, 256) if quick else (32, 128, 256, 512, 1024)):
            for sem in ("release", "relaxed"):
                for store in (0, 1):
                    out.append(dict(kind="cluster_barrier", cluster=n, threads=t, sem=sem, store=store, iters=2048))
    for n in ((2, 8) if quick else (2, 4, 8, 16)):
        out.append(dict(kind="dsmem_chase", cluster=n, target=0, remote=0, iters=4096))
        for tgt in sorted({0, 1, n - 1}):
            out.append(dict(kind="dsmem_chase", cluster=n, target=tgt, remote=1, iters=4096))
    for n in ((2,) if quick else (2, 4, 8)):
        for t in ((256, 1024) if quick else (256, 512, 1024)):
            for remote in (0, 1):
                for many in (False, True):
                    out.append(dict(kind="dsmem_stream", cluster=n, threads=t, remote=remote, all_sms=many,
                                    vecs=4096, iters=64))
    return out


#: (blocks per SM, threads per block) of the ld.global.v4 read streams and the vectorised copy kernel
READ_SHAPES = ((1, 1024), (2, 512), (4, 256), (8, 128), (2, 1024), (4, 512), (8, 256), (16, 128))
COPY_SHAPES = ((4, 256), (8, 256), (4, 512), (16, 128), (2, 1024))


def read_configs(quick: bool = False) -> list[dict[str, Any]]:
    """ld.global.v4 read streams: variant (plain / nc / pf) × loads in flight (2, 4, 8) × :data:`READ_SHAPES`."""
    out = []
    for v in ("plain", "nc", "pf"):
        for u in ((4,) if quick else (2, 4, 8)):
            for bps, thr in (READ_SHAPES[:3] if quick else READ_SHAPES):
                out.append(dict(variant=v, unroll=u, blocks_per_sm=bps, threads=thr))
    return out


#: TMA stream configurations tried at 1 GiB when the sweep has not run: (tile KiB, stages, CTAs/SM)
DEFAULT_TMA_CONFIGS = ((16, 4, 2), (32, 3, 2), (64, 3, 1), (8, 8, 2), (16, 6, 2))
#: flags of l03_stream.cu tried on the best copy configurations: bit 0 evict_first loads, 1 stores, 2 store lag
COPY_FLAGS = (0, 1, 2, 3, 4, 7)
#: the book's tensor copy (l05_tma_copy.cu): (box_x, box_y, stages, CTAs per SM)
TENSOR_COPY_CONFIGS = ((256, 64, 3, 1), (128, 64, 3, 2), (64, 64, 4, 2), (256, 32, 4, 1))
GEMM_SIZES = (4096, 8192, 16384)

#: step copytune, phase A: (tile KiB, stages, CTAs per SM) of ``l05_copy_tune.cu`` — 48 KiB to 192 KiB in flight
#: per SM, one to four CTAs per SM
COPYTUNE_SHAPES = ((16, 4, 2), (16, 6, 2), (16, 12, 1), (32, 3, 2), (32, 6, 1), (64, 3, 1), (16, 3, 4), (8, 6, 4),
                   (16, 4, 3), (32, 2, 3), (8, 12, 2), (64, 2, 1))
#: phase B: the flags tried on the best phase-A variants (bit 0/1 evict_first loads/stores, 2 contiguous, 3 prefetch)
COPYTUNE_FLAGS = (1, 2, 3, 8, 9, 11)
COPYTUNE_QUICK_SHAPES = ((16, 4, 2), (8, 6, 4), (32, 3, 1))

#: the child process of :meth:`CudaBackend.gemms` (argv: JSON list of [dtype, n], repeats); prints one line
#: ``H100LAB_GEMM {json}``
GEMM_SCRIPT = r"""
import json, sys, traceback
jobs, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
out = {"jobs": [], "error": None}
try:
    import torch
    out["torch"], out["torch_cuda"] = torch.__version__, torch.version.cuda
    dev = torch.device("cuda")
    checked = set()
    for dtype, n in jobs:
        try:
            g = torch.Generator(device=dev).manual_seed(5)
            if dtype in ("bf16", "fp16"):
                t = torch.bfloat16 if dtype == "bf16" else torch.float16
                a = torch.randn(n, n, device=dev, dtype=t, generator=g)
                b = torch.randn(n, n, device=dev, dtype=t, generator=g)
                fn = lambda: torch.matmul(a, b)
            elif dtype == "fp8":
                a = torch.randn(n, n, device=dev, generator=g).to(torch.float8_e4m3fn)
                b = torch.randn(n, n, device=dev, generator=g).to(torch.float8_e4m3fn).t()
                one = torch.tensor(1.0, device=dev)
                fn = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            else:
                raise ValueError(dtype)
            c = fn()
            torch.cuda.synchronize()
            err = None
            if dtype not in checked:
                checked.add(dtype)
                r = a.float() @ b.float()
                err = float(((c.float() - r).norm() / r.norm()).item())
                del r
            for _ in range(3):
                fn()
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
            for e0, e1 in ev:
                e0.record()
                fn()
                e1.record()
            torch.cuda.synchronize()
            out["jobs"].append({"dtype": dtype, "n": n, "samples_ms": [e0.elapsed_time(e1) for e0, e1 in ev],
                                "rel_error": err})
            del a, b, c
            torch.cuda.empty_cache()
        except Exception as exc:
            out["jobs"].append({"dtype": dtype, "n": n, "error": f"{type(exc).__name__}: {exc}"})
except Exception:
    out["error"] = traceback.format_exc()[-2000:]
print("H100LAB_GEMM " + json.dumps(out), flush=True)
"""


def copytune_fits(tile_kib: int, stages: int, ctas_per_sm: int, *, smem_per_sm: int = SMEM_PER_SM,
                  optin: int = SMEM_OPTIN) -> bool:
    """Whether ``ctas_per_sm`` CTAs of ``l05_copy_tune.cu`` (1 KiB header + stages × tile) fit one SM."""
    need = STREAM_HEADER + stages * tile_kib * 1024
    return stages <= 16 and need <= optin and ctas_per_sm * (need + SMEM_RESERVED) <= smem_per_sm


def copytune_cases(quick: bool = False, **fit) -> list[dict[str, Any]]:
    """Phase A of step copytune: every shape of :data:`COPYTUNE_SHAPES` that fits, with the refill lag 0, 1 and
    ``stages − 1`` (``cp.async.bulk.wait_group.read lag``; lag < stages, ≤ 7) and tiles interleaved (flags 0) or in
    contiguous chunks (flags 4)."""
    out = []
    for tkb, st, per in (COPYTUNE_QUICK_SHAPES if quick else COPYTUNE_SHAPES):
        if not copytune_fits(tkb, st, per, **fit):
            continue
        for lag in sorted({0, min(1, st - 1), min(st - 1, 7)}):
            for flags in ((0,) if quick else (0, 4)):
                out.append(dict(tile_bytes=tkb * 1024, stages=st, ctas_per_sm=per, lag=lag, flags=flags))
    return out


#: step latency2: copy sizes, source alignments (bytes past a 128-byte line) and the page each cold source sits in
LAT2_BYTES = (16, 64, 256, 1024, 4096, 16384, 32768, 65536, 131072)
LAT2_ALIGN = (0, 16)
LAT2_PAGE = 2 << 20


def latency2_cases(quick: bool = False) -> list[dict[str, Any]]:
    """The cases of step ``latency2`` (``l03_copy_latency.cu``): ``{bytes, count, align, touch, warm, iters}`` — per
    iteration a cold round (touch 1: its page's TLB entry warmed first) then ``warm`` rounds of the same sources,
    each round ``count`` back-to-back copies of ``bytes`` (count × bytes ≤ 128 KiB)."""
    it = 16 if quick else 64
    out = [dict(bytes=b, count=1, align=a, touch=t, warm=3, iters=it)
           for b in (LAT2_BYTES[::3] if quick else LAT2_BYTES) for a in LAT2_ALIGN for t in (0, 1)]
    for b in ((256, 4096) if quick else (16, 256, 1024, 4096, 16384)):
        for n in ((8,) if quick else (2, 4, 8, 16, 32)):
            if n * b <= 128 * 1024:
                out += [dict(bytes=b, count=n, align=a, touch=1, warm=3, iters=it // 2) for a in LAT2_ALIGN]
    return out


def latency2_offsets(base: int, iters: int, stride: int, align: int) -> np.ndarray:
    """The offset table of ``l03_copy_latency.cu``: ``iters`` source offsets (one per ``stride``-byte block,
    ``align`` bytes past its start) then ``iters`` touch offsets (half a block further: the same 2 MiB page when
    ``stride`` is the page, and no copied line)."""
    i = np.arange(iters, dtype=np.int64) * stride
    src = base + i + align
    return np.concatenate([src, base + i + stride // 2]).astype(np.int64)


def latency2_plan(quick: bool = False, buf_bytes: int = BUF_BYTES) -> list[dict[str, Any]]:
    """The cases of step ``latency2`` with the ``base`` offset and block ``stride`` its cursor gave each (the step
    first to read the buffer in its run, as in ``l03/tma_latency_clean``'s run: ``--steps latency2,copyrace``):
    :meth:`Runner.step_latency2`'s arithmetic replayed."""
    stride = min(LAT2_PAGE, buf_bytes // 64)
    cur, out = 0, []
    for c in latency2_cases(quick):
        n = (c["iters"] + 1) * stride
        off = cur % buf_bytes
        if off + n > buf_bytes:
            off = 0
            cur += buf_bytes - cur % buf_bytes
        cur += n
        out.append(dict(c, base=-(-off // stride) * stride, stride=stride))
    return out


def reuse_distances(plan: Sequence[dict[str, Any]], line: int = 128) -> list[list[float]]:
    """For each entry of a ``l03_copy_latency.cu`` plan (``{bytes, count, align, touch, iters, base, stride}``, in run
    order) and each of its samples: how many bytes of lines the run had read for the first time between the last
    read of the round's lines and its cold round — the largest over the round's lines (``inf`` when one of them was
    never read before). The samples' sources and touched words are replayed in order (the warm rounds re-read the
    same lines and add nothing new). A proxy of an LRU stack distance that holds when nearly every line read is a
    new one, as in these steps."""
    last: dict[int, int] = {}
    traffic = 0
    out = []
    for c in plan:
        per = []
        for i in range(c["iters"]):
            blk = c["base"] + i * c["stride"]
            s = blk + c["align"]
            lines = range(s // line, (s + c["count"] * c["bytes"] - 1) // line + 1)
            per.append(max(float(traffic - last[x]) if x in last else math.inf for x in lines))
            for x in lines:
                if x not in last:
                    traffic += line
                last[x] = traffic
            if c.get("touch"):
                x = (blk + c["stride"] // 2) // line
                if x not in last:
                    traffic += line
                last[x] = traffic
        out.append(per)
    return out


#: step coldround: passes over the cold-round cases, each sample on a 2 MiB page never read before in the run
COLD_PASSES = 3
COLD_QUICK_STRIDE = 64 << 10          # --quick (and the fakes): small blocks instead of 2 MiB pages
#: step coldround's L2 clean-out between its memset and pass 0 (issue 13): bytes of a separate buffer read (never
#: written) by ``l05_read_stream.cu``'s ``read_v4_plain_u8``, >= 4x the H200's 60 MiB L2; 0 turns it off (the
#: step as l03/tma_latency_cold ran it). Hypothesis under test: the memset leaves the L2 full of dirty lines, which
#: pass 0's misses must write back as they evict them (l03/tma_latency_cold_passes: pass 0 slower for copies >= 4 KiB)
COLD_FLUSH_BYTES = 256 << 20
COLD_FLUSH_QUICK_BYTES = 1 << 20      # --quick (and the fakes)


def coldround_cases(quick: bool = False) -> list[dict[str, Any]]:
    """The cases of step ``coldround``: every back-to-back round of :func:`latency2_cases` (``count`` ≥ 2, touch 1)
    and, as anchors, single copies (touch 1) of each round size from both alignments; 64 samples per pass
    (--quick: two small cases of 3 samples)."""
    if quick:
        return [dict(bytes=256, count=1, align=0, touch=1, warm=1, iters=3),
                dict(bytes=256, count=4, align=16, touch=1, warm=1, iters=3)]
    rounds = [dict(c, iters=64) for c in latency2_cases() if c["count"] > 1]
    sizes = sorted({c["bytes"] for c in rounds})
    return [dict(bytes=b, count=1, align=a, touch=1, warm=3, iters=64) for b in sizes for a in LAT2_ALIGN] + rounds


def coldround_plan(quick: bool = False, passes: int = COLD_PASSES) -> tuple[list[dict[str, Any]], int, int]:
    """``(plan, stride, bytes)``: the run order of step ``coldround`` — ``{case…, pass, fresh, base}`` per case and
    pass, ``base`` the offset of its first ``stride``-byte block (one block per sample: the source at its start plus
    the alignment, the touched word half a block further) — and the bytes of address space the plan spans. Pass 0
    puts every case on blocks of its own; pass 1 (``fresh`` False, the re-read pass) runs every case again on pass
    0's blocks in reverse order, so that the lines it re-reads were read ~0 to ~140 MiB of traffic earlier (the L2
    holds 60 MiB); passes
    2 … ``passes`` are fresh again (blocks no earlier entry used; pass 2 in reverse case order)."""
    stride = COLD_QUICK_STRIDE if quick else LAT2_PAGE
    cases = coldround_cases(quick)
    plan, cursor, first = [], 0, []
    for p in range(passes + 1):
        if p == 1:
            plan += [dict(c, **{"pass": 1}, fresh=False, base=b) for c, b in reversed(list(zip(cases, first)))]
            continue
        for c in (cases[::-1] if p == 2 else cases):
            plan.append(dict(c, **{"pass": p}, fresh=True, base=cursor))
            if p == 0:
                first.append(cursor)
            cursor += c["iters"] * stride
    return plan, stride, cursor


#: step issuecold (issue 13, device request cold13): l03_tma_latency.cu's ``tma_issue`` cold rounds of 16-byte copies
#: (counts 1, 2, 4) crossed with the source offsets past a 128-byte line that l03/tma_latency's cursor gave its 16-byte
#: rounds (0, 16, 48), and 256-byte rounds (counts 1, 2; offsets 0, 112) as a control — every sample kept
ISSUECOLD_SHAPES = tuple((16, n, o) for n in (1, 2, 4) for o in (0, 16, 48)) + tuple(
    (256, n, o) for n in (1, 2) for o in (0, 112))


def issuecold_cases(quick: bool = False) -> list[dict[str, Any]]:
    """The cases of step ``issuecold``: each of :data:`ISSUECOLD_SHAPES` cold (``iters`` samples on sources
    ``COLD_STRIDE`` apart, as step ``latency``'s cold rounds: every other sample on a 2 MiB page whose TLB entry is
    cold) then warm (its first source again), in two passes — pass 0 in order, pass 1 in reverse order — so that a
    shape's median can be told apart from its place in the run (--quick: two shapes, 4 samples)."""
    shapes = ISSUECOLD_SHAPES[:2] if quick else ISSUECOLD_SHAPES
    it = 4 if quick else 64
    out = []
    for p in (0, 1):
        for b, n, o in (shapes if p == 0 else shapes[::-1]):
            out.append(dict(kind="issue", bytes=b, count=n, offset=o, cold=True, iters=it, **{"pass": p}))
            out.append(dict(kind="issue", bytes=b, count=n, offset=o, cold=False, iters=it // 2 + 1,
                            **{"pass": p}))
    return out


def _latency2_record(c: dict[str, Any], o: np.ndarray, ghz: float) -> dict[str, Any]:
    """A latency2-style record from ``l03_copy_latency.cu``'s stamps ``o`` (iters × reps × 3 cycle counts): the
    stats of each stamp, cold (rep 0) and warm (the other reps), in cycles and the median in ns."""
    rec = dict(c, clock_ghz=ghz)
    for part, sl in (("cold", o[:, 0]), ("warm", o[:, 1:].reshape(-1, 3))):
        for j, x in enumerate(("first", "issue", "total")):
            rec[f"{part}_{x}_cycles"] = _stats(sl[:, j])
            rec[f"{part}_{x}_ns"] = _med(sl[:, j]) / ghz
        rec[f"{part}_land_cycles"] = _stats(sl[:, 2] - sl[:, 1])
        rec[f"{part}_land_ns"] = _med(sl[:, 2] - sl[:, 1]) / ghz
    return rec


#: step copyrace: (name, kernel, configuration) of every copy raced against cuMemcpyDtoDAsync in each round.
#: copy_tune: (tile KiB, stages, CTAs/SM, lag, flags) — the best of l05/copy_tune; tma_copy: (box_x, box_y,
#: stages, CTAs/SM, L2 promotion); ws / tensor_ws: l05_copy_ws.cu (tile KiB or box, stages, CTAs/SM, lag, flags
#: [, promotion])
RACE_VARIANTS = (
    ("copy_tune 64K×2 lag1 hints", "copy_tune", (64, 2, 1, 1, 3)),
    ("copy_tune 16K×12 lag1", "copy_tune", (16, 12, 1, 1, 0)),
    ("tma_copy 256×64×3 L2_256B", "tma_copy", (256, 64, 3, 1, "L2_256B")),
    ("tma_copy 256×64×3 L2_128B", "tma_copy", (256, 64, 3, 1, "L2_128B")),
    ("tma_copy 256×64×3 L2_64B", "tma_copy", (256, 64, 3, 1, "L2_64B")),
    ("tma_copy 256×64×3 NONE", "tma_copy", (256, 64, 3, 1, "NONE")),
    ("tma_copy 128×128×3 L2_256B", "tma_copy", (128, 128, 3, 1, "L2_256B")),
    ("tma_copy 256×48×4 L2_256B", "tma_copy", (256, 48, 4, 1, "L2_256B")),
    ("tma_copy 256×32×6 L2_256B", "tma_copy", (256, 32, 6, 1, "L2_256B")),
    ("tma_copy 128×64×3 ×2/SM L2_256B", "tma_copy", (128, 64, 3, 2, "L2_256B")),
    ("ws 64K×3 lag1", "ws", (64, 3, 1, 1, 0)),
    ("ws 64K×3 lag2", "ws", (64, 3, 1, 2, 0)),
    ("ws 16K×12 lag3", "ws", (16, 12, 1, 3, 0)),
    ("ws 32K×6 lag3", "ws", (32, 6, 1, 3, 0)),
    ("ws 32K×6 lag3 hints", "ws", (32, 6, 1, 3, 3)),
    ("ws 32K×6 lag3 contiguous", "ws", (32, 6, 1, 3, 4)),
    ("ws 16K×6 ×2/SM lag3", "ws", (16, 6, 2, 3, 0)),
    ("tensor_ws 256×64×3 lag1 L2_256B", "tensor_ws", (256, 64, 3, 1, 1, 0, "L2_256B")),
    ("tensor_ws 256×64×3 lag2 L2_256B", "tensor_ws", (256, 64, 3, 1, 2, 0, "L2_256B")),
    ("tensor_ws 256×48×4 lag2 L2_256B", "tensor_ws", (256, 48, 4, 1, 2, 0, "L2_256B")),
    ("tensor_ws 256×32×6 lag3 L2_256B", "tensor_ws", (256, 32, 6, 1, 3, 0, "L2_256B")),
    ("tensor_ws 128×64×3 ×2/SM lag1 L2_256B", "tensor_ws", (128, 64, 3, 2, 1, 0, "L2_256B")),
    ("device_copy 4×256", "device_copy", (4, 256)),
)
#: step copyoffset: destination offsets (bytes past dst; 16-byte aligned, never a multiple of 128 KiB but 0) and
#: the copies raced at each
OFFSET_CASES = (0, 4096, 64 * 1024 + 4096, (1 << 20) + 12 * 1024, (32 << 20) + 20 * 1024, (512 << 20) + 36 * 1024)
OFFSET_VARIANTS = (
    ("tensor_ws 256×32×6 lag3 L2_256B", "tensor_ws", (256, 32, 6, 1, 3, 0, "L2_256B")),
    ("tma_copy 256×64×3 L2_256B", "tma_copy", (256, 64, 3, 1, "L2_256B")),
    ("copy_tune 64K×2 lag1 hints", "copy_tune", (64, 2, 1, 1, 3)),
)


class _At:
    """A device address where a backend takes an allocation (``memcpy_dtod`` reads only ``.ptr``)."""

    def __init__(self, ptr: int):
        self.ptr = ptr


#: the read race: ld.global.v4 streams (variant, unroll, blocks/SM, threads) and TMA read streams (tile KiB, stages,
#: CTAs/SM, flags) — the best of l05/ceilings and their neighbours
RACE_READS = (("plain", 8, 2, 1024), ("nc", 8, 2, 1024), ("plain", 4, 4, 512))
RACE_TMA_READS = ((64, 3, 1, 1), (64, 3, 1, 0), (32, 6, 1, 1), (16, 6, 2, 1))


def estimate_seconds(quick: bool = False, num_sms: int = 132) -> dict[str, float]:
    """A rough wall-time estimate per step on an H200 (launch overheads, kernel times, compilation)."""
    n_stream = len(stream_cases(quick))
    n_lat = len(latency_cases(quick))
    n_sync = len(sync_cases(quick))
    return {"cvt": 3.0, "encode": 1.0, "latency": 2.0 + 0.02 * n_lat, "sync": 2.0 + 0.02 * n_sync,
            "stream": 3.0 + n_stream * 0.012, "ceilings": 25.0 + len(read_configs(quick)) * 0.01,
            "copytune": 8.0 + 0.03 * (len(copytune_cases(quick)) + 5 * len(COPYTUNE_FLAGS) + 60),
            "latency2": 4.0 + 0.02 * len(latency2_cases(quick)),
            "coldround": 6.0 + 0.02 * (COLD_PASSES + 1) * len(coldround_cases(quick)),
            "copyrace": 12.0 + 3 * 0.05 * (len(RACE_VARIANTS) + len(RACE_READS) + len(RACE_TMA_READS)),
            "copyoffset": 6.0 + 3 * 0.05 * len(OFFSET_CASES) * (len(OFFSET_VARIANTS) + 1)}


# ------------------------------------------------------------------------------------------------
# the GPU backend

class CudaBackend:
    """The calls the steps make, on ``h100lab.cuda`` (cuda.bindings.driver underneath; every result checked).
    Tests substitute a fake with the same methods."""

    def __init__(self):
        from .. import cuda

        self.cuda = cuda
        self._progs: dict = {}

    # device and compilation
    def properties(self) -> dict[str, Any]:
        return self.cuda.device_properties(0)

    def metadata(self, command: str) -> dict[str, Any]:
        return self.cuda.run_metadata(command)

    def function(self, kernel: str, name: str, options: Sequence[str] = ()):
        key = (kernel, tuple(options))
        if key not in self._progs:
            self._progs[key] = self.cuda.compile_kernel(kernel, options=options)
        return self._progs[key].function(name)

    # memory
    def alloc(self, nbytes: int):
        return self.cuda.empty(int(nbytes), np.uint8)

    def zeros(self, n: int, dtype):
        return self.cuda.zeros(int(n), dtype)

    def to_device(self, a: np.ndarray):
        return self.cuda.to_device(a)

    def to_host(self, arr) -> np.ndarray:
        return arr.to_host()

    def memset32(self, arr, value: int, words: int | None = None) -> None:
        from ..cuda import device

        d = device._ready()
        n = arr.nbytes // 4 if words is None else int(words)
        device.check(d.cuMemsetD32(arr.ptr, int(value) & 0xFFFFFFFF, n), "cuMemsetD32")

    @staticmethod
    def ptr(arr, offset: int = 0) -> np.uint64:
        """A pointer parameter: the allocation's address plus ``offset`` bytes."""
        return np.uint64(arr.ptr + int(offset))

    # kernels
    def launch(self, kernel, grid, block, *args, shared_mem: int = 0, cluster=None) -> None:
        self.cuda.launch(kernel, grid, block, *args, shared_mem=shared_mem, cluster=cluster)

    def sync(self) -> None:
        self.cuda.synchronize()

    def timed(self, calls: Sequence[Callable[[], None]]) -> list[float]:
        """Run ``calls`` in order on the default stream, each between two CUDA events; milliseconds of each."""
        from ..cuda import device

        d = device._ready()
        ev = [device.check(d.cuEventCreate(d.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate")
              for _ in range(2 * len(calls))]
        try:
            for i, fn in enumerate(calls):
                device.check(d.cuEventRecord(ev[2 * i], 0), "cuEventRecord")
                fn()
                device.check(d.cuEventRecord(ev[2 * i + 1], 0), "cuEventRecord")
            if ev:
                device.check(d.cuEventSynchronize(ev[-1]), "cuEventSynchronize")
            return [float(device.check(d.cuEventElapsedTime(ev[2 * i], ev[2 * i + 1]), "cuEventElapsedTime"))
                    for i in range(len(calls))]
        finally:
            for e in ev:
                device.check(d.cuEventDestroy(e), "cuEventDestroy")

    def memcpy_dtod(self, dst, src, nbytes: int) -> None:
        from ..cuda import device

        d = device._ready()
        device.check(d.cuMemcpyDtoDAsync(dst.ptr, src.ptr, int(nbytes), 0), "cuMemcpyDtoDAsync")

    def encode_tiled(self, *args, **kw):
        return self.cuda.encode_tiled(*args, **kw)

    def encode_raw(self, c: dict[str, Any], address: int) -> str:
        """``cuTensorMapEncodeTiled`` through ``ctypes`` with the enum parameters as plain C ints (cuda.bindings
        accepts only its enum classes); returns the driver's result name (``cuGetErrorName``)."""
        import ctypes as C

        lib = C.CDLL("libcuda.so.1")
        f = lib.cuTensorMapEncodeTiled
        f.restype = C.c_int
        f.argtypes = [C.c_void_p, C.c_int, C.c_uint32, C.c_void_p, C.POINTER(C.c_uint64), C.POINTER(C.c_uint64),
                      C.POINTER(C.c_uint32), C.POINTER(C.c_uint32), C.c_int, C.c_int, C.c_int, C.c_int]
        raw = (C.c_uint8 * 256)()
        out = (C.addressof(raw) + 63) // 64 * 64       # the CUtensorMap is 64-byte aligned
        r = c["rank"]
        gdim = (C.c_uint64 * r)(*c["global_dim"])
        gstr = (C.c_uint64 * max(r - 1, 1))(*(c["global_strides"] or [0]))
        box = (C.c_uint32 * r)(*c["box_dim"])
        es = (C.c_uint32 * r)(*c["element_strides"])
        rc = f(out, int(c["dtype"]), r, C.c_void_p(address), gdim, gstr, box, es, int(c["interleave"]),
               int(c["swizzle"]), int(c["l2_promotion"]), int(c["oob_fill"]))
        if rc == 0:
            return "CUDA_SUCCESS"
        name = C.c_char_p()
        lib.cuGetErrorName.restype = C.c_int
        if lib.cuGetErrorName(rc, C.byref(name)) != 0 or not name.value:
            return f"CUresult {rc}"
        return name.value.decode()

    def gemms(self, jobs: Sequence[tuple[str, int]], repeats: int = 10, timeout_s: float = 240.0) -> dict[str, Any]:
        """cuBLAS GEMMs through PyTorch in a child process (:data:`GEMM_SCRIPT`: ``torch.matmul``; FP8
        ``torch._scaled_mm``), each ``(dtype, n)`` an n × n × n product timed with CUDA events, the smallest size
        of each dtype checked against an FP32 product. A child process keeps PyTorch's state (and any failure to
        import it) out of this one; when the import fails it is retried once with ``PYTORCH_JIT=0`` (TorchScript
        off: a matmul does not need it). Returns ``{"jobs": [...], "error", "torch", "torch_cuda", "env"}``."""
        import json
        import os
        import subprocess

        out: dict[str, Any] = {}
        for env_extra in ({}, {"PYTORCH_JIT": "0"}):
            env = {**os.environ, **env_extra}
            try:
                p = subprocess.run([sys.executable, "-c", GEMM_SCRIPT, json.dumps([list(j) for j in jobs]),
                                    str(repeats)], capture_output=True, text=True, timeout=timeout_s, env=env)
            except subprocess.TimeoutExpired:
                return {"jobs": [], "error": f"the GEMM child process ran past {timeout_s:.0f} s", "env": env_extra}
            line = next((ln for ln in p.stdout.splitlines()[::-1] if ln.startswith("H100LAB_GEMM ")), None)
            if line is None:
                out = {"jobs": [], "error": f"child exited {p.returncode}: {(p.stderr or p.stdout)[-1500:]}"}
            else:
                out = json.loads(line[len("H100LAB_GEMM "):])
            out["env"] = env_extra
            if not out.get("error"):
                break
        return out
# ------------------------------------------------------------------------------------------------
# the run

def _med(xs) -> float:
    return float(np.median(np.asarray(xs, dtype=np.float64)))


class Runner:
    """Runs the steps on ``gpu`` (a :class:`CudaBackend` or a fake), printing progress to ``log``."""

    def __init__(self, gpu, *, quick: bool = False, budget: Budget | None = None, log=None, repeats: int | None = None,
                 buf_bytes: int | None = None):
        self.gpu = gpu
        self.quick = quick
        self.budget = budget or Budget(450.0)
        self.log = log or sys.stdout
        self.repeats = repeats if repeats is not None else (2 if quick else 5)
        props = gpu.properties()
        self.num_sms = int(props.get("multiProcessorCount", 132))
        self.smem_per_sm = int(props.get("sharedMemPerMultiprocessor", SMEM_PER_SM))
        self.optin = int(props.get("sharedMemPerBlockOptin", SMEM_OPTIN))
        self.buf_bytes = int(buf_bytes) if buf_bytes else (QUICK_BUF_BYTES if quick else BUF_BYTES)
        self.cursor = 0                     # bytes of the buffer read so far (cold sources walk it)
        self._bufs: dict = {}
        self._clock: float | None = None
        self.complete: dict[str, bool] = {}

    def say(self, msg: str) -> None:
        print(f"[{self.budget.elapsed():6.1f} s] {msg}", file=self.log, flush=True)

    # shared buffers -------------------------------------------------------------------------------
    def buffers(self):
        """(src, dst): ``buf_bytes`` each; src's word i holds i."""
        if "src" not in self._bufs:
            src, dst = self.gpu.alloc(self.buf_bytes), self.gpu.alloc(self.buf_bytes)
            fill = self.gpu.function("l03_stream", "fill_index")
            self.gpu.launch(fill, self.num_sms * 8, 256, src, np.int64(self.buf_bytes // 4))
            self.gpu.sync()
            self._bufs.update(src=src, dst=dst)
        return self._bufs["src"], self._bufs["dst"]

    def take(self, nbytes: int) -> int:
        """The buffer offset of ``nbytes`` never read before in this run (wrapping after ``buf_bytes``)."""
        off = self.cursor % self.buf_bytes
        if off + nbytes > self.buf_bytes:
            off = 0
            self.cursor += self.buf_bytes - self.cursor % self.buf_bytes
        self.cursor += nbytes
        return off

    def clock_ghz(self) -> float:
        """The SM clock (cycles per ns) from ``bar_sync_cost`` on one warp: clock64 cycles / %globaltimer ns."""
        if self._clock is None:
            k = self.gpu.function("l03_sync_cost", "bar_sync_cost")
            out = self.gpu.zeros(2, np.uint64)
            self.gpu.launch(k, 1, 32, np.int32(200_000), out)
            self.gpu.sync()
            o = self.gpu.to_host(out).astype(np.float64)
            self._clock = float(o[0] / o[1]) if o[1] > 0 else float("nan")
        return self._clock

    # step cvt ------------------------------------------------------------------------------------
    def step_cvt(self) -> list[dict[str, Any]]:
        from ..cuda.errors import CompileError

        opts: tuple[str, ...] = ()
        try:
            k = self.gpu.function("l01_cvt_probe", "cvt_probe")
        except CompileError as exc:
            self.say(f"cvt: the full probe does not compile here ({str(exc).splitlines()[0]}); core ops only")
            opts = ("-DH100LAB_CVT_CORE_ONLY",)
            k = self.gpu.function("l01_cvt_probe", "cvt_probe", opts)
        ins = cvt_inputs()
        dev = {kind: (self.gpu.to_device(a), self.gpu.to_device(b), a, b) for kind, (a, b) in ins.items()}
        recs = []
        for code, op, kind in CVT_OPS:
            if opts and code >= CVT_CORE:
                continue
            src = _cvt_source(kind)
            da, db, a, b = dev[src]
            n = a.size
            out = self.gpu.zeros(n, np.uint32)
            self.gpu.launch(k, -(-n // 256), 256, da, db, out, np.int32(n), np.int32(code))
            self.gpu.sync()
            res = self.gpu.to_host(out)
            recs.append(dict(code=code, op=op, kind=kind, source=src, n=int(n), a=pack(a.view(np.uint8)),
                             b=pack(b.view(np.uint8)) if kind.startswith("f32x2") else None,
                             out=pack(res.astype(np.uint32).view(np.uint8)),
                             untouched=int(np.count_nonzero(res == 0xDEADBEEF))))
        self.say(f"cvt: {len(recs)} ops, {sum(r['n'] for r in recs)} conversions")
        return recs

    # step encode ---------------------------------------------------------------------------------
    def step_encode(self) -> list[dict[str, Any]]:
        buf = self.gpu.alloc(1 << 20)
        addr = int(buf.ptr)
        recs = []
        for c in enum_cases():
            recs.append(dict(c, result=self.gpu.encode_raw(c, addr)))
        ctl = recs[0]["result"]
        self.say(f"encode: {len(recs)} calls, control {ctl}, "
                 f"{sum(r['result'] != 'CUDA_SUCCESS' for r in recs)} refused")
        return recs

    # step latency --------------------------------------------------------------------------------
    def step_latency(self) -> list[dict[str, Any]]:
        src, _ = self.buffers()
        ghz = self.clock_ghz()
        recs = []
        err = self.gpu.zeros(1, np.uint32)
        kb = self.gpu.function("l03_tma_latency", "tma_latency")
        kt = self.gpu.function("l03_tma_latency", "tma_latency_tensor")
        ki = self.gpu.function("l03_tma_latency", "tma_issue")
        km = self.gpu.function("l03_tma_latency", "mbar_costs")
        for k in (kb, kt, ki):
            k.set_max_dynamic_shared_memory(200 * 1024)
        rows = self.buf_bytes // ROW_BYTES
        for c in latency_cases(self.quick):
            if self.budget.over():
                break
            it = c["iters"]
            if c["kind"] in ("bulk", "tensor"):
                out = self.gpu.zeros(3 * it, np.uint64)
                span = it * COLD_STRIDE
                first = self.take(span)
                if c["kind"] == "bulk":
                    self.gpu.launch(kb, 1, 32, src, np.int64(self.buf_bytes), np.int64(first), np.int64(COLD_STRIDE),
                                    np.int32(c["bytes"]), np.int32(it), np.int64(TIMEOUT_NS), out, err,
                                    shared_mem=c["bytes"] + 1024)
                else:
                    bx, by = tensor_box(c["bytes"])
                    tm = self.gpu.encode_tiled("UINT32", 2, src, [256, rows], [ROW_BYTES], [bx, by], [1, 1],
                                               "NONE", "NONE", "NONE", "NONE")
                    self.gpu.launch(kt, 1, 32, tm, np.int32(rows), np.int32(first // ROW_BYTES),
                                    np.int32(COLD_STRIDE // ROW_BYTES + 1), np.int32(c["bytes"]), np.int32(it),
                                    np.int64(TIMEOUT_NS), out, err, shared_mem=c["bytes"] + 2048)
                self.gpu.sync()
                o = self.gpu.to_host(out).astype(np.float64).reshape(it, 3)
                recs.append(dict(c, cold_cycles=_stats(o[:, 0]), warm_cycles=_stats(o[:, 1]),
                                 arrive_cycles=_stats(o[:, 2]), cold_ns=_med(o[:, 0]) / ghz,
                                 warm_ns=_med(o[:, 1]) / ghz, arrive_ns=_med(o[:, 2]) / ghz, clock_ghz=ghz))
            elif c["kind"] == "issue":
                stride = COLD_STRIDE if c["cold"] else 0
                first = self.take(it * COLD_STRIDE) if c["cold"] else self.take(c["bytes"] * c["count"])
                recs.append(dict(c, **self._tma_issue_round(ki, src, first, stride, c, err, ghz)[1]))
            else:
                out = self.gpu.zeros(8, np.uint64)
                self.gpu.launch(km, 1, 64, np.int32(it), np.int64(TIMEOUT_NS), out, err)
                self.gpu.sync()
                o = self.gpu.to_host(out).astype(np.float64)
                per = o / it
                recs.append(dict(c, try_wait_hit_cycles=per[0], test_wait_hit_cycles=per[1], arrive_cycles=per[2],
                                 ping_pong_cycles=per[3], wake_cycles=per[4], loop_cycles=per[5],
                                 try_wait_hit_ns=per[0] / ghz, test_wait_hit_ns=per[1] / ghz, arrive_ns=per[2] / ghz,
                                 ping_pong_ns=per[3] / ghz, wake_ns=per[4] / ghz, loop_ns=per[5] / ghz, clock_ghz=ghz))
        e = int(self.gpu.to_host(err)[0])
        for r in recs:
            r["ok"] = e == 0
        self.say(f"latency: {len(recs)} cases, clock {ghz:.3f} GHz, error bits {e}")
        return recs

    # step sync -----------------------------------------------------------------------------------
    def step_sync(self) -> list[dict[str, Any]]:
        from ..cuda.errors import CudaError

        ghz = self.clock_ghz()
        kbar = self.gpu.function("l03_sync_cost", "bar_sync_cost")
        kcl = self.gpu.function("l03_sync_cost", "cluster_barrier_cost")
        kch = self.gpu.function("l03_sync_cost", "dsmem_chase")
        kst = self.gpu.function("l03_sync_cost", "dsmem_stream")
        for k in (kcl, kch, kst):
            k.allow_non_portable_cluster_size(True)
        kst.set_max_dynamic_shared_memory(64 * 1024)          # dsmem_stream holds 4096 16-byte vectors
        scratch = self.gpu.zeros(16 * 1024, np.uint32)
        recs = []
        for c in sync_cases(self.quick):
            if self.budget.over():
                break
            it = c["iters"]
            try:
                if c["kind"] == "bar_sync":
                    out = self.gpu.zeros(2, np.uint64)
                    self.gpu.launch(kbar, 1, c["threads"], np.int32(it), out)
                    self.gpu.sync()
                    o = self.gpu.to_host(out).astype(np.float64)
                    recs.append(dict(c, cycles=o[0] / it, ns=o[1] / it, clock_ghz=ghz, ok=True))
                elif c["kind"] == "cluster_barrier":
                    n = c["cluster"]
                    out = self.gpu.zeros(2 * n, np.uint64)
                    self.gpu.launch(kcl, n, c["threads"], np.int32(it), np.int32(c["sem"] == "relaxed"),
                                    np.int32(c["store"]), scratch, out, cluster=n)
                    self.gpu.sync()
                    o = self.gpu.to_host(out).astype(np.float64).reshape(n, 2)
                    recs.append(dict(c, cycles=_med(o[:, 0]) / it, ns=_med(o[:, 1]) / it,
                                     cycles_max=float(o[:, 0].max()) / it, clock_ghz=ghz, ok=True))
                elif c["kind"] == "dsmem_chase":
                    n = c["cluster"]
                    out = self.gpu.zeros(3, np.uint64)
                    words = 4096
                    self.gpu.launch(kch, n, 32, np.int32(words), np.int32(33), np.int32(it), np.int32(c["target"]),
                                    np.int32(c["remote"]), out, shared_mem=4 * words, cluster=n)
                    self.gpu.sync()
                    o = self.gpu.to_host(out).astype(np.float64)
                    want = (it * 33) % words
                    recs.append(dict(c, cycles=o[0] / it, ns=o[0] / it / ghz, clock_ghz=ghz,
                                     ok=bool(int(o[1]) == want and int(o[2]) == n)))
                else:
                    n, t = c["cluster"], c["threads"]
                    clusters = max(1, self.num_sms // n) if c["all_sms"] else 1
                    grid = n * clusters
                    out = self.gpu.zeros(3 * grid, np.uint64)
                    self.gpu.launch(kst, grid, t, np.int32(c["vecs"]), np.int32(it), np.int32(c["remote"]), out,
                                    shared_mem=16 * c["vecs"], cluster=n)
                    self.gpu.sync()
                    o = self.gpu.to_host(out).astype(np.float64).reshape(grid, 3)
                    per = c["vecs"] // t // 4 * 4
                    nbytes = 16.0 * per * t * it
                    recs.append(dict(c, grid=grid, bytes_per_cta=nbytes, ns=_med(o[:, 0]),
                                     bytes_per_ns_per_sm=nbytes / _med(o[:, 0]),
                                     bytes_per_clock=nbytes / _med(o[:, 1]), clock_ghz=ghz, ok=True))
            except CudaError as exc:
                recs.append(dict(c, ok=False, launch_error=f"{type(exc).__name__}: {exc}"))
        self.say(f"sync: {len(recs)} cases, {sum(not r['ok'] for r in recs)} not run or wrong")
        return recs

    # step stream ---------------------------------------------------------------------------------
    def _stream_run(self, kern, verify, c: dict[str, Any], tiles: int, *, flags: int = 0, repeats: int | None = None,
                    check: bool = True) -> dict[str, Any]:
        src, dst = self.buffers()
        grid = stream_grid(c, self.num_sms)
        tile = c["tile_bytes"]
        buf_tiles = self.buf_bytes // tile
        mode = MODE_CODE[c["mode"]]
        smem = stream_smem(c["stages"], tile)
        reps = self.repeats if repeats is None else repeats
        nl = reps + 2
        stats = self.gpu.zeros(nl * grid * NSTATS, np.uint64)
        sums = self.gpu.zeros(grid, np.uint64)
        err = self.gpu.zeros(1, np.uint32)
        nbytes = grid * tiles * tile

        def base() -> int:
            if c["scope"] == "cta_warm":
                return 0
            return (self.take(nbytes) // tile) % buf_tiles

        def call(i: int, b: int):
            return lambda: self.gpu.launch(
                kern, grid, STREAM_THREADS, src, dst, np.int64(buf_tiles), np.int64(b), np.int32(tile),
                np.int32(c["stages"]), np.int32(tiles), np.int32(mode), np.int32(flags), np.int64(TIMEOUT_NS), sums,
                self.gpu.ptr(stats, 8 * NSTATS * grid * i), err, shared_mem=smem)

        ok, bad = True, None
        b0 = base()
        if check and mode == 2:
            self.gpu.memset32(dst, 0xFFFFFFFF)
        call(0, b0)()
        self.gpu.sync()
        if check and mode == 1:
            ok = bool(np.array_equal(self.gpu.to_host(sums), expected_stream_sums(b0, grid, tiles, tile, buf_tiles)))
        if check and mode == 2:
            badc = self.gpu.zeros(1, np.uint64)
            self.gpu.launch(verify, self.num_sms * 4, 256, dst, np.int64(b0 * tile // 4), np.int64(nbytes // 4),
                            np.int64(self.buf_bytes // 4), badc)
            self.gpu.sync()
            bad = int(self.gpu.to_host(badc)[0])
            ok = bad == 0
        calls = [call(i + 1, base()) for i in range(reps + 1)]
        ms = self.gpu.timed(calls)[1:]                         # the first is a warm-up
        e = int(self.gpu.to_host(err)[0])
        st = self.gpu.to_host(stats).reshape(nl, grid, NSTATS)[2:]
        rec = dict(c, grid=grid, tiles_per_cta=tiles, bytes=nbytes, smem_bytes=smem, flags=flags, ok=ok and e == 0,
                   error_bits=e, bad_words=bad, kernel_ms=_med(ms), kernel_ms_min=float(min(ms)), samples_ms=ms)
        moved = nbytes * (2 if mode == 2 else 1)
        rec["load_gbps"] = nbytes / (rec["kernel_ms"] * 1e6)
        rec["moved_gbps"] = moved / (rec["kernel_ms"] * 1e6)
        if e == 0:
            rec.update(summarize_stream(st, tiles))
        return rec

    def step_stream(self) -> list[dict[str, Any]]:
        kern = self.gpu.function("l03_stream", "stream")
        verify = self.gpu.function("l03_stream", "verify_copy")
        kern.set_max_dynamic_shared_memory(self.optin)
        cases = [c for c in stream_cases(self.quick)
                 if stream_fits(c["stages"], c["tile_bytes"], c["ctas_per_sm"], smem_per_sm=self.smem_per_sm,
                                optin=self.optin)]
        recs = []
        reserve = estimate_seconds(self.quick, self.num_sms)["ceilings"] + 30.0   # keep time for step ceilings
        for i, c in enumerate(cases):
            if self.budget.over() or self.budget.left() < reserve:
                self.say(f"stream: stopped after {i} of {len(cases)} cases to leave {reserve:.0f} s for the ceilings")
                self.stream_truncated = True
                break
            tiles = plan_tiles(c, self.num_sms, self.buf_bytes)
            recs.append(self._stream_run(kern, verify, c, tiles))
            if (i + 1) % 50 == 0 or i + 1 == len(cases):
                r = recs[-1]
                self.say(f"stream: {i + 1}/{len(cases)} cases; last {r['mode']} {r['scope']} {r['stages']} × "
                         f"{r['tile_bytes'] // 1024} KiB × {r['ctas_per_sm']}/SM: {r['moved_gbps']:.0f} GB/s")
        self.stream_records = recs
        bad = [r for r in recs if not r["ok"]]
        self.say(f"stream: {len(recs)} cases, {len(bad)} failed checks")
        return recs

    # step ceilings -------------------------------------------------------------------------------
    def _best_stream_configs(self, mode: str, n: int = 3) -> list[tuple[int, int, int]]:
        recs = [r for r in getattr(self, "stream_records", []) if r["mode"] == mode and r["scope"] == "gpu" and r["ok"]]
        recs.sort(key=lambda r: -r["moved_gbps"])
        out = [(r["tile_bytes"] // 1024, r["stages"], r["ctas_per_sm"]) for r in recs[:n]]
        for cfg in DEFAULT_TMA_CONFIGS:
            if len(out) >= n:
                break
            if cfg not in out and stream_fits(cfg[1], cfg[0] * 1024, cfg[2], smem_per_sm=self.smem_per_sm,
                                              optin=self.optin):
                out.append(cfg)
        return out

    def step_ceilings(self) -> list[dict[str, Any]]:
        src, dst = self.buffers()
        recs: list[dict[str, Any]] = []
        sizes = (GIB, 2 * GIB) if not self.quick else (self.buf_bytes // 2, self.buf_bytes)
        reps = 10 if not self.quick else 3
        # cuMemcpyDtoDAsync
        for nb in sizes:
            ms = self.gpu.timed([lambda nb=nb: self.gpu.memcpy_dtod(dst, src, nb) for _ in range(reps + 2)])[2:]
            recs.append(dict(kind="memcpy", bytes=nb, moved_bytes=2 * nb, median_ms=_med(ms), min_ms=min(ms),
                             gbps=2 * nb / (_med(ms) * 1e6), samples_ms=ms, correct=True))
        self.say(f"ceilings: memcpy {recs[-1]['gbps']:.0f} GB/s (read + written)")
        # ld.global.v4 read streams
        sink = self.gpu.zeros(4, np.uint32)
        best_read = []
        for cfg in read_configs(self.quick):
            if self.budget.over():
                break
            k = self.gpu.function("l05_read_stream", f"read_v4_{cfg['variant']}_u{cfg['unroll']}")
            grid = self.num_sms * cfg["blocks_per_sm"]
            nb = sizes[0]
            ms = self.gpu.timed([lambda k=k, grid=grid: self.gpu.launch(k, grid, cfg["threads"], src,
                                                                         np.int64(nb // 16), sink)
                                 for _ in range(self.repeats + 1)])[1:]
            r = dict(kind="read_stream", **cfg, grid=grid, bytes=nb, moved_bytes=nb, median_ms=_med(ms),
                     min_ms=min(ms), gbps=nb / (_med(ms) * 1e6), samples_ms=ms, correct=True)
            recs.append(r)
            best_read.append(r)
        best_read.sort(key=lambda r: -r["gbps"])
        for r in best_read[:3]:
            k = self.gpu.function("l05_read_stream", f"read_v4_{r['variant']}_u{r['unroll']}")
            nb = sizes[1]
            ms = self.gpu.timed([lambda k=k, r=r: self.gpu.launch(k, r["grid"], r["threads"], src, np.int64(nb // 16),
                                                                   sink) for _ in range(self.repeats + 1)])[1:]
            recs.append(dict(r, bytes=nb, moved_bytes=nb, median_ms=_med(ms), min_ms=min(ms),
                             gbps=nb / (_med(ms) * 1e6), samples_ms=ms))
        if best_read:
            self.say(f"ceilings: best ld.global.v4 read {best_read[0]['gbps']:.0f} GB/s")
        # the vectorised copy kernel
        kc = self.gpu.function("l05_tma_copy", "device_copy")
        for bps, thr in COPY_SHAPES:
            nb = sizes[0]
            grid = self.num_sms * bps
            ms = self.gpu.timed([lambda grid=grid, thr=thr: self.gpu.launch(kc, grid, thr, src, dst, np.int64(nb // 16))
                                 for _ in range(self.repeats + 1)])[1:]
            recs.append(dict(kind="device_copy", blocks_per_sm=bps, threads=thr, grid=grid, bytes=nb, moved_bytes=2 * nb,
                             median_ms=_med(ms), min_ms=min(ms), gbps=2 * nb / (_med(ms) * 1e6), samples_ms=ms,
                             correct=True))
        # TMA read and copy streams at the target sizes
        kern = self.gpu.function("l03_stream", "stream")
        verify = self.gpu.function("l03_stream", "verify_copy")
        kern.set_max_dynamic_shared_memory(self.optin)
        for mode, kind, flag_set in (("load", "tma_read", (0, 1)), ("copy", "tma_copy_stream", COPY_FLAGS)):
            best = None
            for tkb, stages, per_sm in self._best_stream_configs(mode):
                for flags in flag_set:
                    if self.budget.over():
                        break
                    c = dict(mode=mode, scope="gpu", stages=stages, tile_bytes=tkb * 1024, ctas_per_sm=per_sm)
                    grid = stream_grid(c, self.num_sms)
                    tiles = max(1, sizes[0] // (grid * c["tile_bytes"]))
                    r = self._stream_run(kern, verify, c, tiles, flags=flags)
                    rec = dict(kind=kind, **{k: r[k] for k in ("stages", "tile_bytes", "ctas_per_sm", "grid",
                                                                "tiles_per_cta", "flags", "kernel_ms", "kernel_ms_min",
                                                                "samples_ms", "bad_words")},
                               bytes=r["bytes"], moved_bytes=r["bytes"] * (2 if mode == "copy" else 1),
                               median_ms=r["kernel_ms"], gbps=r["moved_gbps"], correct=r["ok"])
                    recs.append(rec)
                    if rec["correct"] and (best is None or rec["gbps"] > best[0]["gbps"]):
                        best = (rec, c)
            if best is not None and not self.budget.over():
                rec, c = best
                grid = stream_grid(c, self.num_sms)
                tiles = max(1, sizes[1] // (grid * c["tile_bytes"]))         # the whole buffer
                r = self._stream_run(kern, verify, c, tiles, flags=rec["flags"])
                recs.append(dict(rec, tiles_per_cta=tiles, bytes=r["bytes"], moved_bytes=r["bytes"] * (
                    2 if mode == "copy" else 1), median_ms=r["kernel_ms"], kernel_ms=r["kernel_ms"],
                    kernel_ms_min=r["kernel_ms_min"], samples_ms=r["samples_ms"], gbps=r["moved_gbps"],
                    correct=r["ok"], bad_words=r["bad_words"]))
                self.say(f"ceilings: best {kind} {rec['gbps']:.0f} GB/s ({rec['tile_bytes'] // 1024} KiB × "
                         f"{rec['stages']} stages × {rec['ctas_per_sm']}/SM, flags {rec['flags']})")
        # the book's tensor copy kernel (l05_tma_copy.cu) on a 1 GiB FP32 tensor
        kt = self.gpu.function("l05_tma_copy", "tma_copy")
        kt.set_max_dynamic_shared_memory(self.optin - 64)
        cols = 16384
        nb = sizes[0]
        rows_t = nb // (4 * cols)
        badc = self.gpu.zeros(1, np.uint64)
        for bx, by, stages, per_sm in TENSOR_COPY_CONFIGS:
            if self.budget.over():
                break
            tile = bx * by * 4
            pitch = -(-tile // 1024) * 1024
            smem = stages * pitch + 1024
            if per_sm * (smem + 64 + SMEM_RESERVED) > self.smem_per_sm or smem + 64 > self.optin:
                continue
            tin = self.gpu.encode_tiled("FLOAT32", 2, src, [cols, rows_t], [cols * 4], [bx, by], [1, 1], "NONE", "NONE",
                                        "L2_256B", "NONE")
            tout = self.gpu.encode_tiled("FLOAT32", 2, dst, [cols, rows_t], [cols * 4], [bx, by], [1, 1], "NONE",
                                         "NONE", "L2_256B", "NONE")
            tiles_x = cols // bx
            n_tiles = tiles_x * (rows_t // by)
            grid = self.num_sms * per_sm
            args = (tin, tout, np.int32(bx), np.int32(by), np.int32(tiles_x), np.int32(n_tiles), np.int32(stages),
                    np.int32(tile))
            self.gpu.memset32(dst, 0xFFFFFFFF)
            self.gpu.launch(kt, grid, 32, *args, shared_mem=smem)
            self.gpu.sync()
            self.gpu.memset32(badc, 0, 2)
            self.gpu.launch(verify, self.num_sms * 4, 256, dst, np.int64(0), np.int64(nb // 4),
                            np.int64(self.buf_bytes // 4), badc)
            self.gpu.sync()
            bad = int(self.gpu.to_host(badc)[0])
            ms = self.gpu.timed([lambda grid=grid, args=args, smem=smem: self.gpu.launch(kt, grid, 32, *args,
                                                                                          shared_mem=smem)
                                 for _ in range(self.repeats + 1)])[1:]
            recs.append(dict(kind="tma_copy", box_x=bx, box_y=by, tile_bytes=tile, stages=stages, ctas_per_sm=per_sm,
                             grid=grid, bytes=nb, moved_bytes=2 * nb, median_ms=_med(ms), min_ms=min(ms),
                             gbps=2 * nb / (_med(ms) * 1e6), samples_ms=ms, correct=bad == 0, bad_words=bad))
        self.say("ceilings: memory streams done; GEMMs next")
        recs += self._gemms()
        return recs

    def _gemms(self) -> list[dict[str, Any]]:
        jobs = [(d, n) for d in ("bf16", "fp16", "fp8") for n in (GEMM_SIZES[:1] if self.quick else GEMM_SIZES)]
        res = self.gpu.gemms(jobs, repeats=3 if self.quick else 10,
                             timeout_s=max(30.0, min(300.0, self.budget.left() - 5.0)))
        out = []
        common = {k: res.get(k) for k in ("torch", "torch_cuda") if res.get(k)}
        if res.get("env"):
            common["env"] = res["env"]
        if res.get("error"):
            self.say(f"ceilings: no cuBLAS ceiling, PyTorch failed: {res['error'].strip().splitlines()[-1]}")
            return [dict(kind="gemm", dtype="none", correct=False, error=res["error"], **common)]
        for j in res.get("jobs", []):
            n, dtype = j["n"], j["dtype"]
            if "error" in j:
                out.append(dict(kind="gemm", dtype=dtype, m=n, n=n, k=n, error=j["error"], correct=False, **common))
                continue
            ms = j["samples_ms"]
            med = _med(ms)
            err = j.get("rel_error")
            out.append(dict(kind="gemm", dtype=dtype, m=n, n=n, k=n, median_ms=med, min_ms=min(ms), samples_ms=ms,
                            tflops=2.0 * n ** 3 / (med * 1e-3) / 1e12, library="cuBLAS via torch", rel_error=err,
                            correct=err is None or err < (0.05 if dtype == "fp8" else 0.01), **common))
        for dtype in ("bf16", "fp16", "fp8"):
            best = [r for r in out if r["dtype"] == dtype and r.get("tflops")]
            if best:
                self.say(f"ceilings: cuBLAS {dtype} {max(r['tflops'] for r in best):.0f} TFLOP/s")
        return out


    # step copytune -------------------------------------------------------------------------------
    def _copy_bad_words(self, verify, dst, nb: int) -> int:
        """Words of ``dst[:nb]`` that are not the copy of ``fill_index``'s source (verify_copy of l03_stream.cu)."""
        badc = self.gpu.zeros(1, np.uint64)
        self.gpu.launch(verify, self.num_sms * 4, 256, dst, np.int64(0), np.int64(nb // 4),
                        np.int64(self.buf_bytes // 4), badc)
        self.gpu.sync()
        return int(self.gpu.to_host(badc)[0])

    def _memcpy_record(self, nb: int, reps: int, **extra) -> dict[str, Any]:
        src, dst = self.buffers()
        ms = self.gpu.timed([lambda: self.gpu.memcpy_dtod(dst, src, nb) for _ in range(reps + 1)])[1:]
        return dict(kind="memcpy", **extra, bytes=nb, moved_bytes=2 * nb, median_ms=_med(ms), min_ms=min(ms),
                    gbps=2 * nb / (_med(ms) * 1e6), samples_ms=ms, correct=True)

    def _copy_tune_record(self, k, verify, c: dict[str, Any], nb: int, reps: int, **extra) -> dict[str, Any]:
        """One ``l05_copy_tune.cu`` variant: a checked launch (dst poisoned first, every word verified), then
        ``reps`` timed launches after a warm-up."""
        src, dst = self.buffers()
        grid = self.num_sms * c["ctas_per_sm"]
        smem = STREAM_HEADER + c["stages"] * c["tile_bytes"]
        err = self.gpu.zeros(1, np.uint32)
        args = (src, dst, np.int64(nb), np.int32(c["tile_bytes"]), np.int32(c["stages"]), np.int32(c["lag"]),
                np.int32(c["flags"]), np.int64(TIMEOUT_NS), err)
        self.gpu.memset32(dst, 0xFFFFFFFF, nb // 4)
        self.gpu.launch(k, grid, 32, *args, shared_mem=smem)
        self.gpu.sync()
        bad = self._copy_bad_words(verify, dst, nb)
        ms = self.gpu.timed([lambda: self.gpu.launch(k, grid, 32, *args, shared_mem=smem)
                             for _ in range(reps + 1)])[1:]
        e = int(self.gpu.to_host(err)[0])
        return dict(kind="copy_tune", **{x: c[x] for x in ("tile_bytes", "stages", "ctas_per_sm", "lag", "flags")},
                    **extra, grid=grid, smem_bytes=smem, bytes=nb, moved_bytes=2 * nb, median_ms=_med(ms),
                    min_ms=min(ms), gbps=2 * nb / (_med(ms) * 1e6), samples_ms=ms, bad_words=bad, error_bits=e,
                    correct=bad == 0 and e == 0)

    def _tensor_copy_record(self, verify, nb: int, reps: int, cfg=TENSOR_COPY_CONFIGS[0], **extra) -> dict[str, Any]:
        """The book's tensor copy ``l05_tma_copy.cu`` (best configuration of ``l05/ceilings``) on ``nb`` bytes."""
        src, dst = self.buffers()
        bx, by, stages, per_sm = cfg
        kt = self.gpu.function("l05_tma_copy", "tma_copy")
        kt.set_max_dynamic_shared_memory(self.optin - 64)
        cols = 16384
        rows_t = nb // (4 * cols)
        tile = bx * by * 4
        smem = stages * (-(-tile // 1024) * 1024) + 1024
        tin = self.gpu.encode_tiled("FLOAT32", 2, src, [cols, rows_t], [cols * 4], [bx, by], [1, 1], "NONE", "NONE",
                                    "L2_256B", "NONE")
        tout = self.gpu.encode_tiled("FLOAT32", 2, dst, [cols, rows_t], [cols * 4], [bx, by], [1, 1], "NONE", "NONE",
                                     "L2_256B", "NONE")
        tiles_x = cols // bx
        grid = self.num_sms * per_sm
        args = (tin, tout, np.int32(bx), np.int32(by), np.int32(tiles_x), np.int32(tiles_x * (rows_t // by)),
                np.int32(stages), np.int32(tile))
        self.gpu.memset32(dst, 0xFFFFFFFF, nb // 4)
        self.gpu.launch(kt, grid, 32, *args, shared_mem=smem)
        self.gpu.sync()
        bad = self._copy_bad_words(verify, dst, nb)
        ms = self.gpu.timed([lambda: self.gpu.launch(kt, grid, 32, *args, shared_mem=smem)
                             for _ in range(reps + 1)])[1:]
        return dict(kind="tma_copy", box_x=bx, box_y=by, tile_bytes=tile, stages=stages, ctas_per_sm=per_sm, **extra,
                    grid=grid, bytes=nb, moved_bytes=2 * nb, median_ms=_med(ms), min_ms=min(ms),
                    gbps=2 * nb / (_med(ms) * 1e6), samples_ms=ms, bad_words=bad, correct=bad == 0)

    def step_copytune(self) -> list[dict[str, Any]]:
        """Tuned TMA copies against ``cuMemcpyDtoDAsync`` in one run, at 1 GiB (``--quick``: half the buffer).

        Phase A: :func:`copytune_cases` (shapes × refill lag × partition), memcpy re-measured every 12 variants;
        phase B: the 4 fastest correct phase-A variants with each of :data:`COPYTUNE_FLAGS` (cache hints, L2
        prefetch; the variant's partition kept); phase C: head to head in 3 rounds, each round memcpy then the 3
        fastest variants, the book's tensor copy and the vectorised copy kernel, with twice the repeats. Every
        record gets ``ratio_memcpy`` (its GB/s over the median GB/s of every memcpy of the run); phase C records
        also ``ratio_round`` (over the memcpy of the same round)."""
        src, dst = self.buffers()
        k = self.gpu.function("l05_copy_tune", "copy_tune")
        k.set_max_dynamic_shared_memory(self.optin)
        verify = self.gpu.function("l03_stream", "verify_copy")
        nb = GIB if not self.quick else self.buf_bytes // 2
        reps = self.repeats
        recs: list[dict[str, Any]] = [self._memcpy_record(nb, reps, phase="A", round=0)]
        self.say(f"copytune: memcpy {recs[0]['gbps']:.0f} GB/s")
        cases = copytune_cases(self.quick, smem_per_sm=self.smem_per_sm, optin=self.optin)
        done = set()
        for i, c in enumerate(cases):
            if self.budget.over():
                self.say(f"copytune: budget spent after {i} of {len(cases)} phase-A variants")
                break
            recs.append(self._copy_tune_record(k, verify, c, nb, reps, phase="A"))
            done.add(tuple(c[x] for x in ("tile_bytes", "stages", "ctas_per_sm", "lag", "flags")))
            if (i + 1) % 12 == 0:
                recs.append(self._memcpy_record(nb, reps, phase="A", round=(i + 1) // 12))

        def best(n: int) -> list[dict[str, Any]]:
            rows = sorted((r for r in recs if r["kind"] == "copy_tune" and r["correct"]), key=lambda r: -r["gbps"])
            return rows[:n]

        for b in best(2 if self.quick else 4):
            for f in COPYTUNE_FLAGS:
                c = dict(b, flags=(b["flags"] & 4) | f)
                key = tuple(c[x] for x in ("tile_bytes", "stages", "ctas_per_sm", "lag", "flags"))
                if key in done or self.budget.over():
                    continue
                done.add(key)
                recs.append(self._copy_tune_record(k, verify, c, nb, reps, phase="B"))
        recs.append(self._memcpy_record(nb, reps, phase="B", round=0))
        top = best(3)
        kc = self.gpu.function("l05_tma_copy", "device_copy")
        for rnd in range(3):
            if self.budget.over():
                break
            mc = self._memcpy_record(nb, 2 * reps, phase="C", round=rnd)
            mc["ratio_round"] = 1.0
            recs.append(mc)
            row = []
            for b in top:
                row.append(self._copy_tune_record(k, verify, b, nb, 2 * reps, phase="C", round=rnd))
            try:
                row.append(self._tensor_copy_record(verify, nb, 2 * reps, phase="C", round=rnd))
            except Exception as exc:       # the reference must not cost the tuned variants their records
                self.say(f"copytune: tensor copy failed: {type(exc).__name__}: {exc}")
            ms = self.gpu.timed([lambda: self.gpu.launch(kc, self.num_sms * 4, 256, src, dst, np.int64(nb // 16))
                                 for _ in range(2 * reps + 1)])[1:]
            row.append(dict(kind="device_copy", blocks_per_sm=4, threads=256, grid=self.num_sms * 4, phase="C",
                            round=rnd, bytes=nb, moved_bytes=2 * nb, median_ms=_med(ms), min_ms=min(ms),
                            gbps=2 * nb / (_med(ms) * 1e6), samples_ms=ms, correct=True))
            for r in row:
                r["ratio_round"] = r["gbps"] / mc["gbps"]
            recs += row
        ref = _med([r["gbps"] for r in recs if r["kind"] == "memcpy"])
        for r in recs:
            r["ratio_memcpy"] = r["gbps"] / ref
        fin = [r for r in recs if r["kind"] == "copy_tune" and r.get("phase") == "C" and r["correct"]]
        if fin:
            b = max(fin, key=lambda r: r["gbps"])
            self.say(f"copytune: best {b['gbps']:.0f} GB/s = {b['ratio_memcpy']:.3f} × memcpy ({ref:.0f} GB/s): "
                     f"{b['tile_bytes'] // 1024} KiB × {b['stages']} stages × {b['ctas_per_sm']}/SM, lag {b['lag']}, "
                     f"flags {b['flags']}")
        bad = [r for r in recs if not r["correct"]]
        if bad:
            self.say(f"copytune: {len(bad)} records failed their check")
        return recs


    # step latency2 -------------------------------------------------------------------------------
    def _cleanout_buffer(self, nbytes: int):
        """A separate buffer of ``nbytes`` for an L2 clean-out, zeroed now — before the writes it is to clean out
        of the L2, which then evict its own dirty lines (:meth:`_cleanout_read`)."""
        fbuf = self.gpu.alloc(nbytes)
        self.gpu.memset32(fbuf, 0)
        return fbuf

    def _cleanout_read(self, fbuf, nbytes: int) -> None:
        """Read (never write) the ``nbytes`` of ``fbuf`` with ``read_v4_plain_u8`` on every SM: the L2 then holds
        clean lines of it, not the dirty lines of a zeroing or fill before (issue 13: they slowed the first ~70 MiB
        of cold reads after a step's memset, l03/tma_latency_cold2)."""
        sink = self.gpu.zeros(4, np.uint32)
        rk = self.gpu.function("l05_read_stream", "read_v4_plain_u8")
        self.gpu.launch(rk, self.num_sms * 2, 1024, fbuf, np.int64(nbytes // 16), sink)
        self.gpu.sync()

    def _cleaned_buffers(self, flush: bool) -> tuple[Any, Any, int]:
        """``(src, dst, clean-out bytes)``: :meth:`buffers`, and with ``flush`` the L2 cleaned of the source's fill
        (a clean-out buffer zeroed first, the source filled — again when it already was: the same words — then the
        clean-out buffer read, :meth:`_cleanout_read`). The clean-out buffer is freed."""
        fb = (COLD_FLUSH_QUICK_BYTES if self.quick else COLD_FLUSH_BYTES) if flush else 0
        if not fb:
            return (*self.buffers(), 0)
        fbuf = self._cleanout_buffer(fb)
        if "src" in self._bufs:
            fill = self.gpu.function("l03_stream", "fill_index")
            self.gpu.launch(fill, self.num_sms * 8, 256, self._bufs["src"], np.int64(self.buf_bytes // 4))
            self.gpu.sync()
        src, dst = self.buffers()
        self._cleanout_read(fbuf, fb)
        free = getattr(fbuf, "free", None)
        if free is not None:
            free()
        return src, dst, fb

    def _tma_issue_round(self, ki, src, first: int, stride: int, c: dict, err, ghz: float) -> tuple[np.ndarray, dict]:
        """One launch of ``l03_tma_latency.cu``'s ``tma_issue`` (``ki``) for case ``c`` (``bytes``, ``count``,
        ``iters``, ``cold``) from ``first``, sources ``stride`` apart: ``(samples, stats)`` — the samples (issue,
        total cycles per iteration; a warm case without its first iteration, which was cold) and their
        ``issue_cycles`` / ``total_cycles`` stats, ``issue_ns_per_copy``, ``total_ns`` (medians) and ``clock_ghz``."""
        it = c["iters"]
        out = self.gpu.zeros(2 * it, np.uint64)
        self.gpu.launch(ki, 1, 32, src, np.int64(self.buf_bytes), np.int64(first), np.int64(stride),
                        np.int32(c["bytes"]), np.int32(c["count"]), np.int32(it), np.int64(TIMEOUT_NS), out, err,
                        shared_mem=c["bytes"] * c["count"] + 1024)
        self.gpu.sync()
        o = self.gpu.to_host(out).astype(np.float64).reshape(it, 2)
        body = o[1:] if not c["cold"] and it > 1 else o      # warm: the first iteration was cold
        return body, dict(issue_cycles=_stats(body[:, 0]), total_cycles=_stats(body[:, 1]),
                          issue_ns_per_copy=_med(body[:, 0]) / ghz / c["count"], total_ns=_med(body[:, 1]) / ghz,
                          clock_ghz=ghz)

    def step_latency2(self, flush: bool = False) -> list[dict[str, Any]]:
        """Single copies and back-to-back rounds on ``l03_copy_latency.cu`` (:func:`latency2_cases`). ``flush`` (default
        off: the step as ``l03/tma_latency_clean`` ran it, its first ~64 MiB of cold reads — every single copy —
        right after the source's 2 GiB fill): clean the fill's dirty lines out of the L2 first
        (:meth:`_cleaned_buffers`); each record carries ``l2_flush_bytes``."""
        src, _, fb = self._cleaned_buffers(flush)
        ghz = self.clock_ghz()
        err = self.gpu.zeros(1, np.uint32)
        k = self.gpu.function("l03_copy_latency", "copy_latency")
        k.set_max_dynamic_shared_memory(200 * 1024)
        stride = min(LAT2_PAGE, self.buf_bytes // 64)
        recs = []
        for c in latency2_cases(self.quick):
            if self.budget.over():
                break
            it = c["iters"]
            base = -(-self.take((it + 1) * stride) // stride) * stride       # whole blocks: each a page of its own
            o = self._copy_latency_case(k, src, err, c, base, stride)
            recs.append(dict(_latency2_record(c, o, ghz), l2_flush_bytes=fb))
            if flush:       # the probe's runs keep every cold sample (cycles, in sample order)
                recs[-1]["cold_total_samples"] = [int(x) for x in o[:, 0, 2]]
        e = int(self.gpu.to_host(err)[0])
        for r in recs:
            r["ok"] = e == 0
        self.say(f"latency2: {len(recs)} cases, L2 clean-out {fb >> 20} MiB, error bits {e}")
        return recs

    def _copy_latency_case(self, k, src, err, c: dict, base: int, stride: int) -> np.ndarray:
        """One case of ``copy_latency`` (``l03_copy_latency.cu``): ``c["iters"]`` samples on blocks of ``stride``
        bytes from ``base``, each ``c["warm"]`` warm repeats after the cold one; the stamps (cycles) as an array
        (iters, warm + 1, 3)."""
        it, reps = c["iters"], c["warm"] + 1
        offs = self.gpu.to_device(latency2_offsets(base, it, stride, c["align"]))
        out = self.gpu.zeros(3 * reps * it, np.uint64)
        self.gpu.launch(k, 1, 32, src, offs, np.int32(c["bytes"]), np.int32(c["count"]), np.int32(it),
                        np.int32(c["warm"]), np.int32(c["touch"]), np.int64(TIMEOUT_NS), out, err,
                        shared_mem=c["bytes"] * c["count"] + 1024)
        self.gpu.sync()
        return self.gpu.to_host(out).astype(np.float64).reshape(it, reps, 3)

    # step coldround ------------------------------------------------------------------------------
    def step_coldround(self, flush: bool = True) -> list[dict[str, Any]]:
        """The cold rounds of ``latency2`` on lines never read before in the run, in passes, every sample kept
        (:func:`coldround_plan`); a buffer of its own (zeroed, with 512 MiB past the plan that no sample reads:
        the zeroing's last lines, still in L2, lie there). ``flush`` (default on; off is the step as
        l03/tma_latency_cold ran it): between the zeroing and pass 0, read :data:`COLD_FLUSH_BYTES` of a separate
        buffer (zeroed before the big one, so its own writes are long evicted) with ``read_v4_plain_u8`` — loads
        only, nothing stored — so the L2 holds clean lines, not the memset's dirty ones, when pass 0 starts. Each
        record carries ``l2_flush_bytes`` (0: no clean-out)."""
        ghz = self.clock_ghz()
        plan, stride, span = coldround_plan(self.quick)
        pad = stride * 16 if self.quick else 512 << 20
        fb = (COLD_FLUSH_QUICK_BYTES if self.quick else COLD_FLUSH_BYTES) if flush else 0
        fbuf = self._cleanout_buffer(fb) if fb else None
        src = self.gpu.alloc(span + pad)
        self.gpu.memset32(src, 0)
        self.gpu.sync()
        if fb:
            self._cleanout_read(fbuf, fb)
        err = self.gpu.zeros(1, np.uint32)
        k = self.gpu.function("l03_copy_latency", "copy_latency")
        k.set_max_dynamic_shared_memory(200 * 1024)
        recs = []
        for n, c in enumerate(plan):
            if self.budget.over():
                break
            o = self._copy_latency_case(k, src, err, c, c["base"], stride)
            rec = _latency2_record({k_: v for k_, v in c.items() if k_ != "base"}, o, ghz)
            rec["block_bytes"] = stride
            rec["l2_flush_bytes"] = fb
            rec["cold_total_samples"] = [int(x) for x in o[:, 0, 2]]      # cycles, in sample order
            rec["cold_issue_samples"] = [int(x) for x in o[:, 0, 1]]
            recs.append(rec)
            if n % 50 == 0:
                self.say(f"coldround: {n + 1}/{len(plan)} (pass {c['pass']})")
        e = int(self.gpu.to_host(err)[0])
        for r in recs:
            r["ok"] = e == 0
        for buf in (src, fbuf):
            free = getattr(buf, "free", None)
            if free is not None:
                free()
        self.say(f"coldround: {len(recs)} case-passes over {span >> 20} MiB, L2 clean-out {fb >> 20} MiB, "
                 f"error bits {e}")
        return recs

    # step issuecold (not in the default run) -------------------------------------------------------
    def step_issuecold(self, flush: bool = True) -> list[dict[str, Any]]:
        """``l03_tma_latency.cu``'s ``tma_issue`` on :func:`issuecold_cases`, every sample kept (issue 13: the
        16 B × 2 cold round of ``l03/tma_latency`` lands 43 ns before the 16 B × 1 one, median below the single
        copy's; its copies were 16 bytes past a line, the single's on it). Cold sources walk the cursor
        ``COLD_STRIDE`` apart like step ``latency``'s; a warm case reads its cold case's first source again
        (stride 0; its first sample, the cold one, is dropped). ``flush`` (default on): the L2 cleaned of the
        source's fill first (:meth:`_cleaned_buffers`). Records: the case, ``issue_cycles`` / ``total_cycles`` stats,
        ``total_ns`` (median), ``total_samples`` and ``issue_samples`` (cycles, sample order), ``first`` (the
        buffer offset of its first source), ``l2_flush_bytes``."""
        src, _, fb = self._cleaned_buffers(flush)
        ghz = self.clock_ghz()
        err = self.gpu.zeros(1, np.uint32)
        ki = self.gpu.function("l03_tma_latency", "tma_issue")
        ki.set_max_dynamic_shared_memory(200 * 1024)
        recs, first = [], 0
        for c in issuecold_cases(self.quick):
            if self.budget.over():
                break
            it = c["iters"]
            if c["cold"]:
                first = self.take(it * COLD_STRIDE + 128)
                first = first - first % 128 + c["offset"]        # the shape's offset past a 128-byte line
            stride = COLD_STRIDE if c["cold"] else 0
            body, stats = self._tma_issue_round(ki, src, first, stride, c, err, ghz)
            recs.append(dict(c, first=int(first), **stats, total_samples=[int(x) for x in body[:, 1]],
                             issue_samples=[int(x) for x in body[:, 0]], l2_flush_bytes=fb))
        e = int(self.gpu.to_host(err)[0])
        for r in recs:
            r["ok"] = e == 0
        self.say(f"issuecold: {len(recs)} cases, L2 clean-out {fb >> 20} MiB, error bits {e}")
        return recs

    # step copyrace -------------------------------------------------------------------------------
    def _tensor_maps(self, nb: int, bx: int, by: int, promo: str, dst_off: int = 0):
        src, dst = self.buffers()
        if dst_off:
            dst = int(dst.ptr) + dst_off
        cols = min(16384, nb // (4 * 256))                 # 16384 FP32 columns at 1 GiB (as step ceilings)
        rows_t = nb // (4 * cols)
        # a last partial row of boxes: the load fills the rows past the tensor with zeros, the store clips them
        return tuple(self.gpu.encode_tiled("FLOAT32", 2, p, [cols, rows_t], [cols * 4], [bx, by], [1, 1], "NONE",
                                           "NONE", promo, "NONE") for p in (src, dst)), cols // bx, -(-rows_t // by)

    def _race_record(self, name: str, kind: str, cfg: tuple, nb: int, reps: int, verify,
                     dst_off: int = 0) -> dict[str, Any]:
        """One copy of :data:`RACE_VARIANTS` into ``dst + dst_off``: dst poisoned, a checked launch, then ``reps``
        timed launches."""
        src, dst_arr = self.buffers()
        dst = self.gpu.ptr(dst_arr, dst_off) if dst_off else dst_arr
        err = self.gpu.zeros(1, np.uint32)
        rec: dict[str, Any] = dict(kind=kind, name=name, config=list(cfg), dst_offset=dst_off)
        if kind == "copy_tune":
            tkb, st, per, lag, flags = cfg
            k = self.gpu.function("l05_copy_tune", "copy_tune")
            k.set_max_dynamic_shared_memory(self.optin)
            grid, block, smem = self.num_sms * per, 32, STREAM_HEADER + st * tkb * 1024
            args = (src, dst, np.int64(nb), np.int32(tkb * 1024), np.int32(st), np.int32(lag), np.int32(flags),
                    np.int64(TIMEOUT_NS), err)
        elif kind == "ws":
            tkb, st, per, lag, flags = cfg
            k = self.gpu.function("l05_copy_ws", "copy_ws")
            k.set_max_dynamic_shared_memory(self.optin)
            grid, block, smem = self.num_sms * per, 64, 1024 + st * tkb * 1024
            args = (src, dst, np.int64(nb), np.int32(tkb * 1024), np.int32(st), np.int32(lag), np.int32(flags),
                    np.int64(TIMEOUT_NS), err)
        elif kind == "tma_copy":
            bx, by, st, per, promo = cfg
            k = self.gpu.function("l05_tma_copy", "tma_copy")
            k.set_max_dynamic_shared_memory(self.optin - 64)
            (tin, tout), tx, ty = self._tensor_maps(nb, bx, by, promo, dst_off)
            tile = bx * by * 4
            grid, block, smem = self.num_sms * per, 32, st * (-(-tile // 1024) * 1024) + 1024
            args = (tin, tout, np.int32(bx), np.int32(by), np.int32(tx), np.int32(tx * ty), np.int32(st),
                    np.int32(tile))
        elif kind == "tensor_ws":
            bx, by, st, per, lag, flags, promo = cfg
            k = self.gpu.function("l05_copy_ws", "tensor_copy_ws")
            k.set_max_dynamic_shared_memory(self.optin)
            (tin, tout), tx, ty = self._tensor_maps(nb, bx, by, promo, dst_off)
            tile = bx * by * 4
            grid, block, smem = self.num_sms * per, 64, 1024 + st * (-(-tile // 1024) * 1024)
            args = (tin, tout, np.int32(bx), np.int32(by), np.int32(tx), np.int32(tx * ty), np.int32(tile),
                    np.int32(st), np.int32(lag), np.int32(flags), np.int64(TIMEOUT_NS), err)
        elif kind == "device_copy":
            per, thr = cfg
            k = self.gpu.function("l05_tma_copy", "device_copy")
            grid, block, smem = self.num_sms * per, thr, 0
            args = (src, dst, np.int64(nb // 16))
        else:
            raise ValueError(f"race variant kind {kind!r}")
        self.gpu.memset32(dst_arr, 0xFFFFFFFF, (dst_off + nb) // 4)
        self.gpu.launch(k, grid, block, *args, shared_mem=smem)
        self.gpu.sync()
        badc = self.gpu.zeros(1, np.uint64)
        self.gpu.launch(verify, self.num_sms * 4, 256, self.gpu.ptr(dst_arr, dst_off), np.int64(0), np.int64(nb // 4),
                        np.int64(self.buf_bytes // 4), badc)
        self.gpu.sync()
        bad = int(self.gpu.to_host(badc)[0])
        ms = self.gpu.timed([lambda: self.gpu.launch(k, grid, block, *args, shared_mem=smem)
                             for _ in range(reps + 1)])[1:]
        e = int(self.gpu.to_host(err)[0])
        rec.update(grid=grid, block=block, smem_bytes=smem, bytes=nb, moved_bytes=2 * nb, median_ms=_med(ms),
                   min_ms=min(ms), gbps=2 * nb / (_med(ms) * 1e6), samples_ms=ms, bad_words=bad, error_bits=e,
                   correct=bad == 0 and e == 0)
        return rec

    def _memcpy_at(self, nb: int, reps: int, dst_off: int, **extra) -> dict[str, Any]:
        """``cuMemcpyDtoDAsync`` of ``nb`` bytes from src to ``dst + dst_off``, ``reps`` timed after a warm-up."""
        src, dst = self.buffers()
        at = _At(int(dst.ptr) + dst_off) if dst_off else dst
        ms = self.gpu.timed([lambda: self.gpu.memcpy_dtod(at, src, nb) for _ in range(reps + 1)])[1:]
        return dict(kind="memcpy", name="cuMemcpyDtoDAsync", config=[], dst_offset=dst_off, **extra, bytes=nb,
                    moved_bytes=2 * nb, median_ms=_med(ms), min_ms=min(ms), gbps=2 * nb / (_med(ms) * 1e6),
                    samples_ms=ms, correct=True)

    def step_copyoffset(self) -> list[dict[str, Any]]:
        """Does where the destination lies against the source change a copy's speed? 3 rounds at 1 GiB: for each
        destination offset of :data:`OFFSET_CASES`, ``cuMemcpyDtoDAsync`` then the copies of :data:`OFFSET_VARIANTS`
        into ``dst + offset`` (checked word by word). ``ratio_round``: over the memcpy of the same round and
        offset; ``ratio_zero``: over the memcpy of the same round at offset 0."""
        verify = self.gpu.function("l03_stream", "verify_copy")
        nb = GIB if not self.quick else self.buf_bytes // 4
        reps = 10 if not self.quick else 2
        offs = [o for o in OFFSET_CASES if o + nb <= self.buf_bytes]
        recs: list[dict[str, Any]] = []
        for rnd in range(3):
            if self.budget.over():
                break
            zero = None
            for off in offs:
                mc = self._memcpy_at(nb, reps, off, round=rnd)
                zero = zero or mc
                mc["ratio_round"] = 1.0
                row = [mc]
                for name, kind, cfg in OFFSET_VARIANTS:
                    try:
                        r = self._race_record(name, kind, cfg, nb, reps, verify, dst_off=off)
                    except Exception as exc:
                        r = dict(kind=kind, name=name, config=list(cfg), dst_offset=off, correct=False, gbps=0.0,
                                 error=f"{type(exc).__name__}: {exc}")
                    r["round"] = rnd
                    r["ratio_round"] = r["gbps"] / mc["gbps"]
                    row.append(r)
                for r in row:
                    r["ratio_zero"] = r["gbps"] / zero["gbps"]
                recs += row
                b = max(row[1:], key=lambda r: r["gbps"])
                self.say(f"copyoffset round {rnd}, dst + {off}: memcpy {mc['gbps']:.0f} GB/s, best {b['name']} "
                         f"{b['gbps']:.0f} GB/s = {b['ratio_round']:.3f}× (memcpy at offset 0: {b['ratio_zero']:.3f}×)")
        return recs

    def step_copyrace(self) -> list[dict[str, Any]]:
        """The copy goal and the read goal head to head: 3 rounds, each ``cuMemcpyDtoDAsync`` then every copy of
        :data:`RACE_VARIANTS` at 1 GiB, then the read streams of :data:`RACE_READS` and :data:`RACE_TMA_READS` at
        2 GiB (``--quick``: a quarter and half of the buffer). Every record has ``ratio_round``: its GB/s over the
        round's memcpy (copies) or over the round's best ld.global.v4 stream (reads)."""
        src, dst = self.buffers()
        verify = self.gpu.function("l03_stream", "verify_copy")
        kern = self.gpu.function("l03_stream", "stream")
        kern.set_max_dynamic_shared_memory(self.optin)
        nb = GIB if not self.quick else self.buf_bytes // 4
        nr = 2 * GIB if not self.quick else self.buf_bytes // 2
        reps = 10 if not self.quick else 2
        sink = self.gpu.zeros(4, np.uint32)
        recs: list[dict[str, Any]] = []
        for rnd in range(3):
            if self.budget.over():
                break
            mc = self._memcpy_record(nb, reps, round=rnd)
            mc.update(name="cuMemcpyDtoDAsync", ratio_round=1.0)
            row = [mc]
            for name, kind, cfg in RACE_VARIANTS:
                if self.budget.over():
                    break
                try:
                    r = self._race_record(name, kind, cfg, nb, reps, verify)
                except Exception as exc:                   # one variant's failure must not cost the others
                    r = dict(kind=kind, name=name, config=list(cfg), correct=False, gbps=0.0,
                             error=f"{type(exc).__name__}: {exc}")
                r["round"] = rnd
                r["ratio_round"] = r["gbps"] / mc["gbps"]
                row.append(r)
            reads = []
            for v, u, bps, thr in RACE_READS:
                k = self.gpu.function("l05_read_stream", f"read_v4_{v}_u{u}")
                grid = self.num_sms * bps
                ms = self.gpu.timed([lambda k=k, grid=grid, thr=thr: self.gpu.launch(k, grid, thr, src,
                                                                                     np.int64(nr // 16), sink)
                                     for _ in range(reps + 1)])[1:]
                reads.append(dict(kind="read_stream", name=f"ld.global.v4 {v} u{u} {bps}×{thr}", variant=v, unroll=u,
                                  blocks_per_sm=bps, threads=thr, grid=grid, round=rnd, bytes=nr, moved_bytes=nr,
                                  median_ms=_med(ms), min_ms=min(ms), gbps=nr / (_med(ms) * 1e6), samples_ms=ms,
                                  correct=True))
            for tkb, st, per, flags in RACE_TMA_READS:
                if not stream_fits(st, tkb * 1024, per, smem_per_sm=self.smem_per_sm, optin=self.optin):
                    continue
                c = dict(mode="load", scope="gpu", stages=st, tile_bytes=tkb * 1024, ctas_per_sm=per)
                grid = stream_grid(c, self.num_sms)
                tiles = max(1, nr // (grid * c["tile_bytes"]))
                r = self._stream_run(kern, verify, c, tiles, flags=flags, repeats=reps)
                reads.append(dict(kind="tma_read", name=f"TMA read {tkb}K×{st}×{per}/SM flags {flags}", stages=st,
                                  tile_bytes=tkb * 1024, ctas_per_sm=per, flags=flags, grid=grid,
                                  tiles_per_cta=tiles, round=rnd, bytes=r["bytes"], moved_bytes=r["bytes"],
                                  median_ms=r["kernel_ms"], min_ms=r["kernel_ms_min"], gbps=r["moved_gbps"],
                                  samples_ms=r["samples_ms"], correct=r["ok"]))
            best_v4 = max((r["gbps"] for r in reads if r["kind"] == "read_stream"), default=0.0)
            for r in reads:
                r["ratio_round"] = r["gbps"] / best_v4 if best_v4 else float("nan")
            recs += row + reads
            ok = [r for r in row[1:] if r.get("correct")]
            b = max(ok, key=lambda r: r["gbps"]) if ok else None
            tr = max((r for r in reads if r["kind"] == "tma_read" and r["correct"]), key=lambda r: r["gbps"],
                     default=None)
            self.say(f"copyrace round {rnd}: memcpy {mc['gbps']:.0f} GB/s; best copy "
                     + (f"{b['name']} {b['gbps']:.0f} GB/s = {b['ratio_round']:.3f}×" if b else "none")
                     + (f"; TMA read {tr['gbps']:.0f} GB/s = {tr['ratio_round']:.3f}× the best v4 stream" if tr else ""))
        bad = [r for r in recs if not r.get("correct")]
        if bad:
            self.say(f"copyrace: {len(bad)} records failed their check: {[r['name'] for r in bad][:6]}")
        return recs


def _stats(x: np.ndarray) -> dict[str, float]:
    x = np.asarray(x, dtype=np.float64)
    return {"median": float(np.median(x)), "p10": float(np.percentile(x, 10)), "p90": float(np.percentile(x, 90)),
            "min": float(x.min()), "n": int(x.size)}


def run(runner: Runner, steps: Sequence[str], meta: dict[str, Any]) -> dict[str, str]:
    """Run ``steps`` in :data:`STEPS` order, writing each dataset when its step ends; returns step → outcome
    ("written", "skipped: …", "failed: …"). A failing step is reported and the next ones still run."""
    from .. import data

    outcome = {}
    for step in STEPS:
        if step not in steps:
            continue
        if runner.budget.over():
            outcome[step] = "skipped: the wall-clock budget is spent"
            runner.say(f"{step}: skipped (budget spent)")
            continue
        runner.say(f"== step {step} → data/{DATASETS[step]}")
        try:
            recs = getattr(runner, f"step_{step}")()
        except Exception as exc:
            import traceback

            traceback.print_exc(file=runner.log)
            outcome[step] = f"failed: {type(exc).__name__}: {exc}"
            runner.say(f"{step}: FAILED ({type(exc).__name__}: {exc})")
            continue
        complete = not runner.budget.over() and not (step == "stream" and getattr(runner, "stream_truncated", False))
        m = dict(meta, step=step, complete=complete, buffer_bytes=runner.buf_bytes,
                 timeout_ns=TIMEOUT_NS, repeats=runner.repeats, quick=runner.quick)
        if runner._clock is not None:
            m["clock_ghz"] = runner._clock
        path = data.write(DATASETS[step], recs, m)
        outcome[step] = "written"
        runner.say(f"{step}: {len(recs)} records → {path}")
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    from . import begin

    def extra(ap: argparse.ArgumentParser):
        ap.add_argument("--steps", default=",".join(STEPS),
                        help=f"comma-separated steps to run, in this order: {','.join(STEPS)} (default: all)")
        ap.add_argument("--budget-s", type=float, default=450.0,
                        help="wall-clock budget in seconds; past it the current step stops and writes what it has")

    s = begin("timing_sweep", argv, __doc__.splitlines()[0], "fewer cases, smaller buffers (a smoke test)", extra)
    if s is None:
        return 2
    steps = [x.strip() for x in s.args.steps.split(",") if x.strip()]
    unknown = [x for x in steps if x not in STEPS]
    if unknown:
        print(f"unknown steps {unknown}; choose from {', '.join(STEPS)}", file=sys.stderr)
        return 2
    runner = Runner(CudaBackend(), quick=s.args.quick, budget=Budget(s.args.budget_s))
    est = estimate_seconds(s.args.quick, runner.num_sms)
    runner.say(f"timing sweep on {s.meta['gpu']}: steps {', '.join(steps)}; estimated "
               f"{sum(est[x] for x in steps):.0f} s, budget {s.args.budget_s:.0f} s")
    outcome = run(runner, steps, s.meta)
    runner.say("done: " + "; ".join(f"{k} {v}" for k, v in outcome.items()))
    return 0 if all(v == "written" for v in outcome.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
