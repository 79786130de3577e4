"""Floating-point instructions (.f32, .f64, .f16/.f16x2, .bf16/.bf16x2), bit-exact where PTX is exact.

* ``add sub mul fma mad div rcp sqrt`` with ``.rn .rz .rm .rp`` are correctly rounded in every mode
  (IEEE 754, PTX ISA §9.7.3): f32/f16/bf16 from the exact binary64 pair of :mod:`.alu_round`; f64 from
  error-free transforms with an exact ``fractions`` path for lanes near the ends of the exponent range.
* ``.ftz`` flushes subnormal inputs and results to sign-preserving zero (results after rounding);
  ``.sat`` clamps to [+0, 1] with NaN → +0 (−0 → +0); ``.relu`` maps negative results (−0 included)
  to +0 and NaN to the canonical NaN [PTX ISA §9.7.3, §9.7.4, §9.7.9.21].
* NaN results: f32 0x7FFFFFFF, f16/bf16 0x7FFF (NVIDIA's canonical NaNs; PTX: "unspecified NaN");
  f64 propagates the first NaN operand's payload, quieted, and writes 0x7FFFFFFFFFFFFFFF for invalid
  operations ([model] PTX §9.7.3 "NaN payloads are supported for double-precision instructions"; which
  operand's payload the hardware keeps is not measured).
* ``.approx`` / ``.full`` instructions (``sin cos lg2 ex2 tanh rsqrt``, ``rcp/sqrt/div.approx``,
  ``div.full``) are **[model] within the PTX-stated ulp bound, not bit-exact**: the emulator returns the
  correctly rounded value of the exact function (or the documented approximation, e.g. ``div.approx``
  = a × (1/b)); the hardware's tables are not public.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .alu_core import SEC, AluError, AluOp, Mods
from .alu_round import (BF16, F16, F32, F64, Fmt, canon_nan, flush, is_nan_bits, is_safe64, overflow64,
                        quiet64, round_fraction, round_pair, round_pair64, round_to_odd, two_prod,
                        two_sum)
from .alu_round import _direct  # noqa: PLC2701  (shared internal helper)

__all__ = ["build", "OPCODES", "APPROX"]

_FMTS = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64, "f16x2": F16, "bf16x2": BF16}
_RND = ("rn", "rz", "rm", "rp")
APPROX = frozenset({"sin", "cos", "lg2", "ex2", "tanh", "rsqrt"})


# --- lane plumbing -----------------------------------------------------------------------------------
def _wrap(t: str, bits_fn):
    """Turn ``bits_fn(*raw_bits) -> raw_bits`` into an AluOp ``fn`` for scalar type ``t`` (arrays of
    the float dtype) or packed ``.f16x2``/``.bf16x2`` (uint32: element 0 in the low half)."""
    fmt = _FMTS[t]
    if t.endswith("x2"):
        m16, s16 = np.uint32(0xFFFF), np.uint32(16)

        def fn(*xs):
            lo = bits_fn(*[(x & m16).astype(np.uint16) for x in xs])
            hi = bits_fn(*[(x >> s16).astype(np.uint16) for x in xs])
            return (lo.astype(np.uint32) | (hi.astype(np.uint32) << s16),)
    else:
        def fn(*xs):
            return (np.asarray(bits_fn(*[x.view(fmt.udtype) for x in xs])).view(fmt.dtype),)
    return fn


def _vals(b: np.ndarray, fmt: Fmt) -> np.ndarray:
    if fmt is not BF16:
        return b.view(fmt.dtype).astype(np.float64)
    with np.errstate(all="ignore"):  # ml_dtypes warns on NaN casts
        return b.view(fmt.dtype).astype(np.float64)


def _post(rb: np.ndarray, fmt: Fmt, ftz=False, sat=False, relu=False) -> np.ndarray:
    """Canonical NaN, then ``.ftz`` on the result, then ``.sat`` or ``.relu`` (raw bits)."""
    u = fmt.udtype.type
    if is_nan_bits(rb, fmt).any():
        rb = canon_nan(rb, fmt)
    if ftz:
        rb = flush(rb, fmt)
    if sat or relu:
        nan = is_nan_bits(rb, fmt)
        neg = (rb & u(fmt.sign)) != 0
        if sat:
            one = np.array(1.0, fmt.dtype).view(fmt.udtype)
            big = (rb & u(fmt.sign - 1)) > one
            rb = np.where(nan | neg, u(0), np.where(big, one, rb))
        else:
            rb = np.where(neg & ~nan, u(0), rb)
    return rb.astype(fmt.udtype, copy=False)


def _nan64(r: np.ndarray, ops) -> np.ndarray:
    """f64 NaN results: the first NaN operand's payload (quieted), else the default NaN (see module)."""
    isn = np.isnan(r)
    if not isn.any():
        return r
    out = np.where(isn, np.uint64(F64.qnan), r.view(np.uint64))
    for o in reversed(ops):
        out = np.where(isn & np.isnan(o), quiet64(o.view(np.uint64)), out)
    return out.view(np.float64)


