"""The ``stmatrix`` epilogue of a wgmma tile: f32 accumulators → bf16 / f16 / e4m3 → ``stmatrix`` into a swizzled
staging tile in shared memory → one TMA tensor store (``l07_fp8_gemm.cu``, ``epilogue``).

* Conversion (PTX ISA §9.7.9.21 ``cvt``): a thread's accumulator values ``r`` and ``r + 1`` are adjacent columns
  (:func:`~h100lab.tensorcore.fragments.accumulator_layout`), so one ``cvt.rn.bf16x2.f32 d, v[r+1], v[r]`` (the
  first source goes to the upper half) gives the 32-bit register ``stmatrix`` wants; e4m3:
  ``cvt.rn.satfinite.e4m3x2.f32`` (:func:`h100lab.tensorcore.quant.cvt_fp8`) packs a pair into 16 bits.
* ``stmatrix.sync.aligned.m8n8.x4.shared.b16`` (§9.7.14.5.16): lane ``t`` gives the address of row ``t % 8`` of
  8 × 8 matrix ``t / 8``; register ``j`` of lane ``t`` holds matrix ``j``'s row ``t / 4``, b16 columns
  ``2(t % 4)``, ``2(t % 4) + 1`` — exactly the accumulator fragment of one 8-column block, rows ``g`` (register
  0, 2) and ``g + 8`` (1, 3). For 16-bit outputs an x4 covers column blocks ``2jj, 2jj + 1`` of a warp's 16 rows.
  ``stmatrix`` has no 8-bit form on sm_90 (``.m16n8.b8`` is sm_100a), so for e4m3 a b16 element is a *pair* of
  fp8 values: the low half of a register holds columns ``8j + 2c, +1``, the high half ``8(j+1) + 2c, +1``, and
  the staged columns come out permuted within each group of 16 (:func:`fp8_column_order`).
* Staging layout: 16-bit outputs 64 rows × 128 B with the 128B swizzle; e4m3 64 × 64 B with the 64B swizzle
  (16-byte chunk ``c`` of row ``r`` at ``c ^ ((r >> 1) & 3)``; :mod:`h100lab.memory.swizzle`) — the layouts the
  TMA store un-swizzles (``CU_TENSOR_MAP_SWIZZLE_128B`` / ``_64B``).
* Bank wavefronts of each ``stmatrix``: :func:`h100lab.memory.banks.matrix_wavefronts` of its 4 × 8 row
  addresses (one 16-byte row per matrix row; 8 rows in distinct 16-byte bank groups = one wavefront per matrix).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["OUTPUTS", "EpilogueResult", "convert", "fp8_column_order", "stmatrix_plan", "epilogue", "staging_bytes"]

#: output type -> (bytes per element, swizzle mode of the staging tile, row bytes of a 64-column tile)
OUTPUTS = {"bf16": (2, "128B", 128), "f16": (2, "128B", 128), "e4m3": (1, "64B", 64)}


def _check(out: str) -> None:
    if out not in OUTPUTS:
        raise ValueError(f"epilogue output .{out}: one of {sorted(OUTPUTS)} (stmatrix moves .b16 elements; "
                         "PTX ISA §9.7.14.5.16)")


def convert(acc, out: str) -> np.ndarray:
    """f32 values (any shape, float32 or raw uint32) → raw bits of ``out``: bf16/f16 ``cvt.rn`` (round to nearest
    even, overflow to ±inf, every NaN → 0x7FFF as the H200 converts), e4m3 ``cvt.rn.satfinite`` (:func:`h100lab.tensorcore.quant.cvt_fp8`)."""
    _check(out)
    a = np.asarray(acc)
    v = a.view(np.float32) if a.dtype == np.uint32 else a.astype(np.float32)
    if out == "e4m3":
        from .quant import cvt_fp8
        return cvt_fp8(v, "e4m3")
    from .numerics import from_float
    with np.errstate(over="ignore", invalid="ignore"):
        r = from_float(v.astype(np.float64), out)
    return np.where(np.isnan(v), np.uint16(0x7FFF), r).astype(np.uint16)   # the H200's NaN (data/l01/cvt_bits)


def fp8_column_order(n: int = 64) -> np.ndarray:
    """For each staged e4m3 column ``s`` the accumulator column stored there: ``s = 16J + 4c + e`` holds column
    ``16J + 8(e >> 1) + 2c + (e & 1)`` (a b16 element is a pair of fp8 values; see the module docstring)."""
    s = np.arange(n)
    J, c, e = s // 16, (s % 16) // 4, s % 4
    return 16 * J + 8 * (e >> 1) + 2 * c + (e & 1)


def _swz(row, chunk, mode):
    if mode == "128B":
        return row * 128 + ((chunk ^ (row & 7)) << 4)
    return row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4)


@dataclass(frozen=True)
class EpilogueResult:
    """``staging``: the staging tile's bytes; ``tile``: the global tile the TMA store writes (64 rows of
    ``row_bytes``); ``addresses``: (warps, stmatrix per warp, 32) byte offsets each lane gives; ``wavefronts``:
    the bank wavefronts of each stmatrix, same leading shape."""

    staging: np.ndarray
    tile: np.ndarray
    addresses: np.ndarray
    wavefronts: np.ndarray

    @property
    def total_wavefronts(self) -> int:
        return int(self.wavefronts.sum())


def stmatrix_plan(out: str, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(addresses (4, S, 32), regs (4, S, 32, 4, 2)) for the S stmatrix.x4 of each warp: each lane's staging
    byte offset, and for each of its 4 registers the two accumulator value indices ``r`` packed in its halves
    (16-bit outputs) — for e4m3 the halves are pairs, given as the first value index of each pair."""
    _check(out)
    if n != 64:
        raise ValueError("the l07 epilogue stages one 64 × 64 tile (n = 64)")
    es, mode, _ = OUTPUTS[out]
    lane = np.arange(32)
    q = lane // 8
    S = 4 if es == 2 else 2
    addrs = np.zeros((4, S, 32), np.int64)
    regs = np.zeros((4, S, 32, 4, 2), np.int64)
    for w in range(4):
        row = 16 * w + lane % 8 + 8 * (q & 1)
        for jj in range(S):
            addrs[w, jj] = _swz(row, 2 * jj + (q >> 1), mode)
            if es == 2:
                a, b = 8 * jj, 8 * jj + 4
                regs[w, jj] = np.array([[a, a + 1], [a + 2, a + 3], [b, b + 1], [b + 2, b + 3]])[None]
            else:
                a = 16 * jj
                regs[w, jj] = np.array([[a, a + 4], [a + 2, a + 6], [a + 8, a + 12], [a + 10, a + 14]])[None]
    return addrs, regs


