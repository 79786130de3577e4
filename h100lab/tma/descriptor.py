"""Tensor maps: ``cuTensorMapEncodeTiled`` / ``cuTensorMapEncodeIm2col`` as the sm_90 driver runs them.

:func:`encode_tiled` takes the driver's parameters in the driver's order and units (dimensions
innermost first, ``global_strides`` with ``rank - 1`` entries in bytes, enum values by their driver
names) and either returns a :class:`TensorMap` or raises :class:`TensorMapError` whose ``.result``
is the driver's result name (``CUDA_ERROR_INVALID_VALUE``) and whose message names the broken rule.

Which rules it enforces is what the sm_90 driver enforces (driver 580.x, CUDA 13.0, measured on an
H200 — hopper-spec-facts §5 and ``data/l04/encode_verdicts.json``), not only what the documentation
says. Where the driver accepts what the documentation forbids (a ``globalStrides`` entry smaller than
the row it should include; ``INTERLEAVE_32B`` with a swizzle other than ``SWIZZLE_32B``), the map is
accepted and a :class:`DocumentationWarning` names the documented rule (policy of
``shared/reference/README.md``). Where the driver refuses what the documentation allows, the map is
refused with the driver's result: a NULL ``globalStrides`` pointer even for rank 1 (pass
``global_strides=None`` to ask about it; an empty list is an array with no entry), and a box inner
extent that is not a multiple of 16 bytes with an interleaved layout too (measured on an H200,
``data/l04/encode_verdicts``). :func:`verdict` gives the same answer as data, without raising.

Interleaved maps are sized as the hardware moves them (:attr:`TensorMap.unit_bytes`,
:attr:`TensorMap.box_elements`): dimension 0 counts whole 16- or 32-byte slices and dimension
``rank - 2`` is not traversed — measured, not documented.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Sequence

from ..memory.swizzle import Swizzle, span_bytes, swizzle_of
from .enums import (DATA_TYPES, SWIZZLES_NOT_SM90, DataType, UnknownEnumValue, data_type, enum_name,
                    interleave_bytes)

__all__ = ["TensorMap", "TensorMapError", "DocumentationWarning", "Verdict", "encode_tiled", "encode_im2col",
           "verdict", "verdict_im2col", "MAX_RANK", "MAX_BOX", "MAX_ELEMENT_STRIDE", "MAX_GLOBAL_DIM",
           "MAX_GLOBAL_STRIDE", "row_major_strides"]

MAX_RANK = 5                     # [DRV] tensorRank <= 5
MAX_BOX = 256                    # [DRV] boxDim[i] <= 256
MAX_ELEMENT_STRIDE = 8           # [DRV] elementStrides[i] <= 8
MAX_GLOBAL_DIM = 1 << 32         # [DRV] globalDim[i] <= 2^32
MAX_GLOBAL_STRIDE = 1 << 40      # [DRV] globalStrides[i] < 2^40
IM2COL_CORNER_RANGE = {3: (-32768, 32767), 4: (-128, 127), 5: (-16, 15)}   # [DRV] pixelBox*Corner
MAX_CHANNELS_PER_PIXEL = 256     # [DRV] channelsPerPixel <= 256
MAX_PIXELS_PER_COLUMN = 1024     # [DRV] pixelsPerColumn <= 1024

INVALID_VALUE = "CUDA_ERROR_INVALID_VALUE"
#: [measured on an H200, driver 580.159.04] the driver reads the globalStrides pointer even for rank 1
NULL_STRIDES_RULE = ("globalStrides is NULL: the driver refuses a NULL globalStrides pointer even when tensorRank "
                     "is 1 and the array has no entry to read (pass an array; cuda.bindings passes an empty list "
                     "as NULL)")


class TensorMapError(ValueError):
    """The driver refused an encoding: ``.result`` is its result name, ``.rule`` the broken rule."""

    def __init__(self, rule: str, result: str = INVALID_VALUE):
        super().__init__(f"{result}: {rule}")
        self.result = result
        self.rule = rule


class DocumentationWarning(UserWarning):
    """The driver accepts this, but the CUDA documentation forbids it; the message names the documented rule."""


@dataclass(frozen=True)
class Verdict:
    """The driver's answer to one set of encode parameters: ``result`` and, if refused, the first broken rule."""

    result: str                        # "CUDA_SUCCESS" or the error name
    rule: str = ""                     # the broken rule (empty on success)
    doc_warnings: tuple[str, ...] = ()  # documented rules the driver does not enforce but were broken

    @property
    def ok(self) -> bool:
        return self.result == "CUDA_SUCCESS"


