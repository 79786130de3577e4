"""What one ``wgmma.mma_async`` computes, bit for bit: ``D = A·B + C`` with the tensor core's own rounding.

PTX ISA §9.7.15.5.2 ``wgmma.mma_async`` leaves the floating-point accumulation unspecified (products "at
least single precision", order, rounding and subnormals unspecified). The model here is the one
reverse-engineered and validated for Hopper by MMA-Sim (Microsoft, ``mmasim/simulator/arithmetic.py``
``fused_sum``/``nv_fused_dot_add``, re-implemented, not copied) and confirmed on an H200 by the probes in
hopper-spec-facts §10.4:

1. every product ``a_k·b_k`` is exact; its exponent is ``e_a + e_b`` (each input's exponent with the
   significand in [1, 2); a subnormal has the format's minimum exponent, a zero :attr:`AccumulatorModel.
   zero_exponent`), so a product's significand lies in [0, 4);
2. the K products and C (one more term; a zero C when ``scale-d`` is false) are aligned to the **largest**
   term exponent ``E``; each term is cut to :attr:`~AccumulatorModel.align_bits` fractional bits below
   ``2^E`` — truncated toward zero (:attr:`~AccumulatorModel.rounding` ``"rz"``) — and the cut terms are added
   exactly;
3. the sum is normalised and rounded once to D: f32 toward zero to 23 fraction bits (13 — "e8m13" — for
   fp8 inputs), f16 to nearest even; subnormal results kept; a zero sum is +0;
4. a NaN anywhere, or ``inf - inf``, gives the canonical NaN (0x7FFFFFFF / 0x7FFF); otherwise an infinite
   term gives an infinity of its sign.

Defaults (:func:`default_model`): ``align_bits`` 25 for f16/bf16/tf32 inputs, 13 for e4m3/e5m2 (DeepSeek-V3
§3.3.2's "about 14 bits" = 13 fraction bits + the leading bit). tf32 inputs lose their low 13 bits (PTX). The
integer forms are exact: ``.s8``/``.u8`` products summed into s32 with two's-complement wrap-around
(``.satfinite``: clamped to the s32 range), ``.b1`` ``.and.popc``: ``C + popc(a & b)`` with wrap-around.

[to be measured] by ``h100lab.measure.l06`` (numerics probe, ≥ 10,000 random outputs per type combination
plus edge cases): the exponent of a zero input, the sign of a zero result (-0 + -0 products), the f32 overflow
(RZ should saturate to the largest finite value; MMA-Sim produces inf), whether a false ``scale-d`` still
feeds a zero term, and ``.satfinite`` on intermediate sums.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shapes import FLOAT_INPUTS, INT_INPUTS, WgmmaError

__all__ = ["AccumulatorModel", "default_model", "mma", "decode", "FORMATS", "to_float", "from_float", "error_bound"]

#: raw format parameters: (total bits, exponent bits, fraction bits, bias, has infinity)
FORMATS = {
    "f32": (32, 8, 23, 127, True), "tf32": (32, 8, 23, 127, True), "f16": (16, 5, 10, 15, True),
    "bf16": (16, 8, 7, 127, True), "e4m3": (8, 4, 3, 7, False), "e5m2": (8, 5, 2, 15, True),
}
_RAW = {8: np.uint8, 16: np.uint16, 32: np.uint32}


@dataclass(frozen=True)
class AccumulatorModel:
    """Parameters of the fused multi-term addition (module docstring).

    ``align_bits``: fractional bits kept below the largest term's exponent; ``rounding``: how each aligned term
    is cut, ``"rz"`` (toward zero) or ``"rd"`` (toward -inf); ``f32_bits``: fraction bits of an f32 result
    (23, or 13 for fp8 inputs); ``f32_rounding``: ``"rz"`` or ``"rne"``; ``f16_rounding``: ``"rne"`` or ``"rz"``;
    ``zero_exponent``: the exponent a zero input or zero C contributes (measured: none — a product with a zero
    factor does not take part in the alignment, data/l07/sparse_meta and l07/zero_align; the default puts it
    far below any real term); ``zero_sign``: sign of an exact-zero
    sum, ``"+"`` or ``"ieee"`` (-0 only when every term is -0); ``overflow``: ``"inf"`` or ``"saturate"``."""

    align_bits: int = 25
    rounding: str = "rz"
    f32_bits: int = 23
    f32_rounding: str = "rz"
    f16_rounding: str = "rne"
    zero_exponent: int = -(1 << 20)
    zero_sign: str = "+"
    overflow: str = "inf"

    def __post_init__(self):
        if self.rounding not in ("rz", "rd") or self.f32_rounding not in ("rz", "rne") or \
                self.f16_rounding not in ("rne", "rz") or self.zero_sign not in ("+", "ieee") or \
                self.overflow not in ("inf", "saturate"):
            raise ValueError(f"unknown option in {self}")
        if not 1 <= self.align_bits <= 40 or not 1 <= self.f32_bits <= 23:
            raise ValueError("align_bits must be 1..40 and f32_bits 1..23")


def default_model(atype: str, dtype: str = "f32") -> AccumulatorModel:
    """The literature's Hopper model for inputs ``atype`` and D type ``dtype`` (module docstring)."""
    if atype in ("e4m3", "e5m2"):
        return AccumulatorModel(align_bits=13, f32_bits=13)
    return AccumulatorModel()


