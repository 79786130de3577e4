"""h100lab.emu.alu: PTX ALU semantics, bit-exact against independent references.

References: Python integers modulo 2^n for integer instructions, transliterations of the PTX ISA
pseudo-code for bit-field instructions, ``fractions.Fraction`` exact arithmetic rounded by bracketing
the exact value between neighbouring representable numbers (``ref_round``) for every rounding mode,
ml_dtypes for bf16/FP8, NumPy for f16, and the H200 measurements of hopper-spec-facts §10.2 for FP8.
Every assertion compares exact bits.
"""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab.emu.alu import APPROXIMATE_OPCODES, OPCODES, AluError, AluOp, is_approximate, lookup
from h100lab.emu.types import np_dtype

S = settings(database=None, deadline=None, max_examples=120)
S_FEW = settings(database=None, deadline=None, max_examples=60)
BF16 = np.dtype(ml_dtypes.bfloat16)
MODES = ("rn", "rz", "rm", "rp")
LANES = st.integers(1, 9)


# --- harness --------------------------------------------------------------------------------------------
def _dt(t: str) -> np.dtype:
    return np.dtype(np.uint32) if t == "cc" else np_dtype(t)


def _arr(values, dt: np.dtype) -> np.ndarray:
    """Lanes of ``dt``; Python integers are taken modulo 2^n (bit patterns or signed values)."""
    if dt.kind in "iu":
        w = dt.itemsize * 8
        u = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[w]
        return np.array([int(v) & ((1 << w) - 1) for v in values], dtype=u).view(dt)
    return np.array(values, dtype=dt)


def run(opcode, mods, types, *args):
    """Look the form up, call it, and check the contract: dtypes, shapes, fresh outputs, inputs intact."""
    op = lookup(opcode, tuple(mods), tuple(types))
    assert isinstance(op, AluOp) and len(args) == len(op.srcs)
    arrs = [a if isinstance(a, np.ndarray) else _arr(a, _dt(s)) for a, s in zip(args, op.srcs)]
    for a, s in zip(arrs, op.srcs):
        assert a.dtype == _dt(s), (a.dtype, s)
    before = [a.copy() for a in arrs]
    out = op.fn(*arrs)
    assert isinstance(out, tuple) and len(out) == len(op.dsts)
    for o, d in zip(out, op.dsts):
        assert o.dtype == _dt(d), (o.dtype, d)
        assert o.shape == arrs[0].shape
        for a in arrs:
            assert not np.shares_memory(o, a)
    for a, b in zip(arrs, before):
        assert a.tobytes() == b.tobytes(), "fn modified an input"
    return out


def one(opcode, mods, types, *args):
    return run(opcode, mods, types, *args)[0]


def fb(bits, t="f32"):
    """Float array from raw bit patterns."""
    u = {"f32": np.uint32, "f64": np.uint64, "f16": np.uint16, "bf16": np.uint16}[t]
    return np.array(bits, dtype=u).view(np_dtype(t))


