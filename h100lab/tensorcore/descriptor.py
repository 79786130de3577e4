"""The 64-bit shared-memory matrix descriptor of ``wgmma`` and the shared-memory gather it implies.

PTX ISA §9.7.15.5.1.2.2 "Matrix Descriptor Format"
(``#asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor``; CUTLASS
``cute/arch/mma_sm90_desc.hpp`` ``GmmaDescriptor``; hopper-spec-facts §8.2). With
``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``:

======  ==========================================================
bits    field
======  ==========================================================
0–13    encode(start address)
16–29   encode(leading dimension byte offset, LBO)
32–45   encode(stride dimension byte offset, SBO)
49–51   base offset (pattern phase of a swizzled operand)
62–63   layout type: 0 interleave (no swizzle), 1 128B, 2 64B, 3 32B
======  ==========================================================

The gather (PTX ISA §9.7.15.5.1.2.1 "Shared Memory Matrix Layout", §9.7.15.5.1.2.1.3 "Canonical layouts"):
the operand is made of *core matrices* of 8 rows × 16 bytes (``T = 16 / element bytes`` elements per row).
In CuTe notation, with element strides (``1T`` = 16 bytes) and LBO/SBO in bytes:

=========  ===========  ==================================================
major      layout       canonical layout ((rows),(cols)) : ((strides))
=========  ===========  ==================================================
K          interleave   ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))
K          32/64/128B   ((8,m),(T,2k)) : ((2T|4T|8T,SBO),(1,T))   — LBO unused
MN         interleave   ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
MN         32/64/128B   ((T,2|4|8,m),(8,k)) : ((1,T,LBO),(2T|4T|8T,SBO))
=========  ===========  ==================================================

then the swizzle ``Swizzle<1|2|3,4,3>`` of the **absolute** byte address, its line index taken relative to the
base offset: chunk bits [4, 4+B) ^= ``((addr >> 7) - base_offset) mod 2^B`` (hopper-spec-facts §4.1, §8.2:
measured on an H200 with an operand at 1024-aligned + 384 — base offset 0 with an image swizzled on absolute
addresses, 3 with one swizzled from its own start). K advances inside a swizzle atom by adding bytes to the
start address only (CuTe ``DescriptorIterator``), and the XOR then sees the advanced address.

[to be measured] by ``h100lab.measure.l06`` (descriptor-gather probe): that swizzled K-major operands ignore
LBO; that the base offset acts as above for every swizzle mode (measured for 128B only); that the address
arithmetic wraps at 18 bits. The gather follows the table above until data says otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shapes import ELEMENT_BITS, WgmmaError

__all__ = ["MatrixDescriptor", "LAYOUT_TYPES", "SWIZZLE_BYTES", "encode_field", "addresses", "gather", "smem_array",
           "canonical_lbo_sbo"]

#: layout-type field value → swizzle mode name (h100lab.memory.swizzle spelling)
LAYOUT_TYPES = {0: "none", 1: "128B", 2: "64B", 3: "32B"}
_TYPE_OF = {v: k for k, v in LAYOUT_TYPES.items()}
#: swizzle mode → width of one swizzled row in bytes (16 for interleave: one core-matrix row)
SWIZZLE_BYTES = {"none": 16, "32B": 32, "64B": 64, "128B": 128}
_BITS = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
_RESERVED = ~((0x3FFF) | (0x3FFF << 16) | (0x3FFF << 32) | (0x7 << 49) | (0x3 << 62)) & ((1 << 64) - 1)


def encode_field(x: int) -> int:
    """PTX ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4`` (a byte quantity in 16-byte units, 14 bits)."""
    return (int(x) & 0x3FFFF) >> 4


@dataclass(frozen=True)
class MatrixDescriptor:
    """A ``wgmma`` shared-memory matrix descriptor (PTX ISA §9.7.15.5.1.2.2).

    Byte quantities: ``start`` (shared-memory address of the matrix), ``lbo`` and ``sbo`` (leading/stride
    dimension byte offsets), each a multiple of 16 below 2^18; ``base_offset`` 0–7; ``swizzle`` one of
    ``"none"``, ``"32B"``, ``"64B"``, ``"128B"``; ``reserved``: any bits set outside the fields (kept so that
    :meth:`decode` ∘ :meth:`encode` is the identity on every 64-bit value)."""

    start: int
    lbo: int = 16
    sbo: int = 0
    base_offset: int = 0
    swizzle: str = "none"
    reserved: int = 0

    def __post_init__(self):
        for name in ("start", "lbo", "sbo"):
            v = getattr(self, name)
            if not 0 <= v < (1 << 18) or v % 16:
                raise WgmmaError(f"descriptor {name} = {v}: a byte quantity that is a multiple of 16 below 2^18 — the "
                                 "field holds (x & 0x3FFFF) >> 4 in 14 bits (PTX ISA §9.7.15.5.1.2.2)")
        if not 0 <= self.base_offset < 8:
            raise WgmmaError(f"base offset {self.base_offset}: a 3-bit field, 0..7 (PTX ISA §9.7.15.5.1.2.2)")
        if self.swizzle not in _TYPE_OF:
            raise WgmmaError(f"swizzle {self.swizzle!r}: one of {list(_TYPE_OF)} — layout types 0 interleave, "
                             "1 128B, 2 64B, 3 32B (PTX ISA §9.7.15.5.1.2.2)")
        if self.reserved & ~_RESERVED:
            raise WgmmaError("reserved bits overlap a field")

    @property
    def layout_type(self) -> int:
        return _TYPE_OF[self.swizzle]

    def encode(self) -> int:
        """The 64-bit value (bits 0–13 start>>4, 16–29 LBO>>4, 32–45 SBO>>4, 49–51 base offset, 62–63 layout)."""
        return (encode_field(self.start) | encode_field(self.lbo) << 16 | encode_field(self.sbo) << 32
                | self.base_offset << 49 | self.layout_type << 62 | self.reserved)

    def __int__(self) -> int:
        return self.encode()

    @classmethod
    def decode(cls, value: int) -> "MatrixDescriptor":
        """The fields of a 64-bit descriptor value (the inverse of :meth:`encode`)."""
        v = int(value) & ((1 << 64) - 1)
        return cls(start=(v & 0x3FFF) << 4, lbo=((v >> 16) & 0x3FFF) << 4, sbo=((v >> 32) & 0x3FFF) << 4,
                   base_offset=(v >> 49) & 7, swizzle=LAYOUT_TYPES[(v >> 62) & 3], reserved=v & _RESERVED)

    def advanced(self, nbytes: int) -> "MatrixDescriptor":
        """The descriptor with ``nbytes`` added to the start address — how CuTe steps K inside a swizzle atom
        (``DescriptorIterator`` adds ``nbytes >> 4`` to the low word)."""
        return MatrixDescriptor(self.start + nbytes, self.lbo, self.sbo, self.base_offset, self.swizzle, self.reserved)


def canonical_lbo_sbo(major: str, swizzle: str, dtype: str, rows: int = 64) -> tuple[int, int]:
    """(LBO, SBO) in bytes of the compact layout that tiles one canonical atom (PTX §9.7.15.5.1.2.1.3) over a
    ``rows`` × K operand of one wgmma, M/N fastest (CuTe ``tile_to_shape`` of ``Layout_{K,MN}_{INTER,SW32,SW64,
    SW128}_Atom``):

    * K-major interleave: core matrices stacked along M/N, so SBO = 128 (next 8 rows) and LBO = rows × 16 (the
      next 16 bytes of K);
    * K-major swizzled: SBO = 8 × swizzle bytes (next 8 rows), LBO unused (16);
    * MN-major interleave: SBO = 128 (next T elements of M/N), LBO = rows × element bytes × 8 (next 8 K);
    * MN-major swizzled: LBO = 8 × swizzle bytes (next block of swizzle-bytes of M/N), SBO = blocks × 8 ×
      swizzle bytes (next 8 K)."""
    es = _elem_bytes(dtype)
    S = SWIZZLE_BYTES[swizzle]
    if major == "K":
        return (rows * 16, 128) if swizzle == "none" else (16, 8 * S)
    if swizzle == "none":
        return rows * es * 8, 128
    blocks = -(-rows * es // S)
    return 8 * S, blocks * 8 * S


def _elem_bytes(dtype: str) -> int:
    bits = ELEMENT_BITS.get(dtype)
    if bits is None:
        raise WgmmaError(f"element type .{dtype}: one of {sorted(ELEMENT_BITS)} (PTX ISA §9.7.15.3)")
    return max(1, bits // 8)


def addresses(desc: MatrixDescriptor | int, major: str, rows: int, cols: int, dtype: str) -> np.ndarray:
    """(rows, cols) int64: the shared-memory byte address of each operand element (row = M or N index, col = K
    index) the descriptor names, after the swizzle. ``major`` is ``"K"`` or ``"MN"``. For ``.b1`` the columns are
    bytes (8 elements each). PTX ISA §9.7.15.5.1.2.1 (layouts), §9.7.15.5.1.2.2 (descriptor)."""
    d = desc if isinstance(desc, MatrixDescriptor) else MatrixDescriptor.decode(desc)
    es = 1 if dtype == "b1" else _elem_bytes(dtype)
    T = 16 // es
    S = SWIZZLE_BYTES[d.swizzle]
    r = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(cols, dtype=np.int64)[None, :]
    if major == "K":
        if d.swizzle == "none":
            a = d.start + (r // 8) * d.sbo + (r % 8) * 16 + (k // T) * d.lbo + (k % T) * es
        else:
            if cols * es > S:
                raise WgmmaError(f"a K-major {d.swizzle}-swizzled operand row holds {S} B; {cols} × .{dtype} elements "
                                 f"({cols * es} B) do not fit (PTX ISA §9.7.15.5.1.2.1.3)")
            a = d.start + (r // 8) * d.sbo + (r % 8) * S + k * es
    elif major == "MN":
        if dtype not in ("f16", "bf16"):
            raise WgmmaError(f"MN-major (transposed) operands exist only for .f16/.bf16, not .{dtype} "
                             "(PTX ISA §9.7.15.5.2 imm-trans)")
        if d.swizzle == "none":
            a = d.start + (r // T) * d.sbo + (r % T) * es + (k % 8) * 16 + (k // 8) * d.lbo
        else:
            W = S // es                                  # MN elements per swizzled row
            a = d.start + (r // W) * d.lbo + (r % W) * es + (k % 8) * S + (k // 8) * d.sbo
    else:
        raise WgmmaError(f"major {major!r}: 'K' (imm-trans 0) or 'MN' (imm-trans 1) (PTX ISA §9.7.15.5.2)")
    bits = _BITS[d.swizzle]
    if bits:
        line = ((a >> 7) - d.base_offset) & ((1 << bits) - 1)
        a = a ^ (line << 4)
    return a


def smem_array(smem) -> np.ndarray:
    """The uint8 bytes of a :class:`~h100lab.sync.smem.SharedMemory`, a NumPy array or a bytes object."""
    arr = getattr(smem, "array", smem)
    if isinstance(arr, (bytes, bytearray)):
        arr = np.frombuffer(arr, np.uint8)
    arr = np.asarray(arr)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise TypeError("shared memory must be a 1-D uint8 array, bytes or a SharedMemory")
    return arr


_RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def gather(smem, desc: MatrixDescriptor | int, major: str, rows: int, cols: int, dtype: str) -> np.ndarray:
    """The (rows, cols) operand tile the tensor core reads through ``desc`` from the CTA's shared-memory bytes:
    raw element bits (uint16 for f16/bf16, uint32 for tf32, uint8 for fp8/s8/u8, 0/1 uint8 for b1, element k of a
    byte at bit k % 8 — [to be measured]). ``rows`` is M (A) or N (B), ``cols`` is K. Reading outside
    ``smem`` raises. PTX ISA §9.7.15.5.1.2."""
    buf = smem_array(smem)
    if dtype == "b1":
        if cols % 8:
            raise WgmmaError(".b1 operands are read in whole bytes: K must be a multiple of 8")
        byt = gather(buf, desc, major, rows, cols // 8, "u8")
        return np.unpackbits(byt, axis=1, bitorder="little")
    es = _elem_bytes(dtype)
    a = addresses(desc, major, rows, cols, dtype)
    if a.min() < 0 or a.max() + es > buf.size:
        bad = int(a.max())
        raise WgmmaError(f"the descriptor reads shared bytes up to 0x{bad + es:x}, outside the CTA's {buf.size} B of "
                         "shared memory (PTX ISA §9.7.15.5.1.2: operands live in the executing CTA's shared memory)")
    idx = a[..., None] + np.arange(es)
    raw = buf[idx]
    return raw.view(_RAW[es]).reshape(rows, cols) if es > 1 else raw.reshape(rows, cols)
