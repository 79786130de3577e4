"""2:4 structured sparsity: ``wgmma.mma_async.sp`` — a sparse A (values + metadata) times a dense B.

PTX ISA §9.7.15.6 "Asynchronous warpgroup level matrix multiply-accumulate operation using wgmma.mma_async.sp
instruction" (``#asynchronous-warpgroup-level-matrix-instructions-wgmma-mma-sp``), its "Sparse matrix storage"
and "Matrix fragments" subsections, and §9.7.14.6.1 (``mma.sp``, which the wgmma text follows);
hopper-spec-facts §11; CuTe ``ELayout_64x{16,32,64}`` (mma_traits_sm90_gmma_sparse.hpp, read, not copied).

* **Only A is sparse.** Its M × K block is stored packed as M × K/2 — the same operand, in shared memory or in
  registers, as the A of the dense instruction with half the K (f16/bf16: K 32 → 16 stored, tf32: 16 → 8,
  fp8/int8: 64 → 32). B is dense K × N; the same N as dense; no ``.b1`` sparse form.
* **Granularity**: f16/bf16/e4m3/e5m2/s8/u8 — 2:4: in every aligned group of 4 K-elements of a row at most 2
  are non-zero; exactly 2 are stored, each with a 2-bit index (0–3): the group's 4-bit metadata nibble is
  ``idx0 | idx1 << 2`` (idx0 for the first stored value). The nibbles 0b0000, 0b0101, 0b1010, 0b1111 (the same
  index twice) are invalid — undefined behaviour in PTX. tf32 — 1:2: one element of every aligned pair is
  stored; its nibble is 0b0100 (position 0) or 0b1110 (position 1), every other value is invalid (PTX ISA
  §9.7.15.6: a tf32 element is two 16-bit halves, and the nibble is the 2:4 code of those halves).
* **Metadata registers** (``sp-meta``, one ``.b32`` per thread) and the **sparsity selector** ``sp-sel``
  (an integer constant): warp ``w`` supplies the metadata of its 16 rows; lane ``l``: ``g = l >> 2``,
  ``b = l & 1``, ``p = (l >> 1) & 1``:

  =================  ========================  ============================================================
  A type (K)         lanes read                bits of a read register
  =================  ========================  ============================================================
  f16/bf16 (32)      p == sp-sel (0 or 1)      nibble q < 4: row 16w+g, group 4b+q; nibble 4+q: row 16w+g+8
  tf32 (16)          p == sp-sel (0 or 1)      as f16, a group being a pair (K 8b+2q … +1)
  8-bit (64)         all four (sp-sel must 0)  nibble q: row 16w+g+8b, group 8p+q (K 32p+4q … +3)
  =================  ========================  ============================================================

  The lanes not read may hold anything.

What the tensor core computes (the **gather** model, :func:`gather_b`: each stored value meets the B element its
index names, so a pruned position never multiplies B — an Inf or NaN in such a B row does not reach D) is
``numerics.mma`` of the K/2 stored products plus C, row by row. Invalid metadata raises :class:`SparsityError`
(``invalid="raise"``, the default: the PTX ISA leaves it undefined, and the emulator refuses it the same way);
``invalid="hardware"`` computes what the H200 does with it.

Measured on the H200 (data/l07/sparse: every case of every type bit for bit, ≥ 12,288 random outputs per form;
data/l07/sparse_meta: every nibble value on designed inputs): the metadata of the lanes sp-sel does not name is
ignored; 2:4 indices in descending order work; an Inf or NaN in a pruned B row does not reach D (the gather
model, not a dense 0·Inf); **invalid 2:4 codes** (one position named twice) do what the gather model says —
both stored values meet the same B row, their products added. **Invalid tf32 codes** show how the gather is
built: it moves **16-bit halves of B**. The nibble's two indices pick two of the four halves of the B pair
(``B[2g]``: halves 0, 1; ``B[2g+1]``: halves 2, 3) — idx0 the low half, idx1 the high half of the B element the
stored tf32 value meets. 0b0100 and 0b1110 pick ``B[2g]`` and ``B[2g+1]`` whole; any other code splices a B
element from two halves (the stored A value itself is never split), which is why no placement of the A value
reproduced those records.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shapes import M, WgmmaError, WgmmaSpec, spec

__all__ = ["SparsityError", "SparseSpec", "sparse_spec", "parse_sparse_opcode", "granularity", "groups_per_row",
           "INVALID_2_4", "VALID_TF32", "check_metadata", "compress", "decompress", "metadata_registers",
           "metadata_from_registers", "selected_lanes", "mma_sp", "gather_b", "random_sparse", "SPARSE_TYPES"]

SPARSE_TYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8")
INVALID_2_4 = (0b0000, 0b0101, 0b1010, 0b1111)
VALID_TF32 = (0b0100, 0b1110)
_RULE = "PTX ISA §9.7.15.6 (wgmma.mma_async.sp sparse matrix storage)"


class SparsityError(WgmmaError):
    """Input that breaks a 2:4 / 1:2 sparsity rule; the message names the rule."""


def granularity(atype: str) -> tuple[int, int]:
    """(kept, group): (2, 4) for 2:4 types, (1, 2) for tf32 (§9.7.15.6)."""
    if atype not in SPARSE_TYPES:
        raise SparsityError(f".{atype} has no sparse wgmma: one of {SPARSE_TYPES} ({_RULE}; no .b1 sparse form)")
    return (1, 2) if atype == "tf32" else (2, 4)


def groups_per_row(atype: str) -> int:
    """Metadata nibbles per row of one instruction: K/4 (2:4) or K/2 (tf32) = 8, 8 or 16."""
    kept, grp = granularity(atype)
    return sparse_k(atype) // grp


def sparse_k(atype: str) -> int:
    granularity(atype)
    return {"f16": 32, "bf16": 32, "tf32": 16}.get(atype, 64)


@dataclass(frozen=True)
class SparseSpec:
    """One legal ``wgmma.mma_async.sp`` form: ``dense`` is the dense form with half the K whose A operand (and
    register counts) the packed sparse A uses; ``sp_sel`` the sparsity selector."""

    dense: WgmmaSpec
    sp_sel: int = 0

    def __getattr__(self, name):          # n, dtype, atype, btype, a_source, scale_a, ... of the dense twin
        if name == "dense":
            raise AttributeError(name)
        return getattr(self.dense, name)

    @property
    def k(self) -> int:
        return 2 * self.dense.k

    @property
    def packed_k(self) -> int:
        return self.dense.k

    @property
    def shape(self) -> str:
        return f"m64n{self.dense.n}k{self.k}"

    def opcode(self) -> str:
        """e.g. ``wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16``."""
        d = self.dense
        sat = ".satfinite" if d.satfinite else ""
        return f"wgmma.mma_async.sp.sync.aligned.{self.shape}{sat}.{d.dtype}.{d.atype}.{d.btype}"


def sparse_spec(n: int, dtype: str, atype: str, btype: str | None = None, a_source: str = "ss", *, sp_sel: int = 0,
                satfinite: bool = False, scale_a: int = 1, scale_b: int = 1, trans_a: int = 0,
                trans_b: int = 0) -> SparseSpec:
    """A checked :class:`SparseSpec` (the dense rules of :func:`~h100lab.tensorcore.shapes.spec` plus: no .b1,
    sp-sel 0/1 for f16/bf16/tf32 and 0 for 8-bit types)."""
    granularity(atype)
    d = spec(n, dtype, atype, btype, a_source, satfinite=satfinite, scale_a=scale_a, scale_b=scale_b,
             trans_a=trans_a, trans_b=trans_b)
    allowed = (0,) if atype in ("e4m3", "e5m2", "s8", "u8") else (0, 1)
    if sp_sel not in allowed:
        raise SparsityError(f"sp-sel = {sp_sel} with .{atype}: the sparsity selector must be "
                            f"{' or '.join(map(str, allowed))} — 8-bit types read metadata from all four threads of a "
                            f"quad, f16/bf16/tf32 from the pair sp-sel names (PTX ISA §9.7.15.6, sparsity selector)")
    return SparseSpec(d, sp_sel)


def parse_sparse_opcode(text: str, a_source: str = "ss", sp_sel: int = 0) -> SparseSpec:
    """The :class:`SparseSpec` of ``wgmma.mma_async.sp.sync.aligned.m64nNkK[.satfinite].dtype.atype.btype``."""
    import re
    m = re.match(r"^wgmma\.mma_async\.sp\.sync\.aligned\.m64n(\d+)k(\d+)((?:\.\w+)+)$", text.strip())
    if not m:
        raise SparsityError(f"{text!r} is not a wgmma.mma_async.sp.sync.aligned.m64nNkK... name ({_RULE})")
    n, k = int(m.group(1)), int(m.group(2))
    parts = m.group(3).strip(".").split(".")
    sat = "satfinite" in parts
    parts = [p for p in parts if p != "satfinite"]
    if len(parts) != 3:
        raise SparsityError(f"{text!r}: expected .dtype.atype.btype ({_RULE})")
    s = sparse_spec(n, parts[0], parts[1], parts[2], a_source, sp_sel=sp_sel, satfinite=sat)
    if k != s.k:
        raise SparsityError(f"{text!r}: K = {k}, but sparse .{parts[1]} wgmma has K = {s.k} (twice the dense K; "
                            "PTX ISA §9.7.15.2)")
    return s


# ------------------------------------------------------------------------------------------------
# metadata nibbles

def _positions(nib: np.ndarray, atype: str) -> np.ndarray:
    """(..., kept) K offsets inside the group that each stored value takes, under the gather model."""
    nib = np.asarray(nib, np.int64)
    if atype == "tf32":
        return ((nib & 3) >> 1)[..., None]
    return np.stack([nib & 3, (nib >> 2) & 3], axis=-1)


def check_metadata(nib, atype: str) -> None:
    """Raise :class:`SparsityError` for a nibble the PTX ISA calls invalid (2:4: the same index twice —
    0b0000/0b0101/0b1010/0b1111; tf32: anything but 0b0100/0b1110)."""
    nib = np.asarray(nib, np.int64)
    if ((nib < 0) | (nib > 15)).any():
        raise SparsityError("a metadata nibble is 4 bits (0..15)")
    granularity(atype)
    if atype == "tf32":
        bad = ~np.isin(nib, VALID_TF32)
        rule = ("tf32 (1:2) metadata is 0b0100 (element 0 kept) or 0b1110 (element 1 kept); other values are undefined "
                "(the H200 splices the B element from 16-bit halves: sparsity.gather_b, mma_sp(invalid='hardware'))")
    else:
        bad = np.isin(nib, INVALID_2_4)
        rule = ("2:4 metadata names two different positions: 0b0000, 0b0101, 0b1010 and 0b1111 are invalid "
                "(undefined behaviour; the H200 sends both values to that position: mma_sp(invalid='hardware'))")
    if bad.any():
        where = np.argwhere(bad)[0]
        raise SparsityError(f"metadata nibble 0b{int(nib[tuple(where)]):04b} at row {where[0]}, group "
                            f"{where[-1]}: {rule} ({_RULE}; §9.7.14.6.1)")


def _is_zero(raw: np.ndarray, atype: str) -> np.ndarray:
    raw = np.asarray(raw).astype(np.uint64)
    if atype in ("s8", "u8"):
        return raw == 0
    bits = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8}[atype]
    return (raw & np.uint64((1 << (bits - 1)) - 1)) == 0


def compress(dense, atype: str) -> tuple[np.ndarray, np.ndarray]:
    """A dense (M, K) matrix of raw element bits → (values (M, K/2), nibbles (M, K/group)).

    Each aligned group keeps its non-zero elements (±0 counts as zero) in K order, filled up with zeros at the
    lowest unused positions; the nibble lists the kept positions in ascending order. Raises
    :class:`SparsityError` when a group has more non-zeros than the granularity allows."""
    kept, grp = granularity(atype)
    a = np.asarray(dense)
    Mr, K = a.shape
    if K % grp:
        raise SparsityError(f"K = {K} is not a multiple of the group size {grp} ({_RULE})")
    g = a.reshape(Mr, K // grp, grp)
    nz = ~_is_zero(g, atype)
    cnt = nz.sum(axis=2)
    if (cnt > kept).any():
        r, q = np.argwhere(cnt > kept)[0]
        raise SparsityError(f"row {r}, K {grp * q}..{grp * q + grp - 1} has {int(cnt[r, q])} non-zeros: "
                            f"{'1:2 (tf32)' if kept == 1 else '2:4'} sparsity keeps at most {kept} of every aligned "
                            f"group of {grp} ({_RULE})")
    # order: non-zeros first (by position), then zeros by position; keep the first `kept`, sort ascending
    key = np.where(nz, 0, grp) + np.arange(grp)
    pos = np.sort(np.argsort(key, axis=2, kind="stable")[:, :, :kept], axis=2)
    vals = np.take_along_axis(g, pos, axis=2).reshape(Mr, K // 2)
    if kept == 1:
        nib = np.where(pos[:, :, 0] == 0, 0b0100, 0b1110)
    else:
        nib = pos[:, :, 0] | (pos[:, :, 1] << 2)
    return vals, nib.astype(np.uint8)


def decompress(values, nib, atype: str) -> np.ndarray:
    """(values (M, K/2), nibbles) → the dense (M, K) raw matrix (zeros at the pruned positions); valid metadata only."""
    check_metadata(nib, atype)
    kept, grp = granularity(atype)
    v = np.asarray(values)
    Mr, half = v.shape
    pos = _positions(nib, atype)
    out = np.zeros((Mr, half // kept, grp), v.dtype)
    np.put_along_axis(out, pos, v.reshape(Mr, half // kept, kept), axis=2)
    return out.reshape(Mr, 2 * half)


def random_sparse(rng, rows: int, atype: str, raw_values: np.ndarray, ascending: bool = True):
    """Random valid metadata (M, G) with the given packed values: each group keeps a random set of positions
    (``ascending``: in increasing order, else either order). Returns nibbles (uint8)."""
    kept, grp = granularity(atype)
    G = raw_values.shape[1] // kept
    if kept == 1:
        return np.where(rng.random((rows, G)) < 0.5, 0b0100, 0b1110).astype(np.uint8)
    pairs = np.array([(i, j) for i in range(4) for j in range(4) if i < j])
    p = pairs[rng.integers(0, len(pairs), (rows, G))]
    if not ascending:
        swap = rng.random((rows, G)) < 0.5
        p = np.where(swap[..., None], p[..., ::-1], p)
    return (p[..., 0] | (p[..., 1] << 2)).astype(np.uint8)


# ------------------------------------------------------------------------------------------------
# metadata registers

def selected_lanes(atype: str, sp_sel: int) -> np.ndarray:
    """Boolean (128,): the threads whose ``sp-meta`` register the instruction reads."""
    granularity(atype)
    lane = np.arange(128) % 32
    if atype in ("e4m3", "e5m2", "s8", "u8"):
        return np.ones(128, bool)
    return ((lane >> 1) & 1) == sp_sel


def _reg_map(atype: str):
    """(row, group) each of shape (128, 8): the nibble q of thread t's register."""
    t = np.arange(128)[:, None]
    q = np.arange(8)[None, :]
    w, lane = t // 32, t % 32
    g, b, p = lane >> 2, lane & 1, (lane >> 1) & 1
    if atype in ("e4m3", "e5m2", "s8", "u8"):
        row = 16 * w + g + 8 * b + 0 * q
        grp = 8 * p + q
    else:
        row = 16 * w + g + 8 * (q >> 2)
        grp = 4 * b + (q & 3)
    return np.broadcast_to(row, (128, 8)), np.broadcast_to(grp, (128, 8))