@dataclass(frozen=True)
class TensorMap:
    """An encoded tensor map: the parameters the driver accepted, in its units, plus derived sizes.

    ``mode`` is ``"tile"`` (``cuTensorMapEncodeTiled``) or ``"im2col"`` (``cuTensorMapEncodeIm2col``).
    The real object is an opaque 128-byte blob [PTX §5.5.8]; the model keeps the fields instead.
    """

    dtype: str
    rank: int
    global_address: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: str = "CU_TENSOR_MAP_INTERLEAVE_NONE"
    swizzle: str = "CU_TENSOR_MAP_SWIZZLE_NONE"
    l2_promotion: str = "CU_TENSOR_MAP_L2_PROMOTION_NONE"
    oob_fill: str = "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"
    mode: str = "tile"
    pixel_box_lower_corner: tuple[int, ...] = ()
    pixel_box_upper_corner: tuple[int, ...] = ()
    channels_per_pixel: int = 0
    pixels_per_column: int = 0
    doc_warnings: tuple[str, ...] = field(default=(), compare=False)

    # ---- element type ------------------------------------------------------------------------
    @property
    def data_type(self) -> DataType:
        return DATA_TYPES[self.dtype]

    @property
    def elem_size(self) -> int:
        """Bytes per element [DRV CUtensorMapDataType]."""
        return self.data_type.size

    @property
    def interleaved(self) -> bool:
        """A tiled map with ``INTERLEAVE_16B`` / ``_32B``."""
        return self.mode == "tile" and self.interleave != "CU_TENSOR_MAP_INTERLEAVE_NONE"

    @property
    def unit_bytes(self) -> int:
        """Bytes of one step along dimension 0: the element size, or — for an interleaved map — the
        whole 16- or 32-byte channel slice.

        Measured on an H200 (``data/l04/tma_images``, cases ``ilq_*``): with ``INTERLEAVE_16B`` / ``_32B``
        the TMA counts ``globalDim[0]``, ``boxDim[0]``, ``elementStrides[0]`` and the coordinate of
        dimension 0 in slices, which lie contiguously in memory (a ``boxDim[0]`` of 8 copies 8 slices =
        128 B of ``fp16`` data whatever the element type; 16 ``uint8`` elements copy 16 slices). The
        documentation describes dimension 0 as channels [DRV; PTX §5.5.6]; the hardware does not.
        """
        return self.interleave_bytes if self.interleaved else self.elem_size

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte stride of every dimension: dimension 0's implicit one (:attr:`unit_bytes`) first [DRV]."""
        return (self.unit_bytes,) + tuple(self.global_strides)

    @property
    def swizzle_fn(self) -> Swizzle:
        return swizzle_of(self.swizzle)

    @property
    def interleave_bytes(self) -> int:
        return interleave_bytes(self.interleave)

    # ---- the box as it lands in shared memory --------------------------------------------------
    @property
    def box_elements(self) -> tuple[int, ...]:
        """Steps the copy makes along each dimension, innermost first (elements; slices along
        dimension 0 of an interleaved map).

        Tiled: ``boxDim[0]`` along dimension 0 (its element stride is ignored without interleave),
        ``ceil(boxDim[i] / elementStrides[i])`` along the others [DRV elementStrides; HW].
        Interleaved (measured on an H200, cases ``ilq_*``): dimension 0 is strided too, and the
        second-to-last dimension (``rank - 2``) is **not traversed** — the copy takes one step there,
        at the box corner's coordinate, whatever its ``boxDim`` (ranks 3, 4 and 5 measured; no
        documentation says so). im2col: ``(channelsPerPixel, pixelsPerColumn)`` — one row of channels
        per pixel [PTX §5.5.4].
        """
        if self.mode == "im2col":
            return (self.channels_per_pixel, self.pixels_per_column)
        n = [math.ceil(b / e) for b, e in zip(self.box_dim, self.element_strides)]
        if self.interleaved:
            n[self.rank - 2] = 1
        else:
            n[0] = self.box_dim[0]
        return tuple(n)

    @property
    def row_bytes(self) -> int:
        """Bytes of one box row (the steps of dimension 0 for one value of the outer coordinates)."""
        return self.box_elements[0] * self.unit_bytes

    @property
    def rows(self) -> int:
        """Box rows: the product of the outer box extents."""
        return math.prod(self.box_elements[1:])

    @property
    def row_pitch(self) -> int:
        """Shared-memory bytes between consecutive box rows.

        Without swizzle rows are dense (pitch = row bytes). With a swizzle every row occupies at least
        a full swizzle span, the bytes past the row being left untouched [measured on an H200,
        hopper-spec-facts §4.2; CPG §10.29.3.2: allocate the full span]. Interleaved rows (whole
        slices) follow the same rule (measured: 128-byte rows under ``SWIZZLE_128B``, 256-byte rows
        under ``SWIZZLE_32B``, dense rows without swizzle).
        """
        span = span_bytes(self.swizzle)
        return max(self.row_bytes, span) if span else self.row_bytes

    @property
    def smem_bytes(self) -> int:
        """Shared-memory footprint of one box: ``rows * row_pitch``."""
        return self.rows * self.row_pitch

    @property
    def tx_bytes(self) -> int:
        """Bytes one copy delivers, i.e. the ``complete_tx`` count of its mbarrier:
        ``unit_bytes * Π box_elements`` — the data size, not the padded footprint, and the same for
        boxes partly or entirely out of bounds [measured on an H200, hopper-spec-facts §5; the
        interleaved count measured exactly too, ``tx_status`` of ``data/l04/tma_images``]."""
        return self.unit_bytes * math.prod(self.box_elements)

    @property
    def global_bytes(self) -> int:
        """Bytes from the global address to the end of the tensor.

        Tiled and im2col: to the end of the last element. Interleaved: ``globalStrides[rank-2] *
        globalDim[rank-1]`` — the TMA treats every slice at or past that offset as out of bounds
        (measured on an H200, case ``ilx_r4_edge``: slices of an in-bounds row that ran past the end of
        a dense tensor were zero-filled).
        """
        if self.interleaved:
            return self.global_strides[-1] * self.global_dim[-1]
        return self.elem_size + sum((d - 1) * s for d, s in zip(self.global_dim, self.strides))

    def describe(self) -> str:
        """A one-paragraph summary in the driver's terms."""
        short = lambda s: s.split("_")[-1] if "SWIZZLE" in s or "INTERLEAVE" in s else s
        box = (f"box {{{', '.join(map(str, self.box_dim))}}}" if self.mode == "tile" else
               f"{self.pixels_per_column} pixels x {self.channels_per_pixel} channels")
        return (f"{self.data_type.short} rank-{self.rank} tensor {{{', '.join(map(str, self.global_dim))}}} "
                f"(strides {{{', '.join(map(str, self.global_strides))}}} B), {box}, "
                f"swizzle {short(self.swizzle)}, interleave {short(self.interleave)}: "
                f"{self.rows} rows x {self.row_bytes} B (pitch {self.row_pitch} B) = {self.smem_bytes} B of "
                f"shared memory, {self.tx_bytes} B per copy")


