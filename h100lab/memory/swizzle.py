"""Shared-memory swizzles: the XOR address permutations of TMA and WGMMA, and CuTe's ``Swizzle<B,M,S>``.

A swizzle is a function of a *byte address* that XORs one group of address bits into another::

    Swizzle<B,M,S>(a) = a ^ ((a & (((1 << B) - 1) << (M + S))) >> S)         (S > 0)

    bit:  ...  9 8 7 | 6 5 4 | 3 2 1 0
    128B:      Y Y Y | Z Z Z | . . . .     Z ^= Y   (Swizzle<3,4,3>: 16-byte atoms, 128-byte lines)
    64B:       . Y Y | . Z Z | . . . .     Swizzle<2,4,3>
    32B:       . . Y | . . Z | . . . .     Swizzle<1,4,3>

The TMA modes ``CU_TENSOR_MAP_SWIZZLE_32B/64B/128B`` and the WGMMA descriptor layout types are
exactly ``Swizzle<1,4,3>``, ``Swizzle<2,4,3>``, ``Swizzle<3,4,3>`` applied to the **absolute**
shared-memory byte address [PTX §5.5.7 tensor-swizzling-modes; CPG §10.29.3.2 the-swizzle-modes;
CUTLASS include/cute/swizzle.hpp; measured on an H200, hopper-spec-facts §4.1]. The low four bits
(the 16-byte atom) are never permuted, and every mode keeps a byte inside its 128-byte line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

__all__ = [
    "Swizzle", "SWIZZLE_MODES", "TMA_SWIZZLE_MODES", "mode_name", "swizzle_of", "span_bytes",
    "repeat_bytes", "pattern_alignment", "TMA_DST_ALIGNMENT", "GMMA_LAYOUT_TYPE", "swizzle_address",
    "unswizzle_address", "swizzled_chunk", "base_offset",
]

IntOrArray = Union[int, np.ndarray]


@dataclass(frozen=True)
class Swizzle:
    """CuTe's ``Swizzle<B, M, S>``: XOR the ``B`` bits at ``[M+S, M+S+B)`` into the bits ``[M, M+B)``.

    ``B`` (bits) ≥ 0, ``M`` (base) ≥ 0, ``|S|`` (shift) ≥ ``B`` so that the two bit groups never
    overlap [CUTLASS include/cute/swizzle.hpp, ``static_assert(abs(num_shft) >= num_bits)``]. A
    negative ``S`` XORs the lower group into the upper one. Because the source bits are left
    unchanged, every swizzle is an involution: ``sw(sw(a)) == a``.

    Call it on an int or a NumPy integer array: ``Swizzle(3, 4, 3)(0x90) == 0x80``.
    """

    bits: int
    base: int
    shift: int

    def __post_init__(self):
        if self.bits < 0:
            raise ValueError(f"Swizzle<{self.bits},{self.base},{self.shift}>: BBits must be >= 0 (CuTe swizzle.hpp)")
        if self.base < 0:
            raise ValueError(f"Swizzle<{self.bits},{self.base},{self.shift}>: MBase must be >= 0 (CuTe swizzle.hpp)")
        if abs(self.shift) < self.bits:
            raise ValueError(f"Swizzle<{self.bits},{self.base},{self.shift}>: |SShift| must be >= BBits "
                             "so the XORed bit groups do not overlap (CuTe swizzle.hpp)")

    # masks of the source ("yyy") and target ("zzz") bit groups, as CuTe names them
    @property
    def yyy_mask(self) -> int:
        """Mask of the bits that are read (``bit_msk << (M + max(0, S))``)."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def zzz_mask(self) -> int:
        """Mask of the bits that are changed (``bit_msk << (M - min(0, S))``)."""
        return ((1 << self.bits) - 1) << (self.base - min(0, self.shift))

    def __call__(self, offset: IntOrArray) -> IntOrArray:
        """The swizzled offset: ``offset ^ shiftr(offset & yyy_mask, S)`` [CuTe swizzle.hpp ``apply``]."""
        if isinstance(offset, np.ndarray):
            o = offset.astype(np.int64, copy=False)
            if np.any(o < 0):
                raise ValueError("a swizzle is defined on non-negative offsets")
            y = o & self.yyy_mask
            moved = (y >> self.shift) if self.shift >= 0 else (y << -self.shift)
            return o ^ moved
        o = int(offset)
        if o < 0:
            raise ValueError(f"a swizzle is defined on non-negative offsets, got {o}")
        y = o & self.yyy_mask
        return o ^ ((y >> self.shift) if self.shift >= 0 else (y << -self.shift))

    def inverse(self) -> "Swizzle":
        """The inverse function. A swizzle leaves its source bits unchanged, so it is its own inverse."""
        return self

    @property
    def period(self) -> int:
        """Bytes after which the pattern repeats: ``2 ** (M + max(S, 0) + B)`` (1024 for ``Swizzle<3,4,3>``)."""
        return 1 << (self.base + max(0, self.shift) + self.bits) if self.bits else 1 << self.base

    def __str__(self) -> str:
        return f"Swizzle<{self.bits},{self.base},{self.shift}>"

    def bit_diagram(self, nbits: int = 10) -> str:
        """The bits drawn as CUTLASS comments draw them: Y = read, Z = changed (bit ``nbits-1`` first)."""
        out = []
        for b in range(nbits - 1, -1, -1):
            m = 1 << b
            out.append("Y" if self.yyy_mask & m else "Z" if self.zzz_mask & m else ".")
        return "".join(out)