def bits(x):
    x = np.asarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def sx(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if v >> (w - 1) else v


def ux(v: int, w: int) -> int:
    return v & ((1 << w) - 1)


def rng(t: str):
    w = int(t[1:3].rstrip("x"))
    if t[0] == "s":
        return st.integers(-(1 << (w - 1)), (1 << (w - 1)) - 1)
    return st.integers(0, (1 << w) - 1)


# --- exact rounding reference ---------------------------------------------------------------------------
def _finfo(dt):
    return ml_dtypes.finfo(dt) if dt == BF16 else np.finfo(dt)


def ref_round(x: Fraction, dt, mode: str):
    """``x`` rounded to dtype ``dt`` in ``mode``, found by bracketing x between neighbouring values of
    ``dt``; ±∞ brackets everything beyond the largest finite value and counts as ±2^maxexp in the
    round-to-nearest distance, so overflow follows IEEE 754."""
    dt = np.dtype(dt)
    big = Fraction(2) ** int(_finfo(dt).maxexp)
    try:
        c = np.array(float(x), np.float64)
    except OverflowError:
        c = np.array(math.inf if x > 0 else -math.inf, np.float64)
    with np.errstate(over="ignore"):
        c = c.astype(dt)
        cands = [c]
        for tgt in (np.inf, -np.inf):
            v = c
            for _ in range(3):
                v = np.nextafter(v, np.array(tgt, dt))
                cands.append(v)
    pairs = [(float(v) if math.isinf(float(v)) else Fraction(float(v)), v) for v in cands]
    lo = max((p for p in pairs if p[0] <= x), key=lambda p: p[0])
    hi = min((p for p in pairs if p[0] >= x), key=lambda p: p[0])
    if lo[0] == x:
        return lo[1]
    if mode == "rz":
        return lo[1] if x > 0 else hi[1]
    if mode == "rm":
        return lo[1]
    if mode == "rp":
        return hi[1]
    dist = lambda p: big if p[0] == math.inf else -big if p[0] == -math.inf else p[0]  # noqa: E731
    dl, dh = x - dist(lo), dist(hi) - x
    if dl != dh:
        return lo[1] if dl < dh else hi[1]
    return lo[1] if int(bits(np.array(lo[1], dt))) % 2 == 0 else hi[1]


def expect_bits(x: Fraction, dt, mode, zero_neg=False):
    if x == 0:
        return int(bits(np.array(-0.0 if zero_neg else 0.0, dt)))
    return int(bits(np.array(ref_round(x, dt, mode), dt)))


def zero_neg(mode, *addends) -> bool:
    """IEEE sign of an exact zero sum: −0 iff all addends are −0 (.rm: unless all are +0)."""
    negz = [(a == 0 and math.copysign(1, a) < 0) for a in addends]
    posz = [(a == 0 and math.copysign(1, a) > 0) for a in addends]
    return (not all(posz)) if mode == "rm" else all(negz)


FIN32 = st.one_of(st.floats(width=32, allow_nan=False, allow_infinity=False),
                  st.builds(lambda m, s: float(np.array(s << 31 | m, np.uint32).view(np.float32)),
                            st.integers(0, 0x7F7FFFFF), st.integers(0, 1)))
FIN64 = st.floats(allow_nan=False, allow_infinity=False)
FIN16 = st.builds(lambda m, s: float(np.array(s << 15 | m, np.uint16).view(np.float16)),
                  st.integers(0, 0x7BFF), st.integers(0, 1))
FINB16 = st.builds(lambda m, s: float(np.array(s << 15 | m, np.uint16).view(BF16)),
                   st.integers(0, 0x7F7F), st.integers(0, 1))


# ======================================================================================================
# integer arithmetic
# ======================================================================================================
@S
@given(st.sampled_from(["u16", "u32", "u64", "s16", "s32", "s64"]), st.data())
def test_add_sub_wrap(t, data):
    w = int(t[1:])
    n = data.draw(LANES)
    a = data.draw(st.lists(rng(t), min_size=n, max_size=n))
    b = data.draw(st.lists(rng(t), min_size=n, max_size=n))
    f = sx if t[0] == "s" else ux
    assert one("add", (), (t,), a, b).tolist() == [f(x + y, w) for x, y in zip(a, b)]
    assert one("sub", (), (t,), a, b).tolist() == [f(x - y, w) for x, y in zip(a, b)]


@S
@given(st.lists(st.tuples(rng("s32"), rng("s32")), min_size=1, max_size=9))
def test_add_sub_sat_s32(ab):
    a, b = zip(*ab)
    clamp = lambda v: max(-2 ** 31, min(2 ** 31 - 1, v))  # noqa: E731
    assert one("add", ("sat",), ("s32",), a, b).tolist() == [clamp(x + y) for x, y in ab]
    assert one("sub", ("sat",), ("s32",), a, b).tolist() == [clamp(x - y) for x, y in ab]


def test_add_edges():
    assert one("add", (), ("s32",), [2 ** 31 - 1], [1]).tolist() == [-2 ** 31]
    assert one("add", ("sat",), ("s32",), [2 ** 31 - 1, -2 ** 31], [1, -1]).tolist() == [2 ** 31 - 1, -2 ** 31]
    assert one("add", (), ("u16x2",), [0xFFFF0001], [0x00020001]).tolist() == [0x00010002]


@S
@given(st.sampled_from(["u16", "u32", "u64", "s16", "s32", "s64"]), st.data())
def test_mul_mad_modes(t, data):
    w = int(t[1:])
    n = data.draw(LANES)
    a, b, c = (data.draw(st.lists(rng(t), min_size=n, max_size=n)) for _ in range(3))
    f = sx if t[0] == "s" else ux
    p = [x * y for x, y in zip(a, b)]
    assert one("mul", ("lo",), (t,), a, b).tolist() == [f(v, w) for v in p]
    assert one("mul", ("hi",), (t,), a, b).tolist() == [f(v >> w, w) for v in p]
    assert one("mad", ("lo",), (t,), a, b, c).tolist() == [f(v + z, w) for v, z in zip(p, c)]
    assert one("mad", ("hi",), (t,), a, b, c).tolist() == [f((v >> w) + z, w) for v, z in zip(p, c)]
    if w <= 32:
        wt = t[0] + str(2 * w)
        assert one("mul", ("wide",), (t,), a, b).tolist() == p
        cw = data.draw(st.lists(rng(wt), min_size=n, max_size=n))
        assert one("mad", ("wide",), (t,), a, b, cw).tolist() == [f(v + z, 2 * w) for v, z in zip(p, cw)]


@S
@given(st.lists(st.tuples(rng("s32"), rng("s32"), rng("s32")), min_size=1, max_size=9))
def test_mad_hi_sat(abc):
    a, b, c = zip(*abc)
    want = [max(-2 ** 31, min(2 ** 31 - 1, ((x * y) >> 32) + z)) for x, y, z in abc]
    assert one("mad", ("hi", "sat"), ("s32",), a, b, c).tolist() == want


@S
@given(st.sampled_from(["u32", "s32"]), st.data())
def test_mul24_mad24(t, data):
    n = data.draw(LANES)
    a, b, c = (data.draw(st.lists(rng(t), min_size=n, max_size=n)) for _ in range(3))
    f = sx if t == "s32" else ux
    cut = (lambda v: sx(v, 24)) if t == "s32" else (lambda v: ux(v, 24))
    p = [cut(x) * cut(y) for x, y in zip(a, b)]
    assert one("mul24", ("lo",), (t,), a, b).tolist() == [f(v, 32) for v in p]
    assert one("mul24", ("hi",), (t,), a, b).tolist() == [f(v >> 16, 32) for v in p]
    assert one("mad24", ("hi",), (t,), a, b, c).tolist() == [f((v >> 16) + z, 32) for v, z in zip(p, c)]
    if t == "s32":
        want = [max(-2 ** 31, min(2 ** 31 - 1, sx(v >> 16, 32) + z)) for v, z in zip(p, c)]
        assert one("mad24", ("hi", "sat"), (t,), a, b, c).tolist() == want


@S
@given(st.sampled_from(["u16", "u32", "u64", "s16", "s32", "s64"]), st.data())
def test_sad(t, data):
    w = int(t[1:])
    n = data.draw(LANES)
    a, b, c = (data.draw(st.lists(rng(t), min_size=n, max_size=n)) for _ in range(3))
    f = sx if t[0] == "s" else ux
    assert one("sad", (), (t,), a, b, c).tolist() == [f(z + abs(x - y), w) for x, y, z in zip(a, b, c)]


def _cdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@S
@given(st.sampled_from(["u16", "u32", "u64", "s16", "s32", "s64"]), st.data())
def test_div_rem_c_semantics(t, data):
    w = int(t[1:])
    n = data.draw(LANES)
    a = data.draw(st.lists(rng(t), min_size=n, max_size=n))
    b = data.draw(st.lists(rng(t).filter(lambda v: v != 0), min_size=n, max_size=n))
    f = sx if t[0] == "s" else ux
    q = one("div", (), (t,), a, b).tolist()
    r = one("rem", (), (t,), a, b).tolist()
    assert q == [f(_cdiv(x, y), w) for x, y in zip(a, b)]
    assert r == [f(x - _cdiv(x, y) * y, w) for x, y in zip(a, b)]


def test_div_edges():
    assert one("div", (), ("s32",), [-7, 7, -7, -2 ** 31], [2, -2, -2, -1]).tolist() == [-3, -3, 3, -2 ** 31]
    assert one("rem", (), ("s32",), [-7, 7, -7, -2 ** 31], [2, -2, -2, -1]).tolist() == [-1, 1, -1, 0]
    assert one("div", (), ("s64",), [-2 ** 63], [-1]).tolist() == [-2 ** 63]
    # division by zero: [model] all ones / -1, remainder = dividend
    assert one("div", (), ("u32",), [5], [0]).tolist() == [0xFFFFFFFF]
    assert one("div", (), ("s32",), [5], [0]).tolist() == [-1]
    assert one("rem", (), ("s32",), [-5], [0]).tolist() == [-5]
    assert one("rem", (), ("u64",), [5], [0]).tolist() == [5]


def test_abs_neg_min_max():
    m = -2 ** 31
    assert one("abs", (), ("s32",), [m, -3, 4]).tolist() == [m, 3, 4]
    assert one("neg", (), ("s32",), [m, -3, 0]).tolist() == [m, 3, 0]
    assert one("neg", (), ("s16",), [-2 ** 15]).tolist() == [-2 ** 15]
    assert one("min", (), ("u32",), [0xFFFFFFFF, 1], [1, 2]).tolist() == [1, 1]
    assert one("min", (), ("s32",), [-1, 1], [1, 2]).tolist() == [-1, 1]
    assert one("max", ("relu",), ("s32",), [-5, -1, 3], [-7, 2, 1]).tolist() == [0, 2, 3]
    assert one("min", ("relu",), ("s32",), [-5, 4], [-7, 2]).tolist() == [0, 2]
    # packed halves: element 0 in the low half
    assert one("max", (), ("s16x2",), [0x8000FFFF], [0x00010002]).tolist() == [0x00010002]
    assert one("max", (), ("u16x2",), [0x8000FFFF], [0x00010002]).tolist() == [0x8000FFFF]
    assert one("min", ("relu",), ("s16x2",), [0x8000FFFF], [0x00010002]).tolist() == [0x00000000]


@S
@given(st.sampled_from(["b32", "b64"]), st.data())
def test_popc_clz_brev(t, data):
    w = int(t[1:])
    a = data.draw(st.lists(rng("u" + t[1:]), min_size=1, max_size=9))
    assert one("popc", (), (t,), a).tolist() == [bin(v).count("1") for v in a]
    assert one("clz", (), (t,), a).tolist() == [w - v.bit_length() for v in a]
    assert one("brev", (), (t,), a).tolist() == [int(f"{v:0{w}b}"[::-1], 2) for v in a]


@S
@given(st.sampled_from(["u32", "u64", "s32", "s64"]), st.data())
def test_bfind(t, data):
    w = int(t[1:])
    a = data.draw(st.lists(st.one_of(rng(t), st.sampled_from([0, -1] if t[0] == "s" else [0, 1])),
                           min_size=1, max_size=9))

    def ref(v, shiftamt):
        u = ux(v, w)
        if t[0] == "s" and u >> (w - 1):
            u = ~u & ((1 << w) - 1)
        d = u.bit_length() - 1 if u else 0xFFFFFFFF
        return (w - 1 - d) if shiftamt and d != 0xFFFFFFFF else d
    assert one("bfind", (), (t,), a).tolist() == [ref(v, False) for v in a]
    assert one("bfind", ("shiftamt",), (t,), a).tolist() == [ref(v, True) for v in a]


def _bfe_ref(t, a, b, c):  # PTX ISA §9.7.1.19 pseudo-code, bit by bit
    w = int(t[1:])
    msb = w - 1
    a = ux(a, w)
    pos, ln = b & 0xFF, c & 0xFF
    sbit = 0 if (t[0] == "u" or ln == 0) else (a >> min(pos + ln - 1, msb)) & 1
    d = 0
    for i in range(w):
        bit = (a >> (pos + i)) & 1 if (i < ln and pos + i <= msb) else sbit
        d |= bit << i
    return sx(d, w) if t[0] == "s" else d


def _bfi_ref(w, a, b, c, d):  # PTX ISA §9.7.1.20 pseudo-code
    pos, ln = c & 0xFF, d & 0xFF
    f = b
    i = 0
    while i < ln and pos + i <= w - 1:
        f = (f & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
        i += 1
    return f


POSLEN = st.one_of(st.integers(0, 70), st.integers(0, 2 ** 32 - 1))


@S
@given(st.sampled_from(["u32", "u64", "s32", "s64"]), st.data())
def test_bfe_bfi_against_pseudocode(t, data):
    w = int(t[1:])
    n = data.draw(LANES)
    a = data.draw(st.lists(rng(t), min_size=n, max_size=n))
    b = data.draw(st.lists(POSLEN, min_size=n, max_size=n))
    c = data.draw(st.lists(POSLEN, min_size=n, max_size=n))
    assert one("bfe", (), (t,), a, b, c).tolist() == [_bfe_ref(t, x, y, z) for x, y, z in zip(a, b, c)]
    bt = "b" + t[1:]
    ua = [ux(v, w) for v in a]
    ub = data.draw(st.lists(rng("u" + t[1:]), min_size=n, max_size=n))
    got = one("bfi", (), (bt,), ua, ub, b, c).tolist()
    assert got == [_bfi_ref(w, x, y, p, q) for x, y, p, q in zip(ua, ub, b, c)]


def test_bfe_edges():
    # field running past the msb: sign = msb of a; start beyond msb: all sign bits
    assert one("bfe", (), ("s32",), [0x80000000, 0x80000000, 0x7FFFFFFF], [28, 40, 40], [8, 3, 3]).tolist() == \
        [-8, -1, 0]
    assert one("bfe", (), ("u32",), [0xF0000000, 0xABCD], [28, 4], [8, 8]).tolist() == [0xF, 0xBC]
    assert one("bfe", (), ("s32",), [0xABCD], [4], [0]).tolist() == [0]
    assert one("bfi", (), ("b32",), [0xF], [0], [30], [8]).tolist() == [0xC0000000]
    assert one("bfi", (), ("b64",), [0xF], [1], [64], [8]).tolist() == [1]


def _fns_ref(mask, base, offset):  # PTX ISA §9.7.1.17 pseudo-code
    offset = sx(offset, 32)
    if offset == 0:
        return base if (mask >> base) & 1 else 0xFFFFFFFF
    pos, count, inc = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return 0xFFFFFFFF


@S
@given(st.lists(st.tuples(rng("u32"), st.integers(0, 31), st.integers(-34, 34)), min_size=1, max_size=9))
def test_fns(cases):
    m, b, o = zip(*cases)
    assert one("fns", (), ("b32",), m, b, o).tolist() == [_fns_ref(x, y, ux(z, 32)) for x, y, z in cases]
    assert one("fns", (), ("b32",), [0xAAAAAAAA] * 4, [3, 3, 2, 2], [1, -1, 1, -1]).tolist() == [3, 3, 3, 1]


def _bmsk_ref(a, b, mode):  # PTX ISA §9.7.1.22
    a1, b1 = a & 0x1F, b & 0x1F
    mask0 = (0xFFFFFFFF << a1) & 0xFFFFFFFF
    s = a1 + b1
    mask1 = (0xFFFFFFFF << s) & 0xFFFFFFFF if s < 32 else 0
    over = s >= 32
    if mode == "clamp":
        if a >= 32:
            over, mask0 = True, 0
        if b >= 32:
            over = True
    if over:
        mask1 = 0
    elif b1 == 0:
        mask1 = 0xFFFFFFFF
    return mask0 & ~mask1 & 0xFFFFFFFF


def _szext_ref(a, b, mode, t):  # PTX ISA §9.7.1.21
    b1 = b & 0x1F
    big = b >= 32 and mode == "clamp"
    mask = 0 if big else (0xFFFFFFFF << b1) & 0xFFFFFFFF
    sbit = 0 if (b1 == 0 or big or t != "s32") else (a >> ((b1 - 1) & 0x1F)) & 1
    d = (a & ~mask & 0xFFFFFFFF) | (mask if sbit else 0)
    return sx(d, 32) if t == "s32" else d


@S
@given(st.sampled_from(["clamp", "wrap"]), st.lists(st.tuples(rng("u32"), POSLEN), min_size=1, max_size=9))
def test_bmsk_szext(mode, ab):
    a, b = zip(*ab)
    small = [x & 0x3F for x in a]
    assert one("bmsk", (mode,), ("b32",), small, b).tolist() == [_bmsk_ref(x, y, mode) for x, y in zip(small, b)]
    for t in ("u32", "s32"):
        av = [sx(x, 32) for x in a] if t == "s32" else list(a)
        assert one("szext", (mode,), (t,), av, b).tolist() == [_szext_ref(x, y, mode, t) for x, y in ab]
    assert one("bmsk", ("wrap",), ("b32",), [1], [2]).tolist() == [6]


@S
@given(st.sampled_from(["u32", "s32"]), st.sampled_from(["u32", "s32"]), st.data())
def test_dp4a_dp2a(at, bt, data):
    ct = "u32" if at == bt == "u32" else "s32"
    n = data.draw(LANES)
    a, b, c = (data.draw(st.lists(rng(x), min_size=n, max_size=n)) for x in (at, bt, ct))

    def parts(v, k, w, signed):
        out = [(ux(v, 32) >> (w * i)) & ((1 << w) - 1) for i in range(k)]
        return [sx(x, w) for x in out] if signed else out
    f = sx if ct == "s32" else ux
    want = [f(z + sum(p * q for p, q in zip(parts(x, 4, 8, at == "s32"), parts(y, 4, 8, bt == "s32"))), 32)
            for x, y, z in zip(a, b, c)]
    assert one("dp4a", (), (at, bt), a, b, c).tolist() == want
    for mode, sel in (("lo", 0), ("hi", 2)):
        want = [f(z + sum(p * q for p, q in zip(parts(x, 2, 16, at == "s32"), parts(y, 4, 8, bt == "s32")[sel:])),
                  32) for x, y, z in zip(a, b, c)]
        assert one("dp2a", (mode,), (at, bt), a, b, c).tolist() == want


# ======================================================================================================
# carry chain
# ======================================================================================================
@S
@given(st.lists(st.tuples(st.integers(0, 2 ** 128 - 1), st.integers(0, 2 ** 128 - 1)), min_size=1, max_size=6))
def test_carry_chain_128bit(pairs):
    a, b = zip(*pairs)
    limbs = lambda xs, i: [(x >> (32 * i)) & 0xFFFFFFFF for x in xs]  # noqa: E731
    d0, cf = run("add", ("cc",), ("u32",), limbs(a, 0), limbs(b, 0))
    d1, cf = run("addc", ("cc",), ("u32",), limbs(a, 1), limbs(b, 1), cf)
    d2, cf = run("addc", ("cc",), ("u32",), limbs(a, 2), limbs(b, 2), cf)
    (d3,) = run("addc", (), ("u32",), limbs(a, 3), limbs(b, 3), cf)
    got = [int(w0) | int(w1) << 32 | int(w2) << 64 | int(w3) << 96 for w0, w1, w2, w3 in zip(d0, d1, d2, d3)]
    assert got == [(x + y) % 2 ** 128 for x, y in pairs]
    # subtraction with borrow
    e0, bf = run("sub", ("cc",), ("s32",), np.array(limbs(a, 0), np.uint32).view(np.int32),
                 np.array(limbs(b, 0), np.uint32).view(np.int32))
    half = lambda xs, k: np.array([(x >> (64 * k)) & (2 ** 64 - 1) for x in xs], np.uint64)  # noqa: E731
    lo, bf = run("sub", ("cc",), ("u64",), half(a, 0), half(b, 0))
    hi, bf2 = run("subc", ("cc",), ("u64",), half(a, 1), half(b, 1), bf)
    got = [int(h) << 64 | int(lw) for h, lw in zip(hi, lo)]
    assert got == [(x - y) % 2 ** 128 for x, y in pairs]
    assert bf2.tolist() == [int(x < y) for x, y in pairs]
    assert e0.dtype == np.int32 and bf.dtype == np.uint32


@S
@given(st.lists(st.tuples(st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 64 - 1)), min_size=1, max_size=6))
def test_madc_multiword_multiply(pairs):
    """The PTX ISA §9.7.2.6 example: [r3,r2,r1,r0] = [r5,r4] * [r7,r6] with mad.cc / madc."""
    x, y = zip(*pairs)
    w = lambda xs, i: np.array([(v >> (32 * i)) & 0xFFFFFFFF for v in xs], np.uint32)  # noqa: E731
    r4, r5, r6, r7 = w(x, 0), w(x, 1), w(y, 0), w(y, 1)
    zero = np.zeros_like(r4)
    r0 = one("mul", ("lo",), ("u32",), r4, r6)
    r1 = one("mul", ("hi",), ("u32",), r4, r6)
    r1, cf = run("mad", ("lo", "cc"), ("u32",), r5, r6, r1)
    (r2,) = run("madc", ("hi",), ("u32",), r5, r6, zero, cf)
    r1, cf = run("mad", ("lo", "cc"), ("u32",), r4, r7, r1)
    r2, cf = run("madc", ("hi", "cc"), ("u32",), r4, r7, r2, cf)
    (r3,) = run("addc", (), ("u32",), zero, zero, cf)
    r2, cf = run("mad", ("lo", "cc"), ("u32",), r5, r7, r2)
    (r3,) = run("madc", ("hi",), ("u32",), r5, r7, r3, cf)
    got = [int(a) | int(b) << 32 | int(c) << 64 | int(d) << 96 for a, b, c, d in zip(r0, r1, r2, r3)]
    assert got == [a * b for a, b in pairs]


# ======================================================================================================
# logic, shifts, prmt
# ======================================================================================================
def test_logic_and_pred():
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert one("and", (), ("pred",), p, q).tolist() == [True, False, False, False]
    assert one("or", (), ("pred",), p, q).tolist() == [True, True, True, False]
    assert one("xor", (), ("pred",), p, q).tolist() == [False, True, True, False]
    assert one("not", (), ("pred",), p).tolist() == [False, False, True, True]
    assert one("not", (), ("b32",), [0, 0xF0F0F0F0]).tolist() == [0xFFFFFFFF, 0x0F0F0F0F]
    assert one("cnot", (), ("b16",), [0, 7]).tolist() == [1, 0]
    assert one("xor", (), ("b64",), [2 ** 64 - 1], [1]).tolist() == [2 ** 64 - 2]


@S
@given(st.lists(st.tuples(rng("u32"), rng("u32"), rng("u32"), st.integers(0, 255)), min_size=1, max_size=9))
def test_lop3(cases):
    a, b, c, lut = zip(*cases)

    def ref(x, y, z, k):
        return sum((((k >> (((x >> i) & 1) << 2 | ((y >> i) & 1) << 1 | ((z >> i) & 1))) & 1) << i)
                   for i in range(32))
    assert one("lop3", (), ("b32",), a, b, c, lut).tolist() == [ref(*t) for t in cases]
    for k, f in ((0x80, lambda x, y, z: x & y & z), (0xFE, lambda x, y, z: x | y | z),
                 (0x40, lambda x, y, z: x & y & ~z), (0x1A, lambda x, y, z: ((x & y) | z) ^ x)):
        got = one("lop3", (), ("b32",), a, b, c, [k] * len(a)).tolist()
        assert got == [f(x, y, z) & 0xFFFFFFFF for x, y, z in zip(a, b, c)]


@S
@given(st.sampled_from(["b16", "b32", "b64", "u32", "s16", "s32", "s64", "u64"]), st.data())
def test_shifts(t, data):
    w = int(t[1:])
    n = data.draw(LANES)
    a = data.draw(st.lists(rng(t if t[0] != "b" else "u" + t[1:]), min_size=n, max_size=n))
    s = data.draw(st.lists(st.one_of(st.integers(0, 70), st.sampled_from([32, 33, 64, 255]),
                                     st.integers(0, 2 ** 32 - 1)), min_size=n, max_size=n))
    f = sx if t[0] == "s" else ux
    if t[0] == "b":
        assert one("shl", (), (t,), a, s).tolist() == [ux(x << min(k, w), w) for x, k in zip(a, s)]
    assert one("shr", (), (t,), a, s).tolist() == [f(x >> min(k, w), w) if t[0] == "s" else ux(x, w) >> min(k, w)
                                                  for x, k in zip(a, s)]


def test_shift_edges():
    assert one("shl", (), ("b32",), [1, 1, 1, 1], [31, 32, 33, 255]).tolist() == [2 ** 31, 0, 0, 0]
    assert one("shr", (), ("s32",), [-8, -8, 8], [1, 33, 255]).tolist() == [-4, -1, 0]
    assert one("shr", (), ("u32",), [2 ** 31], [32]).tolist() == [0]


@S
@given(st.sampled_from(["l", "r"]), st.sampled_from(["clamp", "wrap"]),
       st.lists(st.tuples(rng("u32"), rng("u32"), st.one_of(st.integers(0, 70), rng("u32"))), min_size=1, max_size=9))
def test_shf(d, mode, cases):
    a, b, c = zip(*cases)

    def ref(x, y, k):
        n = min(k, 32) if mode == "clamp" else k & 31
        v = y << 32 | x
        return ((v << n) >> 32) & 0xFFFFFFFF if d == "l" else (v >> n) & 0xFFFFFFFF
    assert one("shf", (d, mode), ("b32",), a, b, c).tolist() == [ref(*t) for t in cases]


# PTX ISA prmt table, written as the manual prints it: d.b3 d.b2 d.b1 d.b0 for c[1:0] = 0..3
_PRMT_TABLE = {
    "f4e": ["3 2 1 0", "4 3 2 1", "5 4 3 2", "6 5 4 3"],
    "b4e": ["5 6 7 0", "6 7 0 1", "7 0 1 2", "0 1 2 3"],
    "rc8": ["0 0 0 0", "1 1 1 1", "2 2 2 2", "3 3 3 3"],
    "ecl": ["3 2 1 0", "3 2 1 1", "3 2 2 2", "3 3 3 3"],
    "ecr": ["0 0 0 0", "1 1 1 0", "2 2 1 0", "3 2 1 0"],
    "rc16": ["1 0 1 0", "3 2 3 2", "1 0 1 0", "3 2 3 2"],
}


@S
@given(st.sampled_from([None, *_PRMT_TABLE]),
       st.lists(st.tuples(rng("u32"), rng("u32"), rng("u32")), min_size=1, max_size=9))
def test_prmt(mode, cases):
    a, b, c = zip(*cases)

    def ref(x, y, z):
        pool = [((y << 32 | x) >> (8 * i)) & 0xFF for i in range(8)]
        out = 0
        if mode is None:
            for i in range(4):
                sel = (z >> (4 * i)) & 0xF
                byte = pool[sel & 7]
                if sel & 8:
                    byte = 0xFF if byte & 0x80 else 0
                out |= byte << (8 * i)
        else:
            idx = [int(s) for s in _PRMT_TABLE[mode][z & 3].split()][::-1]  # -> d.b0 .. d.b3
            for i, j in enumerate(idx):
                out |= pool[j] << (8 * i)
        return out
    got = one("prmt", (mode,) if mode else (), ("b32",), a, b, c).tolist()
    assert got == [ref(*t) for t in cases]


def test_prmt_known_values():
    # cub::PRMT documentation example
    assert one("prmt", (), ("b32",), [0x03020100], [0x07060504], [0x7531]).tolist() == [0x07050301]
    # sign replication (selector msb)
    assert one("prmt", (), ("b32",), [0x00800001], [0], [0x210A]).tolist() == [0x800001FF]


# ======================================================================================================
# comparison and selection
# ======================================================================================================
_CMP = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
        "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


def _fcmp(op, x, y):
    un = math.isnan(x) or math.isnan(y)
    if op == "num":
        return not un
    if op == "nan":
        return un
    if op.endswith("u"):
        return un or _CMP[op[:2]](x, y)
    return (not un) and _CMP[op](x, y)


@S
@given(st.sampled_from(["u16", "u32", "u64", "s16", "s32", "s64", "b32"]), st.data())
def test_setp_integer(t, data):
    ops = ["eq", "ne"] if t[0] == "b" else ["eq", "ne", "lt", "le", "gt", "ge"]
    ops += ["lo", "ls", "hi", "hs"] if t[0] == "u" else []
    op = data.draw(st.sampled_from(ops))
    n = data.draw(LANES)
    a, b = (data.draw(st.lists(rng(t if t[0] != "b" else "u32"), min_size=n, max_size=n)) for _ in range(2))
    c = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    base = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(op, op)
    tv = [_CMP[base](x, y) for x, y in zip(a, b)]
    p, q = run("setp", (op,), (t,), a, b)
    assert p.tolist() == tv and q.tolist() == [not v for v in tv]
    for bo, f in (("and", lambda u, v: u and v), ("or", lambda u, v: u or v), ("xor", lambda u, v: u != v)):
        p, q = run("setp", (op, bo), (t,), a, b, c)
        assert p.tolist() == [f(u, v) for u, v in zip(tv, c)]
        assert q.tolist() == [f(not u, v) for u, v in zip(tv, c)]


FSPECIAL = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e-45, -1e-45, 2.5]