# ------------------------------------------------------------------------------------------------
# the rules

def _int_seq(name: str, values: Sequence[int], n: int) -> tuple[int, ...]:
    try:
        vals = tuple(int(v) for v in values)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of integers, got {values!r}") from None
    if len(vals) != n:
        raise ValueError(f"{name} must have {n} entries for this rank, got {len(vals)} "
                         "(the driver reads exactly that many: cuTensorMapEncodeTiled)")
    if any(v < 0 for v in vals) and name not in ("pixelBoxLowerCorner", "pixelBoxUpperCorner"):
        raise ValueError(f"{name} holds unsigned integers (cuuint32_t / cuuint64_t), got {vals}")
    return vals


class _Refused(Exception):
    def __init__(self, rule: str):
        self.rule = rule


def _common_checks(dt: DataType, rank: int, global_address: int, global_dim, global_strides, element_strides,
                   interleave: str, swizzle: str, oob_fill: str, docw: list[str]) -> None:
    """Rules shared by the tiled and im2col encoders [DRV], as the sm_90 driver enforces them."""
    if not dt.sm90:
        raise _Refused(f"tensorDataType {dt.name} is a packed sub-byte type, which compute capability 9.0 "
                       "does not support (PTX §9.7.9.27.1.1: sm_100 and later)")
    if swizzle in SWIZZLES_NOT_SM90:
        raise _Refused(f"swizzle {swizzle} is not supported on compute capability 9.0: sm_90 has only NONE, "
                       "32B, 64B and 128B (CPG §10.29.3.2 Table 12)")
    align = 32 if interleave == "CU_TENSOR_MAP_INTERLEAVE_32B" else 16
    if global_address % align:
        raise _Refused(f"globalAddress 0x{global_address:x} is not {align}-byte aligned (cuTensorMapEncodeTiled: "
                       f"globalAddress must be {align}-byte aligned"
                       + (" when interleave is CU_TENSOR_MAP_INTERLEAVE_32B)" if align == 32 else ")"))
    for i, d in enumerate(global_dim):
        if not 1 <= d <= MAX_GLOBAL_DIM:
            raise _Refused(f"globalDim[{i}] = {d} is outside 1 .. 2^32 (globalDim entries must be non-zero and "
                           "at most 2^32)")
    smult = 32 if interleave == "CU_TENSOR_MAP_INTERLEAVE_32B" else 16
    for i, s in enumerate(global_strides):
        if s % smult:
            raise _Refused(f"globalStrides[{i}] = {s} B is not a multiple of {smult} (globalStrides must be a "
                           f"multiple of {smult}"
                           + (" when interleave is CU_TENSOR_MAP_INTERLEAVE_32B)" if smult == 32 else ")"))
        if not s < MAX_GLOBAL_STRIDE:
            raise _Refused(f"globalStrides[{i}] = {s} B is not below 2^40 (globalStrides must be less than 2^40)")
    for i, e in enumerate(element_strides):
        if not 1 <= e <= MAX_ELEMENT_STRIDE:
            raise _Refused(f"elementStrides[{i}] = {e} is outside 1 .. 8 (elementStrides must be non-zero and at "
                           "most 8)")
    if oob_fill == "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA" and not dt.is_float:
        raise _Refused(f"oobFill NAN_REQUEST_ZERO_FMA needs a floating-point tensorDataType, not {dt.short} "
                       "(CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA can only be used with floating-point types)")
    # documented but not enforced by the sm_90 driver [HW]: each stride includes the previous one
    if global_strides:
        if global_strides[0] < global_dim[0] * dt.size:
            docw.append(f"globalStrides[0] = {global_strides[0]} B is smaller than globalDim[0] x elementSize = "
                        f"{global_dim[0] * dt.size} B: the documentation says each stride includes the previous "
                        "dimension (globalStrides[0] = globalDim[0] * elementSize + padding[0]); the driver does "
                        "not check it and rows then overlap")
        for i in range(1, len(global_strides)):
            need = global_strides[i - 1] * global_dim[i]
            if global_strides[i] < need:
                docw.append(f"globalStrides[{i}] = {global_strides[i]} B is smaller than globalStrides[{i - 1}] x "
                            f"globalDim[{i}] = {need} B: the documentation says globalStrides[i] = "
                            "globalStrides[i-1] * (globalDim[i] + padding[i]); the driver does not check it")
    if interleave == "CU_TENSOR_MAP_INTERLEAVE_32B" and swizzle != "CU_TENSOR_MAP_SWIZZLE_32B":
        docw.append(f"interleave CU_TENSOR_MAP_INTERLEAVE_32B with {swizzle}: the documentation says that when "
                    "interleave is CU_TENSOR_MAP_INTERLEAVE_32B, swizzle must be CU_TENSOR_MAP_SWIZZLE_32B; the "
                    "sm_90 driver accepts it")


