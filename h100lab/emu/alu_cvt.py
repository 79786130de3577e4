"""``cvt``: every sm_90 conversion between integers, f16/bf16/f32/f64, tf32 and the FP8 pairs, bit-exact
[PTX ISA §9.7.9.21 #data-movement-and-conversion-instructions-cvt].

Rules the builder enforces (``AluError`` otherwise): integer rounding (``.rni .rzi .rmi .rpi``) is
required for float→int and allowed only there and for same-type float→float; float rounding (``.rn .rz
.rm .rp``) is required for int→float, for float→float conversions that lose precision or range, and for
every packed form, and illegal elsewhere; ``.ftz`` needs an ``.f32`` source or destination; integer
``.sat`` is legal only where saturation is possible; ``.satfinite`` is mandatory for FP8 destinations.

Semantics: integer narrowing truncates, widening sign- or zero-extends by the *source* type; float→int
saturates to the destination range, and NaN gives 0 — or ``1 << (n−1)`` (MININT for signed) when the
source is ``.f64`` or the destination 64-bit (PTX "Integer Notes"). Packed results put the *first*
source in the *upper* half (``cvt.rn.f16x2.f32 d, a, b``: ``d[31:16] = a``; ``e4m3x2``: ``d[15:8] = a``),
and ``cvt.rn.f16x2.e4m3x2`` decodes the low byte into the low half. FP8 encoding rounds with ml_dtypes
after clamping to ±MAX_NORM (``.satfinite``: ±∞ → ±MAX_NORM); a NaN encodes as 0x7F in both formats,
sign dropped, as measured on an H200 (hopper-spec-facts §10.2).
"""
from __future__ import annotations

import numpy as np

from .alu_core import SEC, AluError, AluOp, Mods, uint_of
from .alu_round import BF16, F16, F32, F64, canon_nan, flush, is_nan_bits, quiet64, round_pair, round_pair64, two_sum
from .types import np_dtype

try:
    import ml_dtypes as _ml
    _E4M3, _E5M2 = np.dtype(_ml.float8_e4m3fn), np.dtype(_ml.float8_e5m2)
except ImportError:  # pragma: no cover - declared dependency
    _E4M3 = _E5M2 = None

__all__ = ["build"]

_INTS = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")
_FLTS = ("f16", "bf16", "f32", "f64")
_FMT = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}
_FRND = ("rn", "rz", "rm", "rp", "rna")
_IRND = ("rni", "rzi", "rmi", "rpi")
_ALL = _FRND + _IRND + ("ftz", "sat", "relu", "satfinite")
_FP8 = {"e4m3x2": (_E4M3, 448.0), "e5m2x2": (_E5M2, 57344.0)}
_WHERE = SEC["cvt"]


def _w(t: str) -> int:
    return int(t[1:])


def _range(t: str) -> tuple[int, int]:
    w = _w(t)
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if t[0] == "s" else (0, (1 << w) - 1)


def _err(msg: str):
    return AluError(f"cvt: {msg} ({_WHERE})")


def _sat_float(rb: np.ndarray, fmt) -> np.ndarray:
    """``.sat`` on a float result: clamp to [+0, 1], NaN → +0."""
    u = fmt.udtype.type
    one = np.array(1.0, fmt.dtype).view(fmt.udtype)
    neg = (rb & u(fmt.sign)) != 0
    nan = is_nan_bits(rb, fmt)
    return np.where(nan | neg, u(0), np.where((rb & u(fmt.sign - 1)) > one, one, rb))


def _finish(rb: np.ndarray, fmt, ftz=False, sat=False, relu=False, satfinite=False) -> np.ndarray:
    """Canonical NaN (f64 keeps the payload, quieted), ``.ftz`` on f32 results, ``.satfinite`` (±∞ →
    ±MAX_NORM), ``.relu`` (negative → +0) and ``.sat`` ([0, 1])."""
    u = fmt.udtype.type
    nan = is_nan_bits(rb, fmt)
    if nan.any():
        rb = np.where(nan, quiet64(rb), rb) if fmt is F64 else canon_nan(rb, fmt)
    if ftz and fmt is F32:
        rb = flush(rb, fmt)
    if satfinite:
        inf = (rb & u(fmt.sign - 1)) == u(fmt.inf)
        rb = np.where(inf, (rb & u(fmt.sign)) | u(fmt.max_bits), rb)
    if relu:
        rb = np.where(((rb & u(fmt.sign)) != 0) & ~is_nan_bits(rb, fmt), u(0), rb)
    if sat:
        rb = _sat_float(rb, fmt)
    return rb.astype(fmt.udtype, copy=False)