@S
@given(st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"]),
       st.sampled_from(["f32", "f64", "f16", "bf16"]),
       st.lists(st.tuples(st.sampled_from(FSPECIAL), st.sampled_from(FSPECIAL)), min_size=1, max_size=9))
def test_setp_float_nan_rules(op, t, pairs):
    a = np.array([p[0] for p in pairs]).astype(np_dtype(t))
    b = np.array([p[1] for p in pairs]).astype(np_dtype(t))
    p, q = run("setp", (op,), (t,), a, b)
    want = [_fcmp(op, float(x), float(y)) for x, y in zip(a, b)]
    assert p.tolist() == want and q.tolist() == [not v for v in want]


def test_setp_ftz_and_packed():
    sub = fb([1], "f32")  # smallest subnormal
    zero = np.zeros(1, np.float32)
    assert run("setp", ("eq",), ("f32",), sub, zero)[0].tolist() == [False]
    assert run("setp", ("eq", "ftz"), ("f32",), sub, zero)[0].tolist() == [True]
    # f16x2: p from the low halves, q from the high halves
    a = np.array([0x3C00_4000], np.uint32)   # hi = 1.0, lo = 2.0
    b = np.array([0x4000_3C00], np.uint32)   # hi = 2.0, lo = 1.0
    p, q = run("setp", ("gt",), ("f16x2",), a, b)
    assert (p.tolist(), q.tolist()) == ([True], [False])
    p, q = run("setp", ("gt", "or"), ("bf16x2",), a, b, np.array([True]))
    assert (p.tolist(), q.tolist()) == ([True], [True])