def _zero_sign(r, exact_zero, x, y, mode):
    """IEEE 754 §6.3 sign of an exact-zero sum x + y: −0 when both addends are −0, +0 otherwise — except
    ``.rm``, where only +0 + +0 gives +0."""
    if not exact_zero.any():
        return r
    nx, ny = np.signbit(x), np.signbit(y)
    zx, zy = x == 0, y == 0
    if mode == "rm":
        neg = ~(zx & zy & ~nx & ~ny)
    else:
        neg = zx & zy & nx & ny
    return np.where(exact_zero, np.where(neg, -0.0, 0.0), r)


# --- add / sub / mul / fma on f32, f16, bf16 ------------------------------------------------------------
def _arith_bits(kind: str, fmt: Fmt, mode: str, ftz: bool, sat: bool, relu: bool):
    """Exact ``add``/``sub``/``mul``/``fma`` rounded once to ``fmt`` [PTX ISA §9.7.3.3–§9.7.3.6,
    §9.7.4.1–§9.7.4.4]: the exact result as a binary64 pair, rounded by :func:`round_pair`."""
    fast = fmt is F32 and mode == "rn" and kind != "fma"
    fast_fma = fmt is F32 and mode == "rn" and kind == "fma"

    def f(*xb):
        if ftz:
            xb = [flush(b, fmt) for b in xb]
        with np.errstate(all="ignore"):
            if fast:  # NumPy's binary32 + − × are correctly rounded to nearest even
                a, b = xb[0].view(np.float32), xb[1].view(np.float32)
                r = a + b if kind == "add" else a - b if kind == "sub" else a * b
                return _post(r.view(np.uint32), fmt, ftz, sat, relu)
            x = [_vals(b, fmt) for b in xb]
            if fast_fma:
                # a·b is exact in binary64, so r64 = RN64(a·b + c) is within half a binary64 ulp of the exact
                # result; rounding r64 to binary32 rounds the exact result unless r64 sits exactly on a
                # binary32 tie (low 29 bits 1000…0) — the only place double rounding can go wrong — or the
                # result is subnormal in binary32 (ties elsewhere) or not finite. Those lanes take the exact path.
                r64 = x[0] * x[1] + x[2]
                rb64 = r64.view(np.uint64)
                risky = ((rb64 & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)) | ~(np.abs(r64) >= 2.0 ** -126)
                if not risky.any():
                    return _post(r64.astype(np.float32).view(np.uint32), fmt, ftz, sat, relu)
            addends = None
            if kind == "mul":
                s, e = x[0] * x[1], np.zeros_like(x[0])
            elif kind in ("add", "sub"):
                y = x[1] if kind == "add" else -x[1]
                s, e = two_sum(x[0], y)
                addends = (x[0], y)
            else:
                p = x[0] * x[1]                      # exact in binary64 for these formats
                s, e = two_sum(p, x[2])
                addends = (p, x[2])
            rb = round_pair(s, e, fmt, mode)
            if addends is not None and mode == "rm":
                z = (s == 0) & (e == 0)
                zr = _zero_sign(np.zeros_like(s), z, addends[0], addends[1], mode)
                rb = np.where(z, np.where(np.signbit(zr), fmt.udtype.type(fmt.sign), fmt.udtype.type(0)), rb)
        return _post(rb, fmt, ftz, sat, relu)
    return f


# --- f64 arithmetic ----------------------------------------------------------------------------------
def _bits64(q: Fraction, mode: str, neg_zero: bool = False) -> float:
    return float(np.array(round_fraction(q, F64, mode, neg_zero), np.uint64).view(np.float64))


