"""PTX data types, bit-exact: what a value looks like in a register, and how packed types share one.

PTX types come in three families [PTX §5.2 #types]:

* fundamental types (§5.2.1 #fundamental-types): untyped bits ``.b8 .b16 .b32 .b64 .b128``, unsigned
  ``.u8…u64``, signed ``.s8…s64``, floating point ``.f16 .f32 .f64`` and the predicate ``.pred``;
* alternate floating-point formats (§5.2.3 #alternate-floating-point-data-formats): ``.bf16``,
  ``.tf32``, ``.e4m3``, ``.e5m2`` — accepted only by particular instructions (``cvt``, ``mma``,
  ``wgmma``…), held in ``.b16`` / ``.b32`` / ``.b8`` containers;
* packed types (§5.2.5 #packed-data-types): two elements in one register — ``.f16x2``, ``.bf16x2``
  (a ``.b32``), ``.e4m3x2``, ``.e5m2x2`` (a ``.b16``) and the packed integers ``.u16x2``, ``.s16x2``.

The packing rule this module implements everywhere: **element 0 sits in the least significant bits**
(element N in the low half of a ``.b32``, N+1 in the high half) — the order of a little-endian array
in memory, of ``mov.b32 d, {a, b}`` (``a`` → bits 0–15) and of the CUDA types ``__half2`` /
``__nv_bfloat162`` (``.x`` low). ``cvt`` is the odd one out: ``cvt.rn.bf16x2.f32 d, a, b`` puts ``a``
in the *upper* half [PTX §9.7.9.21 #data-movement-and-conversion-instructions-cvt], so packing the array
elements ``x[k], x[k+1]`` takes ``cvt … d, x[k+1], x[k]`` (:func:`cvt_x2`).

Floating-point encodings round to nearest even (``.rn``) through NumPy / ``ml_dtypes``; ``.tf32``
uses ``cvt.rna`` (ties away from zero) and keeps the f32 layout with the low 13 bits zero; FP8
encodes with ``.satfinite`` as ``cvt.rn.satfinite`` does on sm_90 (hopper-spec-facts §10.2: NaN →
0x7F, overflow and ±inf → ±MAX_NORM).
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

__all__ = [
    "PtxType", "PtxTypeError", "TYPES", "ptx_type", "encode", "decode", "pack", "unpack", "cvt_x2",
    "pack_register", "unpack_register", "float_layout", "bit_fields", "round_trip",
]


class PtxTypeError(ValueError):
    """A value, type name or packing breaks a PTX data-type rule (the message names the rule)."""


@dataclass(frozen=True)
class PtxType:
    """One PTX type.

    ``bits`` is the width the value occupies; ``container`` the untyped register type that holds it
    (``.bf16`` lives in a ``.b16``, ``.e4m3x2`` in a ``.b16``, ``.tf32`` in a ``.b32``); ``lanes`` is 2
    for packed types, whose ``element`` names the type of each half.
    """

    name: str                 # ".bf16x2"
    bits: int
    kind: str                 # "bits" | "unsigned" | "signed" | "float" | "predicate"
    family: str               # "fundamental" | "alternate" | "packed"
    container: str            # ".b16"
    lanes: int = 1
    element: str | None = None
    sm90: bool = True         # usable on sm_90 / sm_90a
    note: str = ""

    @property
    def element_type(self) -> "PtxType":
        """The type of one lane (the type itself when not packed)."""
        return TYPES[self.element] if self.element else self

    @property
    def is_float(self) -> bool:
        return self.element_type.kind == "float"

    def __str__(self) -> str:
        return self.name


def _t(name, bits, kind, family, container=None, **kw) -> PtxType:
    return PtxType(name, bits, kind, family, container or f".b{bits}", **kw)


_ALL = [
    *(_t(f".b{n}", n, "bits", "fundamental") for n in (8, 16, 32, 64, 128)),
    *(_t(f".u{n}", n, "unsigned", "fundamental") for n in (8, 16, 32, 64)),
    *(_t(f".s{n}", n, "signed", "fundamental") for n in (8, 16, 32, 64)),
    _t(".f16", 16, "float", "fundamental", note="IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits"),
    _t(".f32", 32, "float", "fundamental", note="IEEE 754 binary32: 1 sign, 8 exponent, 23 mantissa bits"),
    _t(".f64", 64, "float", "fundamental", note="IEEE 754 binary64: 1 sign, 11 exponent, 52 mantissa bits"),
    _t(".pred", 1, "predicate", "fundamental", container=".pred", note="1-bit predicate register"),
    _t(".bf16", 16, "float", "alternate", note="bfloat16: 1 sign, 8 exponent, 7 mantissa bits (f32's range)"),
    _t(".tf32", 32, "float", "alternate",
       note="TensorFloat-32: f32 layout, only the upper 19 bits (1+8+10) are significant"),
    _t(".e4m3", 8, "float", "alternate", note="FP8 E4M3: bias 7, max 448, no infinity, NaN 0x7F/0xFF"),
    _t(".e5m2", 8, "float", "alternate", note="FP8 E5M2: bias 15, max 57344, ±inf 0x7C/0xFC"),
    _t(".f16x2", 32, "float", "packed", lanes=2, element=".f16"),
    _t(".bf16x2", 32, "float", "packed", lanes=2, element=".bf16"),
    _t(".e4m3x2", 16, "float", "packed", lanes=2, element=".e4m3"),
    _t(".e5m2x2", 16, "float", "packed", lanes=2, element=".e5m2"),
    _t(".u16x2", 32, "unsigned", "packed", lanes=2, element=".u16"),
    _t(".s16x2", 32, "signed", "packed", lanes=2, element=".s16"),
    # sm_100+ only: listed so that a reader asking for them gets a clear answer, not "unknown type"
    _t(".e2m1", 4, "float", "alternate", container=".b8", sm90=False, note="FP4, sm_100a and later"),
    _t(".e2m3", 6, "float", "alternate", container=".b8", sm90=False, note="FP6, sm_100a and later"),
    _t(".e3m2", 6, "float", "alternate", container=".b8", sm90=False, note="FP6, sm_100a and later"),
    _t(".ue8m0", 8, "float", "alternate", sm90=False, note="scale factor, sm_100a and later"),
]

#: Every PTX type by name (``".bf16x2"``).
TYPES: dict[str, PtxType] = {t.name: t for t in _ALL}

# (exponent bits, mantissa bits, bias) of each float format
_FLOAT_LAYOUT = {".f16": (5, 10, 15), ".bf16": (8, 7, 127), ".f32": (8, 23, 127), ".f64": (11, 52, 1023),
                 ".tf32": (8, 10, 127), ".e4m3": (4, 3, 7), ".e5m2": (5, 2, 15)}
_FP8_MAX = {".e4m3": 448.0, ".e5m2": 57344.0}
_FP8_MAXCODE = {".e4m3": 0x7E, ".e5m2": 0x7B}


def ptx_type(name: str | PtxType) -> PtxType:
    """Look a type up by its PTX name, with or without the dot (``"bf16x2"`` or ``".bf16x2"``)
    [PTX §5.2 #types]."""
    if isinstance(name, PtxType):
        return name
    if not isinstance(name, str):
        raise PtxTypeError(f"a PTX type name is a string such as '.u32', got {name!r}")
    key = name if name.startswith(".") else "." + name
    if key not in TYPES:
        raise PtxTypeError(f"{name!r} is not a PTX data type (PTX ISA §5.2: {', '.join(TYPES)})")
    return TYPES[key]


def float_layout(t: str | PtxType) -> tuple[int, int, int]:
    """``(exponent_bits, mantissa_bits, bias)`` of a floating-point type [PTX §5.2.1, §5.2.3;
    IEEE 754 for f16/f32/f64; hopper-spec-facts §10.1 for FP8]."""
    t = ptx_type(t).element_type
    if t.name not in _FLOAT_LAYOUT:
        raise PtxTypeError(f"{t.name} is not a floating-point format with a known layout on sm_90")
    return _FLOAT_LAYOUT[t.name]


def _require_sm90(t: PtxType) -> None:
    if not t.sm90:
        raise PtxTypeError(f"{t.name} is not supported on sm_90 ({t.note}); PTX ISA §5.2.3 lists it for sm_100a+")


def _int_range(t: PtxType) -> tuple[int, int]:
    if t.kind == "signed":
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def _np_float(name: str):
    import ml_dtypes

    return {".f16": np.float16, ".f32": np.float32, ".f64": np.float64, ".bf16": ml_dtypes.bfloat16,
            ".e4m3": ml_dtypes.float8_e4m3fn, ".e5m2": ml_dtypes.float8_e5m2}[name]


def _uint(bits: int):
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]