def epilogue(acc, out: str = "bf16") -> EpilogueResult:
    """Run the epilogue of a 64 × 64 f32 tile ``acc`` (float32 or raw uint32 (64, 64)): conversion, every
    stmatrix.x4 on :func:`h100lab.tensorcore.fragments.stmatrix`, the wavefronts, the TMA store's global tile."""
    from ..memory.banks import matrix_wavefronts
    from .fragments import matrix_to_accumulator, stmatrix

    es, mode, row_bytes = OUTPUTS[out]
    a = np.asarray(acc)
    a = a.view(np.float32) if a.dtype == np.uint32 else a.astype(np.float32)
    if a.shape != (64, 64):
        raise ValueError(f"the epilogue stages a 64 × 64 tile, got {a.shape}")
    vals = matrix_to_accumulator(a, 64)                       # (128, 32) f32
    bits = convert(vals, out).astype(np.uint32)              # (128, 32)
    addrs, regs = stmatrix_plan(out)
    staging = np.zeros(64 * row_bytes, np.uint8)
    wav = np.zeros(addrs.shape[:2], np.int64)
    for w in range(4):
        th = 32 * w + np.arange(32)
        for jj in range(addrs.shape[1]):
            R = np.zeros((32, 4), np.uint32)
            for j in range(4):
                i0, i1 = regs[w, jj, 0, j]
                if es == 2:
                    R[:, j] = bits[th, i0] | (bits[th, i1] << 16)
                else:   # e4m3: cvt(v[i+1], v[i]) is a b16 with v[i] in the low byte
                    lo = bits[th, i0] | (bits[th, i0 + 1] << 8)
                    hi = bits[th, i1] | (bits[th, i1 + 1] << 8)
                    R[:, j] = lo | (hi << 16)
            stmatrix(staging, addrs[w, jj], R, 4)
            wav[w, jj] = matrix_wavefronts(addrs[w, jj].reshape(4, 8))
    tile = np.zeros((64, row_bytes), np.uint8)
    chunks = row_bytes // 16
    for r in range(64):
        for c in range(chunks):
            off = _swz(r, c, mode)
            tile[r, 16 * c:16 * c + 16] = staging[off:off + 16]
    return EpilogueResult(staging, tile, addrs, wav)


def staging_bytes(out: str, n: int = 64) -> int:
    """Shared-memory bytes of the staging tile: 64 rows × N elements."""
    _check(out)
    return 64 * n * OUTPUTS[out][0]