def _fallback(r: np.ndarray, lanes: np.ndarray, exact, mode: str, neg_zero: bool = False) -> np.ndarray:
    """Replace ``r`` on ``lanes`` by the exact rational ``exact(i)`` rounded to f64 in ``mode``."""
    idx = np.flatnonzero(lanes)
    if idx.size == 0:
        return r
    r = r.copy()
    for i in idx:
        r[i] = _bits64(exact(int(i)), mode, neg_zero)
    return r


def _add64(a, b, mode, sub=False):
    """``add``/``sub.rnd.f64`` [PTX ISA §9.7.3.3, §9.7.3.4]: TwoSum gives the exact error, directed
    modes step the nearest sum; overflow follows IEEE 754 §7.4."""
    y = -b if sub else b
    with np.errstate(all="ignore"):
        s = a + y
        if mode != "rn":
            _, e = two_sum(a, y)
            fin = np.isfinite(a) & np.isfinite(b)
            r = round_pair64(s, np.where(fin, e, 0.0), mode)
            r = overflow64(r, fin, mode)
            r = _zero_sign(r, (s == 0) & (e == 0) & fin, a, y, mode)
        else:
            r = s
    return _nan64(r, (a, b))


def _mul64(a, b, mode):
    """``mul.rnd.f64`` [PTX ISA §9.7.3.5]: Dekker's TwoProduct for the exact error (lanes with
    |a|, |b| outside [2^-480, 2^480] go through ``fractions``)."""
    with np.errstate(all="ignore"):
        p = a * b
        if mode == "rn":
            return _nan64(p, (a, b))
        fin = np.isfinite(a) & np.isfinite(b)
        safe = is_safe64(a, -480, 480) & is_safe64(b, -480, 480)
        _, e = two_prod(a, b)
        r = round_pair64(p, np.where(safe & fin, e, 0.0), mode)
        r = _fallback(r, fin & ~safe & (a != 0) & (b != 0), lambda i: Fraction(a[i]) * Fraction(b[i]), mode)
    return _nan64(r, (a, b))


def _fma64(a, b, c, mode):
    """``fma.rnd.f64`` / ``mad.rnd.f64`` = a·b + c rounded once [PTX ISA §9.7.3.6]. Nearest: Boldo &
    Melquiond's emulation RN(th + RO(tl + ul)) from TwoProduct/TwoSum; directed: the exact sign of
    x − RN(th + v0) steps the result. Lanes near the exponent limits go through ``fractions``."""
    with np.errstate(all="ignore"):
        fin = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        safe = (is_safe64(a, -480, 480) & is_safe64(b, -480, 480)
                & is_safe64(c, -900, 1000))
        nz = (a != 0) & (b != 0)
        uh, ul = two_prod(a, b)
        # a zero factor makes a·b exactly ±0; Dekker's split of a huge other factor would overflow to NaN
        ul = np.where(fin & nz, ul, 0.0)
        th, tl = two_sum(c, uh)
        v0, ve = two_sum(tl, ul)
        if mode == "rn":
            r = th + round_to_odd(v0, ve)
        else:
            r1, r1e = two_sum(th, v0)
            t0 = r1e + ve
            rb = _direct(r1.view(np.uint64), -t0, np.signbit(r1), F64, mode)
            r = rb.view(np.float64)
        exact_zero = (th == 0) & (tl == 0) & (ul == 0)
        r = _zero_sign(r, exact_zero & fin, uh, c, mode)
        # non-finite operands: IEEE special cases (c = ±inf with finite a·b gives c, not inf − inf)
        special = np.where(np.isfinite(a) & np.isfinite(b), c, a * b + c)
        r = np.where(fin, r, special)
        r = _fallback(r, fin & ~safe & nz,
                      lambda i: Fraction(a[i]) * Fraction(b[i]) + Fraction(c[i]), mode, mode == "rm")
    return _nan64(r, (a, b, c))


def _div64(a, b, mode):
    """``div.rnd.f64`` [PTX ISA §9.7.3.8]: the nearest quotient q, then the exact sign of the remainder
    a − q·b (TwoProduct) for directed modes."""
    with np.errstate(all="ignore"):
        q = a / b
        if mode == "rn":
            return _nan64(q, (a, b))
        regular = np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0)
        safe = is_safe64(a, -480, 480) & is_safe64(b, -480, 480) & regular
        ph, pl = two_prod(q, b)
        rem = (a - ph) - pl                      # exact sign of a − q·b
        c = np.where(safe, -np.sign(rem) * np.sign(b), 0.0)
        r = _direct(q.view(np.uint64), c, np.signbit(q), F64, mode).view(np.float64)
        r = _fallback(r, regular & ~safe, lambda i: Fraction(a[i]) / Fraction(b[i]), mode)
    return _nan64(r, (a, b))


