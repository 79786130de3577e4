"""The driver's tensor-map enums (``CUtensorMapDataType``, ``...Interleave``, ``...Swizzle``,
``...L2promotion``, ``...FloatOOBfill``), with their values and what the model needs to know of each.

Values and element sizes are those of the CUDA Driver API [DRV cuTensorMapEncodeTiled]; which of
them compute capability 9.0 supports is from [CPG §10.29.3.2 Table 12] and the PTX ISA's target
restrictions [PTX §9.7.9.27.1.1] (hopper-spec-facts §4.2, §5).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DataType", "UnknownEnumValue", "C_ENUM_RANGE", "DATA_TYPES", "INTERLEAVES", "SWIZZLES", "SWIZZLES_NOT_SM90", "L2_PROMOTIONS",
           "OOB_FILLS", "data_type", "interleave_bytes", "promotion_bytes", "enum_name", "numpy_dtype"]


@dataclass(frozen=True)
class DataType:
    """One ``CUtensorMapDataType`` value."""

    name: str
    value: int
    size: int            # bytes per element (0 for the packed sub-byte types)
    is_float: bool
    sm90: bool           # supported on compute capability 9.0
    numpy: str           # the NumPy / ml_dtypes dtype name used to view elements ("" if none)
    ptx: str             # the PTX element type the TMA moves (.f16, .bf16, .u32 ...)

    @property
    def short(self) -> str:
        return self.name.removeprefix("CU_TENSOR_MAP_DATA_TYPE_")


_DT = [
    # name, value, size, float, sm90, numpy, ptx
    ("UINT8", 0, 1, False, True, "uint8", "u8"),
    ("UINT16", 1, 2, False, True, "uint16", "u16"),
    ("UINT32", 2, 4, False, True, "uint32", "u32"),
    ("INT32", 3, 4, False, True, "int32", "s32"),
    ("UINT64", 4, 8, False, True, "uint64", "u64"),
    ("INT64", 5, 8, False, True, "int64", "s64"),
    ("FLOAT16", 6, 2, True, True, "float16", "f16"),
    ("FLOAT32", 7, 4, True, True, "float32", "f32"),
    ("FLOAT64", 8, 8, True, True, "float64", "f64"),
    ("BFLOAT16", 9, 2, True, True, "bfloat16", "bf16"),
    ("FLOAT32_FTZ", 10, 4, True, True, "float32", "f32"),
    ("TFLOAT32", 11, 4, True, True, "float32", "tf32"),
    ("TFLOAT32_FTZ", 12, 4, True, True, "float32", "tf32"),
    # packed sub-byte types: sm_100+ only [PTX §9.7.9.27.1.1 restrictions]
    ("16U4_ALIGN8B", 13, 0, False, False, "", "b4x16"),
    ("16U4_ALIGN16B", 14, 0, False, False, "", "b4x16_p64"),
    ("16U6_ALIGN16B", 15, 0, False, False, "", "b6x16_p32"),
]

#: enum name → :class:`DataType`
DATA_TYPES: dict[str, DataType] = {
    f"CU_TENSOR_MAP_DATA_TYPE_{n}": DataType(f"CU_TENSOR_MAP_DATA_TYPE_{n}", v, s, f, ok, npd, p)
    for n, v, s, f, ok, npd, p in _DT
}

#: ``CUtensorMapInterleave``: name → value
INTERLEAVES = {"CU_TENSOR_MAP_INTERLEAVE_NONE": 0, "CU_TENSOR_MAP_INTERLEAVE_16B": 1,
               "CU_TENSOR_MAP_INTERLEAVE_32B": 2}
#: ``CUtensorMapSwizzle``: name → value (all of the driver's, including the Blackwell-only ones)
SWIZZLES = {"CU_TENSOR_MAP_SWIZZLE_NONE": 0, "CU_TENSOR_MAP_SWIZZLE_32B": 1, "CU_TENSOR_MAP_SWIZZLE_64B": 2,
            "CU_TENSOR_MAP_SWIZZLE_128B": 3, "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B": 4,
            "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B": 5, "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B": 6}
#: swizzles the sm_90 driver rejects (newer architectures) [CPG §10.29.3.2 Table 12; HW]
SWIZZLES_NOT_SM90 = ("CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B", "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B",
                     "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B")
#: ``CUtensorMapL2promotion``: name → value
L2_PROMOTIONS = {"CU_TENSOR_MAP_L2_PROMOTION_NONE": 0, "CU_TENSOR_MAP_L2_PROMOTION_L2_64B": 1,
                 "CU_TENSOR_MAP_L2_PROMOTION_L2_128B": 2, "CU_TENSOR_MAP_L2_PROMOTION_L2_256B": 3}
#: ``CUtensorMapFloatOOBfill``: name → value
OOB_FILLS = {"CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE": 0, "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA": 1}

_TABLES = {
    "CU_TENSOR_MAP_DATA_TYPE_": {k: v.value for k, v in DATA_TYPES.items()},
    "CU_TENSOR_MAP_INTERLEAVE_": INTERLEAVES,
    "CU_TENSOR_MAP_SWIZZLE_": SWIZZLES,
    "CU_TENSOR_MAP_L2_PROMOTION_": L2_PROMOTIONS,
    "CU_TENSOR_MAP_FLOAT_OOB_FILL_": OOB_FILLS,
}


class UnknownEnumValue(ValueError):
    """An integer the C enum has no enumerator for. The C function can be called with it (an enum
    parameter is an ``int``) and the driver answers ``CUDA_ERROR_INVALID_VALUE``; the encoders of
    :mod:`h100lab.tma.descriptor` turn this into that refusal. ``.param``, ``.value``, ``.valid``."""

    def __init__(self, what: str, value: int, prefix: str, valid: list[int]):
        super().__init__(f"{what} = {value} is not a {prefix.rstrip('_')} value (valid: {valid})")
        self.param, self.value, self.valid = what, value, valid


#: an enum parameter of a C function is an ``int``; Python integers outside these bounds cannot be passed
C_ENUM_RANGE = (-(1 << 31), (1 << 32) - 1)


def enum_name(prefix: str, value: "str | int", what: str) -> str:
    """Normalise an enum given by full name, short name (``"128B"``) or value to the driver's full name.

    ``prefix`` is the common prefix (``"CU_TENSOR_MAP_SWIZZLE_"``); ``what`` names the parameter in
    the error message. An unknown name raises ``ValueError`` naming the allowed values; an integer the
    enum has no enumerator for raises :class:`UnknownEnumValue` (a ``ValueError``), which the encoders
    report as the driver's refusal; an integer no C ``int`` can hold is a plain ``ValueError``.
    """
    table = _TABLES[prefix]
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        v = int(value)
        if not C_ENUM_RANGE[0] <= v <= C_ENUM_RANGE[1]:
            raise ValueError(f"{what} = {v} does not fit the C enum parameter (a 32-bit int)")
        for k, tv in table.items():
            if tv == v:
                return k
        raise UnknownEnumValue(what, v, prefix, sorted(table.values()))
    if isinstance(value, str):
        name = value if value.startswith(prefix) else prefix + value.upper()
        if name in table:
            return name
    raise ValueError(f"{what} = {value!r} is not one of {', '.join(table)}")


def data_type(dtype: "str | int | DataType") -> DataType:
    """The :class:`DataType` of an enum name (``"CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"``, ``"BFLOAT16"``) or value."""
    if isinstance(dtype, DataType):
        return dtype
    return DATA_TYPES[enum_name("CU_TENSOR_MAP_DATA_TYPE_", dtype, "tensorDataType")]


def numpy_dtype(dtype: "str | int | DataType") -> np.dtype:
    """The NumPy dtype to view elements of this type with (``ml_dtypes.bfloat16`` for BFLOAT16)."""
    dt = data_type(dtype)
    if not dt.numpy:
        raise ValueError(f"{dt.name} is a packed sub-byte type with no NumPy element view")
    if dt.numpy == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dt.numpy)


def interleave_bytes(interleave: str) -> int:
    """Bytes per channel slice of an interleaved layout: 0 (NONE), 16, 32 [PTX §5.5.6; DRV]."""
    name = enum_name("CU_TENSOR_MAP_INTERLEAVE_", interleave, "interleave")
    return {0: 0, 1: 16, 2: 32}[INTERLEAVES[name]]


def promotion_bytes(l2_promotion: str) -> int:
    """The L2 fill granularity of an ``l2Promotion``: 32 (NONE: one sector), 64, 128, 256 bytes.

    [DRV: "L2 fetch size which indicates the byte granularity at which L2 requests are filled from
    DRAM"]; without promotion the L2 fills single 32-byte sectors, the minimum L2 access [NCU
    "Quantities"; hopper-spec-facts §3].
    """
    name = enum_name("CU_TENSOR_MAP_L2_PROMOTION_", l2_promotion, "l2Promotion")
    return {0: 32, 1: 64, 2: 128, 3: 256}[L2_PROMOTIONS[name]]