def decode(raw, fmt: str):
    """Raw bits of format ``fmt`` → (sign ±1 int64, integer significand, exponent e (significand read in [1,2)),
    scale q (value = sign·sig·2^q), float64 value, is-NaN). tf32 inputs drop their low 13 bits (PTX §9.7.15.3)."""
    nb, eb, fb, bias, has_inf = FORMATS[fmt]
    r = np.asarray(raw).astype(np.uint64)
    if fmt == "tf32":
        r = r & np.uint64(0xFFFFE000)
    sign = np.where((r >> np.uint64(nb - 1)) & np.uint64(1), -1, 1).astype(np.int64)
    E = ((r >> np.uint64(fb)) & np.uint64((1 << eb) - 1)).astype(np.int64)
    F = (r & np.uint64((1 << fb) - 1)).astype(np.int64)
    emin = 1 - bias
    sig = np.where(E == 0, F, F | (1 << fb))
    e = np.where(E == 0, emin, E - bias)
    q = e - fb
    emax_field = (1 << eb) - 1
    if fmt == "e4m3":
        nan = (E == emax_field) & (F == (1 << fb) - 1)
        inf = np.zeros_like(nan)
    else:
        nan = (E == emax_field) & (F != 0)
        inf = (E == emax_field) & (F == 0)
    with np.errstate(over="ignore", invalid="ignore"):
        val = sign * np.ldexp(sig.astype(np.float64), q.astype(np.int32))
    val = np.where(inf, sign * np.inf, val)
    val = np.where(nan, np.nan, val)
    return sign, sig, e, q, val, nan, inf


def to_float(raw, fmt: str) -> np.ndarray:
    """Raw bits → float64 values (tf32 truncated as the tensor core reads it)."""
    return decode(raw, fmt)[4]