def _sqrt_exact(x: float, mode: str) -> float:
    """Correctly rounded sqrt of a positive finite double in ``mode`` (integer square root)."""
    q = Fraction(x)
    s = 0
    while True:  # scale by 4^s until the integer root has >= 64 bits
        n = q * (4 ** s) if s >= 0 else q / (4 ** -s)
        if n.denominator == 1 and n.numerator.bit_length() >= 128:
            break
        s += 8
    r = math.isqrt(n.numerator)
    lo = Fraction(r, 2 ** s)
    if r * r != n.numerator:
        lo += Fraction(1, 2 ** (s + 1))          # sticky: strictly between two grid points
    return _bits64(lo, mode)


def _sqrt64(a, mode):
    """``sqrt.rnd.f64`` [PTX ISA §9.7.3.15]: nearest root q, then the sign of a − q² (TwoProduct)."""
    with np.errstate(all="ignore"):
        q = np.sqrt(a)
        if mode == "rn":
            return _nan64(q, (a,))
        regular = np.isfinite(a) & (a > 0)
        safe = is_safe64(a, -900, 900) & regular
        ph, pl = two_prod(q, q)
        c = np.where(safe, -np.sign((a - ph) - pl), 0.0)
        r = _direct(q.view(np.uint64), c, np.signbit(q), F64, mode).view(np.float64)
        r = _fallback(r, regular & ~safe, lambda i: Fraction(_sqrt_exact(float(a[i]), mode)), mode)
    return _nan64(r, (a,))


# --- f32 div / sqrt ----------------------------------------------------------------------------------
def _div32_bits(mode, ftz):
    """``div.rnd{.ftz}.f32`` / ``rcp`` [PTX ISA §9.7.3.8, §9.7.3.13]: the binary64 quotient rounded to
    f32 is the correctly rounded quotient (53 ≥ 2·24 + 2, Figueroa 1995); directed modes step it by the
    exact sign of r·b − a (r·b is exact in binary64)."""
    def f(ab, bb):
        if ftz:
            ab, bb = flush(ab, F32), flush(bb, F32)
        a, b = _vals(ab, F32), _vals(bb, F32)
        with np.errstate(all="ignore"):
            q = a / b
            r = q.astype(np.float32)
            rb = r.view(np.uint32)
            if mode != "rn":
                c = np.sign(r.astype(np.float64) * b - a) * np.sign(b)
                rb = _direct(rb, c, np.signbit(q), F32, mode)
        return _post(rb, F32, ftz)
    return f


def _sqrt32_bits(mode, ftz):
    """``sqrt.rnd{.ftz}.f32`` [PTX ISA §9.7.3.15]: binary64 root rounded to f32 (correct, Figueroa),
    directed modes stepped by the exact sign of r² − a."""
    def f(ab):
        if ftz:
            ab = flush(ab, F32)
        a = _vals(ab, F32)
        with np.errstate(all="ignore"):
            q = np.sqrt(a)
            r = q.astype(np.float32)
            rb = r.view(np.uint32)
            if mode != "rn":
                r64 = r.astype(np.float64)
                rb = _direct(rb, r64 * r64 - a, np.signbit(q), F32, mode)
        return _post(rb, F32, ftz)
    return f


def _unary_model(fmt: Fmt, func, ftz: bool):
    """[model] ``func`` evaluated in binary64 and rounded to nearest into ``fmt`` (f32/f16/bf16; an
    ``.approx`` instruction: within the PTX-stated error bound, not bit-exact)."""
    def f(ab):
        if ftz:
            ab = flush(ab, fmt)
        with np.errstate(all="ignore"):
            v = func(_vals(ab, fmt))
            rb = round_pair(v, np.zeros_like(v), fmt, "rn")
        return _post(rb, fmt, ftz)
    return f


