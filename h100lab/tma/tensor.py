"""What ``cp.async.bulk.tensor`` does to memory: the box's shared-memory image, stores, reductions, im2col.

The functions here are the data movement of the tensor copies, as functions of (tensor map, global
array, coordinates, shared-memory bytes). Completion (mbarrier ``complete_tx``, bulk groups),
multicast and the timing of the TMA unit are in :mod:`h100lab.tma.bulk` and :mod:`h100lab.tma.pipeline`.

Shared memory is a NumPy ``uint8`` array indexed by shared-memory byte address (the CTA's window
starting at address 0). Global memory is the NumPy array the tensor map describes: its first byte is
the map's ``global_address`` and element ``(c0, c1, ...)`` is at byte ``Σ c_i * strides[i]``.

The layout rules [PTX §5.5 tensors; CPG §10.29.2; measured on an H200, hopper-spec-facts §4.2 and §5]:

* the box is traversed dimension 0 fastest; box row ``r`` (one value of the outer coordinates)
  starts at ``dst + r * row_pitch``; dimension 0 is contiguous inside the row;
* along dimension ``i >= 1`` the copy takes every ``elementStrides[i]``-th element, so it delivers
  ``ceil(boxDim[i] / elementStrides[i])`` of them; dimension 0's element stride is ignored unless the
  layout is interleaved;
* the swizzle XORs address bits 7–9 into bits 4–6 of the **absolute** shared address;
* elements outside the tensor (any coordinate < 0 or >= globalDim) are written as zeros, or as the
  OOB-NaN ``0x7FF7`` in every 2-byte slot with ``CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA``;
* the destination must be 128-byte aligned, or the copy faults with a misaligned address.

What the hardware showed beyond the documentation (measured on an H200, ``data/l04/tma_images``;
each rule is also in the docstring of the function that implements it):

* the box must start on a 16-byte granule of dimension 0 (``tensorCoords[0] * elementSize``
  a multiple of 16), or the copy stops the kernel with ``CUDA_ERROR_ILLEGAL_INSTRUCTION``;
* stores and reductions write whole 16-byte granules along dimension 0 (:func:`write_mask`);
* ``TFLOAT32`` / ``TFLOAT32_FTZ`` loads round every element to TF32 (:func:`tf32_round`);
* ``.and`` / ``.or`` / ``.xor`` reductions fault on ``INT64`` maps;
* interleaved maps step in whole slices and skip dimension ``rank - 2`` (:func:`box_map`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from .descriptor import TensorMap

__all__ = ["TmaFault", "COORD_GRANULE", "check_tensor_copy", "BoxMap", "box_map", "load", "store", "reduce", "load_im2col", "im2col_pixels",
           "smem_address", "OOB_NAN", "REDUCE_TYPES", "write_mask", "tf32_round", "TF32_NAN", "reduce_type", "global_segments", "fill_bytes",
           "column_addresses"]

#: The 16-bit pattern written into every 2-byte slot of an out-of-bounds element with
#: ``CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`` [measured on an H200, hopper-spec-facts §5].
OOB_NAN = 0x7FF7
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
TENSOR_DST_ALIGNMENT = 128


class TmaFault(ValueError):
    """A copy the hardware faults on. ``.error`` is the driver's error name the context then reports.

    A faulting TMA copy is a sticky error: the CUDA context is lost [measured on an H200].
    """

    def __init__(self, error: str, message: str):
        super().__init__(f"{error}: {message}")
        self.error = error


def _coords(tm: TensorMap, coords: Sequence[int], what: str = "tensorCoords") -> tuple[int, ...]:
    c = tuple(int(v) for v in coords)
    if len(c) != tm.rank:
        raise ValueError(f"{what} has {len(c)} entries but the tensor map has rank {tm.rank}: "
                         f"cp.async.bulk.tensor.{tm.rank}d takes exactly {tm.rank} coordinates (PTX §9.7.9.27.1.2)")
    for v in c:
        if not INT32_MIN <= v <= INT32_MAX:
            raise ValueError(f"{what} entry {v} does not fit the .s32 operand (PTX §9.7.9.27.1.2)")
    return c


#: [measured on an H200] the starting coordinate of dimension 0, in bytes, must be a multiple of this
COORD_GRANULE = 16


def _check_start(tm: TensorMap, c0: int, what: str) -> None:
    """Fault like the hardware when the box's first dimension-0 coordinate is not on a 16-byte granule.

    Measured on an H200 (``data/l04/tma_images``): a tensor copy whose ``tensorCoords[0] * elementSize`` is
    not a multiple of 16 bytes stops the kernel with ``CUDA_ERROR_ILLEGAL_INSTRUCTION`` (a sticky error),
    whether the box lies inside, partly outside or entirely outside the tensor (x = 1, 3, 5 B-offsets 1,
    6, 10, 522, 600, -24, -140 faulted; -16, 16, 176, 480, 528 did not). PTX §9.7.9.27.1.2 puts no rule on
    ``tensorCoords``; the fault is the hardware's.
    """
    off = int(c0) * tm.unit_bytes     # an interleaved map counts dimension 0 in whole slices: always on a granule
    if off % COORD_GRANULE:
        raise TmaFault("CUDA_ERROR_ILLEGAL_INSTRUCTION",
                       f"{what}: tensorCoords[0] = {c0} starts the box {off} B into dimension 0, not on a "
                       f"{COORD_GRANULE}-byte granule; the TMA unit raises an illegal instruction (measured on an "
                       "H200; PTX states no such rule)")


def check_tensor_copy(tensor_map: TensorMap, coords: Sequence[int], smem_addr: int | None, kind: str) -> tuple[int, ...]:
    """The issue-time rules of one tile-mode tensor copy, in one place: every function that issues or
    performs ``cp.async.bulk.tensor`` (:func:`load`, :func:`store`, :func:`reduce`, the asynchronous
    forms of :mod:`h100lab.tma.bulk` and the simulator's :mod:`h100lab.tma.pipeline`) calls this.

    ``kind`` is ``"load"``, ``"store"`` or ``"reduce"``; ``smem_addr`` the shared-memory destination (load)
    or source (store, reduction), or ``None`` to skip that rule. Checks, in the order the hardware
    reports them:

    * ``coords`` has ``rank`` entries that fit ``.s32`` (PTX §9.7.9.27.1.2);
    * a store's or reduction's corner is not negative (CPG §10.29.2 "Negative indices and out of bounds");
    * the box starts on a 16-byte granule of dimension 0 (measured on an H200: ``TmaFault``
      ``CUDA_ERROR_ILLEGAL_INSTRUCTION`` otherwise, :data:`COORD_GRANULE`);
    * the shared-memory address is 128-byte aligned (``TmaFault`` ``CUDA_ERROR_MISALIGNED_ADDRESS``; CPG
      §10.29.2 Table 10; measured on an H200).

    Returns the coordinates as a tuple of ints.
    """
    if kind not in ("load", "store", "reduce"):
        raise ValueError(f"kind {kind!r}: one of 'load', 'store', 'reduce'")
    tm = tensor_map
    c = _coords(tm, coords)
    what = {"load": "the tensor load", "store": "the tensor store", "reduce": "the tensor reduction"}[kind]
    if kind != "load" and any(v < 0 for v in c):
        raise ValueError(f"{kind} box corner {c} has a negative coordinate: a tensor {kind}'s top-left corner "
                         "cannot be negative when writing to global memory (CPG §10.29.2)")
    _check_start(tm, c[0], what)
    if smem_addr is not None:
        _smem(None, int(smem_addr), tm.smem_bytes,
              "the tensor copy's destination" if kind == "load" else f"{what}'s source")
    return c


_TF32_TYPES = ("CU_TENSOR_MAP_DATA_TYPE_TFLOAT32", "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ")
#: the NaN every NaN becomes when a TF32 tensor map loads it [measured on an H200]
TF32_NAN = 0x7FFFE000


def tf32_round(words: np.ndarray) -> np.ndarray:
    """FP32 bit patterns rounded to TF32 as a ``TFLOAT32`` / ``TFLOAT32_FTZ`` tensor load does.

    Measured on an H200 (``data/l04/tma_images``, cases ``bits_TFLOAT32*``): every in-bounds element
    is rounded to the nearest value with a 10-bit mantissa, ties to even (the low 13 bits become 0;
    a carry may reach the exponent, so the largest finite values round to infinity); subnormals are
    rounded the same way and kept — the ``_FTZ`` type flushes nothing on a load; infinities and zeros
    keep their sign; every NaN, whatever its sign and payload, becomes ``0x7FFFE000``. Out-of-bounds
    fill values and tensor stores are not converted. PTX §5.5.1 only says the type is TF32.
    """
    w = np.asarray(words, dtype=np.uint32).astype(np.uint64)
    nan = ((w & 0x7F800000) == 0x7F800000) & ((w & 0x7FFFFF) != 0)
    r = (w + 0xFFF + ((w >> 13) & 1)) & 0xFFFFE000
    return np.where(nan, TF32_NAN, r).astype(np.uint32)


def _converted(tm: TensorMap, values: np.ndarray) -> np.ndarray:
    """In-bounds element values as the load delivers them (TF32 maps round, others pass bits through)."""
    if tm.dtype in _TF32_TYPES:
        return tf32_round(values.view(np.uint32)).view(values.dtype)
    return values


def _gbytes(tm: TensorMap, gmem: np.ndarray) -> np.ndarray:
    if not isinstance(gmem, np.ndarray):
        raise ValueError("gmem must be a NumPy array (the memory the tensor map's global address points to)")
    if not gmem.flags.c_contiguous:
        raise ValueError("gmem must be C-contiguous: its bytes are global memory from the map's global address on")
    b = gmem.reshape(-1).view(np.uint8)
    if b.size < tm.global_bytes:
        raise ValueError(f"gmem holds {b.size} B but the tensor map describes {tm.global_bytes} B from its global "
                         "address (dims and strides reach past the array)")
    return b


def _smem(smem, addr: int, nbytes: int, what: str) -> np.ndarray | None:
    """Check a tensor copy's shared-memory operand; return the byte array (``None`` if no memory given).

    ``smem`` is a 1-D ``numpy.uint8`` array or an :class:`h100lab.sync.SharedMemory` (whose registry of
    live mbarriers is honoured: a copy over a valid mbarrier is undefined behaviour [PTX §9.7.13.15]).
    """
    if addr < 0:
        raise ValueError(f"{what} address {addr} is negative")
    if addr % TENSOR_DST_ALIGNMENT:
        raise TmaFault("CUDA_ERROR_MISALIGNED_ADDRESS",
                       f"{what} at shared address {addr} is not 128-byte aligned; a tensor copy faults with a "
                       "misaligned address (CPG §10.29.2 Table 10; measured on an H200: offsets 16..96 fault, 128 works)")
    if smem is None:
        return None
    arr = getattr(smem, "array", smem)
    if not (isinstance(arr, np.ndarray) and arr.dtype == np.uint8 and arr.ndim == 1 and arr.flags.c_contiguous):
        raise ValueError("smem must be a 1-D contiguous numpy.uint8 array indexed by shared-memory address, "
                         "or an h100lab.sync.SharedMemory")
    if addr + nbytes > arr.size:
        raise TmaFault("CUDA_ERROR_ILLEGAL_ADDRESS",
                       f"{what} [{addr}, {addr + nbytes}) runs past the {arr.size} B of shared memory "
                       "([model]: an access outside the CTA's shared window)")
    if arr is not smem:
        smem.read(addr, nbytes)   # SharedMemory: raises if the range holds a valid mbarrier
    return arr


@dataclass(frozen=True)
class BoxMap:
    """Where every element of one box goes: the record one tensor copy's data movement is made of.

    Arrays have the box's shape with dimension 0 last (``(n_{r-1}, ..., n_1, n_0)``, C order = smem order):
    ``smem`` the element's absolute shared-memory byte address after the swizzle, ``linear`` its
    address before it, ``coords`` the global coordinates (shape ``(rank, ...)``), ``in_bounds`` whether
    the element is inside the tensor, ``gmem_offset`` its byte offset from the global address (valid
    where in bounds).
    """

    tensor_map: TensorMap
    dst: int
    smem: np.ndarray
    linear: np.ndarray
    coords: np.ndarray
    in_bounds: np.ndarray
    gmem_offset: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return self.smem.shape


def box_map(tensor_map: TensorMap, coords: Sequence[int], dst: int = 0) -> BoxMap:
    """The element-by-element placement of the box at ``coords`` loaded to shared address ``dst``.

    Implements the traversal of [PTX §5.5.3 tiled mode: bounding box, traversal stride, OOB access]
    and the shared-memory image rules measured on an H200 (module docstring). For an im2col map use
    :func:`im2col_pixels`.

    Interleaved maps (measured on an H200, cases ``ilq_*`` / ``ilx_*``; PTX §5.5.6 describes the
    layout, not this traversal): dimension 0 steps whole slices of :attr:`TensorMap.unit_bytes`
    lying contiguously from the corner (``coords[0]`` of the result is the slice index), dimension
    ``rank - 2`` takes one step at the corner's coordinate (still bounds-checked), and a slice at or
    past :attr:`TensorMap.global_bytes` is out of bounds. The last axis of the arrays then runs over
    the elements of the row's slices.
    """
    tm = tensor_map
    if tm.mode != "tile":
        raise ValueError("box_map is for tiled tensor maps; an im2col map is read with load_im2col")
    c = _coords(tm, coords)
    n = tm.box_elements
    es = list(tm.element_strides)
    if not tm.interleaved:
        es[0] = 1  # TMA cannot stride dimension 0 [DRV elementStrides]
    per = tm.unit_bytes // tm.elem_size              # elements per step of dimension 0 (1, or a slice's)
    shape = tuple(reversed(n[1:])) + (n[0] * per,)
    idx = np.indices(shape, dtype=np.int64)          # idx[j] indexes dimension rank-1-j
    step0, within = np.divmod(idx[tm.rank - 1], per)
    gc = np.empty((tm.rank,) + shape, dtype=np.int64)
    gc[0] = c[0] + step0 * es[0]
    for d in range(1, tm.rank):
        gc[d] = c[d] + idx[tm.rank - 1 - d] * es[d]
    inb = np.ones(shape, dtype=bool)
    off = within * tm.elem_size
    for d in range(tm.rank):
        inb &= (gc[d] >= 0) & (gc[d] < tm.global_dim[d])
        off = off + gc[d] * tm.strides[d]
    if tm.interleaved:   # a slice at or past the end of the tensor is out of bounds [measured, TensorMap.global_bytes]
        inb &= (off >= 0) & (off + tm.unit_bytes - within * tm.elem_size <= tm.global_bytes)
    row = np.zeros(shape, dtype=np.int64)
    mult = 1
    for d in range(1, tm.rank):
        row += idx[tm.rank - 1 - d] * mult
        mult *= n[d]
    lin = dst + row * tm.row_pitch + idx[tm.rank - 1] * tm.elem_size
    sm = tm.swizzle_fn(lin)
    return BoxMap(tm, dst, sm, lin, gc, inb, np.where(inb, off, 0))


def smem_address(tensor_map: TensorMap, box_index: Sequence[int], dst: int = 0) -> int:
    """Shared byte address of the box element with box-relative index ``box_index`` (innermost first).

    ``box_index[i]`` counts delivered elements along dimension ``i`` (0 .. ``box_elements[i] - 1``):
    the pre-swizzle address ``dst + row * row_pitch + k0 * elem_size`` with ``row`` the outer indices
    flattened dimension 1 fastest, then the mode's XOR on the absolute address [PTX §5.5.7;
    hopper-spec-facts §5 "shared-memory image of a box"].
    """
    tm = tensor_map
    k = tuple(int(v) for v in box_index)
    n = tm.box_elements
    if len(k) != len(n) or any(not 0 <= a < b for a, b in zip(k, n)):
        raise ValueError(f"box index {k} is outside the box of {n} delivered elements")
    row, mult = 0, 1
    for d in range(1, len(n)):
        row += k[d] * mult
        mult *= n[d]
    return int(tm.swizzle_fn(int(dst) + row * tm.row_pitch + k[0] * tm.unit_bytes))


def fill_bytes(tensor_map: TensorMap) -> np.ndarray:
    """The bytes of one out-of-bounds element: zeros, or ``0x7FF7`` in every 2-byte slot for the NaN fill.

    [PTX §5.5.3.3 tensor-tiled-mode-oob-access; the pattern measured on an H200, hopper-spec-facts §5]
    """
    size = tensor_map.elem_size
    if tensor_map.oob_fill == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA":
        return np.frombuffer(np.full(size // 2, OOB_NAN, dtype="<u2").tobytes(), dtype=np.uint8).copy()
    return np.zeros(size, dtype=np.uint8)


def _uview(a: np.ndarray, size: int) -> np.ndarray:
    usable = a.size - a.size % size
    return a[:usable].view(f"<u{size}")


def _fill_word(tm: TensorMap) -> int:
    return int.from_bytes(fill_bytes(tm).tobytes(), "little")


def load(tensor_map: TensorMap, gmem: np.ndarray, coords: Sequence[int], *, smem: np.ndarray | None = None,
         dst: int = 0) -> np.ndarray:
    """The shared-memory bytes ``cp.async.bulk.tensor.Nd.shared::cluster.global.tile`` writes.

    ``gmem`` is the array the map describes (module docstring); ``coords`` the box corner (signed,
    innermost first, may be negative or past the end). Returns the ``tensor_map.smem_bytes`` bytes
    from address ``dst`` as the hardware leaves them: swizzled, padded rows untouched (they keep what
    ``smem`` held, or 0 for a fresh image), out-of-bounds elements filled. With ``smem`` given the
    image is written into it at ``dst`` and the returned array is a view of it.

    Raises :class:`TmaFault` where the hardware faults (destination not 128-byte aligned) [PTX
    §9.7.9.27.1.2; CPG §10.29.2; hopper-spec-facts §5].
    """
    tm = tensor_map
    if tm.mode != "tile":
        raise ValueError("load is for tiled tensor maps; an im2col map is read with load_im2col")
    c = check_tensor_copy(tm, coords, dst, "load")
    out = _smem(smem, dst, tm.smem_bytes, "the tensor copy's destination")
    img = out[dst:dst + tm.smem_bytes] if out is not None else np.zeros(tm.smem_bytes, dtype=np.uint8)
    gb = _gbytes(tm, gmem)
    if tm.interleave != "CU_TENSOR_MAP_INTERLEAVE_NONE" or tm.row_bytes % 16:
        _load_elementwise(tm, gb, c, img, dst)
    else:
        _load_rows(tm, gb, c, img, dst)
    return img


def _valid_range(c: int, es: int, n: int, dim: int) -> tuple[int, int]:
    """Box indices k in [lo, hi) whose global coordinate c + k*es lies in [0, dim)."""
    lo = 0 if c >= 0 else (-c + es - 1) // es
    hi = (dim - 1 - c) // es + 1 if dim - 1 - c >= 0 else 0
    return max(0, min(lo, n)), max(0, min(hi, n))


def _chunk_index(tm: TensorMap, dst: int) -> np.ndarray:
    """For each 16-byte chunk of the dense box (rows x row_bytes), its chunk index in the image."""
    return _chunk_index_cached(tm, dst % 1024)


@lru_cache(maxsize=64)
def _chunk_index_cached(tm: TensorMap, dst: int) -> np.ndarray:
    per_row = tm.row_bytes // 16
    lin = (dst + np.arange(tm.rows, dtype=np.int64)[:, None] * tm.row_pitch
           + 16 * np.arange(per_row, dtype=np.int64)[None, :])
    idx = ((tm.swizzle_fn(lin) - dst) // 16).ravel()
    idx.flags.writeable = False
    return idx


def _load_rows(tm: TensorMap, gb: np.ndarray, c: tuple[int, ...], img: np.ndarray, dst: int) -> None:
    """Fast path (no interleave): copy the in-bounds block as one strided view, then place 16-byte chunks."""
    size, n = tm.elem_size, tm.box_elements
    es = (1,) + tuple(tm.element_strides[1:])
    dense = np.empty(tuple(reversed(n[1:])) + (tm.row_bytes,), dtype=np.uint8)
    if tm.oob_fill == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE":
        dense.fill(0)
    else:
        dense.reshape(-1, size)[:] = fill_bytes(tm)
    ranges = [_valid_range(c[d], es[d], n[d], tm.global_dim[d]) for d in range(tm.rank)]
    if all(hi > lo for lo, hi in ranges):
        base = sum((c[d] + ranges[d][0] * es[d]) * tm.strides[d] for d in range(tm.rank))
        shape = tuple(ranges[d][1] - ranges[d][0] for d in range(tm.rank - 1, 0, -1)) + (
            (ranges[0][1] - ranges[0][0]) * size,)
        strides = tuple(tm.strides[d] * es[d] for d in range(tm.rank - 1, 0, -1)) + (1,)
        src = np.lib.stride_tricks.as_strided(gb[base:], shape=shape, strides=strides, writeable=False)
        sl = tuple(slice(ranges[d][0], ranges[d][1]) for d in range(tm.rank - 1, 0, -1)) + (
            slice(ranges[0][0] * size, ranges[0][1] * size),)
        if tm.dtype in _TF32_TYPES:
            src = _converted(tm, np.ascontiguousarray(src).view("<u4")).view(np.uint8)
        dense[sl] = src
    img.reshape(-1, 16)[_chunk_index(tm, dst)] = dense.reshape(-1, 16)


def _load_elementwise(tm: TensorMap, gb: np.ndarray, c: tuple[int, ...], img: np.ndarray, dst: int) -> None:
    """Reference path, one element at a time through :func:`box_map` (interleaved layouts use it)."""
    bm = box_map(tm, c, dst)
    size = tm.elem_size
    gv = _uview(gb, size)
    vals = np.where(bm.in_bounds, _converted(tm, gv[bm.gmem_offset // size]), np.array(_fill_word(tm), dtype=gv.dtype))
    _uview(img, size)[((bm.smem - dst) // size).ravel()] = vals.ravel()


def store(tensor_map: TensorMap, smem: np.ndarray, coords: Sequence[int], gmem: np.ndarray, *, src: int = 0) -> int:
    """``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group``: write the box at ``src`` to ``gmem``.

    The inverse of :func:`load`'s placement: each in-bounds element is read from its swizzled shared
    address and written to global memory; elements outside the tensor are not written. The box corner
    must not be negative [CPG §10.29.2 "Negative indices and out of bounds": when writing to global
    memory the top-left corner cannot have negative indices]. Returns the number of bytes written.
    """
    tm = tensor_map
    if not gmem.flags.writeable:
        raise ValueError("gmem must be writeable for a store")
    c = check_tensor_copy(tm, coords, src, "store")
    sarr = _smem(smem, src, tm.smem_bytes, "the tensor store's source")
    bm = box_map(tm, c, src)
    size = tm.elem_size
    gb = _gbytes(tm, gmem)
    m, off = write_mask(bm, gb.size)
    gv = _uview(gb, size)
    sv = _uview(sarr, size)
    gv[off[m] // size] = sv[bm.smem[m] // size]
    return int(m.sum()) * size


def write_mask(bm: BoxMap, gmem_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Which elements of a box a tensor store or reduction writes, and their global byte offsets.

    Measured on an H200 (``data/l04/tma_images``, cases ``st_rank1``, ``st_gran_*``,
    ``red_gran_add_u32``): along dimension 0 a store writes whole 16-byte granules, so where
    ``globalDim[0] * elementSize`` is not a multiple of 16 the elements between the end of the row and
    the end of its last granule are written too (a load fills them per ``oobFill``, exactly at
    ``globalDim[0]``). The other dimensions are bounded exactly. PTX §5.5.3.3 says only that
    out-of-bounds elements are not written. ``gmem_bytes``: a write past it raises ``ValueError``.
    """
    tm = bm.tensor_map
    if tm.interleaved:
        return bm.in_bounds, bm.gmem_offset
    size = tm.elem_size
    ext0 = -(-tm.global_dim[0] * size // COORD_GRANULE) * COORD_GRANULE // size
    gc = bm.coords
    m = (gc[0] >= 0) & (gc[0] < ext0)
    off = gc[0] * tm.strides[0]
    for d in range(1, tm.rank):
        m &= (gc[d] >= 0) & (gc[d] < tm.global_dim[d])
        off = off + gc[d] * tm.strides[d]
    if gmem_bytes is not None and m.any() and int(off[m].max()) + size > gmem_bytes:
        raise ValueError(f"the store writes the whole last 16-byte granule of dimension 0, up to byte "
                         f"{int(off[m].max()) + size} from the global address, past the {gmem_bytes} B of gmem "
                         "(measured on an H200: the bytes after globalDim[0] in that granule are written too)")
    return m, np.where(m, off, 0)


# ------------------------------------------------------------------------------------------------
# reductions

#: (redOp, PTX type) pairs ``cp.reduce.async.bulk.tensor`` accepts [PTX §9.7.9.27.1.3]
REDUCE_TYPES = {
    "add": ("u32", "s32", "u64", "f32", "f16", "bf16"),
    "min": ("u32", "s32", "u64", "s64", "f16", "bf16"),
    "max": ("u32", "s32", "u64", "s64", "f16", "bf16"),
    "inc": ("u32",),
    "dec": ("u32",),
    "and": ("b32", "b64"),
    "or": ("b32", "b64"),
    "xor": ("b32", "b64"),
}

_PTX_OF_DTYPE = {  # the element type a tensor map's dtype reduces as
    "CU_TENSOR_MAP_DATA_TYPE_UINT32": "u32", "CU_TENSOR_MAP_DATA_TYPE_INT32": "s32",
    "CU_TENSOR_MAP_DATA_TYPE_UINT64": "u64", "CU_TENSOR_MAP_DATA_TYPE_INT64": "s64",
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT32": "f32", "CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ": "f32",
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT16": "f16", "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16": "bf16",
    "CU_TENSOR_MAP_DATA_TYPE_UINT8": "u8", "CU_TENSOR_MAP_DATA_TYPE_UINT16": "u16",
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT64": "f64", "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32": "tf32",
    "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ": "tf32",
}


def reduce_type(op: str, dtype: str) -> str:
    """The PTX ``.type`` a reduction ``op`` on tensor-map type ``dtype`` uses; raises if PTX has no such pair.

    Bitwise ops use the bit-size types (``b32`` for 4-byte, ``b64`` for 8-byte integers); the others
    the typed names. The allowed pairs are [PTX §9.7.9.27.1.3 cp-reduce-async-bulk-tensor].
    """
    if op not in REDUCE_TYPES:
        raise ValueError(f"unknown reduction {op!r}: cp.reduce.async.bulk.tensor has .{', .'.join(REDUCE_TYPES)} "
                         "(PTX §9.7.9.27.1.3)")
    t = _PTX_OF_DTYPE.get(dtype)
    if t is None:
        raise ValueError(f"unknown tensor map type {dtype!r}")
    if op in ("and", "or", "xor"):
        t = {"u32": "b32", "s32": "b32", "u64": "b64", "s64": "b64"}.get(t, t)
    if t not in REDUCE_TYPES[op]:
        raise ValueError(f"cp.reduce.async.bulk.tensor has no .{op}.{t}: .{op} takes "
                         f"{', '.join('.' + x for x in REDUCE_TYPES[op])} (PTX §9.7.9.27.1.3)")
    return t


def _np_of(t: str) -> np.dtype:
    if t == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype({"u32": "<u4", "s32": "<i4", "u64": "<u8", "s64": "<i8", "f32": "<f4", "f16": "<f2",
                     "b32": "<u4", "b64": "<u8"}[t])


def _flush_f32(x: np.ndarray) -> np.ndarray:
    tiny = np.finfo(np.float32).tiny
    return np.where(np.abs(x) < tiny, np.copysign(np.float32(0), x), x).astype(np.float32)


def _apply(op: str, t: str, old: np.ndarray, val: np.ndarray) -> np.ndarray:
    """``old op val`` elementwise with PTX semantics (integer add wraps; f32 add flushes subnormals)."""
    if op == "add":
        if t == "f32":
            return _flush_f32(_flush_f32(old) + _flush_f32(val))
        if t in ("f16", "bf16"):
            return (old.astype(np.float32) + val.astype(np.float32)).astype(old.dtype)
        return old + val  # two's-complement wrap-around, as the hardware's integer add
    if op in ("min", "max"):
        if t in ("f16", "bf16"):  # NaN-aware: a NaN operand yields the other one (PTX min/max)
            a, b = old.astype(np.float32), val.astype(np.float32)
            return (np.fmin(a, b) if op == "min" else np.fmax(a, b)).astype(old.dtype)
        return np.minimum(old, val) if op == "min" else np.maximum(old, val)
    if op == "inc":  # (old >= val) ? 0 : old + 1  [PTX atom/red .inc]
        return np.where(old >= val, 0, old + 1).astype(old.dtype)
    if op == "dec":  # ((old == 0) || (old > val)) ? val : old - 1
        return np.where((old == 0) | (old > val), val, old - 1).astype(old.dtype)
    if op == "and":
        return old & val
    if op == "or":
        return old | val
    return old ^ val


def reduce(tensor_map: TensorMap, smem: np.ndarray, coords: Sequence[int], gmem: np.ndarray, op: str, *,
           src: int = 0) -> int:
    """``cp.reduce.async.bulk.tensor.Nd.global.shared::cta.<op>.tile.bulk_group``: ``gmem[box] = gmem[box] op smem``.

    Each in-bounds element of the box is combined with the global element (``.add``, ``.min``,
    ``.max``, ``.inc``, ``.dec``, ``.and``, ``.or``, ``.xor``; each element reduction is atomic
    ``.relaxed.gpu``). Only the op/type pairs PTX lists are accepted (:data:`REDUCE_TYPES`) [PTX
    §9.7.9.27.1.3]. Returns the number of bytes reduced.
    """
    tm = tensor_map
    t = reduce_type(op, tm.dtype)
    c = check_tensor_copy(tm, coords, src, "reduce")
    if op in ("and", "or", "xor") and tm.dtype == "CU_TENSOR_MAP_DATA_TYPE_INT64":
        raise TmaFault("CUDA_ERROR_ILLEGAL_INSTRUCTION",
                       f"cp.reduce.async.bulk.tensor .{op} on a CU_TENSOR_MAP_DATA_TYPE_INT64 map: the TMA unit raises "
                       "an illegal instruction (measured on an H200: .and/.or/.xor fault on INT64 and work on UINT64, "
                       "INT32 and UINT32, although PTX lists .b64 for them; use a UINT64 map)")
    sarr = _smem(smem, src, tm.smem_bytes, "the tensor reduction's source")
    bm = box_map(tm, c, src)
    dt = _np_of(t)
    gb = _gbytes(tm, gmem)
    gv = gb[:gb.size - gb.size % dt.itemsize].view(dt)
    sv = sarr[:sarr.size - sarr.size % dt.itemsize].view(dt)
    m, off = write_mask(bm, gb.size)
    gi = off[m] // dt.itemsize
    gv[gi] = _apply(op, t, gv[gi], sv[bm.smem[m] // dt.itemsize])
    return int(m.sum()) * dt.itemsize


# ------------------------------------------------------------------------------------------------
# im2col

def im2col_pixels(tensor_map: TensorMap, coords: Sequence[int], offsets: Sequence[int]) -> np.ndarray:
    """The tensor coordinates (w, h, d, n — innermost first, without C) of the pixels one im2col copy reads.

    Traversal [PTX §5.5.4.1–5.5.4.3]: start at the filter-base pixel ``coords[1:]``; step the
    innermost spatial coordinate by its traversal stride (``elementStrides``); past the bounding box's
    upper edge ``globalDim - 1 + upperCorner`` it returns to the lower corner and the next coordinate
    steps, and past the last spatial dimension the batch index ``n`` steps by one; ``pixelsPerColumn``
    pixels are read. The im2col ``offsets`` (one per spatial dimension) are added to every pixel.
    Returns an int64 array of shape ``(pixelsPerColumn, rank - 1)``.
    """
    tm = tensor_map
    if tm.mode != "im2col":
        raise ValueError("im2col_pixels needs a tensor map made by encode_im2col")
    c = _coords(tm, coords)
    nsp = tm.rank - 2
    off = tuple(int(v) for v in offsets)
    if len(off) != nsp:
        raise ValueError(f"a rank-{tm.rank} im2col copy takes {nsp} im2col offsets (PTX §9.7.9.27.1.2), got {len(off)}")
    bits = {1: 16, 2: 8, 3: 5}[nsp]
    for v in off:
        if not 0 <= v < (1 << bits):
            raise ValueError(f"im2col offset {v} does not fit its unsigned {bits}-bit field (PTX §5.5.4: 16/8/5 bits "
                             "for 3/4/5-D tensors)")
    lo = tm.pixel_box_lower_corner
    hi = [tm.global_dim[d + 1] - 1 + tm.pixel_box_upper_corner[d] for d in range(nsp)]
    pos = list(c[1:])
    out = np.empty((tm.pixels_per_column, tm.rank - 1), dtype=np.int64)
    for p in range(tm.pixels_per_column):
        out[p, :nsp] = [pos[d] + off[d] for d in range(nsp)]
        out[p, nsp] = pos[nsp]
        d = 0
        while True:  # advance the traversal position
            if d == nsp:
                pos[nsp] += 1
                break
            pos[d] += tm.element_strides[d + 1]
            if pos[d] <= hi[d]:
                break
            pos[d] = lo[d]
            d += 1
    return out


def load_im2col(tensor_map: TensorMap, gmem: np.ndarray, coords: Sequence[int], offsets: Sequence[int], *,
                smem: np.ndarray | None = None, dst: int = 0) -> np.ndarray:
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.im2col``: one im2col column block in shared memory.

    Row ``p`` of the image holds ``channelsPerPixel`` channels starting at channel ``coords[0]`` of the
    ``p``-th pixel of :func:`im2col_pixels`; pixels (or channels) outside the tensor are filled as in
    :func:`load`; rows follow the same pitch and swizzle rules as a tiled box [PTX §5.5.4; hopper-spec-
    facts §5 "im2col"]. Returns the ``smem_bytes`` bytes from ``dst``.
    """
    tm = tensor_map
    pix = im2col_pixels(tm, coords, offsets)
    c0 = int(coords[0])
    _check_start(tm, c0, "the im2col load")
    out = _smem(smem, dst, tm.smem_bytes, "the im2col copy's destination")
    img = out[dst:dst + tm.smem_bytes] if out is not None else np.zeros(tm.smem_bytes, dtype=np.uint8)
    size, cpp = tm.elem_size, tm.channels_per_pixel
    ch = c0 + np.arange(cpp, dtype=np.int64)
    inb = (ch[None, :] >= 0) & (ch[None, :] < tm.global_dim[0])
    offs = ch[None, :] * size
    for d in range(1, tm.rank):
        g = pix[:, d - 1][:, None]
        inb = inb & (g >= 0) & (g < tm.global_dim[d])
        offs = offs + g * tm.strides[d]
    gv = _uview(_gbytes(tm, gmem), size)
    vals = np.where(inb, _converted(tm, gv[np.where(inb, offs, 0) // size]), np.array(_fill_word(tm), dtype=gv.dtype))
    lin = dst + np.arange(tm.pixels_per_column)[:, None] * tm.row_pitch + np.arange(cpp)[None, :] * size
    _uview(img, size)[((tm.swizzle_fn(lin) - dst) // size).ravel()] = vals.ravel()
    return img


# ------------------------------------------------------------------------------------------------
# global-side footprint (what the TMA unit requests from L2)

def global_segments(tensor_map: TensorMap, coords: Sequence[int]) -> list[tuple[int, int]]:
    """The contiguous global byte ranges ``(address, nbytes)`` a tiled copy of the box at ``coords`` reads.

    One range per box row (or per run of dimension-0 elements when dimension 0 is strided), clipped
    to the tensor: out-of-bounds elements are never requested from memory [PTX §5.5.3.3]. Addresses
    are absolute (the map's ``global_address`` plus the offset).
    """
    tm = tensor_map
    bm = box_map(tm, coords, 0)
    size = tm.elem_size
    off = bm.gmem_offset.reshape(-1, bm.shape[-1])
    inb = bm.in_bounds.reshape(-1, bm.shape[-1])
    segs: list[tuple[int, int]] = []
    for o, m in zip(off, inb):
        if not m.any():
            continue
        oo = o[m]
        # split where elements are not adjacent (strided dimension 0)
        breaks = np.flatnonzero(np.diff(oo) != size) + 1
        for part in np.split(oo, breaks):
            segs.append((tm.global_address + int(part[0]), int(part.size) * size))
    return segs



def column_addresses(tensor_map: TensorMap, chunk: int = 0, *, width: int = 16, dst: int = 0,
                     lanes: int = 32) -> list[int]:
    """Shared addresses of a warp reading one column of a loaded box: lane ``t`` reads ``width`` bytes
    (4, 8 or 16) at byte ``chunk * width`` of box row ``t`` (rows wrap when the box has fewer than 32).

    The access pattern of a consumer that walks a tile down its rows (ldmatrix / ``ld.shared.v4`` of one
    16-byte chunk per row) — the case the swizzle exists for: unswizzled, every row's chunk sits in the
    same banks. Feed the result to :func:`h100lab.memory.banks.wavefronts` [CPG §10.29.3.2; seed lesson 4 §11].
    """
    tm = tensor_map
    if width not in (4, 8, 16):
        raise ValueError(f"a shared load is 4, 8 or 16 bytes per lane, not {width}")
    if not 0 <= chunk * width < tm.row_bytes:
        raise ValueError(f"column {chunk} of {width}-byte pieces is outside the {tm.row_bytes}-byte box row")
    rows = tm.rows
    return [int(tm.swizzle_fn(dst + (t % rows) * tm.row_pitch + chunk * width)) for t in range(lanes)]