def from_float(x, fmt: str) -> np.ndarray:
    """float values → raw bits of ``fmt`` (round to nearest even; fp8 with ml_dtypes' saturation rules)."""
    x = np.asarray(x, np.float64)
    if fmt in ("f32", "tf32"):
        return x.astype(np.float32).view(np.uint32)
    if fmt == "f16":
        return x.astype(np.float16).view(np.uint16)
    import ml_dtypes
    t = {"bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}[fmt]
    return x.astype(t).view(_RAW[FORMATS[fmt][0]])


def _cut(mant: np.ndarray, shift: np.ndarray, rounding: str) -> np.ndarray:
    """mant · 2^shift cut to an integer (toward zero or toward -inf)."""
    up = np.clip(shift, 0, 62)
    down = np.clip(-shift, 0, 63)
    a = np.abs(mant)
    left = a << up
    if rounding == "rz":
        right = a >> down
        return np.where(shift >= 0, mant.clip(-1, 1) * left, np.sign(mant) * right)
    right = np.where(mant >= 0, a >> down, -((a + (np.int64(1) << down) - 1) >> down))
    right = np.where(down >= 63, np.where(mant < 0, -1, 0), right)
    return np.where(shift >= 0, np.sign(mant) * left, right)


def _round_to(val: np.ndarray, frac_bits: int, emin: int, mode: str) -> np.ndarray:
    """float64 ``val`` rounded to ``frac_bits`` fraction bits with exponent ≥ ``emin`` (subnormals kept)."""
    m, e = np.frexp(val)
    ee = np.maximum(e - 1, emin)
    scaled = np.ldexp(val, (frac_bits - ee).astype(np.int32))
    r = np.trunc(scaled) if mode == "rz" else np.rint(scaled)
    return np.ldexp(r, (ee - frac_bits).astype(np.int32))


def mma(a, b, c=None, *, atype: str, btype: str | None = None, dtype: str = "f32", scale_d: bool = True,
        scale_a: int = 1, scale_b: int = 1, satfinite: bool = False, model: AccumulatorModel | None = None):
    """``D = A·B + C`` of one wgmma (PTX ISA §9.7.15.5.2), on raw bits.

    ``a``: (M, K) raw A elements (uint16 f16/bf16, uint32 tf32, uint8 fp8/s8/u8, 0/1 for b1); ``b``: (K, N);
    ``c``: (M, N) raw D-type bits (uint32 f32/s32, uint16 f16) or None (zeros); ``scale_d`` False ignores C;
    ``scale_a``/``scale_b`` = -1 negate A/B. Returns (M, N) raw D bits."""
    btype = atype if btype is None else btype
    a = np.asarray(a)
    b = np.asarray(b)
    M, K = a.shape
    K2, N = b.shape
    if K != K2:
        raise WgmmaError(f"A is {M}×{K} but B is {K2}×{N}: K must agree")
    draw = np.uint16 if dtype == "f16" else np.uint32
    if c is None or not scale_d:
        c = np.zeros((M, N), draw)
    c = np.asarray(c).astype(draw)
    if atype in INT_INPUTS or atype == "b1":
        if dtype != "s32":
            raise WgmmaError(f".{atype} wgmma accumulates into .s32 (PTX ISA §9.7.15.3)")
        if atype == "b1":
            prod = (a.astype(np.int64)[:, :, None] & b.astype(np.int64)[None, :, :] & 1).sum(axis=1)
        else:
            av = a.astype(np.uint8).view(np.int8 if atype == "s8" else np.uint8).astype(np.int64)
            bv = b.astype(np.uint8).view(np.int8 if btype == "s8" else np.uint8).astype(np.int64)
            prod = av @ bv
        tot = c.view(np.int32).astype(np.int64) + prod
        if satfinite:
            tot = np.clip(tot, -2**31, 2**31 - 1)
        return (tot & 0xFFFFFFFF).astype(np.uint32)
    if atype not in FLOAT_INPUTS:
        raise WgmmaError(f"unknown A type .{atype}")
    model = model or default_model(atype, dtype)
    sa, ma, ea, qa, va, na, _ = decode(a, atype)
    sb, mb, eb, qb, vb, nb_, _ = decode(b, btype)
    cf = "f16" if dtype == "f16" else "f32"
    sc, mc, ec, qc, vc, nc, _ = decode(c, cf)
    sa = sa * scale_a
    sb = sb * scale_b
    ea = np.where(ma == 0, model.zero_exponent, ea)
    eb = np.where(mb == 0, model.zero_exponent, eb)
    ec = np.where(mc == 0, model.zero_exponent, ec)
    # exactness / specials in float64 (products of these formats are exact there)
    with np.errstate(invalid="ignore", over="ignore"):
        pv = (va * scale_a)[:, :, None] * (vb * scale_b)[None, :, :]          # (M, K, N)
        tot = pv.sum(axis=1) + vc
    special_nan = np.isnan(tot)
    special_inf = np.isinf(tot)
    # terms: (M, N, K+1) integer significands, exponents, scales
    mant = (sa * ma)[:, :, None] * (sb * mb)[None, :, :]                    # (M, K, N)
    E = ea[:, :, None] + eb[None, :, :]
    Q = qa[:, :, None] + qb[None, :, :]
    mant = np.concatenate([np.moveaxis(mant, 1, 2), (sc * mc)[:, :, None]], axis=2)
    E = np.concatenate([np.moveaxis(E, 1, 2), ec[:, :, None]], axis=2)
    Q = np.concatenate([np.moveaxis(Q, 1, 2), qc[:, :, None]], axis=2)
    Emax = E.max(axis=2)
    shift = Q - Emax[:, :, None] + model.align_bits
    S = _cut(mant, shift, model.rounding).sum(axis=2)
    unit = (Emax - model.align_bits).astype(np.int32)
    val = np.ldexp(S.astype(np.float64), unit)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "f16":
            r = _round_to(val, 10, -14, model.f16_rounding)
            if model.overflow == "saturate":
                r = np.clip(r, -65504.0, 65504.0)
            out = r.astype(np.float16).view(np.uint16)
            nan_bits, neg_zero = np.uint16(0x7FFF), np.uint16(0x8000)
            infs = np.where(tot > 0, np.float16(np.inf), np.float16(-np.inf)).view(np.uint16)
        else:
            r = _round_to(val, model.f32_bits, -126, model.f32_rounding)
            if model.overflow == "saturate":
                big = float(np.finfo(np.float32).max)
                r = np.clip(r, -big, big)
            out = r.astype(np.float32).view(np.uint32)
            nan_bits, neg_zero = np.uint32(0x7FFFFFFF), np.uint32(0x80000000)
            infs = np.where(tot > 0, np.float32(np.inf), np.float32(-np.inf)).view(np.uint32)
    if model.zero_sign == "ieee":
        negz = (S == 0) & (np.signbit(pv).all(axis=1)) & np.signbit(vc)
        out = np.where(negz, neg_zero, out)
    out = np.where(special_inf, infs, out)
    out = np.where(special_nan, nan_bits, out)
    return out.astype(draw)


def error_bound(a, b, c, *, atype: str, btype: str | None = None, dtype: str = "f32",
                model: AccumulatorModel | None = None) -> np.ndarray:
    """An upper bound on |model - exact| for finite inputs: (K + 1) units of 2^(E - align_bits) for the cut
    terms plus one unit in the last place of the result's rounding (2^(e - f32_bits) or half of 2^(e - 10))."""
    btype = atype if btype is None else btype
    model = model or default_model(atype, dtype)
    _, ma, ea, *_ = decode(a, atype)
    _, mb, eb, *_ = decode(b, btype)
    cf = "f16" if dtype == "f16" else "f32"
    _, mc, ec, _, vc, *_ = decode(np.asarray(c), cf)
    ea = np.where(ma == 0, model.zero_exponent, ea)
    eb = np.where(mb == 0, model.zero_exponent, eb)
    ec = np.where(mc == 0, model.zero_exponent, ec)
    E = np.maximum((ea[:, :, None] + eb[None, :, :]).max(axis=1), ec)
    K = np.asarray(a).shape[1]
    va, vb = to_float(a, atype), to_float(b, btype)
    exact = va @ vb + vc
    cut = (K + 1) * np.ldexp(1.0, (E - model.align_bits).astype(np.int32))
    mag = np.abs(exact) + cut
    e = np.maximum(np.frexp(mag)[1] - 1, -126 if dtype != "f16" else -14)
    bits = model.f32_bits if dtype != "f16" else 10
    return cut + np.ldexp(1.0, (e - bits).astype(np.int32))