def _div_approx_bits(ftz):
    """[model] ``div.approx{.ftz}.f32`` = a × (1/b) as PTX §9.7.3.8 defines it: 1/b rounded to nearest
    f32, a sign-preserving zero for 2^126 < |b| < 2^128 (so ∞/b is NaN there), then the product rounded
    to nearest. Within the stated 2-ulp bound for |b| in [2^-126, 2^126]; not bit-exact."""
    def f(ab, bb):
        if ftz:
            ab, bb = flush(ab, F32), flush(bb, F32)
        a, b = _vals(ab, F32), _vals(bb, F32)
        with np.errstate(all="ignore"):
            rc = (1.0 / b).astype(np.float32).astype(np.float64)
            rc = np.where(np.abs(b) > 2.0 ** 126, np.copysign(0.0, rc), rc)
            if ftz:
                rc = np.where(np.abs(rc) < 2.0 ** -126, np.copysign(0.0, rc), rc)
            rb = (a * rc).astype(np.float32).view(np.uint32)
        return _post(rb, F32, ftz)
    return f


def _hiword64(func):
    """[model] ``rcp/rsqrt.approx.ftz.f64``: ``func`` of the upper word of a (1.11.20 format, low word
    ignored), rounded to 20 mantissa bits, low 32 bits of d zero; subnormal inputs flush to ±0, NaN
    inputs give 0x7FFFFFFF00000000 [PTX ISA §9.7.3.14, §9.7.3.17]."""
    def fn(a):
        b = a.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)
        b = flush(b, F64)
        x = b.view(np.float64)
        with np.errstate(all="ignore"):
            v = func(x)
        vb = v.view(np.uint64)
        # round to nearest (ties even) at bit 32
        keep = (vb >> np.uint64(32)) & np.uint64(1)
        rb = (vb + np.uint64(0x7FFFFFFF) + keep) & np.uint64(0xFFFFFFFF00000000)
        rb = np.where(np.isfinite(v), rb, vb & np.uint64(0xFFFFFFFF00000000))
        rb = np.where(np.isnan(v), np.uint64(0x7FFFFFFF00000000), rb)
        rb = flush(rb, F64)
        return (rb.view(np.float64),)
    return fn


# --- abs / neg / min / max / copysign / testp ---------------------------------------------------------------
def _absneg_bits(fmt: Fmt, op: str, ftz: bool):
    """``abs`` clears and ``neg`` flips the sign bit [PTX ISA §9.7.3.9, §9.7.3.10, §9.7.4.5, §9.7.4.6];
    NaN inputs give the canonical NaN (f32, f16, bf16: "unspecified NaN") — f64 NaNs pass unchanged."""
    u = fmt.udtype.type

    def f(xb):
        if ftz:
            xb = flush(xb, fmt)
        r = (xb & u(fmt.sign - 1)) if op == "abs" else (xb ^ u(fmt.sign))
        if fmt is F64:
            return np.where(is_nan_bits(xb, fmt), xb, r)
        return canon_nan(r, fmt)
    return f


def _minmax_bits(fmt: Fmt, op: str, nanmod: bool, xorsign: bool, ftz: bool):
    """``min``/``max``: a NaN operand loses to a number (both NaN → NaN), ``.NaN`` makes any NaN operand
    win, −0 < +0; ``.xorsign.abs`` compares magnitudes and gives the result the XOR of the input signs
    (not for a NaN result) [PTX ISA §9.7.3.11, §9.7.3.12, §9.7.4.7, §9.7.4.8]. NaN results are the
    canonical NaN (f64: the first NaN operand, quieted)."""
    u = fmt.udtype.type
    sign = u(fmt.sign)

    def key(x):
        mag = (x & u(fmt.sign - 1)).astype(np.int64)
        return np.where((x & sign) != 0, -mag - 1, mag)

    def f(xa, xb):
        if ftz:
            xa, xb = flush(xa, fmt), flush(xb, fmt)
        if xorsign:
            xs = (xa ^ xb) & sign
            xa, xb = xa & ~sign, xb & ~sign
        na, nb = is_nan_bits(xa, fmt), is_nan_bits(xb, fmt)
        ka, kb = key(xa), key(xb)
        r = np.where((ka < kb) if op == "min" else (ka > kb), xa, xb)
        r = np.where(na & ~nb, xb, np.where(nb & ~na, xa, r))
        both = (na | nb) if nanmod else (na & nb)
        if fmt is F64:
            nanv = np.where(na, quiet64(xa), quiet64(xb))
        else:
            nanv = u(fmt.qnan)
        r = np.where(both, nanv, r)
        if xorsign:
            r = np.where(is_nan_bits(r, fmt), r, (r & ~sign) | xs)
        return r.astype(fmt.udtype, copy=False)
    return f