# The TMA modes (CUtensorMapSwizzle) that compute capability 9.0 supports [CPG §10.29.3.2 Table 12].
TMA_SWIZZLE_MODES = ("CU_TENSOR_MAP_SWIZZLE_NONE", "CU_TENSOR_MAP_SWIZZLE_32B",
                     "CU_TENSOR_MAP_SWIZZLE_64B", "CU_TENSOR_MAP_SWIZZLE_128B")

#: mode name → the CuTe swizzle it applies to byte addresses [hopper-spec-facts §4.1].
SWIZZLE_MODES = {
    "CU_TENSOR_MAP_SWIZZLE_NONE": Swizzle(0, 4, 3),
    "CU_TENSOR_MAP_SWIZZLE_32B": Swizzle(1, 4, 3),
    "CU_TENSOR_MAP_SWIZZLE_64B": Swizzle(2, 4, 3),
    "CU_TENSOR_MAP_SWIZZLE_128B": Swizzle(3, 4, 3),
}

#: WGMMA matrix-descriptor ``layout_type`` (bits 62–63) of each mode [PTX §9.7.15.5.1.2.2].
GMMA_LAYOUT_TYPE = {
    "CU_TENSOR_MAP_SWIZZLE_NONE": 0,
    "CU_TENSOR_MAP_SWIZZLE_128B": 1,
    "CU_TENSOR_MAP_SWIZZLE_64B": 2,
    "CU_TENSOR_MAP_SWIZZLE_32B": 3,
}

#: A multi-dimensional TMA copy faults (``cudaErrorMisalignedAddress``) unless its shared-memory
#: destination is 128-byte aligned [CPG §10.29.2 Table 10; measured on an H200, hopper-spec-facts §5].
TMA_DST_ALIGNMENT = 128

_SHORT = {"NONE": "CU_TENSOR_MAP_SWIZZLE_NONE", "32B": "CU_TENSOR_MAP_SWIZZLE_32B",
          "64B": "CU_TENSOR_MAP_SWIZZLE_64B", "128B": "CU_TENSOR_MAP_SWIZZLE_128B"}


def mode_name(mode: str) -> str:
    """The driver's enum name of a swizzle mode; accepts the short forms ``"NONE"``, ``"32B"``, ...

    Only the four modes of compute capability 9.0 are known [CPG §10.29.3.2 Table 12]; the
    ``CU_TENSOR_MAP_SWIZZLE_128B_ATOM_*`` modes are Blackwell features and are rejected here.
    """
    if not isinstance(mode, str):
        raise ValueError(f"a swizzle mode is named by a string such as 'CU_TENSOR_MAP_SWIZZLE_128B', got {mode!r}")
    name = _SHORT.get(mode.upper(), mode)
    if name not in SWIZZLE_MODES:
        raise ValueError(f"unknown swizzle mode {mode!r}: compute capability 9.0 has "
                         f"{', '.join(TMA_SWIZZLE_MODES)} (CPG §10.29.3.2 Table 12)")
    return name