def test_set_and_selection():
    d = one("set", ("lt",), ("u32", "s32"), [-1, 1], [0, 0])
    assert d.tolist() == [0xFFFFFFFF, 0]
    d = one("set", ("lt",), ("f32", "s32"), [-1, 1], [0, 0])
    assert bits(d).tolist() == [0x3F800000, 0]
    d = one("set", ("ltu", "and"), ("s32", "f32"), np.array([np.nan, 1.0], np.float32), np.zeros(2, np.float32),
            np.array([True, True]))
    assert d.tolist() == [-1, 0]
    d = one("set", ("eq",), ("f16x2", "f16x2"), [0x3C00_4000], [0x3C00_0000])
    assert d.tolist() == [0x3C00_0000]
    assert one("selp", (), ("s32",), [1, 2], [3, 4], np.array([True, False])).tolist() == [1, 4]
    nanbits = fb([0x7FC00123], "f32")
    assert bits(one("selp", (), ("f32",), nanbits, np.zeros(1, np.float32), np.array([True]))).tolist() == [0x7FC00123]
    c = np.array([0.0, -0.0, np.nan, -1.0, -1e-45], np.float32)
    a, b = [1] * 5, [2] * 5
    assert one("slct", (), ("s32", "f32"), a, b, c).tolist() == [1, 1, 2, 2, 2]
    assert one("slct", ("ftz",), ("s32", "f32"), a, b, c).tolist() == [1, 1, 2, 2, 1]
    assert one("slct", (), ("u64", "s32"), [5, 5], [6, 6], [0, -1]).tolist() == [5, 6]


# ======================================================================================================
# floating point: exact rounding in every mode
# ======================================================================================================
def _exact(vals):
    return [Fraction(v) for v in vals]


@S
@given(st.sampled_from(MODES), st.sampled_from(["add", "sub", "mul"]),
       st.lists(st.tuples(FIN32, FIN32), min_size=1, max_size=8))
def test_f32_add_sub_mul_all_modes(mode, opc, pairs):
    a = np.array([p[0] for p in pairs], np.float32)
    b = np.array([p[1] for p in pairs], np.float32)
    got = bits(one(opc, (mode,), ("f32",), a, b)).tolist()
    for x, y, g in zip(a.tolist(), b.tolist(), got):
        fx, fy = Fraction(x), Fraction(y)
        ex = fx + fy if opc == "add" else fx - fy if opc == "sub" else fx * fy
        yy = y if opc == "add" else -y
        zn = (math.copysign(1, x) * math.copysign(1, y) < 0) if opc == "mul" else zero_neg(mode, x, yy)
        assert g == expect_bits(ex, np.float32, mode, zn), (x, y, mode, opc)


@st.composite
def fma_triples32(draw):
    a, b = draw(FIN32), draw(FIN32)
    kind = draw(st.integers(0, 2))
    if kind == 0:
        c = draw(FIN32)
    else:  # near-cancellation: c ≈ −a·b
        with np.errstate(all="ignore"):
            c = float(np.float32(-np.float64(a) * np.float64(b)))
        if not math.isfinite(c):
            c = draw(FIN32)
        if kind == 2:
            c = float(np.nextafter(np.float32(c), np.float32(draw(st.sampled_from([np.inf, -np.inf])))))
            if not math.isfinite(c):
                c = 0.0
    return a, b, c


@S
@given(st.sampled_from(MODES), st.lists(fma_triples32(), min_size=1, max_size=8))
def test_f32_fma_all_modes(mode, triples):
    a, b, c = (np.array(v, np.float32) for v in zip(*triples))
    for opc in ("fma", "mad"):
        got = bits(one(opc, (mode,), ("f32",), a, b, c)).tolist()
        for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got):
            ex = Fraction(x) * Fraction(y) + Fraction(z)
            zn = zero_neg(mode, math.copysign(0.0, x) * math.copysign(1, y) if x * y == 0 else x * y, z)
            assert g == expect_bits(ex, np.float32, mode, zn), (x, y, z, mode)


@S
@given(st.sampled_from(MODES), st.lists(st.tuples(FIN32, FIN32.filter(lambda v: v != 0)), min_size=1, max_size=8))
def test_f32_div_sqrt_rcp_all_modes(mode, pairs):
    a = np.array([p[0] for p in pairs], np.float32)
    b = np.array([p[1] for p in pairs], np.float32)
    got = bits(one("div", (mode,), ("f32",), a, b)).tolist()
    for x, y, g in zip(a.tolist(), b.tolist(), got):
        zn = math.copysign(1, x) * math.copysign(1, y) < 0
        assert g == expect_bits(Fraction(x) / Fraction(y), np.float32, mode, zn), (x, y, mode)
    got = bits(one("rcp", (mode,), ("f32",), b)).tolist()
    for y, g in zip(b.tolist(), got):
        assert g == expect_bits(1 / Fraction(y), np.float32, mode), (y, mode)
    pos = np.abs(a)
    got = bits(one("sqrt", (mode,), ("f32",), pos)).tolist()
    for x, g in zip(pos.tolist(), got):
        assert g == _sqrt_bits(x, np.float32, mode), (x, mode)


def _sqrt_bits(x: float, dt, mode):
    """Correctly rounded sqrt by bracketing: the representable r with r² on the right side of x."""
    if x == 0:
        return int(bits(np.array(x, dt)))
    c = np.array(math.sqrt(x), np.float64).astype(dt)
    cands = [c]
    with np.errstate(over="ignore"):
        for tgt in (np.inf, -np.inf):
            v = c
            for _ in range(2):
                v = np.nextafter(v, np.array(tgt, dt))
                cands.append(v)
    fx = Fraction(x)
    lo = max((v for v in cands if Fraction(float(v)) ** 2 <= fx), key=float)
    hi = min((v for v in cands if Fraction(float(v)) ** 2 >= fx), key=float)
    if Fraction(float(lo)) ** 2 == fx:
        return int(bits(np.array(lo, dt)))
    if mode in ("rz", "rm"):
        return int(bits(np.array(lo, dt)))
    if mode == "rp":
        return int(bits(np.array(hi, dt)))
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2   # sqrt(x) never equals a midpoint exactly
    return int(bits(np.array(lo if fx < mid * mid else hi, dt)))


@S
@given(st.sampled_from(MODES), st.lists(st.tuples(FIN64, FIN64), min_size=1, max_size=6))
def test_f64_add_mul_div_sqrt_all_modes(mode, pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    for opc in ("add", "sub", "mul"):
        got = bits(one(opc, (mode,), ("f64",), a, b)).tolist()
        for x, y, g in zip(a.tolist(), b.tolist(), got):
            fx, fy = Fraction(x), Fraction(y)
            ex = fx + fy if opc == "add" else fx - fy if opc == "sub" else fx * fy
            zn = (math.copysign(1, x) * math.copysign(1, y) < 0) if opc == "mul" else \
                zero_neg(mode, x, y if opc == "add" else -y)
            assert g == expect_bits(ex, np.float64, mode, zn), (opc, x, y, mode)
    nz = b != 0
    got = bits(one("div", (mode,), ("f64",), a[nz], b[nz])).tolist()
    for x, y, g in zip(a[nz].tolist(), b[nz].tolist(), got):
        zn = math.copysign(1, x) * math.copysign(1, y) < 0
        assert g == expect_bits(Fraction(x) / Fraction(y), np.float64, mode, zn), (x, y, mode)
    pos = np.abs(a)
    got = bits(one("sqrt", (mode,), ("f64",), pos)).tolist()
    for x, g in zip(pos.tolist(), got):
        assert g == _sqrt_bits(x, np.float64, mode), (x, mode)


@st.composite
def fma_triples64(draw):
    a, b = draw(FIN64), draw(FIN64)
    c = draw(FIN64)
    if draw(st.booleans()):
        with np.errstate(all="ignore"):
            p = a * b
        if math.isfinite(p):
            c = -p if draw(st.booleans()) else math.nextafter(-p, draw(st.sampled_from([math.inf, -math.inf])))
    return a, b, c


@pytest.mark.parametrize("mode", MODES)
def test_f64_fma_zero_times_a_huge_factor_is_an_exact_zero_product(mode):
    """0 · 1.34e300 + c: the product is exactly ±0, so the result is c (or a signed zero) — never the NaN that
    Dekker's split of the huge factor would make (found by the property test below)."""
    a = np.array([0.0, -0.0, 1.3393857490036326e+300, 0.0], np.float64)
    b = np.array([1.3393857490036326e+300, 1.0e308, 0.0, -1.0e300], np.float64)
    c = np.array([0.0, 2.5, -0.0, -0.0], np.float64)
    got = bits(one("fma", (mode,), ("f64",), a, b, c)).tolist()
    for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got):
        prod_zero_sign = math.copysign(0.0, math.copysign(1, x) * math.copysign(1, y))
        zn = zero_neg(mode, prod_zero_sign, z)
        assert g == expect_bits(Fraction(x) * Fraction(y) + Fraction(z), np.float64, mode, zn), (x, y, z, mode)