def _encode_tf32(x: float) -> int:
    """``cvt.rna.tf32.f32``: round the f32 to 10 mantissa bits, ties away from zero [PTX §9.7.9.21 cvt,
    ``.rna`` for ``.tf32``]; inf and NaN are truncated to 10 mantissa bits, not rounded and not made
    canonical — what the H200 does (``data/l01/cvt_bits``; the ISA only says NaN stays NaN). A NaN given as
    a Python float arrives as the f32 pattern NumPy gives it."""
    b = int(np.array(x, np.float32).view(np.uint32))
    if (b >> 23) & 0xFF == 0xFF:          # inf / NaN: truncated, as the H200 does
        return b & 0xFFFFE000
    b = (b + 0x1000) & 0xFFFFE000         # add half an ulp of the 10-bit mantissa: ties away from zero
    return b


def encode(value, t: str | PtxType) -> int:
    """The register bits of ``value`` as PTX type ``t`` (an int ≥ 0 of ``t.bits`` bits).

    Integers must fit the type's range (no silent wrap-around); ``.b`` types take any integer that
    fits the width (negative values in two's complement). Floats round to nearest even from the value
    first rounded to f32 (the register the conversion reads) — except ``.f64`` (exact from Python
    float) and ``.tf32`` (``cvt.rna``). FP8 follows ``cvt.rn.satfinite`` [PTX §9.7.9.21]: NaN → 0x7F,
    |x| beyond MAX_NORM (±inf included) → ±MAX_NORM. Packed types: use :func:`pack`.
    """
    t = ptx_type(t)
    _require_sm90(t)
    if t.family == "packed":
        raise PtxTypeError(f"{t.name} is a packed type holding {t.lanes} values: use pack([...], {t.name!r})")
    if t.kind == "predicate":
        if value not in (0, 1, True, False):
            raise PtxTypeError(f".pred holds true or false, got {value!r}")
        return int(bool(value))
    if t.kind in ("bits", "unsigned", "signed"):
        try:
            v = operator.index(value)
        except TypeError:
            raise PtxTypeError(f"{t.name} holds integers, got {value!r}") from None
        if t.kind == "bits":
            lo, hi = -(1 << (t.bits - 1)), (1 << t.bits) - 1
        else:
            lo, hi = _int_range(t)
        if not lo <= v <= hi:
            raise PtxTypeError(f"{v} does not fit {t.name} (range {lo}..{hi}); PTX integers do not wrap on encode")
        return v & ((1 << t.bits) - 1)
    # floating point
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise PtxTypeError(f"{t.name} holds a floating-point value, got {value!r}") from None
    if t.name == ".f64":
        return int(np.array(x, np.float64).view(np.uint64))
    if t.name == ".tf32":
        return _encode_tf32(x)
    with np.errstate(over="ignore"):
        x32 = np.array(x, np.float32)
    if t.name == ".f32":
        return int(x32.view(np.uint32))
    if t.name in _FP8_MAX:
        if math.isnan(x):
            return 0x7F                    # satfinite: NaN → canonical positive NaN, sign dropped [HW]
        with np.errstate(over="ignore", invalid="ignore"):
            code = int(x32.astype(_np_float(t.name)).view(np.uint8))
        y = float(np.array(code, np.uint8).view(_np_float(t.name)))
        if math.isinf(y) or math.isnan(y):  # overflow after rounding → saturate to ±MAX_NORM
            code = _FP8_MAXCODE[t.name] | (0x80 if x < 0 else 0)
        return code
    with np.errstate(over="ignore"):  # overflow rounds to ±inf, as cvt.rn does for .f16 / .bf16
        return int(x32.astype(_np_float(t.name)).view(_uint(t.bits)))


