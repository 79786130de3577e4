"""Integer, bit-manipulation, extended-precision (carry) and logic instructions, bit-exact.

Every function here is vectorised over lanes (NumPy arrays, any 1-D length) and wraps modulo 2^n
exactly as the hardware does: arithmetic runs on the unsigned view of the operands, so overflow never
raises and never depends on NumPy's casting rules. ``build(opcode, mods, types)`` returns the
:class:`~h100lab.emu.alu_core.AluOp` of one instruction form; each builder's docstring names its PTX rule.
"""
from __future__ import annotations

import numpy as np

from .alu_core import SEC, AluError, AluOp, Mods, uint_of
from .types import np_dtype

__all__ = ["build", "OPCODES"]

_U64 = np.uint64
_M32 = np.uint64(0xFFFFFFFF)
_ARITH = ("u16", "u32", "u64", "s16", "s32", "s64")
_CC_TYPES = ("u32", "s32", "u64", "s64")
_BTYPES = ("b16", "b32", "b64")


def _w(t: str) -> int:
    return int(t.lstrip("bus")[:2])


def _one(opcode: str, types, allowed, where: str) -> str:
    if len(types) != 1:
        raise AluError(f"{opcode} takes exactly one type suffix, got {'.'.join(types) or 'none'} ({where})")
    t = types[0]
    if t not in allowed:
        raise AluError(f"{opcode}.{t}: the type must be one of {', '.join('.' + a for a in allowed)} ({where})")
    return t


def _uview(x: np.ndarray) -> np.ndarray:
    return x.view(uint_of(x.dtype.itemsize * 8))


def _out(x: np.ndarray, t: str) -> np.ndarray:
    """Reinterpret (same width) or convert an unsigned result array as PTX type ``t``."""
    dt = np_dtype(t)
    if x.dtype.itemsize != dt.itemsize:
        x = x.astype(uint_of(dt.itemsize * 8))
    return x.view(dt)


# --- add / sub and the carry chain -----------------------------------------------------------------
def _add_sub(opcode: str, mods, types) -> AluOp:
    """Integer ``add``/``sub`` (wrap-around; ``.sat`` clamps ``.s32`` to MININT..MAXINT), packed
    ``add.u16x2/.s16x2`` (sm_90) [PTX ISA §9.7.1.1, §9.7.1.2] and ``add.cc``/``sub.cc`` (carry /
    borrow out to CC.CF) [§9.7.2.1, §9.7.2.3]."""
    where = SEC[opcode]
    m = Mods(opcode, mods, ("sat", "cc"), where)
    if "cc" in m:
        return _carry(opcode, m, types)
    allowed = _ARITH + (("u16x2", "s16x2") if opcode == "add" else ())
    t = _one(opcode, types, allowed, where)
    if "sat" in m and t != "s32":
        raise AluError(f"{opcode}.sat applies only to .s32 on sm_90 ({where})")
    sign = 1 if opcode == "add" else -1
    if t in ("u16x2", "s16x2"):
        def fn(a, b):
            lo = (a + b) & np.uint32(0xFFFF)
            hi = ((a >> np.uint32(16)) + (b >> np.uint32(16))) << np.uint32(16)
            return ((lo | hi).astype(np.uint32),)
        return AluOp(fn, ("b32", "b32"), ("b32",))
    if "sat" in m:
        def fn(a, b):
            r = a.astype(np.int64) + sign * b.astype(np.int64)
            return (np.clip(r, -2 ** 31, 2 ** 31 - 1).astype(np.int32),)
        return AluOp(fn, (t, t), (t,))
    if opcode == "add":
        def fn(a, b):
            return ((_uview(a) + _uview(b)).view(a.dtype),)
    else:
        def fn(a, b):
            return ((_uview(a) - _uview(b)).view(a.dtype),)
    return AluOp(fn, (t, t), (t,))


