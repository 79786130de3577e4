"""Register fragments of ``wgmma`` and ``ldmatrix``/``stmatrix``: which thread's register holds which element.

* Accumulator D of ``m64nN`` (PTX ISA §9.7.15.5.1.1.1 "Register fragments: matrix D"; CuTe
  ``CLayout_64xN``; hopper-spec-facts §8.3, verified on an H200 for m64n32k16). Thread ``t`` of the warpgroup:
  warp ``w = t/32``, group ``g = (t%32)/4``, ``c = t%4``; value ``r = 0 … N/2-1``::

      row(t, r) = 16w + g + 8·((r >> 1) & 1)        col(t, r) = 8·(r >> 2) + 2c + (r & 1)

  f32/s32: value r is register r; f16: value r is half ``r & 1`` (low half first) of register ``r >> 1``.
* A in registers (RS; PTX §9.7.15.5.1.1.2 "Matrix A"; CuTe ``ALayout_64x{8,16,32}``; hopper-spec-facts §8.4):
  4 × b32 per thread, each holding ``G = 32 / element bits`` elements (lowest element in the lowest bits)::

      row(t, j) = 16w + g + 8·(j & 1)               k(t, j, i) = G·c + i + 4G·(j >> 1)

  (f16/bf16 verified on an H200; tf32, 8-bit and b1 — the same ``mma.m16n8k*`` A pattern — [to be measured]).
* ``ldmatrix``/``stmatrix`` ``.m8n8.x{1,2,4}{.trans}.b16`` (PTX ISA §9.7.14.5.15, §9.7.14.5.16;
  hopper-spec-facts §9): thread ``t < 8·num`` gives the address of row ``t % 8`` of matrix ``t / 8`` (16 bytes);
  register ``j`` of thread ``t`` holds matrix ``j``'s elements ``(t/4, 2(t%4))`` (low half) and
  ``(t/4, 2(t%4)+1)`` (high half); with ``.trans`` ``(2(t%4), t/4)`` and ``(2(t%4)+1, t/4)``.
"""
from __future__ import annotations

import numpy as np

from .shapes import ELEMENT_BITS, M, WgmmaError, legal_n

__all__ = ["accumulator_layout", "accumulator_owner", "accumulator_to_matrix", "matrix_to_accumulator",
           "a_fragment_layout", "pack_a_fragment", "unpack_a_fragment", "ldmatrix_roles", "ldmatrix",
           "stmatrix", "ldmatrix_addresses"]

THREADS = 128


def accumulator_layout(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col), each (128, N/2) int: the D element held by value ``r`` of thread ``t`` (PTX §9.7.15.5.1.1.1)."""
    if n % 8 or not 8 <= n <= 256:
        raise WgmmaError(f"N = {n}: wgmma accumulators have N a multiple of 8 in 8..256 (PTX ISA §9.7.15.2)")
    t = np.arange(THREADS)[:, None]
    r = np.arange(n // 2)[None, :]
    w, g, c = t // 32, (t % 32) // 4, t % 4
    row = 16 * w + g + 8 * ((r >> 1) & 1)
    col = 8 * (r >> 2) + 2 * c + (r & 1)
    return np.broadcast_to(row, (THREADS, n // 2)).copy(), np.broadcast_to(col, (THREADS, n // 2)).copy()


def accumulator_owner(row: int, col: int, n: int, dtype: str = "f32") -> tuple[int, int, int]:
    """(thread, register, half) holding D[row][col] of an m64nN accumulator (half is 0 for f32/s32; for f16 the
    16-bit half of the register, 0 = low)."""
    if not (0 <= row < M and 0 <= col < n):
        raise WgmmaError(f"D[{row}][{col}] is outside the 64 × {n} accumulator")
    w, rr = divmod(row, 16)
    g, hi = rr % 8, rr // 8
    j, cc = divmod(col, 8)
    c, lo = divmod(cc, 2)
    t = 32 * w + 4 * g + c
    r = 4 * j + 2 * hi + lo
    if dtype == "f16":
        return t, r >> 1, r & 1
    return t, r, 0


def accumulator_to_matrix(values: np.ndarray, n: int) -> np.ndarray:
    """(128, N/2) per-thread values → the 64 × N matrix."""
    row, col = accumulator_layout(n)
    v = np.asarray(values)
    out = np.zeros((M, n), v.dtype)
    out[row, col] = v
    return out


def matrix_to_accumulator(mat: np.ndarray, n: int) -> np.ndarray:
    """The 64 × N matrix → (128, N/2) per-thread values (the inverse of :func:`accumulator_to_matrix`)."""
    row, col = accumulator_layout(n)
    return np.asarray(mat)[row, col]


def accumulator_registers(mat: np.ndarray, n: int, dtype: str) -> np.ndarray:
    """The 64 × N accumulator (raw bit patterns) → the (128, registers) uint32 registers each thread holds:
    one value per register for ``.f32``/``.s32``, two ``.f16`` values per register, the lower-column value in the
    low half (PTX ISA §9.7.15.5.1 "Register fragments", the wgmma D fragment)."""
    out = matrix_to_accumulator(mat, n)
    if dtype == "f16":
        o = out.astype(np.uint32).reshape(out.shape[0], -1, 2)
        out = o[:, :, 0] | (o[:, :, 1] << 16)
    return out.astype(np.uint32)


def _granule(atype: str) -> int:
    bits = ELEMENT_BITS.get(atype)
    if bits is None:
        raise WgmmaError(f"A type .{atype}: one of {sorted(ELEMENT_BITS)} (PTX ISA §9.7.15.3)")
    return 32 // bits


def a_fragment_layout(atype: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, k), each (128, 4, G) int: element ``i`` of A register ``j`` of thread ``t`` in the RS form
    (PTX §9.7.15.5.1.1.2), ``G = 32 / bits`` elements per register."""
    G = _granule(atype)
    t = np.arange(THREADS)[:, None, None]
    j = np.arange(4)[None, :, None]
    i = np.arange(G)[None, None, :]
    w, g, c = t // 32, (t % 32) // 4, t % 4
    row = np.broadcast_to(16 * w + g + 8 * (j & 1), (THREADS, 4, G)).copy()
    k = np.broadcast_to(G * c + i + 4 * G * (j >> 1), (THREADS, 4, G)).copy()
    return row, k