def _copysign(fmt: Fmt):
    """``copysign d, a, b``: b with the sign bit of a [PTX ISA §9.7.3.2]."""
    u = fmt.udtype.type
    return lambda a, b: (b & u(fmt.sign - 1)) | (a & u(fmt.sign))


_TESTP = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")


def _testp(fmt: Fmt, op: str):
    """``testp.op``: finite, infinite, number (not NaN), notanumber, normal (±0 counts as normal),
    subnormal [PTX ISA §9.7.3.1]."""
    u = fmt.udtype.type

    def fn(a):
        b = a.view(fmt.udtype)
        mag = b & u(fmt.sign - 1)
        exp = b & u(fmt.exp_mask)
        inf = u(fmt.inf)
        r = {"finite": exp != u(fmt.exp_mask), "infinite": mag == inf, "number": mag <= inf,
             "notanumber": mag > inf,
             "normal": ((exp != 0) & (exp != u(fmt.exp_mask))) | (mag == 0),
             "subnormal": (exp == 0) & (mag != 0)}[op]
        return (r,)
    return fn


# --- builders ------------------------------------------------------------------------------------------
def _ftype(opcode, types, allowed, where) -> str:
    if len(types) != 1 or types[0] not in allowed:
        raise AluError(f"{opcode}.{'.'.join(types)}: the type must be one of "
                       f"{', '.join('.' + a for a in allowed)} ({where})")
    return types[0]


def _arith(opcode, mods, types) -> AluOp:
    """``add sub mul`` (default ``.rn``), ``fma`` and ``mad`` (rounding required) on f32/f64/f16/bf16
    and the packed forms [PTX ISA §9.7.3.3–§9.7.3.7, §9.7.4.1–§9.7.4.4]."""
    t = types[0] if len(types) == 1 else None
    half = t in ("f16", "f16x2", "bf16", "bf16x2")
    key = {"add": "fadd", "sub": "fsub", "mul": "fmul", "fma": "fma", "mad": "fmad"}[opcode]
    if half:
        key = {"fadd": "hadd", "fsub": "hsub", "fmul": "hmul"}.get(key, "hfma")
    where = SEC[key]
    allowed = ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2") if opcode != "mad" else ("f32", "f64")
    t = _ftype(opcode, types, allowed, where)
    m = Mods(opcode, mods, _RND + ("ftz", "sat", "relu"), where)
    rnd = m.pick(_RND)
    fused = opcode in ("fma", "mad")
    if fused and rnd is None:
        raise AluError(f"{opcode}.{t} requires a rounding modifier .rn/.rz/.rm/.rp on sm_20+ ({where})")
    rnd = rnd or "rn"
    if half and rnd != "rn":
        raise AluError(f"{opcode}.{t} supports only .rn ({where})")
    if "ftz" in m and t not in ("f32", "f16", "f16x2"):
        raise AluError(f"{opcode}.ftz applies to .f32 and .f16/.f16x2 only ({where})")
    if "sat" in m and t not in ("f32", "f16", "f16x2"):
        raise AluError(f"{opcode}.sat applies to .f32 and .f16/.f16x2 only ({where})")
    if "relu" in m and (not fused or not half or "sat" in m):
        raise AluError(f"{opcode}.relu exists only as fma.rn.relu on f16/bf16 types, without .sat ({where})")
    kind = "fma" if fused else opcode
    if t == "f64":
        f = {"add": lambda a, b: (_add64(a, b, rnd),), "sub": lambda a, b: (_add64(a, b, rnd, True),),
             "mul": lambda a, b: (_mul64(a, b, rnd),), "fma": lambda a, b, c: (_fma64(a, b, c, rnd),)}[kind]
        n = 3 if fused else 2
        return AluOp(f, (t,) * n, (t,))
    fmt = _FMTS[t]
    fn = _wrap(t, _arith_bits(kind, fmt, rnd, "ftz" in m, "sat" in m, "relu" in m))
    n = 3 if fused else 2
    return AluOp(fn, (t,) * n, (t,))