def swizzle_of(mode: str) -> Swizzle:
    """The CuTe ``Swizzle<B,4,3>`` of a TMA/GMMA swizzle mode [hopper-spec-facts §4.1]."""
    return SWIZZLE_MODES[mode_name(mode)]


def span_bytes(mode: str) -> int:
    """The swizzle span: 32, 64 or 128 bytes (0 for NONE). A box row occupies a full span when swizzled.

    [DRV cuTensorMapEncodeTiled: "Swizzle 16B chunks within 32B/64B/128B span"]
    """
    sw = swizzle_of(mode)
    return 0 if sw.bits == 0 else 16 << sw.bits


def repeat_bytes(mode: str) -> int:
    """Bytes after which the swizzle pattern repeats: 256, 512, 1024 (16 for NONE) [PTX §5.5.7]."""
    sw = swizzle_of(mode)
    return 16 if sw.bits == 0 else sw.period


def pattern_alignment(mode: str) -> int:
    """Shared-memory alignment a tile needs so that its swizzle pattern starts at phase 0.

    256 / 512 / 1024 bytes for 32B / 64B / 128B: the XOR reads address bits 7–9, so a tile at such an
    address sees the pattern exactly as the GMMA canonical layouts (base_offset = 0) and the PTX tables
    draw it [CPG §10.29.3.2 Tables 11–12; PTX §9.7.15.5.1.2.2]. Without a swizzle the TMA rule of
    128 bytes (:data:`TMA_DST_ALIGNMENT`) is what remains.
    """
    return max(TMA_DST_ALIGNMENT, repeat_bytes(mode))


def swizzle_address(addr: IntOrArray, mode: str) -> IntOrArray:
    """Where the byte at (unswizzled) shared address ``addr`` lands under ``mode`` [PTX §5.5.7]."""
    return swizzle_of(mode)(addr)


def unswizzle_address(addr: IntOrArray, mode: str) -> IntOrArray:
    """The inverse of :func:`swizzle_address` (the same XOR: swizzles are involutions)."""
    return swizzle_of(mode).inverse()(addr)


def base_offset(addr: int, mode: str) -> int:
    """The pattern phase of a tile starting at ``addr``: ``(addr >> 7) % {2,4,8}`` (0 without swizzle).

    This is the CUDA guide's ``offset`` for a TMA destination and the WGMMA descriptor's
    ``base_offset`` field [CPG §10.29.3.2 Table 11; PTX §5.5.7; PTX §9.7.15.5.1.2.2].
    """
    sw = swizzle_of(mode)
    return 0 if sw.bits == 0 else (int(addr) >> 7) % (1 << sw.bits)


def swizzled_chunk(row: IntOrArray, chunk: IntOrArray, mode: str, offset: int = 0) -> IntOrArray:
    """The 16-byte chunk that chunk ``chunk`` of 128-byte line ``row`` is stored in.

    The 16-byte-chunk view of the modes: ``((row + offset) % {2,4,8}) ^ chunk`` for 32B/64B/128B,
    ``chunk`` for NONE, where ``offset`` is :func:`base_offset` of the tile [CPG §10.29.3.2 Table 11].
    """
    sw = swizzle_of(mode)
    if sw.bits == 0:
        return chunk
    if isinstance(row, np.ndarray) or isinstance(chunk, np.ndarray):
        r, c = np.asarray(row, dtype=np.int64), np.asarray(chunk, dtype=np.int64)
        if np.any(c < 0) or np.any(c >= 8) or np.any(r < 0):
            raise ValueError("a 128-byte line has chunks 0..7 and rows are non-negative")
        return ((r + offset) % (1 << sw.bits)) ^ c
    if not 0 <= chunk < 8 or row < 0:
        raise ValueError(f"a 128-byte line has chunks 0..7 and rows are non-negative (row {row}, chunk {chunk})")
    return ((row + offset) % (1 << sw.bits)) ^ chunk