def metadata_registers(nib, atype: str, sp_sel: int = 0, fill=None) -> np.ndarray:
    """The (128,) uint32 ``sp-meta`` registers holding the (64, G) nibbles for selector ``sp_sel``; the threads
    the instruction does not read get ``fill`` (an int or a (128,) array; default 0)."""
    sparse_spec(8, "s32" if atype in ("s8", "u8") else "f32", atype, sp_sel=sp_sel)
    nib = np.asarray(nib, np.uint64)
    if nib.shape != (M, groups_per_row(atype)):
        raise SparsityError(f"metadata of one .{atype} sparse wgmma is 64 × {groups_per_row(atype)} nibbles, "
                            f"got {nib.shape}")
    row, grp = _reg_map(atype)
    reg = (nib[row, grp] << (np.arange(8, dtype=np.uint64) * np.uint64(4))).sum(axis=1).astype(np.uint32)
    other = np.zeros(128, np.uint32) if fill is None else np.broadcast_to(np.asarray(fill, np.uint32), (128,))
    return np.where(selected_lanes(atype, sp_sel), reg, other).astype(np.uint32)


def metadata_from_registers(regs, atype: str, sp_sel: int = 0) -> np.ndarray:
    """The (64, G) nibbles the instruction reads from the (128,) ``sp-meta`` registers (other lanes ignored)."""
    r = np.asarray(regs, np.uint64).reshape(128)
    row, grp = _reg_map(atype)
    sel = selected_lanes(atype, sp_sel)
    nibs = (r[:, None] >> (np.arange(8, dtype=np.uint64) * np.uint64(4))) & np.uint64(15)
    out = np.zeros((M, groups_per_row(atype)), np.uint8)
    out[row[sel], grp[sel]] = nibs[sel].astype(np.uint8)
    return out