def _div(opcode, mods, types) -> AluOp:
    """``div.approx{.ftz}.f32`` [model], ``div.full{.ftz}.f32`` [model, correctly rounded here, PTX
    bound 2 ulp], ``div.rnd{.ftz}.f32`` and ``div.rnd.f64`` (exact) [PTX ISA §9.7.3.8]."""
    where = SEC["fdiv"]
    t = _ftype(opcode, types, ("f32", "f64"), where)
    m = Mods(opcode, mods, _RND + ("approx", "full", "ftz"), where)
    kind = m.require(_RND + ("approx", "full"), "one of .approx, .full or .rn/.rz/.rm/.rp")
    if t == "f64":
        if kind not in _RND or "ftz" in m:
            raise AluError(f"div.f64 takes only a rounding modifier ({where})")
        return AluOp(lambda a, b: (_div64(a, b, kind),), (t, t), (t,))
    ftz = "ftz" in m
    if kind == "approx":
        return AluOp(_wrap(t, _div_approx_bits(ftz)), (t, t), (t,), approx=True)
    if kind == "full":
        return AluOp(_wrap(t, _div32_bits("rn", ftz)), (t, t), (t,), approx=True)
    return AluOp(_wrap(t, _div32_bits(kind, ftz)), (t, t), (t,))


def _rcp_sqrt(opcode, mods, types) -> AluOp:
    """``rcp`` / ``sqrt``: ``.rnd`` forms exact on f32 (``.ftz`` optional) and f64; ``.approx{.ftz}.f32``
    [model: correctly rounded, PTX bound 1 ulp / 2^-23 relative]; ``rcp.approx.ftz.f64`` [model, upper
    word only] [PTX ISA §9.7.3.13–§9.7.3.15]."""
    where = SEC[opcode]
    t = _ftype(opcode, types, ("f32", "f64"), where)
    m = Mods(opcode, mods, _RND + ("approx", "ftz"), where)
    kind = m.require(_RND + ("approx",), "one of .approx or .rn/.rz/.rm/.rp")
    ftz = "ftz" in m
    if t == "f64":
        if kind == "approx":
            if opcode != "rcp" or not ftz:
                raise AluError(f"{opcode}.approx.f64 exists only as rcp.approx.ftz.f64 ({SEC['rcp64']})")
            return AluOp(_hiword64(lambda x: 1.0 / x), (t,), (t,), approx=True)
        if ftz:
            raise AluError(f"{opcode}.ftz applies only to .f32 ({where})")
        f = (lambda a: (_div64(np.ones_like(a), a, kind),)) if opcode == "rcp" else (lambda a: (_sqrt64(a, kind),))
        return AluOp(f, (t,), (t,))
    if kind == "approx":
        func = (lambda x: 1.0 / x) if opcode == "rcp" else np.sqrt
        return AluOp(_wrap(t, _unary_model(F32, func, ftz)), (t,), (t,), approx=True)
    if opcode == "rcp":
        div = _div32_bits(kind, ftz)
        one = np.uint32(0x3F800000)
        return AluOp(_wrap(t, lambda ab: div(np.full_like(ab, one), ab)), (t,), (t,))
    return AluOp(_wrap(t, _sqrt32_bits(kind, ftz)), (t,), (t,))


def _transcendental(opcode, mods, types) -> AluOp:
    """``sin cos lg2 ex2 tanh rsqrt`` ``.approx`` — [model] within the PTX-stated ulp bound, not bit-exact
    (PTX ISA §9.7.3.16–§9.7.3.22, §9.7.4.9, §9.7.4.10): the correctly rounded value of the function."""
    key = opcode
    t = types[0] if len(types) == 1 else None
    if opcode in ("ex2", "tanh") and t in ("f16", "f16x2", "bf16", "bf16x2"):
        key = "h" + opcode
    where = SEC[key]
    allowed = {"sin": ("f32",), "cos": ("f32",), "lg2": ("f32",), "rsqrt": ("f32", "f64"),
               "ex2": ("f32", "f16", "f16x2", "bf16", "bf16x2"),
               "tanh": ("f32", "f16", "f16x2", "bf16", "bf16x2")}[opcode]
    t = _ftype(opcode, types, allowed, where)
    m = Mods(opcode, mods, ("approx", "ftz"), where)
    if "approx" not in m:
        raise AluError(f"{opcode} requires .approx ({where})")
    ftz = "ftz" in m
    if opcode == "tanh" and ftz:
        raise AluError(f"tanh.approx has no .ftz ({where})")
    if opcode == "ex2" and t in ("f16", "f16x2") and ftz:
        raise AluError(f"ex2.approx.f16 has no .ftz ({where})")
    if opcode == "ex2" and t in ("bf16", "bf16x2") and not ftz:
        raise AluError(f"ex2.approx on bf16 is written ex2.approx.ftz.bf16 ({where})")
    func = {"sin": np.sin, "cos": np.cos, "lg2": np.log2, "ex2": np.exp2, "tanh": np.tanh,
            "rsqrt": lambda x: 1.0 / np.sqrt(x)}[opcode]
    if t == "f64":
        if ftz:
            return AluOp(_hiword64(lambda x: 1.0 / np.sqrt(x)), (t,), (t,), approx=True)

        def f64fn(a):
            with np.errstate(all="ignore"):
                return (_nan64(func(a), (a,)),)
        return AluOp(f64fn, (t,), (t,), approx=True)
    fmt = _FMTS[t]
    # bf16's .ftz flushes bf16 subnormals; f16 forms have no ftz
    return AluOp(_wrap(t, _unary_model(fmt, func, ftz)), (t,), (t,), approx=True)