def _carry(opcode: str, m: Mods, types) -> AluOp:
    """``add.cc``, ``addc{.cc}``, ``sub.cc``, ``subc{.cc}`` on .u32/.s32/.u64/.s64: ``addc`` computes
    ``a + b + CC.CF``, ``subc`` ``a − (b + CC.CF)``; with ``.cc`` the carry-out (add) or borrow-out (sub)
    is written to CC.CF; signed and unsigned behave the same [PTX ISA §9.7.2.1–§9.7.2.4]."""
    key = {"add": "add.cc", "sub": "sub.cc"}.get(opcode, opcode)
    where = SEC[key]
    t = _one(opcode, types, _CC_TYPES, where)
    if "sat" in m:
        raise AluError(f"{opcode}: no saturation with the carry chain ({where})")
    U = uint_of(_w(t))
    cin = opcode in ("addc", "subc")
    cout = opcode in ("add", "sub") or "cc" in m
    add = opcode in ("add", "addc")

    def fn(a, b, cf=None):
        ua, ub = _uview(a), _uview(b)
        c = cf.astype(U) if cin else U(0)
        if add:
            s1 = ua + ub
            d = s1 + c
            flag = (s1 < ua) | (d < s1)
        else:
            s1 = ua - ub
            d = s1 - c
            flag = (ua < ub) | (s1 < c)
        out = d.view(a.dtype)
        return (out, flag.astype(np.uint32)) if cout else (out,)
    srcs = (t, t, "cc") if cin else (t, t)
    dsts = (t, "cc") if cout else (t,)
    return AluOp(fn, srcs, dsts)


def _addc(opcode, mods, types) -> AluOp:
    """``addc{.cc}`` / ``subc{.cc}`` [PTX ISA §9.7.2.2, §9.7.2.4]."""
    m = Mods(opcode, mods, ("cc",), SEC[opcode])
    return _carry(opcode, m, types)


# --- multiplication --------------------------------------------------------------------------------
def _mulhi64(a: np.ndarray, b: np.ndarray, signed: bool) -> np.ndarray:
    """High 64 bits of the 128-bit product (schoolbook on 32-bit limbs)."""
    ua, ub = a.view(_U64), b.view(_U64)
    s = _U64(32)
    a0, a1, b0, b1 = ua & _M32, ua >> s, ub & _M32, ub >> s
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s) + (p01 & _M32) + (p10 & _M32)
    hi = p11 + (p01 >> s) + (p10 >> s) + (mid >> s)
    if signed:  # a·b = ua·ub − 2^64 (ub·[a<0] + ua·[b<0]) mod 2^128
        hi = hi - np.where(a < 0, ub, _U64(0)) - np.where(b < 0, ua, _U64(0))
    return hi


