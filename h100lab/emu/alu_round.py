"""Exact IEEE-754 rounding for the emulator's floating-point instructions, vectorised over lanes.

PTX requires correctly rounded results for every instruction with a rounding modifier: ``.rn`` (to
nearest, ties to even), ``.rz`` (toward zero), ``.rm`` (toward −∞), ``.rp`` (toward +∞)
[PTX ISA §9.7.3 "Instructions that support rounding modifiers are IEEE-754 compliant"]. NumPy only
rounds to nearest, so this module derives every mode from error-free transforms in binary64:

* an exact value ``x`` is carried as a pair ``(s, e)`` of doubles with ``s = RN64(x)`` and
  ``x = s + e`` exactly — :func:`two_sum` (Knuth) for sums, :func:`two_prod` (Dekker/Veltkamp) for
  products;
* rounding ``x`` to a narrower format goes through *round-to-odd* (Boldo & Melquiond 2008): the f64
  round-to-odd of ``x`` rounded to nearest in any format of at most 51 bits of precision equals
  ``RN(x)`` — no double-rounding error (:func:`round_to_odd`);
* a directed mode takes the nearest result ``r`` and steps it one unit toward the rounding direction
  when the exact sign of ``r − x`` says it lies on the wrong side (:func:`step_bits`).

Lanes where an error-free transform could overflow or underflow take an exact per-lane path through
``fractions.Fraction`` (:func:`round_fraction`). Formats are described by :class:`Fmt`.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

try:
    import ml_dtypes as _ml
    _BF16 = np.dtype(_ml.bfloat16)
except ImportError:  # pragma: no cover - declared dependency
    _BF16 = None

__all__ = ["Fmt", "F16", "BF16", "F32", "F64", "FMTS", "two_sum", "two_prod", "round_to_odd", "step_bits",
           "round_pair", "round_pair64", "round_fraction", "flush", "is_nan_bits", "canon_nan",
           "quiet64", "MODES"]

MODES = ("rn", "rz", "rm", "rp")


@dataclass(frozen=True)
class Fmt:
    """An IEEE binary format: ``p`` significand bits (hidden bit included), exponent range
    ``[emin, emax]`` of normal numbers, and ``qnan``, the NaN bits the emulator writes for it.

    Canonical NaNs [PTX ISA §9.7.3 and §9.7.4: single- and half-precision instructions "return an
    unspecified NaN"]: the emulator writes NVIDIA's canonical NaN, 0x7FFFFFFF for f32 and 0x7FFF for f16
    and bf16 (the value the PTX manual itself names for ``rcp.approx.ftz.f64``'s high word). f64
    instructions support NaN payloads [§9.7.3]; an invalid f64 operation with no NaN input writes
    0x7FFFFFFFFFFFFFFF ([model] hardware value not measured)."""

    name: str
    dtype: np.dtype
    udtype: np.dtype
    width: int
    p: int
    emin: int
    emax: int
    qnan: int

    @property
    def sign(self) -> int:
        return 1 << (self.width - 1)

    @property
    def exp_mask(self) -> int:
        return ((1 << (self.width - self.p)) - 1) << (self.p - 1)

    @property
    def inf(self) -> int:
        return self.exp_mask

    @property
    def max_bits(self) -> int:
        return self.exp_mask - 1

    @property
    def max_value(self) -> float:
        return float(np.array(self.max_bits, self.udtype).view(self.dtype))

    @property
    def min_normal(self) -> float:
        return 2.0 ** self.emin


F16 = Fmt("f16", np.dtype(np.float16), np.dtype(np.uint16), 16, 11, -14, 15, 0x7FFF)
BF16 = Fmt("bf16", _BF16, np.dtype(np.uint16), 16, 8, -126, 127, 0x7FFF)
F32 = Fmt("f32", np.dtype(np.float32), np.dtype(np.uint32), 32, 24, -126, 127, 0x7FFFFFFF)
F64 = Fmt("f64", np.dtype(np.float64), np.dtype(np.uint64), 64, 53, -1022, 1023, 0x7FFFFFFFFFFFFFFF)
FMTS = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}


# --- bit-level helpers -----------------------------------------------------------------------------
def is_nan_bits(b: np.ndarray, fmt: Fmt) -> np.ndarray:
    """NaN test on raw bits (exponent all ones, mantissa non-zero)."""
    return (b & fmt.udtype.type(fmt.sign - 1)) > fmt.udtype.type(fmt.inf)


def canon_nan(b: np.ndarray, fmt: Fmt) -> np.ndarray:
    """Replace every NaN by the format's canonical NaN (see :class:`Fmt`)."""
    return np.where(is_nan_bits(b, fmt), fmt.udtype.type(fmt.qnan), b)


def flush(b: np.ndarray, fmt: Fmt) -> np.ndarray:
    """``.ftz``: subnormal values (exponent field 0, mantissa ≠ 0) become a zero of the same sign
    [PTX ISA §9.7.3: "flushes subnormal inputs and results to sign-preserving zero"]. Raw bits in/out."""
    u = fmt.udtype.type
    sub = (b & u(fmt.exp_mask)) == 0
    return np.where(sub, b & u(fmt.sign), b)


def quiet64(b: np.ndarray) -> np.ndarray:
    """Quiet an f64 NaN's bits (set the quiet bit 51, keep sign and payload)."""
    return b | np.uint64(1 << 51)


def step_bits(b: np.ndarray, up: np.ndarray, down: np.ndarray, fmt: Fmt) -> np.ndarray:
    """Move raw IEEE bits one representable value toward +∞ where ``up`` and toward −∞ where ``down``
    (sign-magnitude: ±0 step to ±min-subnormal, ±∞ toward zero step to ±max)."""
    u = fmt.udtype.type
    neg = (b & u(fmt.sign)) != 0
    zero = (b & u(fmt.sign - 1)) == 0
    inc = ((up & ~neg) | (down & neg)) & ~zero
    dec = ((up & neg) | (down & ~neg)) & ~zero
    out = np.where(inc, b + u(1), b)
    out = np.where(dec, b - u(1), out)
    out = np.where(up & zero, u(1), out)
    out = np.where(down & zero, u(fmt.sign | 1), out)
    return out.astype(fmt.udtype, copy=False)


# --- error-free transforms (binary64) ---------------------------------------------------------------
def two_sum(a: np.ndarray, b: np.ndarray):
    """``(s, e)`` with ``s = RN(a + b)`` and ``a + b = s + e`` exactly (Knuth; no overflow)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


_SPLITTER = 134217729.0  # 2**27 + 1 (Veltkamp)


def _split(a: np.ndarray):
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a: np.ndarray, b: np.ndarray):
    """``(p, e)`` with ``p = RN(a·b)`` and ``a·b = p + e`` exactly (Dekker). Exact while |a|, |b| < 2^995
    and |a·b| > 2^-969 (callers route other lanes to :func:`round_fraction`)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def round_to_odd(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The f64 round-to-odd of the exact value ``s + e`` (``s = RN(s + e)``, both finite): ``s`` if
    exact or odd, else the neighbour of ``s`` on ``e``'s side (which is odd). Integer steps on the bit
    pattern: toward e's side is one unit more magnitude when e and s share a sign."""
    sb = s.view(np.int64)
    fix = (e != 0) & ((sb & 1) == 0) & np.isfinite(e)
    if not fix.any():
        return s
    step = np.where((e > 0) == (s > 0), 1, -1)
    return (sb + np.where(fix, step, 0)).view(np.float64)


def _sign_diff(r64: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """An array whose sign is the sign of ``r − (s + e)`` (exact: ``r − s`` is exact for r close to s)."""
    return (r64 - s) - e


def _direct(rb: np.ndarray, c: np.ndarray, neg_x: np.ndarray, fmt: Fmt, mode: str) -> np.ndarray:
    """Turn the nearest result's bits ``rb`` into the ``mode`` result given ``c`` ~ sign(r − x)."""
    if mode == "rn":
        return rb
    if mode == "rz":
        away = ((c > 0) & ~neg_x) | ((c < 0) & neg_x)
        return step_bits(rb, away & neg_x, away & ~neg_x, fmt)
    if mode == "rm":
        return step_bits(rb, np.zeros_like(c, bool), c > 0, fmt)
    if mode == "rp":
        return step_bits(rb, c < 0, np.zeros_like(c, bool), fmt)
    raise ValueError(mode)


def round_pair(s: np.ndarray, e: np.ndarray, fmt: Fmt, mode: str) -> np.ndarray:
    """Raw bits of the exact value ``x = s + e`` rounded to ``fmt`` (f32, f16 or bf16) in ``mode``.

    ``s = RN64(x)``; non-finite ``s`` (∞ or NaN operands) converts as is. Nearest: the f64
    round-to-odd of ``x`` converted with NumPy's / ml_dtypes' round-to-nearest (for f16/bf16 through an
    f32 round-to-odd, 24 ≥ p + 2 bits, so still a single correct rounding). Directed modes step that
    result by the exact sign of ``r − x``."""
    with np.errstate(all="ignore"):
        fin = np.isfinite(s)
        e = np.where(fin, e, 0.0)
        neg_x = np.signbit(s)
        r32 = round_to_odd(s, e).astype(np.float32)
        if fmt is F32:
            rb = r32.view(np.uint32)
            if mode == "rn":
                return rb
            c = _sign_diff(r32.astype(np.float64), s, e)
            return _direct(rb, c, neg_x, F32, mode)
        # round-to-odd at f32 precision: truncate toward zero, then or-in a sticky lsb when inexact
        c32 = _sign_diff(r32.astype(np.float64), s, e)
        rz = _direct(r32.view(np.uint32), c32, neg_x, F32, "rz")
        ro = rz | ((c32 != 0) & fin).astype(np.uint32)
        r = ro.view(np.float32).astype(fmt.dtype)
        rb = r.view(fmt.udtype)
        if mode == "rn":
            return rb
        c = _sign_diff(r.astype(np.float64), s, e)
        return _direct(rb, c, neg_x, fmt, mode)


def round_pair64(s: np.ndarray, e: np.ndarray, mode: str) -> np.ndarray:
    """The exact value ``s + e`` (``s = RN64``) rounded to f64 in ``mode`` (no overflow handling:
    callers map ∞ from finite operands, :func:`overflow64`)."""
    if mode == "rn":
        return s.copy()
    with np.errstate(all="ignore"):
        e = np.where(np.isfinite(s), e, 0.0)
        neg_x = np.signbit(s)
        c = -e  # sign(s − x) = −sign(e)
        rb = _direct(s.view(np.uint64), c, neg_x, F64, mode)
    return rb.view(np.float64)


def overflow64(r: np.ndarray, finite_in: np.ndarray, mode: str) -> np.ndarray:
    """IEEE overflow for an f64 result ``r`` that is ∞ although every operand was finite: ``.rz`` gives
    ±max, ``.rm`` +max for positive results, ``.rp`` −max for negative ones [IEEE 754 §7.4]."""
    if mode == "rn":
        return r
    ovf = np.isinf(r) & finite_in
    if not ovf.any():
        return r
    big = np.finfo(np.float64).max
    neg = r < 0
    if mode == "rz":
        fix = ovf
    elif mode == "rm":
        fix = ovf & ~neg
    else:
        fix = ovf & neg
    return np.where(fix, np.where(neg, -big, big), r)


# --- exact per-lane path ---------------------------------------------------------------------------
def round_fraction(q: Fraction, fmt: Fmt, mode: str, neg_zero: bool = False) -> int:
    """Raw bits of the rational ``q`` rounded to ``fmt`` in ``mode`` (exact, one lane). A zero ``q``
    gives −0 when ``neg_zero``; overflow follows IEEE 754 §7.4 (``.rn`` → ±∞, ``.rz`` → ±max, …)."""
    if q == 0:
        return fmt.sign if neg_zero else 0
    neg = q < 0
    q = -q if neg else q
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1                                  # now 2^e <= q < 2^(e+1)
    qe = max(e, fmt.emin) - (fmt.p - 1)         # exponent of one unit in the last place
    num, den = (n, d << qe) if qe >= 0 else (n << -qe, d)
    m, r = divmod(num, den)
    if mode == "rn":
        if 2 * r > den or (2 * r == den and m & 1):
            m += 1
    elif mode == "rz":
        pass
    elif (mode == "rp") != neg:                 # rounding away from zero: rp for +, rm for -
        if r:
            m += 1
    if m == 1 << fmt.p:                         # carried into the next binade
        m >>= 1
        qe += 1
    sign = fmt.sign if neg else 0
    if qe + fmt.p - 1 > fmt.emax:               # overflow
        to_inf = mode == "rn" or (mode == "rp" and not neg) or (mode == "rm" and neg)
        return sign | (fmt.inf if to_inf else fmt.max_bits)
    if m < 1 << (fmt.p - 1):                    # subnormal (or zero after rounding)
        return sign | m
    biased = qe + fmt.p - 1 - fmt.emin + 1
    return sign | (biased << (fmt.p - 1)) | (m - (1 << (fmt.p - 1)))


def is_safe64(x: np.ndarray, lo: int = -500, hi: int = 500) -> np.ndarray:
    """Lanes whose magnitude is zero or inside [2^lo, 2^hi) (error-free transforms cannot overflow or
    underflow there), read from the biased exponent field."""
    ex = (x.view(np.uint64) >> _U52) & _EXP
    return ((ex >= np.uint64(1023 + lo)) & (ex < np.uint64(1023 + hi))) | (x == 0)


_U52, _EXP = np.uint64(52), np.uint64(0x7FF)
