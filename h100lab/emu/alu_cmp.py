"""Comparison and selection: ``setp``, ``set``, ``selp``, ``slct`` for integer and floating-point types.

``setp.CmpOp{.BoolOp}{.ftz}.type p|q, a, b{, c}``: the contract always writes two predicates. For
scalar types ``p = t BoolOp c`` and ``q = !t BoolOp c`` (without a BoolOp ``p = t``, ``q = !t``); for the
packed ``.f16x2``/``.bf16x2`` types p and q are the lower- and upper-half results
[PTX ISA §9.7.6.2, §9.7.7.2].
"""
from __future__ import annotations

import numpy as np

from .alu_core import SEC, AluError, AluOp, Mods
from .alu_round import BF16, F16, F32, F64, flush
from .types import np_dtype

__all__ = ["build", "OPCODES", "compare"]

_ORDERED = ("eq", "ne", "lt", "le", "gt", "ge")
_UNSIGNED_OPS = ("lo", "ls", "hi", "hs")
_UNORDERED = ("equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
CMP_OPS = _ORDERED + _UNSIGNED_OPS + _UNORDERED
BOOL_OPS = ("and", "or", "xor")
_INT = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64")
_FLOAT = ("f32", "f64", "f16", "bf16")
_PACKED = ("f16x2", "bf16x2")
_FMT = {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}


def compare(op: str, x: np.ndarray, y: np.ndarray, is_float: bool) -> np.ndarray:
    """``x CmpOp y`` per lane: ordered comparisons are false when either operand is NaN, the ``u``
    forms true, ``num`` / ``nan`` test for NaN; ``lo ls hi hs`` are the unsigned lt le gt ge
    [PTX ISA §9.7.6.1 "Floating Point Notes", "Integer Notes"]."""
    op = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(op, op)
    if op in ("num", "nan"):
        un = np.isnan(x) | np.isnan(y)
        return ~un if op == "num" else un
    with np.errstate(invalid="ignore"):
        r = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
             "gt": np.greater, "ge": np.greater_equal}[op[:2]](x, y)
    if not is_float or op in ("eq", "lt", "le", "gt", "ge"):
        return r                       # NumPy's ordered comparisons are already false on NaN
    un = np.isnan(x) | np.isnan(y)
    if op == "ne":
        return r & ~un                 # NumPy's != is true on NaN; PTX's ordered ne is false
    return r if op == "neu" else (r | un)


def _values(x: np.ndarray, t: str, ftz: bool):
    """Per-lane comparison values (a list: one array, or the low and high halves of a packed type)."""
    if t in _PACKED:
        fmt = F16 if t == "f16x2" else BF16
        halves = [(x & np.uint32(0xFFFF)).astype(np.uint16), (x >> np.uint32(16)).astype(np.uint16)]
        if ftz:
            halves = [flush(h, fmt) for h in halves]
        with np.errstate(all="ignore"):
            return [h.view(fmt.dtype).astype(np.float64) for h in halves]
    if t in _FLOAT:
        fmt = _FMT[t]
        if ftz:
            x = flush(x.view(fmt.udtype), fmt).view(fmt.dtype)
        with np.errstate(all="ignore"):
            return [x.astype(np.float64) if t in ("f16", "bf16") else x]
    return [x]


def _check_cmp(opcode: str, m: Mods, t: str, where: str) -> tuple[str, str | None]:
    cmp = m.require(CMP_OPS, "a comparison operator (eq ne lt le gt ge lo ls hi hs equ … nan)")
    boolop = m.pick(BOOL_OPS)
    isf = t in _FLOAT + _PACKED
    if t in ("b16", "b32", "b64") and cmp not in ("eq", "ne"):
        raise AluError(f"{opcode}.{cmp}.{t}: bit-size types compare only with eq/ne ({where})")
    if cmp in _UNSIGNED_OPS and not t.startswith("u"):
        raise AluError(f"{opcode}.{cmp}: lo/ls/hi/hs are the unsigned comparisons (.u types) ({where})")
    if cmp in _UNORDERED and not isf:
        raise AluError(f"{opcode}.{cmp}: unordered comparisons need a floating-point type ({where})")
    if "ftz" in m and t not in ("f32", "f16", "f16x2"):
        raise AluError(f"{opcode}.ftz applies only to .f32 (and .f16/.f16x2) comparisons ({where})")
    return cmp, boolop


def _bool(op: str | None, t: np.ndarray, c):
    if op is None:
        return t
    return {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op](t, c)


def _setp(opcode, mods, types) -> AluOp:
    """``setp.CmpOp{.BoolOp}{.ftz}.type p|q, a, b{, c}``: t = a CmpOp b; p = BoolOp(t, c),
    q = BoolOp(!t, c); for .f16x2/.bf16x2 p and q come from the low and high halves; ``.ftz`` flushes
    subnormal inputs [PTX ISA §9.7.6.2, §9.7.7.2]."""
    if len(types) != 1:
        raise AluError(f"setp takes one type ({SEC['setp']})")
    t = types[0]
    where = SEC["hsetp"] if t in ("f16", "bf16") + _PACKED else SEC["setp"]
    if t not in _INT + _FLOAT + _PACKED:
        raise AluError(f"setp.{t}: not a comparable type ({where})")
    m = Mods(opcode, mods, CMP_OPS + BOOL_OPS + ("ftz",), where)
    cmp, boolop = _check_cmp(opcode, m, t, where)
    ftz = "ftz" in m
    isf = t in _FLOAT + _PACKED
    packed = t in _PACKED

    def fn(a, b, c=None):
        va, vb = _values(a, t, ftz), _values(b, t, ftz)
        r = [compare(cmp, x, y, isf) for x, y in zip(va, vb)]
        if packed:
            return (_bool(boolop, r[0], c), _bool(boolop, r[1], c))
        return (_bool(boolop, r[0], c), _bool(boolop, ~r[0], c))
    srcs = (t, t, "pred") if boolop else (t, t)
    return AluOp(fn, srcs, ("pred", "pred"))