@S
@given(st.sampled_from(MODES), st.lists(fma_triples64(), min_size=1, max_size=6))
def test_f64_fma_all_modes(mode, triples):
    a, b, c = (np.array(v, np.float64) for v in zip(*triples))
    got = bits(one("fma", (mode,), ("f64",), a, b, c)).tolist()
    for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got):
        ex = Fraction(x) * Fraction(y) + Fraction(z)
        prod_zero_sign = math.copysign(0.0, math.copysign(1, x) * math.copysign(1, y))
        zn = zero_neg(mode, prod_zero_sign if (x == 0 or y == 0) else 1.0, z)
        assert g == expect_bits(ex, np.float64, mode, zn), (x, y, z, mode)


def test_f64_exact_path_ties_and_sticky():
    """Lanes outside the error-free-transform range take the exact path: subnormal ties to even, and
    square roots whose truncated integer root lands on the f64 grid (the sticky bit decides)."""
    tiny = 2.0 ** -1074
    got = bits(one("fma", ("rn",), ("f64",), [tiny, 3 * tiny, tiny], [0.5, 0.5, 1.5], [0.0, 0.0, 0.0])).tolist()
    assert got == [0, 2, 2]                           # 0.5, 1.5, 1.5 units: ties to even
    sub = fb([4100132257354785, 2120197589723095], "f64")
    for mode in MODES:
        got = bits(one("sqrt", (mode,), ("f64",), sub)).tolist()
        assert got == [_sqrt_bits(float(x), np.float64, mode) for x in sub], mode


def test_fma_double_rounding_traps():
    """Cases where evaluating a·b + c with two roundings gives the wrong answer (found by search):
    the product lands on (or next to) a midpoint of the destination format and c decides."""
    # the 4th: a·b = 2^-53 (1 + 2^-78), so 1 + a·b sits just above the midpoint 1 + 2^-53 (RN → 1 + 2^-52)
    # although its f64 error terms sum to the midpoint exactly (the case round-to-odd exists for)
    a64 = np.array([1.839544175280257, 1.9566761462307367, 1.7080830785011882, 2.0 ** -53 * (1 + 2.0 ** -26),
                    2.0 ** -600, 1e300, 3.0])
    b64 = np.array([1.2313699240838611, 1.1615180858600755, 1.9947735050649602, 1 - 2.0 ** -26 + 2.0 ** -52,
                    2.0 ** -600, 1e10, 1.0 / 3])
    c64 = np.array([2.220446049250313e-16, -2.7755575615628914e-17, -5.551115123125783e-17, 1.0, 2.0 ** -1074,
                    -1e308, -1.0])
    with np.errstate(all="ignore"):
        assert (a64[:4] * b64[:4] + c64[:4] != one("fma", ("rn",), ("f64",), a64[:4], b64[:4], c64[:4])).all()
    for mode in MODES:
        got = bits(one("fma", (mode,), ("f64",), a64, b64, c64)).tolist()
        for x, y, z, g in zip(a64, b64, c64, got):
            assert g == expect_bits(Fraction(x) * Fraction(y) + Fraction(z), np.float64, mode), (x, y, z, mode)
    # f32: 1.5·(1 + 2^-23) is an f32 midpoint; ±2^-80 (lost in binary64) decides the direction
    d = one("fma", ("rn",), ("f32",), [1.5, 1.5], [1 + 2.0 ** -23] * 2, [-2.0 ** -80, 2.0 ** -80])
    assert (d - np.float32(1.5)).tolist() == [2.0 ** -23, 2.0 ** -22]
    # f16: 1.5·(1 + 2^-10) is an f16 midpoint; −2^-24 (a tie in binary32) must round it down
    h = one("fma", ("rn",), ("f16",), np.float16([1.5]), np.float16([1 + 2.0 ** -10]), np.float16([-2.0 ** -24]))
    assert float(h[0]) == 1.5 + 2.0 ** -10


@S_FEW
@given(st.sampled_from(["f16", "bf16"]), st.data())
def test_half_add_mul_fma_rn(t, data):
    dt = np_dtype(t)
    fin = FIN16 if t == "f16" else FINB16
    n = data.draw(LANES)
    a, b, c = (np.array(data.draw(st.lists(fin, min_size=n, max_size=n)), np.float64).astype(dt) for _ in range(3))
    for opc in ("add", "sub", "mul", "fma"):
        args = (a, b, c) if opc == "fma" else (a, b)
        got = bits(one(opc, ("rn",) if opc == "fma" else (), (t,), *args)).tolist()
        for i, g in enumerate(got):
            x, y, z = float(a[i]), float(b[i]), float(c[i])
            ex = {"add": Fraction(x) + Fraction(y), "sub": Fraction(x) - Fraction(y),
                  "mul": Fraction(x) * Fraction(y), "fma": Fraction(x) * Fraction(y) + Fraction(z)}[opc]
            zn = {"add": zero_neg("rn", x, y), "sub": zero_neg("rn", x, -y),
                  "mul": math.copysign(1, x) * math.copysign(1, y) < 0,
                  "fma": zero_neg("rn", math.copysign(0.0, math.copysign(1, x) * math.copysign(1, y))
                                  if x * y == 0 else 1.0, z)}[opc]
            assert g == expect_bits(ex, dt, "rn", zn), (opc, x, y, z)
    # packed: the same per half, element 0 in the low half
    pa = bits(a).astype(np.uint32) | (bits(b).astype(np.uint32) << 16)
    pb = bits(c).astype(np.uint32) | (bits(a).astype(np.uint32) << 16)
    got = one("mul", (), (t + "x2",), pa, pb)
    lo, hi = one("mul", (), (t,), a, c), one("mul", (), (t,), b, a)
    assert got.tolist() == (bits(lo).astype(np.uint32) | bits(hi).astype(np.uint32) << 16).tolist()


def test_signed_zero_rules():
    p, m = np.float32(0.0), np.float32(-0.0)
    a = np.array([p, m, m, p, 1.0], np.float32)
    b = np.array([m, m, p, p, -1.0], np.float32)
    for mode, want in (("rn", [0, 1, 0, 0, 0]), ("rz", [0, 1, 0, 0, 0]), ("rp", [0, 1, 0, 0, 0]),
                       ("rm", [1, 1, 1, 0, 1])):
        got = np.signbit(one("add", (mode,), ("f32",), a, b)).astype(int).tolist()
        assert got == want, mode
        got64 = np.signbit(one("add", (mode,), ("f64",), a.astype(np.float64), b.astype(np.float64))).astype(int)
        assert got64.tolist() == want, mode
    # x - x is +0 except in .rm; fma cancellation follows the same rule
    assert np.signbit(one("sub", ("rm",), ("f32",), [3.0], [3.0])).tolist() == [True]
    assert np.signbit(one("fma", ("rm",), ("f32",), [2.0], [3.0], [-6.0])).tolist() == [True]
    assert np.signbit(one("fma", ("rn",), ("f64",), [-0.0], [1.0], [-0.0])).tolist() == [True]
    assert np.signbit(one("fma", ("rn",), ("f64",), [2.0], [3.0], [-6.0])).tolist() == [False]


def test_ftz_sat_nan():
    sub = fb([0x00000001, 0x80000001, 0x007FFFFF], "f32")
    mzero = np.full(3, -0.0, np.float32)
    assert bits(one("add", (), ("f32",), sub, mzero)).tolist() == [1, 0x80000001, 0x007FFFFF]
    assert bits(one("add", ("ftz",), ("f32",), sub, mzero)).tolist() == [0, 0x80000000, 0]
    # subnormal *result* flushed: 2^-126 * 0.5
    assert bits(one("mul", ("ftz",), ("f32",), [2.0 ** -126], [0.5])).tolist() == [0]
    assert bits(one("mul", (), ("f32",), [2.0 ** -126], [0.5])).tolist() == [0x00400000]
    # .sat clamps to [0, 1], NaN → +0, −0 → +0
    x = np.array([1.5, -2.0, 0.25, np.nan, -0.0, np.inf], np.float32)
    got = one("add", ("sat",), ("f32",), x, np.zeros(6, np.float32)).tolist()
    assert got == [1.0, 0.0, 0.25, 0.0, 0.0, 1.0]
    assert not np.signbit(one("add", ("sat",), ("f32",), x, np.zeros(6, np.float32))).any()
    # NaN results are canonical 0x7FFFFFFF whatever the inputs
    nan_in = fb([0xFFC00001, 0x7F800001], "f32")
    assert bits(one("add", (), ("f32",), nan_in, np.ones(2, np.float32))).tolist() == [0x7FFFFFFF] * 2
    assert bits(one("mul", ("rz",), ("f32",), [np.inf], [0.0])).tolist() == [0x7FFFFFFF]
    assert bits(one("fma", ("rn",), ("f32",), [np.inf], [1.0], [-np.inf])).tolist() == [0x7FFFFFFF]
    # f64 keeps the first NaN operand's payload (quieted); invalid → 0x7FFFFFFFFFFFFFFF
    n1, n2 = fb([0x7FF0000000000001], "f64"), fb([0xFFF8000000000002], "f64")
    assert bits(one("add", (), ("f64",), n1, n2)).tolist() == [0x7FF8000000000001]
    assert bits(one("mul", ("rz",), ("f64",), np.ones(1), n2)).tolist() == [0xFFF8000000000002]
    assert bits(one("add", (), ("f64",), [np.inf], [-np.inf])).tolist() == [0x7FFFFFFFFFFFFFFF]
    # f16: ftz and sat, canonical NaN 0x7FFF
    h = fb([0x0001, 0x3C00, 0x7E01], "f16")
    assert bits(one("add", ("ftz",), ("f16",), h, fb([0, 0x3C00, 0], "f16"))).tolist() == [0, 0x4000, 0x7FFF]
    assert bits(one("add", ("sat",), ("f16",), h, fb([0, 0x3C00, 0], "f16"))).tolist() == [1, 0x3C00, 0]