def _normalise(dtype, interleave, swizzle, l2_promotion, oob_fill):
    """The five enum parameters by their driver names. An unknown *name* is a Python-level mistake
    (``ValueError``: the C function cannot be called with it). An *integer* the enum has no enumerator for
    (a data type 16, a swizzle 7, an L2 promotion 4, an OOB fill 2, an interleave 3) can be passed to the C
    function, and the driver refuses it with ``CUDA_ERROR_INVALID_VALUE`` [DRV cuTensorMapEncodeTiled:
    every parameter must be one of its enum's values]: raised here as :class:`_Refused`."""
    try:
        dt = data_type(dtype)
        il = enum_name("CU_TENSOR_MAP_INTERLEAVE_", interleave, "interleave")
        sw = enum_name("CU_TENSOR_MAP_SWIZZLE_", swizzle, "swizzle")
        l2 = enum_name("CU_TENSOR_MAP_L2_PROMOTION_", l2_promotion, "l2Promotion")
        oob = enum_name("CU_TENSOR_MAP_FLOAT_OOB_FILL_", oob_fill, "oobFill")
    except UnknownEnumValue as e:
        raise _Refused(f"{e.param} = {e.value} is not a value of its enum (valid: {e.valid}); the driver refuses an "
                       "enum integer it has no enumerator for") from None
    return dt, il, sw, l2, oob