_TRUE = {"u32": 0xFFFFFFFF, "s32": -1, "u16": 0xFFFF, "s16": -1, "f32": 1.0, "f16": 1.0, "bf16": 1.0}


def _set(opcode, mods, types) -> AluOp:
    """``set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, c}``: d = BoolOp(a CmpOp b, c) ? TRUE : 0 with
    TRUE = 1.0 for float dtypes and all ones for integer dtypes; packed stypes compare per half into
    per-half results [PTX ISA §9.7.6.1, §9.7.7.1]."""
    if len(types) != 2:
        raise AluError(f"set takes .dtype.stype ({SEC['set']})")
    dt, st = types
    half = st in ("f16", "bf16") + _PACKED or dt in ("f16", "bf16", "u16", "s16") + _PACKED
    where = SEC["hset"] if half else SEC["set"]
    if st in _PACKED:
        if dt not in ("u32", "s32", st):
            raise AluError(f"set.{dt}.{st}: a packed comparison writes .u32, .s32 or .{st} ({where})")
    elif st in _INT + _FLOAT:
        okd = ("u32", "s32", "f32", "f16", "bf16") + (("u16", "s16") if st in ("f16", "bf16") else ())
        if dt not in okd:
            raise AluError(f"set.{dt}.{st}: the destination type must be one of {okd} ({where})")
    else:
        raise AluError(f"set.{dt}.{st}: not a comparable source type ({where})")
    m = Mods(opcode, mods, CMP_OPS + BOOL_OPS + ("ftz",), where)
    cmp, boolop = _check_cmp(opcode, m, st, where)
    ftz = "ftz" in m
    isf = st in _FLOAT + _PACKED
    if st in _PACKED:
        one = {"f16x2": 0x3C00, "bf16x2": 0x3F80}.get(dt, 0xFFFF)

        def fn(a, b, c=None):
            va, vb = _values(a, st, ftz), _values(b, st, ftz)
            lo, hi = (_bool(boolop, compare(cmp, x, y, True), c) for x, y in zip(va, vb))
            d = np.where(lo, np.uint32(one), np.uint32(0)) | np.where(hi, np.uint32(one << 16), np.uint32(0))
            return (d.view(np_dtype(dt)) if dt != st else d,)
        return AluOp(fn, (st, st, "pred") if boolop else (st, st), (dt,))
    out_dt = np_dtype(dt)
    true = np.array(_TRUE[dt], dtype=out_dt)

    def fn(a, b, c=None):
        va, vb = _values(a, st, ftz), _values(b, st, ftz)
        r = _bool(boolop, compare(cmp, va[0], vb[0], isf), c)
        return (np.where(r, true, out_dt.type(0)).astype(out_dt, copy=False),)
    return AluOp(fn, (st, st, "pred") if boolop else (st, st), (dt,))


_SEL = _INT + ("f32", "f64")


def _selp(opcode, mods, types) -> AluOp:
    """``selp.type d, a, b, c``: d = c ? a : b [PTX ISA §9.7.6.3]."""
    where = SEC["selp"]
    Mods(opcode, mods, (), where)
    if len(types) != 1 or types[0] not in _SEL:
        raise AluError(f"selp needs one type from {', '.join(_SEL)} ({where})")
    t = types[0]
    return AluOp(lambda a, b, c: (np.where(c, a, b),), (t, t, "pred"), (t,))


def _slct(opcode, mods, types) -> AluOp:
    """``slct.dtype.s32`` / ``slct{.ftz}.dtype.f32 d, a, b, c``: d = (c >= 0) ? a : b; −0 counts as
    ≥ 0, a NaN c selects b, ``.ftz`` flushes a subnormal c to a signed zero (so a is selected)
    [PTX ISA §9.7.6.4]."""
    where = SEC["slct"]
    m = Mods(opcode, mods, ("ftz",), where)
    if len(types) != 2 or types[0] not in _SEL or types[1] not in ("s32", "f32"):
        raise AluError(f"slct takes .dtype.s32 or .dtype.f32 ({where})")
    dt, ct = types
    if "ftz" in m and ct != "f32":
        raise AluError(f"slct.ftz applies only to an .f32 operand c ({where})")
    ftz = "ftz" in m

    def fn(a, b, c):
        if ftz:
            c = flush(c.view(np.uint32), F32).view(np.float32)
        with np.errstate(invalid="ignore"):
            return (np.where(c >= 0, a, b),)
    return AluOp(fn, (dt, dt, ct), (dt,))


_BUILDERS = {"setp": _setp, "set": _set, "selp": _selp, "slct": _slct}
OPCODES = frozenset(_BUILDERS)


def build(opcode: str, mods: tuple, types: tuple) -> AluOp:
    """The :class:`AluOp` of a comparison / selection form."""
    return _BUILDERS[opcode](opcode, mods, types)