def decode(bits: int, t: str | PtxType):
    """The value held by ``bits`` as PTX type ``t`` (int for integer types, float for floats, bool for
    ``.pred``). ``.tf32`` ignores the low 13 bits, as the tensor cores do [PTX §5.2.3]."""
    t = ptx_type(t)
    _require_sm90(t)
    if t.family == "packed":
        raise PtxTypeError(f"{t.name} is a packed type: use unpack(bits, {t.name!r})")
    try:
        b = operator.index(bits)
    except TypeError:
        raise PtxTypeError(f"register bits must be an integer, got {bits!r}") from None
    if not 0 <= b < (1 << t.bits):
        raise PtxTypeError(f"0x{b:x} does not fit a {t.bits}-bit {t.name} register")
    if t.kind == "predicate":
        return bool(b)
    if t.kind in ("bits", "unsigned"):
        return b
    if t.kind == "signed":
        return b - (1 << t.bits) if b >> (t.bits - 1) else b
    if t.name == ".tf32":
        return float(np.array(b & 0xFFFFE000, np.uint32).view(np.float32))
    return float(np.array(b, _uint(t.bits)).view(_np_float(t.name)))


def round_trip(value, t: str | PtxType):
    """``decode(encode(value, t), t)``: the value as the type can hold it."""
    return decode(encode(value, t), t)