def _mul_parts(t: str, a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    """``.lo``/``.hi``/``.wide`` part of a·b as an unsigned array (``.wide``: twice the width)."""
    w, signed = _w(t), t[0] == "s"
    if mode == "lo":
        return _uview(a) * _uview(b)
    if w == 64:
        return _mulhi64(a, b, signed)
    wide = (np.int64 if signed else np.uint64) if w == 32 else (np.int32 if signed else np.uint32)
    p = a.astype(wide) * b.astype(wide)
    if mode == "wide":
        return _uview(p)
    return (_uview(p) >> uint_of(2 * w)(w)).astype(uint_of(w))


def _mul(opcode, mods, types) -> AluOp:
    """Integer ``mul.{lo,hi,wide}``: the low or high half of the double-width product, or the whole
    product (``.wide`` only for 16/32-bit types) [PTX ISA §9.7.1.3]."""
    where = SEC["mul"]
    m = Mods(opcode, mods, ("lo", "hi", "wide"), where)
    mode = m.require(("lo", "hi", "wide"), "one of .lo/.hi/.wide")
    t = _one(opcode, types, _ARITH, where)
    if mode == "wide" and _w(t) == 64:
        raise AluError(f"mul.wide needs .s16/.u16/.s32/.u32 ({where})")
    dt = (t[0] + str(2 * _w(t))) if mode == "wide" else t

    def fn(a, b):
        return (_out(_mul_parts(t, a, b, mode), dt),)
    return AluOp(fn, (t, t), (dt,))


def _mad(opcode, mods, types) -> AluOp:
    """Integer ``mad.{lo,hi,wide}`` d = part(a·b) + c (wrap); ``mad.hi.sat.s32`` clamps the sum to
    MININT..MAXINT [PTX ISA §9.7.1.4]; ``mad{.lo,.hi}.cc`` and ``madc{.lo,.hi}{.cc}`` add CC.CF in and
    write the carry-out of the addition [§9.7.2.5, §9.7.2.6]."""
    where = SEC["mad"] if opcode == "mad" else SEC["madc"]
    m = Mods(opcode, mods, ("lo", "hi", "wide", "sat", "cc"), where)
    mode = m.require(("lo", "hi", "wide"), "one of .lo/.hi/.wide")
    cin = opcode == "madc"
    cc = "cc" in m or cin
    t = _one(opcode, types, _CC_TYPES if cc else _ARITH, where)
    w = _w(t)
    if mode == "wide" and (w == 64 or cc):
        raise AluError(f"{opcode}.wide needs .s16/.u16/.s32/.u32 and has no carry form ({where})")
    if "sat" in m and (t != "s32" or mode != "hi" or cc):
        raise AluError(f"{opcode}.sat applies only to mad.hi.sat.s32 ({where})")
    dt = (t[0] + str(2 * w)) if mode == "wide" else t
    if "sat" in m:
        def fn(a, b, c):
            hi = (a.astype(np.int64) * b.astype(np.int64)) >> 32
            return (np.clip(hi + c.astype(np.int64), -2 ** 31, 2 ** 31 - 1).astype(np.int32),)
        return AluOp(fn, (t, t, t), (t,))
    if cc:
        U = uint_of(w)
        cout = "cc" in m

        def fn(a, b, c, cf=None):
            p = _mul_parts(t, a, b, mode)
            uc = _uview(c)
            s1 = p + uc
            d = s1 + cf.astype(U) if cin else s1
            out = d.view(np_dtype(t))
            if not cout:
                return (out,)
            flag = (s1 < p) | (d < s1)
            return (out, flag.astype(np.uint32))
        return AluOp(fn, (t, t, t, "cc") if cin else (t, t, t), (t, "cc") if cout else (t,))

    def fn(a, b, c):
        return ((_mul_parts(t, a, b, mode) + _uview(c)).view(np_dtype(dt)),)
    return AluOp(fn, (t, t, dt), (dt,))


def _mul24(opcode, mods, types) -> AluOp:
    """``mul24.{lo,hi}`` / ``mad24.{lo,hi}``: the 48-bit product of the low 24 bits of a and b (sign-
    extended from bit 23 for .s32); ``.lo`` keeps bits 31..0, ``.hi`` bits 47..16, ``mad24`` adds c
    (``mad24.hi.sat.s32`` clamps) [PTX ISA §9.7.1.5, §9.7.1.6]."""
    where = SEC[opcode]
    m = Mods(opcode, mods, ("lo", "hi", "sat"), where)
    mode = m.require(("lo", "hi"), "one of .lo/.hi")
    t = _one(opcode, types, ("u32", "s32"), where)
    if "sat" in m and (opcode != "mad24" or t != "s32" or mode != "hi"):
        raise AluError(f"{opcode}.sat applies only to mad24.hi.sat.s32 ({where})")
    signed = t == "s32"

    def part(a, b):
        ua = _uview(a).astype(np.int64) & 0xFFFFFF
        ub = _uview(b).astype(np.int64) & 0xFFFFFF
        if signed:
            ua = np.where(ua >= 1 << 23, ua - (1 << 24), ua)
            ub = np.where(ub >= 1 << 23, ub - (1 << 24), ub)
        p = ua * ub
        return p >> 16 if mode == "hi" else p

    if opcode == "mul24":
        def fn(a, b):
            return ((part(a, b) & 0xFFFFFFFF).astype(np.uint32).view(np_dtype(t)),)
        return AluOp(fn, (t, t), (t,))
    if "sat" in m:
        def fn(a, b, c):
            s = part(a, b) + c.astype(np.int64)
            return (np.clip(s, -2 ** 31, 2 ** 31 - 1).astype(np.int32),)
        return AluOp(fn, (t, t, t), (t,))

    def fn(a, b, c):
        return (((part(a, b) & 0xFFFFFFFF).astype(np.uint32) + _uview(c)).view(np_dtype(t)),)
    return AluOp(fn, (t, t, t), (t,))


def _sad(opcode, mods, types) -> AluOp:
    """``sad``: d = c + |a − b| with the difference taken the larger minus the smaller (signed
    comparison for .s types), wrapping [PTX ISA §9.7.1.7]."""
    Mods(opcode, mods, (), SEC["sad"])
    t = _one(opcode, types, _ARITH, SEC["sad"])

    def fn(a, b, c):
        ua, ub = _uview(a), _uview(b)
        diff = np.where(a < b, ub - ua, ua - ub)
        return ((_uview(c) + diff).view(a.dtype),)
    return AluOp(fn, (t, t, t), (t,))


# --- division ----------------------------------------------------------------------------------------
def _divrem(opcode, mods, types) -> AluOp:
    """Integer ``div`` / ``rem`` with C semantics: the quotient truncates toward zero, the remainder has
    the dividend's sign, MININT / −1 wraps to MININT (remainder 0) [PTX ISA §9.7.1.8, §9.7.1.9].
    Division by zero is "unspecified, machine-specific" in PTX: the emulator returns all ones (0xFF…F
    unsigned, −1 signed) for ``div`` and the dividend for ``rem`` — [model] hardware value not measured."""
    where = SEC[opcode]
    Mods(opcode, mods, (), where)
    t = _one(opcode, types, _ARITH, where)
    U = uint_of(_w(t))
    want_q = opcode == "div"

    def fn(a, b):
        if t[0] == "u":
            ua, ub, na, nb = a, b, None, None
        else:
            na, nb = a < 0, b < 0
            ua = np.where(na, U(0) - _uview(a), _uview(a))
            ub = np.where(nb, U(0) - _uview(b), _uview(b))
        zero = ub == 0
        ubs = np.where(zero, U(1), ub)
        if want_q:
            r = ua // ubs
            if na is not None:
                r = np.where(na ^ nb, U(0) - r, r)
            r = np.where(zero, U(~U(0)), r)
        else:
            r = ua % ubs
            if na is not None:
                r = np.where(na, U(0) - r, r)
            r = np.where(zero, _uview(a), r)
        return (r.astype(U, copy=False).view(a.dtype),)
    return AluOp(fn, (t, t), (t,))


# --- abs / neg / min / max ---------------------------------------------------------------------------
def _absneg(opcode, mods, types) -> AluOp:
    """Integer ``abs`` / ``neg`` on .s16/.s32/.s64, two's complement wrap (|MININT| = MININT)
    [PTX ISA §9.7.1.10, §9.7.1.11]."""
    where = SEC[opcode]
    Mods(opcode, mods, (), where)
    t = _one(opcode, types, ("s16", "s32", "s64"), where)
    U = uint_of(_w(t))

    def fn(a):
        n = (U(0) - _uview(a)).view(a.dtype)
        return ((n if opcode == "neg" else np.where(a < 0, n, a)),)
    return AluOp(fn, (t,), (t,))


def _halves(x: np.ndarray, signed: bool):
    lo = (x & np.uint32(0xFFFF)).astype(np.uint16)
    hi = (x >> np.uint32(16)).astype(np.uint16)
    return (lo.view(np.int16), hi.view(np.int16)) if signed else (lo, hi)


def _pack16(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return _uview(lo).astype(np.uint32) | (_uview(hi).astype(np.uint32) << np.uint32(16))


def _minmax(opcode, mods, types) -> AluOp:
    """Integer ``min`` / ``max`` (signed or unsigned compare), packed ``.u16x2/.s16x2`` per half, and
    ``.relu`` (.s32, .s16x2) clamping a negative result to 0 [PTX ISA §9.7.1.12, §9.7.1.13]."""
    where = SEC[opcode]
    m = Mods(opcode, mods, ("relu",), where)
    t = _one(opcode, types, _ARITH + ("u16x2", "s16x2"), where)
    if "relu" in m and t not in ("s32", "s16x2"):
        raise AluError(f"{opcode}.relu applies only to .s32 and .s16x2 ({where})")
    f = np.minimum if opcode == "min" else np.maximum
    relu = "relu" in m
    if t in ("u16x2", "s16x2"):
        signed = t == "s16x2"

        def fn(a, b):
            (al, ah), (bl, bh) = _halves(a, signed), _halves(b, signed)
            lo, hi = f(al, bl), f(ah, bh)
            if relu:
                lo, hi = np.maximum(lo, np.int16(0)), np.maximum(hi, np.int16(0))
            return (_pack16(lo, hi),)
        return AluOp(fn, ("b32", "b32"), ("b32",))

    def fn(a, b):
        r = f(a, b)
        return ((np.maximum(r, r.dtype.type(0)) if relu else r),)
    return AluOp(fn, (t, t), (t,))


# --- bit counting and fields -------------------------------------------------------------------------
def _msb(u: np.ndarray) -> np.ndarray:
    """Position of the most significant 1 bit of an unsigned array (−1 for 0), as int64."""
    u = u.astype(np.uint64)
    hi = u >> _U64(32)
    lo = u & _M32
    mh = np.frexp(hi.astype(np.float64))[1].astype(np.int64) - 1
    ml = np.frexp(lo.astype(np.float64))[1].astype(np.int64) - 1
    return np.where(hi != 0, mh + 32, ml)


def _bitcount(opcode, mods, types) -> AluOp:
    """``popc`` (number of 1 bits) and ``clz`` (leading zeros, 0..width) of .b32/.b64, result .u32
    [PTX ISA §9.7.1.14, §9.7.1.15]."""
    where = SEC[opcode]
    Mods(opcode, mods, (), where)
    t = _one(opcode, types, ("b32", "b64"), where)
    w = _w(t)
    if opcode == "popc":
        def fn(a):
            return (np.bitwise_count(a).astype(np.uint32),)
    else:
        def fn(a):
            return ((w - 1 - _msb(a)).astype(np.uint32),)
    return AluOp(fn, (t,), ("u32",))


def _bfind(opcode, mods, types) -> AluOp:
    """``bfind{.shiftamt}``: bit position of the most significant non-sign bit (negative signed inputs
    are complemented first), 0xFFFFFFFF if none; ``.shiftamt`` returns msb − position
    [PTX ISA §9.7.1.16]."""
    where = SEC["bfind"]
    m = Mods(opcode, mods, ("shiftamt",), where)
    t = _one(opcode, types, ("u32", "u64", "s32", "s64"), where)
    w = _w(t)
    shiftamt = "shiftamt" in m

    def fn(a):
        u = _uview(a)
        if t[0] == "s":
            u = np.where(a < 0, ~u, u)
        p = _msb(u)
        if shiftamt:
            p = np.where(p >= 0, (w - 1) - p, p)
        return ((p & 0xFFFFFFFF).astype(np.uint32),)
    return AluOp(fn, (t,), ("u32",))


_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint64)


def _brev(opcode, mods, types) -> AluOp:
    """``brev``: d[i] = a[msb − i] on .b32/.b64 [PTX ISA §9.7.1.18]."""
    where = SEC["brev"]
    Mods(opcode, mods, (), where)
    t = _one(opcode, types, ("b32", "b64"), where)
    nbytes = _w(t) // 8

    def fn(a):
        u = a.astype(np.uint64)
        out = np.zeros(u.shape, np.uint64)
        for k in range(nbytes):
            byte = (u >> _U64(8 * k)) & _U64(0xFF)
            out |= _REV8[byte.astype(np.intp)] << _U64(8 * (nbytes - 1 - k))
        return (out.astype(a.dtype),)
    return AluOp(fn, (t,), (t,))


def _mask(k: np.ndarray) -> np.ndarray:
    """``(1 << k) − 1`` as uint64 for k in 0..64."""
    kk = np.clip(k, 0, 63).astype(np.uint64)
    return np.where(k >= 64, ~_U64(0), (_U64(1) << kk) - _U64(1))


def _bfe(opcode, mods, types) -> AluOp:
    """``bfe``: extract ``len = c & 0xff`` bits from position ``pos = b & 0xff``, zero- (.u) or sign-
    extended (.s: the sign is bit min(pos+len−1, msb) of a; 0 when len = 0); bits beyond the msb of a
    read as the sign [PTX ISA §9.7.1.19]."""
    where = SEC["bfe"]
    Mods(opcode, mods, (), where)
    t = _one(opcode, types, ("u32", "u64", "s32", "s64"), where)
    w = _w(t)
    wmask = _mask(np.array(w))

    def fn(a, b, c):
        u = _uview(a).astype(np.uint64)
        pos = (b & 0xFF).astype(np.int64)
        ln = (c & 0xFF).astype(np.int64)
        k = np.clip(np.minimum(ln, w - pos), 0, None)
        field = (u >> np.clip(pos, 0, w - 1).astype(np.uint64)) & _mask(k)
        if t[0] == "s":
            sidx = np.clip(np.minimum(pos + ln - 1, w - 1), 0, w - 1).astype(np.uint64)
            sbit = (((u >> sidx) & _U64(1)) != 0) & (ln > 0)
            field = np.where(sbit, field | (~_mask(k) & wmask), field)
        return (field.astype(uint_of(w)).view(np_dtype(t)),)
    return AluOp(fn, (t, "u32", "u32"), (t,))


def _bfi(opcode, mods, types) -> AluOp:
    """``bfi``: insert the low ``len = d & 0xff`` bits of a into b at ``pos = c & 0xff`` (bits past the
    msb are dropped; len = 0 or pos > msb gives b) [PTX ISA §9.7.1.20]."""
    where = SEC["bfi"]
    Mods(opcode, mods, (), where)
    t = _one(opcode, types, ("b32", "b64"), where)
    w = _w(t)

    def fn(a, b, c, d):
        pos = (c & 0xFF).astype(np.int64)
        k = np.clip(np.minimum((d & 0xFF).astype(np.int64), w - pos), 0, None)
        sh = np.clip(pos, 0, w - 1).astype(np.uint64)
        msk = _mask(k) << sh
        res = (b.astype(np.uint64) & ~msk) | ((a.astype(np.uint64) << sh) & msk)
        return (res.astype(a.dtype),)
    return AluOp(fn, (t, t, "u32", "u32"), (t,))


def _fns(opcode, mods, types) -> AluOp:
    """``fns.b32 d, mask, base, offset``: position of the |offset|-th set bit of mask counting up
    (offset > 0) or down (offset < 0) from ``base``, ``offset = 0`` tests bit ``base``; 0xFFFFFFFF if
    none [PTX ISA §9.7.1.17]. ``base > 31`` is undefined in PTX: [model] returns 0xFFFFFFFF."""
    where = SEC["fns"]
    Mods(opcode, mods, (), where)
    _one(opcode, types, ("b32",), where)
    pos = np.arange(32, dtype=np.int64)

    def fn(mask, base, offset):
        bits = ((mask.astype(np.int64)[:, None] >> pos) & 1).astype(bool)
        bs = base.astype(np.int64)[:, None]
        off = offset.astype(np.int64)
        up = bits & (pos >= bs)
        dn = bits & (pos <= bs)
        cu = np.cumsum(up, axis=1)
        cd = np.cumsum(dn[:, ::-1], axis=1)[:, ::-1]
        n = np.abs(off)[:, None]
        hit_u = up & (cu == n)
        hit_d = dn & (cd == n)
        first_u = np.where(hit_u.any(1), hit_u.argmax(1), -1)
        first_d = np.where(hit_d.any(1), 31 - hit_d[:, ::-1].argmax(1), -1)
        b0 = np.clip(bs[:, 0], 0, 31)
        zero = np.where(bits[np.arange(len(off)), b0], b0, -1)
        r = np.where(off > 0, first_u, np.where(off < 0, first_d, zero))
        r = np.where(bs[:, 0] > 31, -1, r)
        return ((r & 0xFFFFFFFF).astype(np.uint32),)
    return AluOp(fn, ("b32", "u32", "s32"), ("b32",))


def _bmsk(opcode, mods, types) -> AluOp:
    """``bmsk.{clamp,wrap}.b32 d, a, b``: a mask of b bits starting at bit a [PTX ISA §9.7.1.22]."""
    where = SEC["bmsk"]
    m = Mods(opcode, mods, ("clamp", "wrap"), where)
    mode = m.require(("clamp", "wrap"), "one of .clamp/.wrap")
    _one(opcode, types, ("b32",), where)

    def fn(a, b):
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        a1, b1 = a64 & 0x1F, b64 & 0x1F
        s = a1 + b1
        mask0 = (_M32 << a1.astype(np.uint64)) & _M32
        mask1 = (_M32 << np.minimum(s, 63).astype(np.uint64)) & _M32
        kill1 = s >= 32
        if mode == "clamp":
            mask0 = np.where(a64 >= 32, _U64(0), mask0)
            kill1 = kill1 | (a64 >= 32) | (b64 >= 32)
        mask1 = np.where(kill1, _U64(0), np.where(b1 == 0, _M32, mask1))
        return ((mask0 & ~mask1 & _M32).astype(np.uint32),)
    return AluOp(fn, ("u32", "u32"), ("b32",))


def _szext(opcode, mods, types) -> AluOp:
    """``szext.{clamp,wrap}.{u32,s32} d, a, b``: sign- or zero-extend the low N = b bits of a
    [PTX ISA §9.7.1.21]."""
    where = SEC["szext"]
    m = Mods(opcode, mods, ("clamp", "wrap"), where)
    mode = m.require(("clamp", "wrap"), "one of .clamp/.wrap")
    t = _one(opcode, types, ("u32", "s32"), where)

    def fn(a, b):
        u = _uview(a).astype(np.uint64)
        b64 = b.astype(np.int64)
        b1 = b64 & 0x1F
        big = (b64 >= 32) & (mode == "clamp")
        mask = np.where(big, _U64(0), (_M32 << b1.astype(np.uint64)) & _M32)
        spos = ((b1 - 1) & 0x1F).astype(np.uint64)
        sbit = ((u >> spos) & _U64(1)).astype(bool) & (b1 != 0) & ~big & (t == "s32")
        d = (u & ~mask & _M32) | np.where(sbit, mask, _U64(0))
        return (d.astype(np.uint32).view(np_dtype(t)),)
    return AluOp(fn, (t, "u32"), (t,))


def _dp(opcode, mods, types) -> AluOp:
    """``dp4a.atype.btype``: c + Σ a.byte[i]·b.byte[i]; ``dp2a.{lo,hi}.atype.btype``: c + Σ
    a.half[i]·b.byte[sel+i] (sel 0 for .lo, 2 for .hi); bytes / halves sign- or zero-extended by their
    type, c and d .u32 when both types are .u32 else .s32, sum modulo 2^32
    [PTX ISA §9.7.1.23, §9.7.1.24]."""
    where = SEC[opcode]
    m = Mods(opcode, mods, ("lo", "hi") if opcode == "dp2a" else (), where)
    if len(types) != 2 or any(x not in ("u32", "s32") for x in types):
        raise AluError(f"{opcode} takes two types from .u32/.s32 (.atype.btype) ({where})")
    at, bt = types
    ct = "u32" if at == bt == "u32" else "s32"
    sel = 0
    if opcode == "dp2a":
        sel = 0 if m.require(("lo", "hi"), "one of .lo/.hi") == "lo" else 2
    bsh = np.array([0, 8, 16, 24], np.int64)
    hsh = np.array([0, 16], np.int64)

    def parts(x, sh, bits, signed):
        v = (_uview(x).astype(np.int64)[:, None] >> sh) & ((1 << bits) - 1)
        return np.where(v >= 1 << (bits - 1), v - (1 << bits), v) if signed else v

    def fn(a, b, c):
        vb = parts(b, bsh, 8, bt == "s32")
        if opcode == "dp4a":
            va = parts(a, bsh, 8, at == "s32")
            s = (va * vb).sum(axis=1)
        else:
            va = parts(a, hsh, 16, at == "s32")
            s = (va * vb[:, sel:sel + 2]).sum(axis=1)
        d = (c.astype(np.int64) + s) & 0xFFFFFFFF
        return (d.astype(np.uint32).view(np_dtype(ct)),)
    return AluOp(fn, (at, bt, ct), (ct,))


# --- logic ---------------------------------------------------------------------------------------------
def _logic(opcode, mods, types) -> AluOp:
    """``and``/``or``/``xor``/``not`` on .pred/.b16/.b32/.b64 and ``cnot`` (d = a == 0 ? 1 : 0) on
    .b16/.b32/.b64 [PTX ISA §9.7.8.1–§9.7.8.5]."""
    where = SEC[opcode]
    Mods(opcode, mods, (), where)
    t = _one(opcode, types, _BTYPES if opcode == "cnot" else ("pred",) + _BTYPES, where)
    if opcode == "not":
        return AluOp(lambda a: (np.logical_not(a) if t == "pred" else ~a,), (t,), (t,))
    if opcode == "cnot":
        return AluOp(lambda a: ((a == 0).astype(a.dtype),), (t,), (t,))
    f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[opcode]
    return AluOp(lambda a, b: (f(a, b),), (t, t), (t,))


def _lop3(opcode, mods, types) -> AluOp:
    """``lop3.b32 d, a, b, c, immLut``: bit i of d is bit ``(a_i<<2)|(b_i<<1)|c_i`` of immLut (the LUT
    F(0xF0, 0xCC, 0xAA)); the emulator takes immLut as a fourth .u32 source [PTX ISA §9.7.8.6]."""
    where = SEC["lop3"]
    Mods(opcode, mods, (), where)
    _one(opcode, types, ("b32",), where)

    def fn(a, b, c, lut):
        na, nb, nc = ~a, ~b, ~c
        out = np.zeros(a.shape, np.uint32)
        uniform = lut.size > 0 and lut.min() == lut.max()
        for i in range(8):
            if uniform and not (int(lut.flat[0]) >> i) & 1:
                continue
            term = (a if i & 4 else na) & (b if i & 2 else nb) & (c if i & 1 else nc)
            if uniform:
                out |= term
            else:
                out |= np.where(((lut >> np.uint32(i)) & np.uint32(1)) != 0, term, np.uint32(0))
        return (out,)
    return AluOp(fn, ("b32", "b32", "b32", "u32"), ("b32",))


def _shift(opcode, mods, types) -> AluOp:
    """``shl`` (zero fill) / ``shr`` (sign fill for .s, zero fill otherwise) by the unsigned 32-bit
    amount b; amounts above the width clamp to the width (shl, shr.u/.b → 0; shr.s → all sign bits)
    [PTX ISA §9.7.8.8, §9.7.8.9]."""
    where = SEC[opcode]
    Mods(opcode, mods, (), where)
    t = _one(opcode, types, _BTYPES if opcode == "shl" else _BTYPES + _ARITH, where)
    w = _w(t)

    def fn(a, b):
        n = np.minimum(b, np.uint32(w - 1)).astype(a.dtype)
        big = b >= np.uint32(w)
        if opcode == "shl":
            r = np.where(big, a.dtype.type(0), a << n)
        elif t[0] == "s":
            r = a >> n
        else:
            r = np.where(big, a.dtype.type(0), a >> n)
        return (r.astype(a.dtype, copy=False),)
    return AluOp(fn, (t, "u32"), (t,))


def _shf(opcode, mods, types) -> AluOp:
    """``shf.{l,r}.{clamp,wrap}.b32 d, a, b, c``: funnel shift of the 64-bit {b:a} by n = min(c, 32)
    (clamp) or c & 31 (wrap); shf.l keeps the upper 32 bits, shf.r the lower [PTX ISA §9.7.8.7]."""
    where = SEC["shf"]
    m = Mods(opcode, mods, ("l", "r", "clamp", "wrap"), where)
    d = m.require(("l", "r"), "a direction .l/.r")
    mode = m.require(("clamp", "wrap"), "one of .clamp/.wrap")
    _one(opcode, types, ("b32",), where)

    def fn(a, b, c):
        n = np.minimum(c, np.uint32(32)) if mode == "clamp" else (c & np.uint32(31))
        n = n.astype(np.uint64)
        v = (b.astype(np.uint64) << _U64(32)) | a.astype(np.uint64)
        r = ((v << n) >> _U64(32)) if d == "l" else (v >> n)
        return ((r & _M32).astype(np.uint32),)
    return AluOp(fn, ("b32", "b32", "u32"), ("b32",))


# byte indices (d.b0, d.b1, d.b2, d.b3) for the prmt modes, selected by c[1:0]
_PRMT = {
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}
_PRMT_NP = {k: np.array(v, np.uint64) for k, v in _PRMT.items()}


def _prmt(opcode, mods, types) -> AluOp:
    """``prmt.b32{.mode} d, a, b, c``: pick bytes of the 8-byte {b, a} (a = bytes 0–3). Generic form:
    nibble i of c selects d's byte i (bits 2:0 the byte, bit 3 replicates its sign bit); ``.f4e``
    ``.b4e`` ``.rc8`` ``.ecl`` ``.ecr`` ``.rc16`` use c[1:0] and the fixed tables of PTX ISA §9.7.9.7
    (#data-movement-and-conversion-instructions-prmt)."""
    where = SEC["prmt"]
    m = Mods(opcode, mods, tuple(_PRMT), where)
    mode = m.pick(tuple(_PRMT))
    _one(opcode, types, ("b32",), where)

    nib = np.array([0, 4, 8, 12], np.uint32)

    def fn(a, b, c):
        n = a.shape[0]
        pool = np.empty((n, 2), "<u4")           # little-endian: bytes 0-3 = a, 4-7 = b
        pool[:, 0], pool[:, 1] = a, b
        pool = pool.view(np.uint8).reshape(n, 8)
        if mode is None:
            sel = (c[:, None] >> nib) & np.uint32(0xF)
            byte = pool[np.arange(n)[:, None], (sel & np.uint32(7)).astype(np.intp)]
            rep = np.where(byte >= 0x80, np.uint8(0xFF), np.uint8(0))
            byte = np.where(sel >= 8, rep, byte)
        else:
            idx = _PRMT_NP[mode][(c & np.uint32(3)).astype(np.intp)].astype(np.intp)
            byte = pool[np.arange(n)[:, None], idx]
        return (np.ascontiguousarray(byte, dtype=np.uint8).view("<u4").reshape(n).astype(np.uint32),)
    return AluOp(fn, ("b32", "b32", "b32"), ("b32",))


_BUILDERS = {
    "add": _add_sub, "sub": _add_sub, "addc": _addc, "subc": _addc,
    "mul": _mul, "mad": _mad, "madc": _mad, "mul24": _mul24, "mad24": _mul24, "sad": _sad,
    "div": _divrem, "rem": _divrem, "abs": _absneg, "neg": _absneg, "min": _minmax, "max": _minmax,
    "popc": _bitcount, "clz": _bitcount, "bfind": _bfind, "brev": _brev, "bfe": _bfe, "bfi": _bfi,
    "fns": _fns, "bmsk": _bmsk, "szext": _szext, "dp4a": _dp, "dp2a": _dp,
    "and": _logic, "or": _logic, "xor": _logic, "not": _logic, "cnot": _logic, "lop3": _lop3,
    "shl": _shift, "shr": _shift, "shf": _shf, "prmt": _prmt,
}
OPCODES = frozenset(_BUILDERS)


def build(opcode: str, mods: tuple, types: tuple) -> AluOp:
    """The :class:`AluOp` of an integer / logic instruction form (see the builder docstrings)."""
    return _BUILDERS[opcode](opcode, mods, types)