def test_overflow_directed():
    big = np.float32(3.4e38)
    for mode, want in (("rn", 0x7F800000), ("rz", 0x7F7FFFFF), ("rm", 0x7F7FFFFF), ("rp", 0x7F800000)):
        assert bits(one("add", (mode,), ("f32",), [big], [big])).tolist() == [want]
    for mode, want in (("rn", 0xFF800000), ("rz", 0xFF7FFFFF), ("rm", 0xFF800000), ("rp", 0xFF7FFFFF)):
        assert bits(one("mul", (mode,), ("f32",), [-big], [2.0])).tolist() == [want]
    for mode, want in (("rn", 0x7FF0000000000000), ("rz", 0x7FEFFFFFFFFFFFFF), ("rm", 0x7FEFFFFFFFFFFFFF),
                       ("rp", 0x7FF0000000000000)):
        assert bits(one("add", (mode,), ("f64",), [1.7e308], [1.7e308])).tolist() == [want]
        assert bits(one("mul", (mode,), ("f64",), [1e300], [1e300])).tolist() == [want]
        assert bits(one("div", (mode,), ("f64",), [1e300], [1e-300])).tolist() == [want]


def test_fma_relu_half_and_minmax():
    a = fb([0x3C00, 0xBC00, 0x7E00], "f16")        # 1, -1, NaN
    b = fb([0x4000, 0x4000, 0x3C00], "f16")        # 2, 2, 1
    c = fb([0xBC00, 0x0000, 0x0000], "f16")        # -1, 0, 0
    assert bits(one("fma", ("rn", "relu"), ("f16",), a, b, c)).tolist() == [0x3C00, 0x0000, 0x7FFF]
    ab = np.array([0x3F80BF80], np.uint32)          # bf16x2: hi = 1, lo = -1
    bb = np.array([0x40004000], np.uint32)          # 2, 2
    cb = np.array([0x00000000], np.uint32)
    assert one("fma", ("rn", "relu"), ("bf16x2",), ab, bb, cb).tolist() == [0x40000000]
    # min/max: NaN loses, .NaN wins, -0 < +0, xorsign.abs
    x = np.array([np.nan, 1.0, -0.0, np.nan, -3.0], np.float32)
    y = np.array([2.0, np.nan, 0.0, np.nan, 2.0], np.float32)
    assert bits(one("min", (), ("f32",), x, y)).tolist() == [0x40000000, 0x3F800000, 0x80000000, 0x7FFFFFFF,
                                                          0xC0400000]
    assert bits(one("max", (), ("f32",), x, y)).tolist() == [0x40000000, 0x3F800000, 0x00000000, 0x7FFFFFFF,
                                                          0x40000000]
    assert bits(one("max", ("NaN",), ("f32",), x, y)).tolist()[:2] == [0x7FFFFFFF, 0x7FFFFFFF]
    assert one("min", ("xorsign", "abs"), ("f32",), x[4:], y[4:]).tolist() == [-2.0]
    assert one("max", ("xorsign", "abs"), ("f32",), x[4:], y[4:]).tolist() == [-3.0]
    assert bits(one("min", ("ftz",), ("f32",), fb([0x80000001], "f32"), [0.0])).tolist() == [0x80000000]
    hx = np.array([0x7E00_3C00], np.uint32)          # f16x2: hi NaN, lo 1.0
    hy = np.array([0x4000_4000], np.uint32)
    assert one("max", (), ("f16x2",), hx, hy).tolist() == [0x4000_4000]
    assert one("max", ("NaN",), ("f16x2",), hx, hy).tolist() == [0x7FFF_4000]
    d = fb([0x7FF0000000000005], "f64")
    assert bits(one("min", (), ("f64",), d, d)).tolist() == [0x7FF8000000000005]


def test_abs_neg_copysign_testp():
    x = fb([0x80000001, 0x3F800000, 0xFFC00001], "f32")
    assert bits(one("abs", (), ("f32",), x)).tolist() == [0x00000001, 0x3F800000, 0x7FFFFFFF]
    assert bits(one("neg", (), ("f32",), x)).tolist() == [0x00000001, 0xBF800000, 0x7FFFFFFF]
    assert bits(one("neg", ("ftz",), ("f32",), x)).tolist() == [0x00000000, 0xBF800000, 0x7FFFFFFF]
    d = fb([0xFFF0000000000001, 0x8000000000000000], "f64")
    assert bits(one("abs", (), ("f64",), d)).tolist() == [0xFFF0000000000001, 0]
    assert bits(one("neg", (), ("bf16",), fb([0x3F80, 0x7FC1], "bf16"))).tolist() == [0xBF80, 0x7FFF]
    assert one("neg", (), ("f16x2",), [0x3C00BC00]).tolist() == [0xBC003C00]
    assert bits(one("copysign", (), ("f32",), [-1.0, 1.0], fb([0x7FC00001, 0xBF800000], "f32"))).tolist() == \
        [0xFFC00001, 0x3F800000]
    vals = fb([0, 0x80000000, 1, 0x00800000, 0x7F800000, 0x7FC00000], "f32")
    want = {"finite": [1, 1, 1, 1, 0, 0], "infinite": [0, 0, 0, 0, 1, 0], "number": [1, 1, 1, 1, 1, 0],
            "notanumber": [0, 0, 0, 0, 0, 1], "normal": [1, 1, 0, 1, 0, 0], "subnormal": [0, 0, 1, 0, 0, 0]}
    for op, w in want.items():
        assert one("testp", (op,), ("f32",), vals).astype(int).tolist() == w, op
        v64 = fb([0, 1 << 63, 1, 1 << 52, 0x7FF0 << 48, 0x7FF8 << 48], "f64")
        assert one("testp", (op,), ("f64",), v64).astype(int).tolist() == w, op


def test_approximate_functions_are_labelled_and_bounded():
    assert APPROXIMATE_OPCODES >= {"sin", "cos", "lg2", "ex2", "tanh", "rsqrt"}
    assert lookup("sin", ("approx",), ("f32",)).approx and not lookup("rcp", ("rn",), ("f32",)).approx
    assert is_approximate("div", ("full",)) and is_approximate("rcp", ("approx", "ftz"))
    assert not is_approximate("div", ("rn",)) and not is_approximate("add", ())
    x = np.linspace(-2 * np.pi, 2 * np.pi, 257).astype(np.float32)
    s = one("sin", ("approx",), ("f32",), x).astype(np.float64)
    c = one("cos", ("approx",), ("f32",), x).astype(np.float64)
    assert np.max(np.abs(s - np.sin(x.astype(np.float64)))) <= 2 ** -20.5
    assert np.max(np.abs(c - np.cos(x.astype(np.float64)))) <= 2 ** -20.5
    e = np.linspace(-20, 20, 101).astype(np.float32)
    ex = one("ex2", ("approx",), ("f32",), e).astype(np.float64)
    assert np.max(np.abs(ex / np.exp2(e.astype(np.float64)) - 1)) <= 2 ** -22
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    assert bits(one("rcp", ("approx",), ("f32",), specials)).tolist() == \
        [0x7F800000, 0xFF800000, 0, 0x80000000, 0x7FFFFFFF]
    assert bits(one("sqrt", ("approx",), ("f32",), specials)).tolist() == \
        [0, 0x80000000, 0x7F800000, 0x7FFFFFFF, 0x7FFFFFFF]
    assert bits(one("rsqrt", ("approx",), ("f32",), specials)).tolist() == \
        [0x7F800000, 0xFF800000, 0, 0x7FFFFFFF, 0x7FFFFFFF]
    assert bits(one("sin", ("approx",), ("f32",), specials)).tolist() == [0, 0x80000000] + [0x7FFFFFFF] * 3
    assert one("cos", ("approx",), ("f32",), specials[:2]).tolist() == [1.0, 1.0]
    assert one("lg2", ("approx",), ("f32",), [0.0, 8.0]).tolist() == [-np.inf, 3.0]
    assert one("ex2", ("approx", "ftz"), ("f32",), [-130.0]).tolist() == [0.0]
    # div.approx: a * (1/b), zero for 2^126 < |b| < 2^128, so inf / b = NaN there
    got = one("div", ("approx",), ("f32",), [1.0, np.inf, 6.0], [2.0 ** 127, 2.0 ** 127, 3.0])
    assert bits(got).tolist() == [0, 0x7FFFFFFF, 0x40000000]
    # rcp.approx.ftz.f64: upper word only, low word zero, subnormal → inf, NaN → 0x7fffffff00000000
    r = one("rcp", ("approx", "ftz"), ("f64",), fb([0x4000000000000000, 0x0000000000000001, 0x7FF8000000000001],
                                                   "f64"))
    assert bits(r).tolist() == [0x3FE0000000000000, 0x7FF0000000000000, 0x7FFFFFFF00000000]
    t = one("tanh", ("approx",), ("bf16",), np.array([0.5], BF16))
    assert abs(float(t[0]) - math.tanh(0.5)) <= 2 ** -8
    assert one("ex2", ("approx",), ("f16",), np.float16([1.0, -np.inf, 3.0])).tolist() == [2.0, 0.0, 8.0]
    assert one("ex2", ("approx",), ("f16x2",), [0x3C00_0000]).tolist() == [0x4000_3C00]
    r = one("rsqrt", ("approx", "ftz"), ("f64",), fb([0x4010000000000000, 0x8000000000000001], "f64"))
    assert bits(r).tolist() == [0x3FE0000000000000, 0xFFF0000000000000]


# ======================================================================================================
# cvt
# ======================================================================================================
_ITYPES = ["u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"]


def _irange(t):
    w = int(t[1:])
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if t[0] == "s" else (0, (1 << w) - 1)


@S
@given(st.sampled_from(_ITYPES), st.sampled_from(_ITYPES), st.data())
def test_cvt_int_int(dt, at, data):
    a = data.draw(st.lists(rng(at), min_size=1, max_size=9))
    w = int(dt[1:])
    f = sx if dt[0] == "s" else ux
    assert one("cvt", (), (dt, at), a).tolist() == [f(v, w) for v in a]   # extend by source, truncate
    (dlo, dhi), (slo, shi) = _irange(dt), _irange(at)
    if dlo <= slo and dhi >= shi:
        with pytest.raises(AluError, match="sat"):
            lookup("cvt", ("sat",), (dt, at))
    else:
        assert one("cvt", ("sat",), (dt, at), a).tolist() == [max(dlo, min(dhi, v)) for v in a]