def pack_a_fragment(a: np.ndarray, atype: str) -> np.ndarray:
    """The (128, 4) uint32 A registers of the RS form from the 64 × K matrix of raw element bits."""
    G = _granule(atype)
    bits = 32 // G
    row, k = a_fragment_layout(atype)
    el = np.asarray(a).astype(np.uint64)[row, k] & np.uint64((1 << bits) - 1)
    sh = (np.arange(G, dtype=np.uint64) * np.uint64(bits))[None, None, :]
    return np.bitwise_or.reduce(el << sh, axis=2).astype(np.uint32)


def unpack_a_fragment(regs: np.ndarray, atype: str) -> np.ndarray:
    """The 64 × K matrix of raw element bits (uint32) the A registers hold (inverse of :func:`pack_a_fragment`)."""
    from .shapes import k_of

    G = _granule(atype)
    bits = 32 // G
    row, k = a_fragment_layout(atype)
    r = np.asarray(regs, np.uint32).astype(np.uint64)[:, :, None]
    sh = (np.arange(G, dtype=np.uint64) * np.uint64(bits))[None, None, :]
    el = (r >> sh) & np.uint64((1 << bits) - 1)
    out = np.zeros((M, k_of(atype)), np.uint32)
    out[row, k] = el.astype(np.uint32)
    return out


# ------------------------------------------------------------------------------------------------
# ldmatrix / stmatrix .m8n8 .b16

def _check_num(num: int) -> None:
    if num not in (1, 2, 4):
        raise WgmmaError(f".x{num}: ldmatrix/stmatrix .m8n8 move 1, 2 or 4 matrices (.x1/.x2/.x4; PTX ISA §9.7.14.5.15)")


def ldmatrix_roles(num: int) -> list[tuple[int, int]]:
    """For each thread 0..31, (matrix, row) whose address it supplies, or (-1, -1) when its address is ignored
    (PTX §9.7.14.5.15: threads 0–7 for .x1, 0–15 for .x2, all 32 for .x4)."""
    _check_num(num)
    return [(t // 8, t % 8) if t < 8 * num else (-1, -1) for t in range(32)]


def ldmatrix_addresses(addrs, num: int) -> np.ndarray:
    """(num, 8) row addresses from the 32 per-thread addresses; each must be 16-byte aligned."""
    _check_num(num)
    a = np.asarray(addrs, np.int64).reshape(-1)
    if a.size != 32:
        raise WgmmaError("ldmatrix/stmatrix take one address per thread of the warp (32)")
    rows = a[:8 * num].reshape(num, 8)
    if (rows % 16).any():
        bad = int(rows[rows % 16 != 0][0])
        raise WgmmaError(f"ldmatrix/stmatrix row address 0x{bad:x} is not 16-byte aligned: each 8 × b16 row is one "
                         "aligned 16-byte access (PTX ISA §9.7.14.5.15)")
    return rows


def _lane_elems(trans: bool):
    t = np.arange(32)
    if trans:
        return (2 * (t % 4), t // 4), (2 * (t % 4) + 1, t // 4)
    return (t // 4, 2 * (t % 4)), (t // 4, 2 * (t % 4) + 1)


def ldmatrix(smem, addrs, num: int = 4, trans: bool = False) -> np.ndarray:
    """``ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16``: the (32, num) uint32 registers each thread gets
    from the shared-memory bytes ``smem`` (PTX ISA §9.7.14.5.15)."""
    from .descriptor import smem_array

    buf = smem_array(smem)
    rows = ldmatrix_addresses(addrs, num)
    if rows.min() < 0 or rows.max() + 16 > buf.size:
        raise WgmmaError("ldmatrix reads outside the CTA's shared memory (PTX ISA §9.7.14.5.15)")
    mats = buf[rows[..., None] + np.arange(16)].view(np.uint16).reshape(num, 8, 8)   # [matrix, row, col]
    (r0, c0), (r1, c1) = _lane_elems(trans)
    lo = mats[:, r0, c0].astype(np.uint32)            # (num, 32)
    hi = mats[:, r1, c1].astype(np.uint32)
    return (lo | (hi << 16)).T.copy()


def stmatrix(smem, addrs, regs, num: int = 4, trans: bool = False) -> None:
    """``stmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16``: write the (32, num) registers to the rows the
    threads address (the inverse of :func:`ldmatrix`; PTX ISA §9.7.14.5.16)."""
    from .descriptor import smem_array

    buf = smem_array(smem)
    rows = ldmatrix_addresses(addrs, num)
    if rows.min() < 0 or rows.max() + 16 > buf.size:
        raise WgmmaError("stmatrix writes outside the CTA's shared memory (PTX ISA §9.7.14.5.16)")
    r = np.asarray(regs, np.uint32).reshape(32, num).T          # (num, 32)
    mats = np.zeros((num, 8, 8), np.uint16)
    (r0, c0), (r1, c1) = _lane_elems(trans)
    mats[:, r0, c0] = (r & 0xFFFF).astype(np.uint16)
    mats[:, r1, c1] = (r >> 16).astype(np.uint16)
    buf[rows[..., None] + np.arange(16)] = mats.view(np.uint8).reshape(num, 8, 16)