# --- int -> int ------------------------------------------------------------------------------------------
def _int_int(dt: str, at: str, m: Mods) -> AluOp:
    """Integer → integer: truncate or extend by the source type; ``.sat`` clamps to the destination
    range (only where the destination range is not a superset of the source's)."""
    if m.set - {"sat"}:
        raise _err(f"{dt}.{at}: integer → integer takes no rounding, .ftz, .relu or .satfinite")
    (dlo, dhi), (slo, shi) = _range(dt), _range(at)
    sat = "sat" in m
    if sat and dlo <= slo and dhi >= shi:
        raise _err(f".sat is illegal for .{dt}.{at}: the destination range contains the source range")
    dtype = np_dtype(dt)

    def fn(a):
        if not sat:
            return (a.astype(dtype),)
        if at == "u64":
            return (np.minimum(a, np.uint64(dhi)).astype(dtype),)
        v = a.astype(np.int64)
        if dt == "u64":
            return (np.maximum(v, 0).astype(dtype),)
        return (np.clip(v, dlo, dhi).astype(dtype),)
    return AluOp(fn, (at,), (dt,))


# --- int -> float ------------------------------------------------------------------------------------------
def _exact_int(a: np.ndarray, at: str):
    """The integer as an exact binary64 pair (s, e)."""
    if _w(at) <= 32:
        s = a.astype(np.float64)
        return s, np.zeros_like(s)
    hi = (a >> a.dtype.type(32)).astype(np.float64) * 4294967296.0
    lo = (a & a.dtype.type(0xFFFFFFFF)).astype(np.float64)
    return two_sum(hi, lo)


def _int_float(dt: str, at: str, m: Mods) -> AluOp:
    """Integer → float: rounding ``.rn .rz .rm .rp`` required, correctly rounded (64-bit integers split
    into exact 32-bit halves); ``.sat`` clamps to [0, 1]."""
    mode = m.pick(_FRND)
    if mode is None or mode == "rna" or m.pick(_IRND):
        raise _err(f"{dt}.{at}: integer → float needs .rn/.rz/.rm/.rp")
    if m.set & {"relu", "satfinite"}:
        raise _err(f"{dt}.{at}: .relu/.satfinite apply to float sources")
    if "ftz" in m and dt != "f32":
        raise _err(".ftz needs an .f32 source or destination")
    if "sat" in m and dt == "bf16":
        raise _err(".sat applies to .f16/.f32/.f64 destinations")
    fmt, sat = _FMT[dt], "sat" in m
    if mode == "rn" and dt in ("f32", "f64") and _w(at) <= 32 and not sat:
        # one correctly rounded conversion (exact for f64); NumPy casts round to nearest even
        return AluOp(lambda a: (a.astype(fmt.dtype),), (at,), (dt,))

    def fn(a):
        with np.errstate(all="ignore"):
            s, e = _exact_int(a, at)
            rb = round_pair64(s, e, mode).view(np.uint64) if fmt is F64 else round_pair(s, e, fmt, mode)
        return (_finish(rb, fmt, sat=sat).view(fmt.dtype),)
    return AluOp(fn, (at,), (dt,))


# --- float -> int ----------------------------------------------------------------------------------------
_ROUND_INT = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def _float_int(dt: str, at: str, m: Mods) -> AluOp:
    """Float → integer: integer rounding required; the result saturates to the destination range;
    NaN → 0, or 1 << (n−1) when the source is .f64 or the destination 64-bit; ``.ftz`` flushes .f32
    subnormal inputs first."""
    irnd = m.pick(_IRND)
    if irnd is None or m.pick(_FRND):
        raise _err(f"{dt}.{at}: float → integer needs .rni/.rzi/.rmi/.rpi")
    if m.set & {"relu", "satfinite"}:
        raise _err(".relu/.satfinite do not apply to integer destinations")
    if "ftz" in m and at != "f32":
        raise _err(".ftz needs an .f32 source or destination")
    ftz = "ftz" in m
    w = _w(dt)
    dlo, dhi = _range(dt)
    nan_bits = (1 << (w - 1)) if (at == "f64" or w == 64) else 0
    dtype = np_dtype(dt)
    nan_value = np.array(nan_bits, uint_of(w)).view(dtype)  # 0-d: the NaN result's bits

    def fn(a):
        if ftz:
            a = flush(a.view(np.uint32), F32).view(np.float32)
        with np.errstate(all="ignore"):
            x = a.astype(np.float64)
        nan = np.isnan(x)
        r = _ROUND_INT[irnd](np.where(nan, 0.0, x))
        with np.errstate(invalid="ignore"):
            if dt == "u64":
                top = 2.0 ** 63
                hi = (np.clip(r, top, top * 2 - 2048) - top).astype(np.uint64) + np.uint64(1 << 63)
                v = np.where(r >= top, hi, np.clip(r, 0, top - 1024).astype(np.uint64))
                v = np.where(r >= 2.0 ** 64, np.uint64(dhi), v)
            elif dt == "s64":
                v = np.clip(r, -2.0 ** 63, 2.0 ** 63 - 1024).astype(np.int64)
                v = np.where(r >= 2.0 ** 63, np.int64(dhi), v)
            else:
                v = np.clip(r, dlo, dhi).astype(np.int64)
        return (np.where(nan, nan_value, v.astype(dtype)),)
    return AluOp(fn, (at,), (dt,))