# ------------------------------------------------------------------------------------------------
# the instruction

def mma_sp(values, nib, b, c=None, *, atype: str, btype: str | None = None, dtype: str = "f32", scale_d: bool = True,
           scale_a: int = 1, scale_b: int = 1, satfinite: bool = False, invalid: str = "raise", model=None):
    """``D = A·B + C`` of one ``wgmma.mma_async.sp`` on raw bits: ``values`` (M, K/2) the packed A, ``nib``
    (M, G) its metadata, ``b`` (K, N) dense, ``c`` (M, N) raw D bits or None. Each row sums its K/2 stored
    products — value j times the B element its metadata names (:func:`gather_b`) — and C with
    :func:`numerics.mma`'s fused addition. ``invalid``: ``"raise"`` (:class:`SparsityError` naming the rule) or
    ``"hardware"`` (the gather applied to invalid codes as well, as the H200 does: 2:4 codes naming one position
    twice, tf32 codes splicing B from 16-bit halves)."""
    from . import numerics

    if invalid not in ("raise", "hardware"):
        raise ValueError("invalid must be 'raise' or 'hardware'")
    btype = atype if btype is None else btype
    kept, grp = granularity(atype)
    v = np.asarray(values)
    nib = np.asarray(nib)
    b = np.asarray(b)
    Mr, half = v.shape
    K, N = b.shape
    if K != 2 * half:
        raise SparsityError(f"packed A has {half} columns, so B needs {2 * half} rows (K), got {K} ({_RULE})")
    if nib.shape != (Mr, K // grp):
        raise SparsityError(f"metadata must be {Mr} × {K // grp} nibbles for K = {K}, got {nib.shape}")
    if invalid == "raise":
        check_metadata(nib, atype)
    rows = gather_b(b, nib, atype)                                     # (M, K/2, N)
    draw = np.uint16 if dtype == "f16" else np.uint32
    cc = np.zeros((Mr, N), draw) if c is None else np.asarray(c)
    out = np.empty((Mr, N), draw)
    for m in range(Mr):
        out[m] = numerics.mma(v[m:m + 1], rows[m], cc[m:m + 1], atype=atype, btype=btype, dtype=dtype,
                              scale_d=scale_d, scale_a=scale_a, scale_b=scale_b, satfinite=satfinite, model=model)[0]
    return out


def gather_b(b, nib, atype: str) -> np.ndarray:
    """The B elements each stored A value meets: (M, K/2, N) raw bits from the dense ``b`` (K, N) and the
    nibbles (M, G) — the sparse gather of §9.7.15.6 as the H200 does it, for any nibble value.

    2:4 types: stored value ``j`` of a group meets B row ``4·group + idx_j`` (an invalid code naming one
    position twice sends both stored values to that row). tf32: the gather works on **16-bit halves** — the
    nibble is the 2:4 code of the stored element's two halves over the four halves of the B pair
    (``B[2g]`` = halves 0 (low), 1 (high); ``B[2g+1]`` = halves 2, 3), and the stored element meets the B
    element whose low half is half ``idx0`` and high half is half ``idx1``: 0b0100 → ``B[2g]``, 0b1110 →
    ``B[2g+1]``, an invalid code → a B element spliced from two halves (0b0110: the high half of ``B[2g]``
    over the low half of ``B[2g+1]``; 0b1000: the low half of ``B[2g+1]`` as the high half — often a huge,
    infinite or NaN element). [measured: data/l07/sparse invalid records and data/l07/sparse_meta]"""
    kept, grp = granularity(atype)
    b = np.asarray(b)
    nib = np.asarray(nib, np.int64)
    Mr, G = nib.shape
    K, N = b.shape
    if K != G * grp:
        raise SparsityError(f"metadata of {G} groups covers K = {G * grp}, but B has {K} rows ({_RULE})")
    if atype != "tf32":
        kidx = (np.arange(G)[None, :, None] * grp + _positions(nib, atype)).reshape(Mr, G * kept)
        return b[kidx]
    bu = b.astype(np.uint32).reshape(G, 2, N)
    halves = np.stack([bu & 0xFFFF, bu >> 16], axis=2).reshape(G, 4, N)          # (G, half 0..3, N)
    lo = np.take_along_axis(halves[None], (nib & 3)[:, :, None, None], axis=2)[:, :, 0]
    hi = np.take_along_axis(halves[None], (nib >> 2)[:, :, None, None], axis=2)[:, :, 0]
    return ((hi << np.uint32(16)) | lo).astype(np.uint32)                          # (M, G, N)