def _tiled(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides, interleave,
           swizzle, l2_promotion, oob_fill) -> tuple[TensorMap | None, Verdict]:
    rank = int(rank)
    docw: list[str] = []
    try:
        dt, il, sw, l2, oob = _normalise(dtype, interleave, swizzle, l2_promotion, oob_fill)
        if not 1 <= rank <= MAX_RANK:
            raise _Refused(f"tensorRank = {rank} is outside 1 .. 5 (tensorRank must be non-zero and at most 5)")
        if il != "CU_TENSOR_MAP_INTERLEAVE_NONE" and rank < 3:
            raise _Refused(f"tensorRank = {rank} with interleave {il}: an interleaved layout needs tensorRank >= 3")
        gd = _int_seq("globalDim", global_dim, rank)
        if global_strides is None:
            raise _Refused(NULL_STRIDES_RULE)
        gs = _int_seq("globalStrides", global_strides, rank - 1)
        bd = _int_seq("boxDim", box_dim, rank)
        es = _int_seq("elementStrides", element_strides, rank)
        addr = int(global_address)
        _common_checks(dt, rank, addr, gd, gs, es, il, sw, oob, docw)
        for i, b in enumerate(bd):
            if not 1 <= b <= MAX_BOX:
                raise _Refused(f"boxDim[{i}] = {b} is outside 1 .. 256 (boxDim entries must be non-zero and at "
                               "most 256)")
        inner = bd[0] * dt.size
        if inner % 16:
            raise _Refused(f"box inner dimension is {inner} B (boxDim[0] = {bd[0]} x {dt.size} B), not a "
                           "multiple of 16 B (boxDim[0] * elementSize must be a multiple of 16 bytes; the "
                           "documentation states it for interleave NONE, the sm_90 driver enforces it for every "
                           "interleave)")
        if il == "CU_TENSOR_MAP_INTERLEAVE_NONE":
            span = span_bytes(sw)
            if span and inner > span:
                raise _Refused(f"box inner dimension is {inner} B, over the {span} B swizzle span of {sw} "
                               f"(the inner dimension must be <= the swizzle size when interleave is NONE)")
    except _Refused as r:
        return None, Verdict(INVALID_VALUE, r.rule, tuple(docw))
    tm = TensorMap(dt.name, rank, addr, gd, gs, bd, es, il, sw, l2, oob, doc_warnings=tuple(docw))
    return tm, Verdict("CUDA_SUCCESS", "", tuple(docw))


def verdict(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
            interleave="CU_TENSOR_MAP_INTERLEAVE_NONE", swizzle="CU_TENSOR_MAP_SWIZZLE_NONE",
            l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_NONE", oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE") -> Verdict:
    """What ``cuTensorMapEncodeTiled`` returns for these parameters, as data (never raises on a refusal).

    Same parameters as :func:`encode_tiled`. Python-level mistakes (a list of the wrong length, an
    unknown enum name) still raise ``ValueError``: the C function cannot even be called with them. An enum
    given as an integer the driver has no enumerator for is a refusal (``CUDA_ERROR_INVALID_VALUE``), as in C.
    """
    return _tiled(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                  interleave, swizzle, l2_promotion, oob_fill)[1]