# --- float -> float ----------------------------------------------------------------------------------------
_ORDER = {"f16": 1, "bf16": 1, "f32": 2, "f64": 3}


def _exact_widening(dt: str, at: str) -> bool:
    return (at, dt) in {("f16", "f32"), ("f16", "f64"), ("bf16", "f32"), ("bf16", "f64"), ("f32", "f64")}


def _float_float(dt: str, at: str, m: Mods) -> AluOp:
    """Float → float: same type with integer rounding (round to an integral value in the same format)
    or as a move (``.ftz``/``.sat`` only); exact widening (no rounding modifier); lossy conversions
    (narrowing, f16 ↔ bf16) with ``.rn .rz .rm .rp`` correctly rounded. ``.relu`` / ``.satfinite`` for
    f16/bf16 destinations from f32 (``.rn``/``.rz``); ``.sat`` for f16/f32/f64 destinations."""
    frnd, irnd = m.pick(_FRND), m.pick(_IRND)
    if frnd and irnd:
        raise _err("one rounding modifier at most")
    if "ftz" in m and "f32" not in (dt, at):
        raise _err(".ftz needs an .f32 source or destination")
    if "sat" in m and dt == "bf16":
        raise _err(".sat applies to .f16/.f32/.f64 destinations")
    if m.set & {"relu", "satfinite"} and not (dt in ("f16", "bf16") and at == "f32" and frnd in ("rn", "rz")):
        raise _err(".relu/.satfinite exist only as cvt.{rn,rz}{.relu}{.satfinite}.{f16,bf16}.f32")
    dfmt, afmt = _FMT[dt], _FMT[at]
    ftz, sat, relu, satf = "ftz" in m, "sat" in m, "relu" in m, "satfinite" in m
    if dt == at:
        if frnd:
            raise _err(f"{dt}.{at}: float rounding is illegal without loss of precision "
                       "(use .rni/.rzi/.rmi/.rpi to round to an integer)")

        def fn(a):
            b = a.view(afmt.udtype)
            if ftz:
                b = flush(b, afmt)
            if irnd:
                with np.errstate(all="ignore"):
                    x = _ROUND_INT[irnd](b.view(afmt.dtype).astype(np.float64))
                    b = x.astype(afmt.dtype).view(afmt.udtype) if afmt is not F64 else x.view(np.uint64)
            return (_finish(b.copy(), dfmt, ftz, sat).view(dfmt.dtype),)
        return AluOp(fn, (at,), (dt,))
    if irnd:
        raise _err(f"{dt}.{at}: integer rounding needs the same source and destination type")
    if _exact_widening(dt, at):
        if frnd:
            raise _err(f"{dt}.{at}: a widening conversion is exact and takes no rounding modifier")

        if (at, dt) == ("bf16", "f32") and not sat and not ftz:
            # bf16 is the high half of an f32: the H200 widens by a 16-bit shift, NaN payloads (signalling ones
            # too) and signs kept bit for bit (data/l01/cvt_bits, all 254 bf16 NaNs); f16 → f32 gives the
            # canonical NaN instead (same dataset)
            def widen_bf16(a):
                return ((a.view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32),)
            return AluOp(widen_bf16, (at,), (dt,))

        def fn(a):
            b = a.view(afmt.udtype)
            if ftz and afmt is F32:
                b = flush(b, afmt)
            with np.errstate(invalid="ignore"):
                y = b.view(afmt.dtype).astype(dfmt.dtype)
            return (_finish(y.view(dfmt.udtype), dfmt, ftz, sat).view(dfmt.dtype),)
        return AluOp(fn, (at,), (dt,))
    if frnd is None or frnd == "rna":
        raise _err(f"{dt}.{at}: a conversion that can lose precision needs .rn/.rz/.rm/.rp")

    def fn(a):
        b = a.view(afmt.udtype)
        if ftz and afmt is F32:
            b = flush(b, afmt)
        with np.errstate(all="ignore"):
            if frnd == "rn":   # NumPy / ml_dtypes narrowing casts are single round-to-nearest-even steps
                rb = b.view(afmt.dtype).astype(dfmt.dtype).view(dfmt.udtype)
            else:
                x = b.view(afmt.dtype).astype(np.float64)
                rb = round_pair(x, np.zeros_like(x), dfmt, frnd)
        return (_finish(rb, dfmt, ftz, sat, relu, satf).view(dfmt.dtype),)
    return AluOp(fn, (at,), (dt,))