def pack(values: Sequence, t: str | PtxType) -> int:
    """Pack the elements of a packed type into one register: ``values[0]`` in the low half,
    ``values[1]`` in the high half [PTX §5.2.5 #packed-data-types; the element order of ``mov.b32 d,
    {a, b}``, PTX §9.7.9 #data-movement-and-conversion-instructions-mov]."""
    t = ptx_type(t)
    _require_sm90(t)
    if t.family != "packed":
        raise PtxTypeError(f"{t.name} is not a packed type (packed types: "
                           f"{', '.join(n for n, x in TYPES.items() if x.family == 'packed')})")
    values = list(values)
    if len(values) != t.lanes:
        raise PtxTypeError(f"{t.name} packs exactly {t.lanes} elements, got {len(values)}")
    e = t.element_type
    out = 0
    for i, v in enumerate(values):
        out |= encode(v, e) << (i * e.bits)
    return out


def unpack(bits: int, t: str | PtxType) -> tuple:
    """The elements of a packed register, element 0 from the low half (inverse of :func:`pack`)."""
    t = ptx_type(t)
    _require_sm90(t)
    if t.family != "packed":
        raise PtxTypeError(f"{t.name} is not a packed type")
    b = operator.index(bits)
    if not 0 <= b < (1 << t.bits):
        raise PtxTypeError(f"0x{b:x} does not fit a {t.bits}-bit {t.name} register")
    e = t.element_type
    mask = (1 << e.bits) - 1
    return tuple(decode((b >> (i * e.bits)) & mask, e) for i in range(t.lanes))


def cvt_x2(a, b, t: str | PtxType) -> int:
    """``cvt.rn{.satfinite}.{f16x2,bf16x2,e4m3x2,e5m2x2}.f32 d, a, b``: ``a`` converted into the
    **upper** half of ``d``, ``b`` into the lower half [PTX §9.7.9.21 cvt, "Semantics"]. So
    ``cvt_x2(a, b, t) == pack([b, a], t)``."""
    t = ptx_type(t)
    if t.name not in (".f16x2", ".bf16x2", ".e4m3x2", ".e5m2x2"):
        raise PtxTypeError(f"cvt packs two f32 into .f16x2, .bf16x2, .e4m3x2 or .e5m2x2, not {t.name}")
    return pack([b, a], t)


def pack_register(values: Iterable, element: str | PtxType, register_bits: int = 32) -> int:
    """Pack ``register_bits / bits(element)`` elements into one untyped register, element ``i`` at bits
    ``[i·w, (i+1)·w)`` — e.g. four ``.e4m3`` in a ``.b32`` (byte ``i`` = element ``i``), as the WGMMA
    fragments and a little-endian shared-memory image hold them (hopper-spec-facts §10.2)."""
    e = ptx_type(element)
    _require_sm90(e)
    if e.family == "packed" or e.kind == "predicate":
        raise PtxTypeError(f"pack_register takes a scalar element type, not {e.name}")
    if register_bits not in (16, 32, 64) or register_bits % e.bits:
        raise PtxTypeError(f"a {register_bits}-bit register does not hold a whole number of {e.name} elements")
    vals = list(values)
    n = register_bits // e.bits
    if len(vals) != n:
        raise PtxTypeError(f"a .b{register_bits} register holds {n} {e.name} elements, got {len(vals)}")
    out = 0
    for i, v in enumerate(vals):
        out |= encode(v, e) << (i * e.bits)
    return out


def unpack_register(bits: int, element: str | PtxType, register_bits: int = 32) -> tuple:
    """Inverse of :func:`pack_register`."""
    e = ptx_type(element)
    if register_bits not in (16, 32, 64) or register_bits % e.bits:
        raise PtxTypeError(f"a {register_bits}-bit register does not hold a whole number of {e.name} elements")
    b = operator.index(bits)
    if not 0 <= b < (1 << register_bits):
        raise PtxTypeError(f"0x{b:x} does not fit a .b{register_bits} register")
    mask = (1 << e.bits) - 1
    return tuple(decode((b >> (i * e.bits)) & mask, e) for i in range(register_bits // e.bits))


def bit_fields(value, t: str | PtxType) -> dict:
    """Sign, exponent and mantissa fields of ``value`` encoded as float type ``t``:
    ``{"bits", "sign", "exponent", "mantissa", "exponent_bits", "mantissa_bits", "bias"}``."""
    t = ptx_type(t)
    e_bits, m_bits, bias = float_layout(t)
    b = encode(value, t)
    total = t.bits
    if t.name == ".tf32":
        b >>= 13
        total = 19
    return {"bits": b, "width": total, "sign": b >> (total - 1), "exponent": (b >> m_bits) & ((1 << e_bits) - 1),
            "mantissa": b & ((1 << m_bits) - 1), "exponent_bits": e_bits, "mantissa_bits": m_bits, "bias": bias}
