"""PTX fundamental types and how the emulator holds them in NumPy arrays (one element per lane).

PTX ISA §5.2 "Types" (Table "Fundamental Type Specifiers"): signed ``.s8/.s16/.s32/.s64``, unsigned
``.u8/…/.u64``, floating ``.f16/.f16x2/.f32/.f64`` (and ``.bf16/.bf16x2``, ``.tf32``, ``.e4m3/.e5m2`` and
their ``x2``/``x4`` packings, §5.2.1-§5.2.3), untyped bits ``.b8/…/.b128``, and the predicate ``.pred``.

Registers keep **raw bits**: a register declared with a ``k``-bit type is a ``uint{k}`` array (``.pred`` a
``bool`` array). An instruction reads a register *as* the type it names: :func:`np_dtype` gives the NumPy
dtype of each PTX type, and a same-width ``ndarray.view`` reinterprets the bits (PTX §5.2.3 "Operand type
information": "registers of any type can be used when the sizes match" for bit-size types). Packed types
(``.f16x2``, ``.bf16x2``, ``.e4m3x2`` …) are carried as their raw unsigned container.
"""
from __future__ import annotations

import numpy as np

__all__ = ["np_dtype", "raw_dtype", "width", "is_float", "is_signed", "kind", "PTX_TYPES"]

try:  # ml_dtypes is a hard dependency of the package (pyproject); the import is kept local to this module
    import ml_dtypes as _ml

    _BF16 = np.dtype(_ml.bfloat16)
    _E4M3 = np.dtype(_ml.float8_e4m3fn)
    _E5M2 = np.dtype(_ml.float8_e5m2)
except ImportError:  # pragma: no cover - declared dependency
    _BF16 = _E4M3 = _E5M2 = None

_W = {
    "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b128": 128,
    "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "tf32": 32,
    "f16x2": 32, "bf16x2": 32, "e4m3": 8, "e5m2": 8, "e4m3x2": 16, "e5m2x2": 16, "e4m3x4": 32,
    "e5m2x4": 32, "pred": 1,
}
PTX_TYPES = frozenset(_W)

_RAW = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64),
        1: np.dtype(np.bool_)}

_NP = {
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "tf32": np.uint32, "pred": np.bool_,
    "f16x2": np.uint32, "bf16x2": np.uint32, "e4m3x2": np.uint16, "e5m2x2": np.uint16,
    "e4m3x4": np.uint32, "e5m2x4": np.uint32,
}


def _t(t: str) -> str:
    t = t.lstrip(".")
    if t not in _W:
        raise ValueError(f"unknown PTX type .{t} (PTX ISA §5.2 lists the fundamental types)")
    return t


def width(t: str) -> int:
    """Bits of PTX type ``t`` (``.pred`` counts 1)."""
    return _W[_t(t)]


def np_dtype(t: str) -> np.dtype:
    """The NumPy dtype an instruction of type ``t`` computes in: ``s32`` → int32, ``f16`` → float16,
    ``bf16`` → ml_dtypes.bfloat16, ``e4m3``/``e5m2`` → ml_dtypes float8, ``b``/``u`` → unsigned,
    packed types → their raw unsigned container, ``.pred`` → bool."""
    t = _t(t)
    if t == "bf16":
        return _BF16
    if t == "e4m3":
        return _E4M3
    if t == "e5m2":
        return _E5M2
    if t == "b128":
        raise ValueError(".b128 has no NumPy scalar type: the emulator splits it into two .b64 halves")
    return np.dtype(_NP[t])


def raw_dtype(t: str) -> np.dtype:
    """The unsigned container (or bool) a register declared ``.t`` is stored in."""
    return _RAW[width(t)] if _t(t) != "b128" else np.dtype(np.uint64)


def is_float(t: str) -> bool:
    """Floating-point types (``.f16 .bf16 .f32 .f64 .tf32`` and FP8), packed ones included."""
    t = _t(t)
    return t[0] in "fe" or t.startswith("bf") or t == "tf32"


def is_signed(t: str) -> bool:
    """Signed integer types ``.s8 … .s64``."""
    return _t(t)[0] == "s"


def kind(t: str) -> str:
    """``"s"``, ``"u"``, ``"b"``, ``"f"`` (any float) or ``"pred"``."""
    t = _t(t)
    if t == "pred":
        return "pred"
    return "f" if is_float(t) else t[0]