# --- tf32, f16x2/bf16x2 and FP8 ----------------------------------------------------------------------------
def _tf32(dt: str, at: str, m: Mods) -> AluOp:
    """``cvt.rna{.satfinite}.tf32.f32`` (ties away from zero) and ``cvt.{rn,rz}{.satfinite}{.relu}.tf32.f32``:
    an f32 bit pattern with the low 13 bits cleared after rounding; ``.satfinite`` turns ±∞ into ±0x7F7FE000.

    NaN inputs, as the H200 converts them (``data/l01/cvt_bits``, every NaN class of both signs; the PTX ISA
    only says "NaN"): ``.rna`` keeps the pattern with its low 13 bits cleared — no rounding, no quieting, so a
    NaN whose payload lies in those bits comes out as ±∞; ``.rna.satfinite`` clears the low 13 bits and then
    subtracts one tf32 ulp (0x2000), the same step that turns ∞ into the largest finite value; ``.rn`` gives
    0x7FFFE000 for every NaN. ``.rz`` and ``.rn.satfinite`` were not measured: [model] 0x7FFFE000 like ``.rn``."""
    if at != "f32":
        raise _err(".tf32 converts from .f32 only")
    mode = m.pick(_FRND)
    if mode not in ("rna", "rn", "rz") or m.pick(_IRND) or m.set & {"ftz", "sat"}:
        raise _err("tf32 conversions are cvt.rna{.satfinite} or cvt.{rn,rz}{.satfinite}{.relu}")
    if mode == "rna" and "relu" in m:
        raise _err("cvt.rna.tf32.f32 has no .relu")
    satf, relu = "satfinite" in m, "relu" in m
    mask = np.uint32(0xFFFFE000)

    def fn(a):
        b = a.view(np.uint32)
        if mode == "rna":
            r = (b + np.uint32(0x1000)) & mask
        elif mode == "rn":
            r = (b + np.uint32(0xFFF) + ((b >> np.uint32(13)) & np.uint32(1))) & mask
        else:
            r = b & mask
        nan = is_nan_bits(b, F32)
        if mode == "rna":
            r = np.where(nan, (b & mask) - np.uint32(0x2000) if satf else b & mask, r)
        else:
            r = np.where(nan, np.uint32(0x7FFFE000), r)
        if satf:
            r = np.where(((r & np.uint32(0x7FFFFFFF)) == np.uint32(0x7F800000)) & ~nan,
                         (r & np.uint32(0x80000000)) | np.uint32(0x7F7FE000), r)
        if relu:
            r = np.where(((r & np.uint32(0x80000000)) != 0) & ~is_nan_bits(r, F32), np.uint32(0), r)
        return (r.astype(np.uint32, copy=False),)
    return AluOp(fn, ("f32",), ("tf32",))


def _pack_half(dt: str, at: str, m: Mods) -> AluOp:
    """``cvt.{rn,rz}{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b``: d[31:16] = cvt(a), d[15:0] = cvt(b)."""
    if at != "f32":
        raise _err(f".{dt} packs two .f32 sources")
    mode = m.pick(_FRND)
    if mode not in ("rn", "rz") or m.pick(_IRND) or m.set & {"ftz", "sat"}:
        raise _err(f"cvt.{{rn,rz}}{{.relu}}{{.satfinite}}.{dt}.f32 is the only packing form")
    fmt = F16 if dt == "f16x2" else BF16
    relu, satf = "relu" in m, "satfinite" in m

    def one(x):
        with np.errstate(all="ignore"):
            if mode == "rn":
                rb = x.astype(fmt.dtype).view(fmt.udtype)
            else:
                x64 = x.astype(np.float64)
                rb = round_pair(x64, np.zeros_like(x64), fmt, mode)
        return _finish(rb, fmt, relu=relu, satfinite=satf).astype(np.uint32)

    def fn(a, b):
        return ((one(a) << np.uint32(16)) | one(b),)
    return AluOp(fn, ("f32", "f32"), (dt,))