def test_cvt_int_edges():
    assert one("cvt", (), ("u32", "s8"), [-1]).tolist() == [0xFFFFFFFF]
    assert one("cvt", (), ("s32", "u8"), [0xFF]).tolist() == [255]
    assert one("cvt", (), ("u8", "u32"), [0x1FF]).tolist() == [0xFF]
    assert one("cvt", ("sat",), ("u32", "s32"), [-5, 7]).tolist() == [0, 7]
    assert one("cvt", ("sat",), ("s32", "u64"), [2 ** 64 - 1]).tolist() == [2 ** 31 - 1]


@S
@given(st.sampled_from(MODES), st.sampled_from(_ITYPES), st.sampled_from(["f16", "bf16", "f32", "f64"]), st.data())
def test_cvt_int_to_float_all_modes(mode, at, dt, data):
    a = data.draw(st.lists(st.one_of(rng(at), st.sampled_from([0, _irange(at)[1], _irange(at)[0]])),
                           min_size=1, max_size=8))
    got = bits(one("cvt", (mode,), (dt, at), a)).tolist()
    assert got == [expect_bits(Fraction(v), np_dtype(dt), mode) for v in a]


@S
@given(st.sampled_from(["rni", "rzi", "rmi", "rpi"]), st.sampled_from(_ITYPES),
       st.sampled_from(["f16", "bf16", "f32", "f64"]), st.data())