def _absneg(opcode, mods, types) -> AluOp:
    """Floating-point ``abs`` / ``neg`` [PTX ISA §9.7.3.9, §9.7.3.10, §9.7.4.5, §9.7.4.6]."""
    t = types[0] if len(types) == 1 else None
    half = t in ("f16", "f16x2", "bf16", "bf16x2")
    where = SEC[("h" if half else "f") + opcode]
    t = _ftype(opcode, types, ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2"), where)
    m = Mods(opcode, mods, ("ftz",), where)
    if "ftz" in m and t not in ("f32", "f16", "f16x2"):
        raise AluError(f"{opcode}.ftz applies to .f32 and .f16/.f16x2 only ({where})")
    return AluOp(_wrap(t, _absneg_bits(_FMTS[t], opcode, "ftz" in m)), (t,), (t,))


def _minmax(opcode, mods, types) -> AluOp:
    """Floating-point ``min`` / ``max`` with ``.ftz``, ``.NaN``, ``.xorsign.abs``
    [PTX ISA §9.7.3.11, §9.7.3.12, §9.7.4.7, §9.7.4.8]."""
    t = types[0] if len(types) == 1 else None
    half = t in ("f16", "f16x2", "bf16", "bf16x2")
    where = SEC[("h" if half else "f") + opcode]
    t = _ftype(opcode, types, ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2"), where)
    m = Mods(opcode, mods, ("ftz", "NaN", "xorsign", "abs"), where)
    if ("xorsign" in m) != ("abs" in m):
        raise AluError(f"{opcode}: .xorsign requires .abs (and two-input .abs requires .xorsign) ({where})")
    if t == "f64" and m.set:
        raise AluError(f"{opcode}.f64 takes no modifiers ({where})")
    if "ftz" in m and t not in ("f32", "f16", "f16x2"):
        raise AluError(f"{opcode}.ftz applies to .f32 and .f16/.f16x2 only ({where})")
    f = _minmax_bits(_FMTS[t], opcode, "NaN" in m, "xorsign" in m, "ftz" in m)
    return AluOp(_wrap(t, f), (t, t), (t,))


def _copysign_op(opcode, mods, types) -> AluOp:
    """``copysign.{f32,f64} d, a, b`` [PTX ISA §9.7.3.2]."""
    where = SEC["copysign"]
    Mods(opcode, mods, (), where)
    t = _ftype(opcode, types, ("f32", "f64"), where)
    return AluOp(_wrap(t, _copysign(_FMTS[t])), (t, t), (t,))


def _testp_op(opcode, mods, types) -> AluOp:
    """``testp.op.{f32,f64} p, a`` [PTX ISA §9.7.3.1]."""
    where = SEC["testp"]
    m = Mods(opcode, mods, _TESTP, where)
    op = m.require(_TESTP, "one of ." + " .".join(_TESTP))
    t = _ftype(opcode, types, ("f32", "f64"), where)
    return AluOp(_testp(_FMTS[t], op), (t,), ("pred",))


_BUILDERS = {
    "add": _arith, "sub": _arith, "mul": _arith, "fma": _arith, "mad": _arith, "div": _div,
    "rcp": _rcp_sqrt, "sqrt": _rcp_sqrt, "abs": _absneg, "neg": _absneg, "min": _minmax, "max": _minmax,
    "copysign": _copysign_op, "testp": _testp_op,
    **{op: _transcendental for op in APPROX},
}
OPCODES = frozenset(_BUILDERS)

def build(opcode: str, mods: tuple, types: tuple) -> AluOp:
    """The :class:`AluOp` of a floating-point instruction form (see the builder docstrings)."""
    return _BUILDERS[opcode](opcode, mods, types)