def encode_tiled(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                 interleave="CU_TENSOR_MAP_INTERLEAVE_NONE", swizzle="CU_TENSOR_MAP_SWIZZLE_NONE",
                 l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_NONE",
                 oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE") -> TensorMap:
    """``cuTensorMapEncodeTiled`` [DRV group CUDA_TENSOR_MEMORY], with the sm_90 driver's verdict.

    Parameters in the driver's order and units: ``dtype`` a ``CUtensorMapDataType`` name (or short
    name ``"BFLOAT16"``), ``global_dim`` / ``box_dim`` / ``element_strides`` ``rank`` entries innermost
    first, ``global_strides`` ``rank - 1`` byte strides (dimension 0's stride is the element size;
    ``None`` stands for a NULL pointer, which the driver refuses even for rank 1 — measured on an
    H200), enums by name or value (an integer with no enumerator — a data type 16, a swizzle 7, an L2
    promotion 4, an OOB fill 2 — is refused as the driver refuses it). Returns the :class:`TensorMap`;
    raises :class:`TensorMapError` (``.result ==
    "CUDA_ERROR_INVALID_VALUE"``, message naming the rule) exactly when the driver refuses; emits a
    :class:`DocumentationWarning` for each documented rule the driver lets through.
    """
    tm, v = _tiled(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                   interleave, swizzle, l2_promotion, oob_fill)
    if tm is None:
        raise TensorMapError(v.rule, v.result)
    for w in v.doc_warnings:
        warnings.warn(w, DocumentationWarning, stacklevel=2)
    return tm


def _im2col(dtype, rank, global_address, global_dim, global_strides, pixel_box_lower_corner,
            pixel_box_upper_corner, channels_per_pixel, pixels_per_column, element_strides, interleave, swizzle,
            l2_promotion, oob_fill) -> tuple[TensorMap | None, Verdict]:
    rank = int(rank)
    docw: list[str] = []
    try:
        dt, il, sw, l2, oob = _normalise(dtype, interleave, swizzle, l2_promotion, oob_fill)
        if rank not in (3, 4, 5):
            raise _Refused(f"tensorRank = {rank}: an im2col tensor map needs tensorRank 3, 4 or 5 "
                           "(cuTensorMapEncodeIm2col)")
        gd = _int_seq("globalDim", global_dim, rank)
        gs = _int_seq("globalStrides", global_strides, rank - 1)
        es = _int_seq("elementStrides", element_strides, rank)
        lo = _int_seq("pixelBoxLowerCorner", pixel_box_lower_corner, rank - 2)
        hi = _int_seq("pixelBoxUpperCorner", pixel_box_upper_corner, rank - 2)
        addr = int(global_address)
        _common_checks(dt, rank, addr, gd, gs, es, il, sw, oob, docw)
        rmin, rmax = IM2COL_CORNER_RANGE[rank]
        for nm, arr in (("pixelBoxLowerCorner", lo), ("pixelBoxUpperCorner", hi)):
            for i, v in enumerate(arr):
                if not rmin <= v <= rmax:
                    raise _Refused(f"{nm}[{i}] = {v} is outside [{rmin}, {rmax}], the range for a rank-{rank} "
                                   "im2col tensor map")
        for i in range(rank - 2):
            extent = gd[i + 1] - 1 + hi[i] - lo[i] + 1
            if extent < 1:
                raise _Refused(f"the pixel bounding box has no extent along dimension {i + 1} "
                               f"(lower corner {lo[i]}, upper corner {hi[i]}, globalDim {gd[i + 1]}): it must have "
                               "non-zero area")
        cpp, ppc = int(channels_per_pixel), int(pixels_per_column)
        if not 1 <= cpp <= MAX_CHANNELS_PER_PIXEL:
            raise _Refused(f"channelsPerPixel = {cpp} is outside 1 .. 256")
        if not 1 <= ppc <= MAX_PIXELS_PER_COLUMN:
            raise _Refused(f"pixelsPerColumn = {ppc} is outside 1 .. 1024")
        inner = cpp * dt.size
        if inner % 16:
            raise _Refused(f"box inner dimension is {inner} B (channelsPerPixel {cpp} x {dt.size} B), not a "
                           "multiple of 16 B (PTX §5.5.3.1: the bounding box inner dimension is a multiple of 16 B; "
                           "[model] for every interleave, as the tiled encoder enforces it)")
        if il == "CU_TENSOR_MAP_INTERLEAVE_NONE":
            span = span_bytes(sw)
            if span and inner > span:
                raise _Refused(f"box inner dimension is {inner} B, over the {span} B swizzle span of {sw}")
    except _Refused as r:
        return None, Verdict(INVALID_VALUE, r.rule, tuple(docw))
    tm = TensorMap(dt.name, rank, addr, gd, gs, (cpp,) + (1,) * (rank - 1), es, il, sw, l2, oob, mode="im2col",
                   pixel_box_lower_corner=lo, pixel_box_upper_corner=hi, channels_per_pixel=cpp,
                   pixels_per_column=ppc, doc_warnings=tuple(docw))
    return tm, Verdict("CUDA_SUCCESS", "", tuple(docw))


def verdict_im2col(*args, **kw) -> Verdict:
    """:func:`encode_im2col`'s answer as data (never raises on a refusal)."""
    return _im2col(*_im2col_args(*args, **kw))[1]


def _im2col_args(dtype, rank, global_address, global_dim, global_strides, pixel_box_lower_corner,
                 pixel_box_upper_corner, channels_per_pixel, pixels_per_column, element_strides,
                 interleave="CU_TENSOR_MAP_INTERLEAVE_NONE", swizzle="CU_TENSOR_MAP_SWIZZLE_NONE",
                 l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_NONE", oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"):
    return (dtype, rank, global_address, global_dim, global_strides, pixel_box_lower_corner, pixel_box_upper_corner,
            channels_per_pixel, pixels_per_column, element_strides, interleave, swizzle, l2_promotion, oob_fill)


def encode_im2col(dtype, rank, global_address, global_dim, global_strides, pixel_box_lower_corner,
                  pixel_box_upper_corner, channels_per_pixel, pixels_per_column, element_strides,
                  interleave="CU_TENSOR_MAP_INTERLEAVE_NONE", swizzle="CU_TENSOR_MAP_SWIZZLE_NONE",
                  l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_NONE",
                  oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE") -> TensorMap:
    """``cuTensorMapEncodeIm2col`` [DRV]: a 3-, 4- or 5-D NWC / NHWC / NDHWC tensor read as im2col columns.

    Dimensions innermost first (C, W, H, D, N); the corners have ``rank - 2`` entries (W, H, D, innermost
    first, like every other array) and bound the filter-base positions: along spatial dimension ``d`` the
    bounding box spans ``[lower[d], globalDim[d] - 1 + upper[d]]`` [PTX §5.5.4.1]. The common rules are
    those of :func:`encode_tiled`; the corner ranges, ``channelsPerPixel <= 256`` and
    ``pixelsPerColumn <= 1024`` are the driver's documented im2col rules.
    """
    tm, v = _im2col(*_im2col_args(dtype, rank, global_address, global_dim, global_strides, pixel_box_lower_corner,
                                  pixel_box_upper_corner, channels_per_pixel, pixels_per_column, element_strides,
                                  interleave, swizzle, l2_promotion, oob_fill))
    if tm is None:
        raise TensorMapError(v.rule, v.result)
    for w in v.doc_warnings:
        warnings.warn(w, DocumentationWarning, stacklevel=2)
    return tm


def row_major_strides(shape_innermost_first: Sequence[int], elem_size: int, pad_bytes: int = 0) -> tuple[int, ...]:
    """The ``globalStrides`` of a dense tensor: ``stride[0] = dim[0] * size + pad``, ``stride[i] = stride[i-1] * dim[i]``.

    The documentation's pseudo-code for ``globalStrides`` [DRV]; ``shape_innermost_first`` is
    ``globalDim``. A NumPy C-order array of shape ``(d_{r-1}, ..., d_0)`` has exactly these strides
    (``arr.strides[::-1][1:]``) when ``pad_bytes == 0``.
    """
    dims = [int(d) for d in shape_innermost_first]
    if not dims or any(d < 1 for d in dims):
        raise ValueError(f"a tensor shape has positive dimensions, got {dims}")
    if elem_size < 1 or pad_bytes < 0:
        raise ValueError("element size must be positive and padding non-negative")
    out = []
    s = dims[0] * elem_size + pad_bytes
    for i in range(1, len(dims)):
        out.append(s)
        s *= dims[i]
    return tuple(out)

