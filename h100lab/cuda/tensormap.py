"""Tensor maps (TMA descriptors) encoded by the real driver: ``cuTensorMapEncodeTiled``.

The driver is the authority on which encodings are valid (reference README, "Policy"): this wrapper
does not pre-judge the parameters, it only checks that the Python call is well formed (array lengths
against ``tensorRank``, values that fit the C types) and passes the driver's verdict back — success as
a :class:`TensorMap`, failure as :class:`~h100lab.cuda.errors.DriverError` whose ``result`` is the
driver's name (``"CUDA_ERROR_INVALID_VALUE"``). Enumerations are given by their driver names
(``"CU_TENSOR_MAP_SWIZZLE_128B"``; the short forms ``"SWIZZLE_128B"`` and ``"128B"`` are accepted too).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .errors import DriverError

__all__ = ["TensorMap", "encode_tiled", "enum_value", "ENUM_PREFIXES", "TENSOR_MAP_BYTES"]

TENSOR_MAP_BYTES = 128  # PTX ISA §5.5.8 "Tensormap": an opaque 128-byte object

# parameter → (cuda.bindings enum class, prefix of its enumerators)
ENUM_PREFIXES = {
    "dtype": ("CUtensorMapDataType", "CU_TENSOR_MAP_DATA_TYPE_"),
    "interleave": ("CUtensorMapInterleave", "CU_TENSOR_MAP_INTERLEAVE_"),
    "swizzle": ("CUtensorMapSwizzle", "CU_TENSOR_MAP_SWIZZLE_"),
    "l2_promotion": ("CUtensorMapL2promotion", "CU_TENSOR_MAP_L2_PROMOTION_"),
    "oob_fill": ("CUtensorMapFloatOOBfill", "CU_TENSOR_MAP_FLOAT_OOB_FILL_"),
}


def enum_value(param: str, name: Any):
    """The cuda.bindings enumerator for ``param`` (``dtype``, ``interleave``, ``swizzle``, ``l2_promotion``,
    ``oob_fill``) named ``name`` — the CUDA Driver API's own enumerator name, e.g.
    ``"CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"``, or the same without ``CU_TENSOR_MAP_`` (``"DATA_TYPE_BFLOAT16"``)
    or without the whole prefix (``"BFLOAT16"``). Needs cuda-python, not a GPU."""
    from cuda.bindings import driver as d

    if param not in ENUM_PREFIXES:
        raise ValueError(f"unknown tensor-map parameter {param!r}; one of {sorted(ENUM_PREFIXES)}")
    cls_name, prefix = ENUM_PREFIXES[param]
    cls = getattr(d, cls_name)
    if isinstance(name, cls):
        return name
    if not isinstance(name, str):
        raise ValueError(f"{param} {name!r}: give the driver's enumerator name, e.g. {prefix}...")
    for full in (name, "CU_TENSOR_MAP_" + name, prefix + name):
        member = getattr(cls, full, None) if full.startswith(prefix) else None
        if isinstance(member, cls):
            return member
    valid = [m.name for m in cls]
    raise ValueError(f"{param} {name!r} is not a {cls_name} enumerator of this driver API; valid: {valid}")


@dataclass(frozen=True)
class TensorMap:
    """A 128-byte tensor map made by the driver, with the arguments that made it.

    Pass it to :func:`~h100lab.cuda.launch` for a ``const __grid_constant__ CUtensorMap`` parameter (by
    value; CUDA C++ Programming Guide §"Using TMA to transfer multi-dimensional arrays").
    """

    data: bytes
    args: dict

    def __post_init__(self):
        if len(self.data) != TENSOR_MAP_BYTES:
            raise ValueError(f"a tensor map is {TENSOR_MAP_BYTES} bytes, got {len(self.data)}")

    @property
    def words(self) -> tuple[int, ...]:
        """The 16 little-endian 64-bit words of the opaque object."""
        return tuple(int.from_bytes(self.data[i:i + 8], "little") for i in range(0, TENSOR_MAP_BYTES, 8))


def _ints(name: str, values: Sequence[int], n: int, bits: int) -> list[int]:
    vals = [int(v) for v in values]
    if len(vals) != n:
        raise ValueError(f"{name} has {len(vals)} entries; with tensorRank the driver reads {n} "
                         "(cuTensorMapEncodeTiled: globalDim, boxDim, elementStrides have tensorRank entries, "
                         "globalStrides tensorRank - 1)")
    for i, v in enumerate(vals):
        if not 0 <= v < (1 << bits):
            raise ValueError(f"{name}[{i}] = {v} does not fit the driver's cuuint{bits}_t")
    return vals


def encode_tiled(dtype, rank: int, global_address, global_dim: Sequence[int], global_strides: Sequence[int],
                 box_dim: Sequence[int], element_strides: Sequence[int], interleave="CU_TENSOR_MAP_INTERLEAVE_NONE",
                 swizzle="CU_TENSOR_MAP_SWIZZLE_NONE", l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_NONE",
                 oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE") -> TensorMap:
    """Encode a tiled tensor map with the real driver (``cuTensorMapEncodeTiled``, CUDA Driver API §"Tensor
    Map Object Management"). ``global_address`` is an int or a :class:`~h100lab.cuda.DeviceArray`;
    ``global_strides`` are in bytes (``rank - 1`` of them; dimension 0's stride is the element size).
    The driver's verdict is final: a rejected encoding raises :class:`DriverError` (``.result`` is
    ``"CUDA_ERROR_INVALID_VALUE"`` for every broken parameter rule). Needs a GPU (the argument checks above do not)."""
    from . import device

    rank = int(rank)
    if not 0 <= rank < (1 << 32):
        raise ValueError(f"tensorRank {rank} does not fit the driver's cuuint32_t")
    addr = global_address.ptr if isinstance(global_address, device.DeviceArray) else int(global_address)
    if not 0 <= addr < (1 << 64):
        raise ValueError(f"globalAddress {addr:#x} is not a 64-bit address")
    gdim = _ints("globalDim", global_dim, rank, 64)
    gstr = _ints("globalStrides", global_strides, max(rank - 1, 0), 64)
    box = _ints("boxDim", box_dim, rank, 32)
    es = _ints("elementStrides", element_strides, rank, 32)
    enums = {k: enum_value(k, v) for k, v in (("dtype", dtype), ("interleave", interleave), ("swizzle", swizzle),
                                              ("l2_promotion", l2_promotion), ("oob_fill", oob_fill))}
    d = device._ready()
    # cuda.bindings passes an empty list as a NULL pointer, which the driver refuses even for rank 1
    # (measured on the H200, data/l04/encode_verdicts): give it a one-entry array it never reads.
    strides = [d.cuuint64_t(v) for v in gstr] or [d.cuuint64_t(0)]
    ret = d.cuTensorMapEncodeTiled(
        enums["dtype"], rank, addr, [d.cuuint64_t(v) for v in gdim], strides,
        [d.cuuint32_t(v) for v in box], [d.cuuint32_t(v) for v in es], enums["interleave"], enums["swizzle"],
        enums["l2_promotion"], enums["oob_fill"])
    err, tmap = ret
    if err != d.CUresult.CUDA_SUCCESS:
        raise DriverError("cuTensorMapEncodeTiled", err.name, int(err),
                          f"rank={rank}, globalDim={gdim}, globalStrides={gstr}, boxDim={box}, "
                          f"elementStrides={es}, " + ", ".join(f"{k}={v.name}" for k, v in enums.items()))
    data = b"".join(int(w).to_bytes(8, "little") for w in tmap.opaque)
    args = {"dtype": enums["dtype"].name, "rank": rank, "global_address": addr, "global_dim": gdim,
            "global_strides": gstr, "box_dim": box, "element_strides": es,
            **{k: enums[k].name for k in ("interleave", "swizzle", "l2_promotion", "oob_fill")}}
    return TensorMap(data, args)