def _fp8_encode(x: np.ndarray, dt: str, relu: bool) -> np.ndarray:
    """One FP8 byte per lane from binary32 values: clamp to ±MAX_NORM (``.satfinite``), round to nearest
    even with ml_dtypes, NaN → 0x7F, ``.relu`` → +0 for negatives."""
    dtype, mx = _FP8[dt]
    with np.errstate(all="ignore"):
        code = np.clip(x, -mx, mx).astype(dtype).view(np.uint8)
    nan = np.isnan(x)
    code = np.where(nan, np.uint8(0x7F), code)
    if relu:
        code = np.where(((code & np.uint8(0x80)) != 0) & ~nan, np.uint8(0), code)
    return code.astype(np.uint16)


def _fp8(dt: str, at: str, m: Mods) -> AluOp:
    """``cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b`` (d[15:8] = cvt(a), d[7:0] = cvt(b)) and
    ``….{e4m3x2,e5m2x2}.f16x2 d, a`` (upper half → upper byte)."""
    if at not in ("f32", "f16x2"):
        raise _err(f".{dt} converts from .f32 pairs or .f16x2 on sm_90 (.bf16x2 sources need sm_100+)")
    if m.pick(_FRND) != "rn" or "satfinite" not in m or m.set - {"rn", "satfinite", "relu"}:
        raise _err(f"cvt.rn.satfinite{{.relu}}.{dt}.{at}: .rn and .satfinite are mandatory")
    relu = "relu" in m
    if at == "f32":
        def fn(a, b):
            return ((_fp8_encode(a, dt, relu) << np.uint16(8)) | _fp8_encode(b, dt, relu),)
        return AluOp(fn, ("f32", "f32"), (dt,))

    def fn(a):
        with np.errstate(all="ignore"):
            lo = (a & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float32)
            hi = (a >> np.uint32(16)).astype(np.uint16).view(np.float16).astype(np.float32)
        return ((_fp8_encode(hi, dt, relu) << np.uint16(8)) | _fp8_encode(lo, dt, relu),)
    return AluOp(fn, ("f16x2",), (dt,))


def _fp8_decode(dt: str, at: str, m: Mods) -> AluOp:
    """``cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a``: each byte decoded exactly to f16, low byte → low
    half; NaN → 0x7FFF, ``.relu`` → +0 for negatives."""
    if dt != "f16x2":
        raise _err(f".{at} decodes to .f16x2 only")
    if m.pick(_FRND) != "rn" or m.set - {"rn", "relu"}:
        raise _err(f"cvt.rn{{.relu}}.f16x2.{at}: .rn is mandatory")
    dtype, _ = _FP8[at]
    relu = "relu" in m

    def half(byte):
        with np.errstate(all="ignore"):
            h = byte.view(dtype).astype(np.float32).astype(np.float16).view(np.uint16)
        return _finish(h, F16, relu=relu).astype(np.uint32)

    def fn(a):
        lo = (a & np.uint16(0xFF)).astype(np.uint8)
        hi = (a >> np.uint16(8)).astype(np.uint8)
        return ((half(hi) << np.uint32(16)) | half(lo),)
    return AluOp(fn, (at,), ("f16x2",))


def build(opcode: str, mods: tuple, types: tuple) -> AluOp:
    """The :class:`AluOp` of ``cvt{mods}.dtype.atype`` (types in PTX order: destination first)
    [PTX ISA §9.7.9.21]."""
    if len(types) != 2:
        raise _err(f"cvt takes .dtype.atype, got {'.'.join(types) or 'no types'}")
    dt, at = types
    m = Mods("cvt", mods, _ALL, _WHERE)
    if m.pick(_FRND) and m.pick(_IRND):
        raise _err("float and integer rounding modifiers exclude each other")
    if dt in _INTS and at in _INTS:
        return _int_int(dt, at, m)
    if dt in _FLTS and at in _INTS:
        return _int_float(dt, at, m)
    if dt in _INTS and at in _FLTS:
        return _float_int(dt, at, m)
    if dt in _FLTS and at in _FLTS:
        return _float_float(dt, at, m)
    if dt == "tf32":
        return _tf32(dt, at, m)
    if dt in ("f16x2", "bf16x2") and at not in _FP8:
        return _pack_half(dt, at, m)
    if dt in _FP8:
        return _fp8(dt, at, m)
    if at in _FP8:
        return _fp8_decode(dt, at, m)
    raise _err(f"no conversion .{dt}.{at} on sm_90 (integers, f16, bf16, f32, f64, tf32, "
               ".f16x2/.bf16x2 packing and .e4m3x2/.e5m2x2)")