def test_cvt_float_to_int_saturates(irnd, dt, at, data):
    fin = {"f16": FIN16, "bf16": FINB16, "f32": FIN32, "f64": FIN64}[at]
    vals = data.draw(st.lists(st.one_of(fin, st.sampled_from([math.inf, -math.inf, math.nan, -0.5, 2.5, 1e30])),
                              min_size=1, max_size=8))
    with np.errstate(over="ignore"):
        a = np.array(vals, np.float64).astype(np_dtype(at))
    got = one("cvt", (irnd,), (dt, at), a).tolist()
    lo, hi = _irange(dt)
    w = int(dt[1:])
    for x, g in zip(a.tolist(), got):
        if math.isnan(x):
            nb = (1 << (w - 1)) if (at == "f64" or w == 64) else 0
            want = sx(nb, w) if dt[0] == "s" else nb
        elif math.isinf(x):
            want = hi if x > 0 else lo
        else:
            fx = Fraction(x)
            r = {"rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil, "rni": round}[irnd](fx)
            want = max(lo, min(hi, int(r)))
        assert g == want, (x, irnd, dt, at)


def test_cvt_float_int_nan_and_ftz():
    assert one("cvt", ("rzi",), ("s32", "f32"), [np.nan]).tolist() == [0]
    assert one("cvt", ("rzi",), ("s32", "f64"), [np.nan]).tolist() == [-2 ** 31]
    assert one("cvt", ("rzi",), ("u64", "f32"), [np.nan]).tolist() == [2 ** 63]
    assert one("cvt", ("rni",), ("s32", "f32"), [2.5, -2.5, 3.5, 3e9, -3e9]).tolist() == \
        [2, -2, 4, 2 ** 31 - 1, -2 ** 31]
    tiny = fb([1], "f32")
    assert one("cvt", ("rpi",), ("s32", "f32"), tiny).tolist() == [1]
    assert one("cvt", ("rpi", "ftz"), ("s32", "f32"), tiny).tolist() == [0]
    assert one("cvt", ("rzi",), ("u64", "f64"), [2.0 ** 64, 2.0 ** 63, 1.8e19]).tolist() == \
        [2 ** 64 - 1, 2 ** 63, 18000000000000000000]


@S
@given(st.sampled_from(MODES), st.sampled_from([("f32", "f64"), ("f16", "f32"), ("bf16", "f32"), ("f16", "f64"),
                                               ("bf16", "f64"), ("bf16", "f16"), ("f16", "bf16")]), st.data())
def test_cvt_float_narrowing_all_modes(mode, pair, data):
    dt, at = pair
    fin = {"f16": FIN16, "bf16": FINB16, "f32": FIN32, "f64": FIN64}[at]
    a = np.array(data.draw(st.lists(fin, min_size=1, max_size=8)), np.float64).astype(np_dtype(at))
    got = bits(one("cvt", (mode,), (dt, at), a)).tolist()
    for x, g in zip(a.tolist(), got):
        assert g == expect_bits(Fraction(x), np_dtype(dt), mode, math.copysign(1, x) < 0), (x, mode, pair)


def test_cvt_float_float_specials():
    # widening is exact; f32 NaN results are canonical
    h = fb([0x0001, 0xFC00, 0x7E01], "f16")
    assert bits(one("cvt", (), ("f32", "f16"), h)).tolist() == [0x33800000, 0xFF800000, 0x7FFFFFFF]
    b = fb([0x0001], "bf16")
    assert bits(one("cvt", (), ("f32", "bf16"), b)).tolist() == [0x00010000]
    assert bits(one("cvt", ("ftz",), ("f32", "bf16"), b)).tolist() == [0]
    assert bits(one("cvt", (), ("f64", "f32"), fb([0x7FA00000], "f32"))).tolist() == [0x7FFC000000000000]
    # narrowing overflow per mode, satfinite, relu
    big = np.array([70000.0, -70000.0, np.nan, -1.0, np.inf], np.float32)
    assert bits(one("cvt", ("rn",), ("f16", "f32"), big)).tolist() == [0x7C00, 0xFC00, 0x7FFF, 0xBC00, 0x7C00]
    assert bits(one("cvt", ("rz",), ("f16", "f32"), big)).tolist() == [0x7BFF, 0xFBFF, 0x7FFF, 0xBC00, 0x7C00]
    assert bits(one("cvt", ("rn", "satfinite"), ("f16", "f32"), big)).tolist() == \
        [0x7BFF, 0xFBFF, 0x7FFF, 0xBC00, 0x7BFF]
    assert bits(one("cvt", ("rn", "relu"), ("bf16", "f32"), big)).tolist() == [0x4789, 0, 0x7FFF, 0, 0x7F80]
    assert bits(one("cvt", ("rn", "sat"), ("f16", "f32"), big)).tolist() == [0x3C00, 0, 0, 0, 0x3C00]
    # same-type integer rounding
    x = np.array([2.5, -0.4, 3.5, -2.5, 1e30, np.nan], np.float32)
    assert bits(one("cvt", ("rni",), ("f32", "f32"), x)).tolist() == \
        [0x40000000, 0x80000000, 0x40800000, 0xC0000000, bits(np.float32(1e30)).item(), 0x7FFFFFFF]
    assert one("cvt", ("rpi",), ("bf16", "bf16"), np.array([1.5], BF16)).astype(float).tolist() == [2.0]
    assert bits(one("cvt", ("rmi", "ftz"), ("f32", "f32"), fb([0x80000001], "f32"))).tolist() == [0x80000000]
    assert bits(one("cvt", ("rmi",), ("f32", "f32"), fb([0x80000001], "f32"))).tolist() == [0xBF800000]


def test_cvt_tf32():
    x = fb([0x3F801000, 0x3F803000, 0x3F802000, 0xBF801000, 0x7F7FFFFF, 0x7FC00001, 0x00001FFF], "f32")
    assert one("cvt", ("rna",), ("tf32", "f32"), x).tolist() == \
        [0x3F802000, 0x3F804000, 0x3F802000, 0xBF802000, 0x7F800000, 0x7FC00000, 0x00002000]  # NaN: H200 truncates
    assert one("cvt", ("rn",), ("tf32", "f32"), x).tolist() == \
        [0x3F800000, 0x3F804000, 0x3F802000, 0xBF800000, 0x7F800000, 0x7FFFE000, 0x00002000]
    assert one("cvt", ("rz",), ("tf32", "f32"), x).tolist() == \
        [0x3F800000, 0x3F802000, 0x3F802000, 0xBF800000, 0x7F7FE000, 0x7FFFE000, 0x00000000]
    # .satfinite: the H200 truncates a NaN and subtracts one tf32 ulp (data/l01/cvt_bits)
    assert one("cvt", ("rna", "satfinite"), ("tf32", "f32"), x[4:6]).tolist() == [0x7F7FE000, 0x7FBFE000]
    assert one("cvt", ("rn", "relu"), ("tf32", "f32"), x[3:4]).tolist() == [0]


def test_cvt_f32_bf16_keeps_nan_payloads_f16_does_not():
    """H200 (data/l01/cvt_bits): bf16 → f32 is a 16-bit shift (signalling NaN payloads and signs kept);
    f16 → f32 gives the canonical NaN."""
    b = np.array([0x7F81, 0xFFC1, 0x3F80, 0x8001], np.uint16).view(ml_dtypes.bfloat16)
    assert one("cvt", (), ("f32", "bf16"), b).view(np.uint32).tolist() == [0x7F810000, 0xFFC10000, 0x3F800000,
                                                                          0x80010000]
    h = np.array([0x7C01, 0xFE00], np.uint16).view(np.float16)
    assert one("cvt", (), ("f32", "f16"), h).view(np.uint32).tolist() == [0x7FFFFFFF, 0x7FFFFFFF]


def test_cvt_sat_and_packed_rz():
    assert one("cvt", ("rn", "sat"), ("f32", "s32"), [-5, 0, 1, 7]).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert one("cvt", ("rn", "sat"), ("f32", "f64"), [np.nan, -0.5, 0.5, 2.0]).tolist() == [0.0, 0.0, 0.5, 1.0]
    x = np.array([1 + 2.0 ** -10 + 2.0 ** -11 + 2.0 ** -20], np.float32)
    assert one("cvt", ("rz",), ("f16x2", "f32"), x, -x).tolist() == [0x3C01_BC01]
    assert one("cvt", ("rn",), ("f16x2", "f32"), x, -x).tolist() == [0x3C02_BC02]


def test_cvt_packing_order():
    d = one("cvt", ("rn",), ("f16x2", "f32"), [1.0], [2.0])          # a → upper half
    assert d.tolist() == [0x3C004000]
    d = one("cvt", ("rn", "relu"), ("bf16x2", "f32"), [-1.0], [3.0])
    assert d.tolist() == [0x00004040]
    d = one("cvt", ("rn", "satfinite"), ("e4m3x2", "f32"), [1.0], [-2.0])   # a → high byte
    assert d.tolist() == [0x38C0]
    d = one("cvt", ("rn", "satfinite"), ("e5m2x2", "f16x2"), [0x3C00_C000])  # upper half → upper byte
    assert d.tolist() == [0x3CC0]
    d = one("cvt", ("rn",), ("f16x2", "e4m3x2"), [0x38C0])                   # low byte → low half
    assert d.tolist() == [0x3C00C000]


# hopper-spec-facts §10.2, measured on an H200
_FP8_HW = [
    (0.0, 0x00, 0x00), (-0.0, 0x80, 0x80), (1.0, 0x38, 0x3C),
    (448.0, 0x7E, 0x5F), (449.0, 0x7E, 0x5F), (464.0, 0x7E, 0x5F), (480.0, 0x7E, 0x60), (500.0, 0x7E, 0x60),
    (1e6, 0x7E, 0x7B), (3e38, 0x7E, 0x7B), (math.inf, 0x7E, 0x7B), (-500.0, 0xFE, 0xE0), (-math.inf, 0xFE, 0xFB),
    (57344.0, 0x7E, 0x7B), (61439.0, 0x7E, 0x7B), (61440.0, 0x7E, 0x7B), (65536.0, 0x7E, 0x7B),
    (math.nan, 0x7F, 0x7F), (-math.nan, 0x7F, 0x7F),
    (2.0 ** -9, 0x01, 0x18), (2.0 ** -10, 0x00, 0x14), (1.5 * 2.0 ** -10, 0x01, 0x16),
    (2.0 ** -16, 0x00, 0x01), (2.0 ** -17, 0x00, 0x00), (7.7e-6, 0x00, 0x01),
]


@pytest.mark.parametrize("x,e4,e5", _FP8_HW)
def test_cvt_fp8_matches_h200(x, e4, e5):
    a = np.array([x], np.float32)
    if x != x and math.copysign(1, x) < 0:
        a = fb([0xFFC00000], "f32")
    for dt, want in (("e4m3x2", e4), ("e5m2x2", e5)):
        d = one("cvt", ("rn", "satfinite"), (dt, "f32"), a, a)
        assert d.tolist() == [want << 8 | want], (x, dt)


def test_cvt_fp8_decode_all_codes_and_relu():
    codes = np.arange(256, dtype=np.uint16)
    for at, mldt in (("e4m3x2", ml_dtypes.float8_e4m3fn), ("e5m2x2", ml_dtypes.float8_e5m2)):
        d = one("cvt", ("rn",), ("f16x2", at), codes | (codes << 8))
        ref = codes.astype(np.uint8).view(mldt).astype(np.float32).astype(np.float16).view(np.uint16)
        ref = np.where(np.isnan(codes.astype(np.uint8).view(mldt).astype(np.float32)), 0x7FFF, ref).astype(np.uint32)
        assert d.tolist() == (ref | ref << 16).tolist()
        r = one("cvt", ("rn", "relu"), ("f16x2", at), codes)
        neg = (codes & 0x80) != 0
        isnan = ref == 0x7FFF
        assert (r & 0xFFFF).tolist() == np.where(neg & ~isnan, 0, ref).tolist()
    d = one("cvt", ("rn", "satfinite", "relu"), ("e4m3x2", "f32"), [-3.0, np.nan], [2.0, -0.0])
    assert d.tolist() == [0x0040, 0x7F00]


@S
@given(st.sampled_from(["e4m3x2", "e5m2x2"]), st.lists(st.tuples(FIN32, FIN32), min_size=1, max_size=8))
def test_cvt_fp8_satfinite_vs_ml_dtypes(dt, pairs):
    a = np.array([p[0] for p in pairs], np.float32)
    b = np.array([p[1] for p in pairs], np.float32)
    mldt, mx = (ml_dtypes.float8_e4m3fn, 448.0) if dt == "e4m3x2" else (ml_dtypes.float8_e5m2, 57344.0)

    def enc(v):
        return np.clip(v, -mx, mx).astype(mldt).view(np.uint8).astype(np.uint16)
    got = one("cvt", ("rn", "satfinite"), (dt, "f32"), a, b)
    assert got.tolist() == ((enc(a) << 8) | enc(b)).tolist()


# ======================================================================================================
# contract and errors
# ======================================================================================================
_FORMS = [
    ("add", (), ("s32",)), ("add", ("cc",), ("u32",)), ("addc", ("cc",), ("u64",)), ("sub", (), ("u64",)),
    ("mul", ("wide",), ("u16",)), ("mad", ("hi",), ("s64",)), ("madc", ("lo", "cc"), ("s32",)),
    ("div", (), ("u16",)), ("rem", (), ("s64",)), ("bfe", (), ("s64",)), ("bfi", (), ("b32",)),
    ("prmt", ("rc16",), ("b32",)), ("shf", ("l", "wrap"), ("b32",)), ("lop3", (), ("b32",)),
    ("setp", ("ltu", "xor"), ("f32",)), ("setp", ("ne",), ("bf16x2",)), ("set", ("gt",), ("f32", "u64")),
    ("selp", (), ("f64",)), ("slct", ("ftz",), ("b16", "f32")), ("add", ("rm", "ftz", "sat"), ("f32",)),
    ("fma", ("rp",), ("f64",)), ("fma", ("rn", "sat"), ("f16x2",)), ("div", ("rz",), ("f64",)),
    ("sqrt", ("rm", "ftz"), ("f32",)), ("ex2", ("approx", "ftz"), ("bf16x2",)), ("min", ("NaN",), ("bf16",)),
    ("testp", ("subnormal",), ("f64",)), ("cvt", ("rn",), ("f16", "u64")), ("cvt", ("rmi",), ("s16", "f64")),
    ("cvt", ("rn", "satfinite"), ("e5m2x2", "f32")), ("cvt", ("rna",), ("tf32", "f32")), ("popc", (), ("b64",)),
    ("dp2a", ("hi",), ("s32", "u32")), ("fns", (), ("b32",)), ("not", (), ("pred",)),
    ("min", ("xorsign", "abs"), ("f16x2",)), ("cvt", ("rn", "relu"), ("f16x2", "e5m2x2")),
    ("cvt", ("rz",), ("bf16", "f64")), ("cvt", ("rpi",), ("u64", "f64")), ("cvt", ("rm",), ("f64", "u64")),
    ("div", ("approx", "ftz"), ("f32",)), ("div", ("full",), ("f32",)), ("sqrt", ("approx",), ("f32",)),
    ("rcp", ("rz",), ("f64",)), ("tanh", ("approx",), ("f16x2",)), ("set", ("neu", "or"), ("bf16x2", "bf16x2")),
    ("szext", ("clamp",), ("s32",)), ("bmsk", ("wrap",), ("b32",)), ("mul24", ("hi",), ("s32",)),
    ("sad", (), ("s64",)), ("max", ("relu",), ("s16x2",)), ("fma", ("rz",), ("f32",)), ("mul", ("rm",), ("f64",)),
    ("sqrt", ("rp",), ("f64",)), ("cvt", ("rn", "satfinite", "relu"), ("bf16x2", "f32")), ("brev", (), ("b64",)),
    ("cvt", ("rni",), ("f16", "f16")), ("cvt", ("ftz",), ("f64", "f32")), ("abs", ("ftz",), ("f16",)),
    ("lg2", ("approx", "ftz"), ("f32",)), ("rsqrt", ("approx",), ("f64",)), ("copysign", (), ("f64",)),
]


@pytest.mark.parametrize("n", [0, 1, 32, 33])
@pytest.mark.parametrize("form", _FORMS, ids=lambda f: ".".join((f[0],) + f[1] + f[2]))
def test_contract_any_length(form, n):
    op = lookup(*form)
    r = np.random.default_rng(n)
    args = []
    for s in op.srcs:
        dt = _dt(s)
        if s in ("pred",):
            args.append(r.integers(0, 2, n).astype(bool))
        elif s == "cc":
            args.append(r.integers(0, 2, n).astype(np.uint32))
        else:
            nbits = dt.itemsize * 8
            raw = r.integers(0, 2 ** min(nbits, 63), n, dtype=np.uint64).astype({8: np.uint8, 16: np.uint16,
                                                                              32: np.uint32, 64: np.uint64}[nbits])
            args.append(raw.view(dt))
    run(*form, *args)
    assert lookup(*form) is op   # lookups are cached per static form


@pytest.mark.parametrize("form,rule", [
    (("mul", ("wide",), ("s64",)), "mul.wide needs"),
    (("mul", (), ("s32",)), "lo/.hi/.wide"),
    (("add", ("sat",), ("u16",)), "9.7.1.1"),
    (("fma", (), ("f32",)), "rounding modifier"),
    (("mad", (), ("f32",)), "rounding modifier"),
    (("div", (), ("f32",)), "approx"),
    (("add", ("rz",), ("f16",)), "only .rn"),
    (("add", ("ftz",), ("f64",)), "ftz"),
    (("setp", ("lt",), ("b32",)), "eq/ne"),
    (("setp", ("lo",), ("s32",)), "unsigned"),
    (("setp", ("ltu",), ("s32",)), "unordered"),
    (("cvt", (), ("f32", "s32")), "needs .rn"),
    (("cvt", (), ("s32", "f32")), "rni"),
    (("cvt", ("rn",), ("f32", "f16")), "widening"),
    (("cvt", (), ("f16", "f32")), "lose precision"),
    (("cvt", ("sat",), ("s32", "s16")), "sat"),
    (("cvt", ("rn",), ("e4m3x2", "f32")), "satfinite"),
    (("cvt", ("rn", "satfinite"), ("e4m3x2", "bf16x2")), "sm_100"),
    (("cvt", ("ftz", "rn"), ("f16", "f64")), "ftz"),
    (("sin", (), ("f32",)), "approx"),
    (("min", ("xorsign",), ("f32",)), "xorsign"),
    (("mov", (), ("b32",)), "executor"),
    (("add", (), ("s33",)), "not a PTX type"),
    (("add", ("bogus",), ("s32",)), "not allowed"),
    (("bfe", (), ("b32",)), "9.7.1.19"),
    (("shf", ("l",), ("b32",)), "clamp"),
    (("rcp", ("approx",), ("f64",)), "rcp.approx.ftz.f64"),
])
def test_illegal_forms_raise(form, rule):
    with pytest.raises(AluError, match=rule.replace(".", r"\.").replace("/", "/")):
        lookup(*form)


def test_every_opcode_has_a_docstring_naming_its_rule():
    import h100lab.emu.alu_cmp as c
    import h100lab.emu.alu_cvt as v
    import h100lab.emu.alu_float as f
    import h100lab.emu.alu_int as i
    for mod in (c, f, i):
        for name, b in mod._BUILDERS.items():
            assert b.__doc__ and "PTX ISA §" in b.__doc__, (mod.__name__, name)
    assert "PTX ISA §9.7.9.21" in v.build.__doc__
    assert {"add", "cvt", "setp", "prmt", "fma", "madc", "lop3", "testp"} <= OPCODES
