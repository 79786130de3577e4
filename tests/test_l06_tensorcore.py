"""Lesson 6 model: wgmma shapes (PTX ISA §9.7.15.2-3), the matrix descriptor and its gather
(§9.7.15.5.1.2), fragments (§9.7.15.5.1.1, §9.7.14.5.15-16), numerics (§9.7.15.5.2; hopper-spec-facts §10.4)."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from h100lab.memory import banks
from h100lab.tensorcore import (MatrixDescriptor, WgmmaError, accumulator_layout, accumulator_owner, addresses,
                                all_specs, gather, ldmatrix, legal_n, parse_opcode, spec, stmatrix)
from h100lab.tensorcore import fragments, numerics


# -- shapes -------------------------------------------------------------------------------------------------

def test_legal_n_lists():
    assert legal_n("bf16") == tuple(range(8, 257, 8))
    assert legal_n("s8") == (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)
    assert legal_n("b1") == legal_n("u8")


def test_register_counts():
    assert spec(256, "f32", "bf16").d_regs == 128
    assert spec(256, "f16", "f16").d_regs == 64
    assert spec(64, "f32", "bf16", a_source="rs").a_regs == 4


@pytest.mark.parametrize("kw, rule", [
    (dict(n=64, dtype="f16", atype="bf16"), "D type"),
    (dict(n=40, dtype="s32", atype="s8"), "N = 40"),
    (dict(n=64, dtype="f32", atype="tf32", trans_a=1), "imm-trans"),
    (dict(n=64, dtype="f32", atype="e4m3", btype="e5m2", trans_b=1), "imm-trans"),
    (dict(n=64, dtype="s32", atype="s8", scale_a=-1), "imm-scale"),
    (dict(n=64, dtype="f32", atype="bf16", a_source="rs", trans_a=1), "RS form"),
    (dict(n=64, dtype="f32", atype="f16", btype="bf16"), ".f16 A needs"),
    (dict(n=64, dtype="f32", atype="bf16", satfinite=True), "satfinite"),
])
def test_illegal_combinations_name_the_rule(kw, rule):
    with pytest.raises(WgmmaError, match="PTX ISA") as e:
        spec(**kw)
    assert rule in str(e.value)


def test_all_specs_and_parse_roundtrip():
    specs = all_specs()
    assert len({(s.n, s.dtype, s.atype, s.btype, s.a_source, s.satfinite) for s in specs}) == len(specs)
    for s in specs[::37]:
        assert parse_opcode(s.opcode(), s.a_source) == s
    with pytest.raises(WgmmaError):
        parse_opcode("wgmma.mma_async.sync.aligned.m64n64k32.f32.bf16.bf16")


# -- descriptor ---------------------------------------------------------------------------------------------

def test_descriptor_bits():
    d = MatrixDescriptor(start=0x400, lbo=16, sbo=1024, base_offset=3, swizzle="128B")
    v = d.encode()
    assert v & 0x3FFF == 0x40 and (v >> 16) & 0x3FFF == 1 and (v >> 32) & 0x3FFF == 64
    assert (v >> 49) & 7 == 3 and v >> 62 == 1
    assert MatrixDescriptor.decode(v) == d
    with pytest.raises(WgmmaError, match="multiple of 16"):
        MatrixDescriptor(start=8)


@given(st.integers(0, 2**64 - 1))
def test_descriptor_decode_encode_identity(v):
    assert MatrixDescriptor.decode(v).encode() == v


def _reference_address(d, major, r, k, es):
    """Independent per-element reading of the PTX canonical layouts (loops, not arrays)."""
    S = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[d.swizzle]
    T = 16 // es
    if major == "K":
        if d.swizzle == "none":
            a = d.start + (r // 8) * d.sbo + (k // T) * d.lbo + (r % 8) * 16 + (k % T) * es
        else:
            a = d.start + (r // 8) * d.sbo + (r % 8) * S + k * es
    else:
        if d.swizzle == "none":
            a = d.start + (r // T) * d.sbo + (r % T) * es + (k // 8) * d.lbo + (k % 8) * 16
        else:
            a = d.start + (r // (S // es)) * d.lbo + (r % (S // es)) * es + (k // 8) * d.sbo + (k % 8) * S
    nb = {"none": 0, "32B": 1, "64B": 2, "128B": 3}[d.swizzle]
    if nb:
        line = ((a >> 7) - d.base_offset) % (1 << nb)
        a = (a & ~(((1 << nb) - 1) << 4)) | ((((a >> 4) & ((1 << nb) - 1)) ^ line) << 4)
    return a


@settings(max_examples=60, deadline=None)
@given(swz=st.sampled_from(["none", "32B", "64B", "128B"]), major=st.sampled_from(["K", "MN"]),
       start=st.integers(0, 64).map(lambda x: 16 * x), lbo=st.integers(1, 64).map(lambda x: 16 * x),
       sbo=st.integers(1, 128).map(lambda x: 16 * x), bo=st.integers(0, 7))
def test_gather_matches_reference(swz, major, start, lbo, sbo, bo):
    d = MatrixDescriptor(start, lbo, sbo, bo, swz)
    dt, es = ("f16", 2)
    rows, cols = 64, 16
    a = addresses(d, major, rows, cols, dt)
    for r in range(0, rows, 7):
        for k in range(cols):
            assert a[r, k] == _reference_address(d, major, r, k, es)
    img = np.arange(1 << 17, dtype=np.uint32).astype(np.uint16).view(np.uint8)[: 1 << 17]
    g = gather(img, d, major, rows, cols, dt)
    assert (g == img.view(np.uint16)[a // 2]).all()


def test_wrong_sbo_reads_wrong_elements():
    img = (np.arange(8192) % 256).astype(np.uint8)
    good = gather(img, MatrixDescriptor(0, 16, 1024, 0, "128B"), "K", 64, 16, "bf16")
    bad = gather(img, MatrixDescriptor(0, 16, 512, 0, "128B"), "K", 64, 16, "bf16")
    assert (good != bad).any()
    adv = gather(img, MatrixDescriptor(32, 16, 1024, 0, "128B"), "K", 64, 16, "bf16")
    assert (adv != good).any()


def test_gather_out_of_bounds_raises():
    with pytest.raises(WgmmaError, match="outside"):
        gather(np.zeros(1024, np.uint8), MatrixDescriptor(0, 16, 1024, 0, "128B"), "K", 64, 16, "bf16")


def test_mn_major_only_16bit():
    with pytest.raises(WgmmaError, match="MN-major"):
        addresses(MatrixDescriptor(0), "MN", 64, 8, "tf32")


# -- fragments ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [8, 64, 256])
def test_accumulator_layout_is_a_bijection(n):
    r, c = accumulator_layout(n)
    flat = r * n + c
    assert np.unique(flat).size == 64 * n
    for t, v in [(0, 0), (37, min(5, n // 2 - 1)), (127, n // 2 - 1)]:
        assert accumulator_owner(int(r[t, v]), int(c[t, v]), n) == (t, v, 0)


def test_d37_5_and_f16_owner():
    assert accumulator_owner(37, 5, 32) == (86, 1, 0)
    assert accumulator_owner(37, 5, 32, "f16") == (86, 0, 1)


@pytest.mark.parametrize("atype", ["f16", "bf16", "tf32", "e4m3", "s8", "b1"])
def test_a_fragment_bijection_and_roundtrip(atype):
    row, k = fragments.a_fragment_layout(atype)
    K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "s8": 32, "b1": 256}[atype]
    assert np.unique(row * K + k).size == 64 * K
    bits = numerics.FORMATS.get(atype, (8,))[0] if atype != "b1" else 1
    rng = np.random.default_rng(0)
    a = rng.integers(0, 1 << bits, (64, K)).astype(np.uint32)
    assert (fragments.unpack_a_fragment(fragments.pack_a_fragment(a, atype), atype) == a).all()


@settings(max_examples=30, deadline=None)
@given(num=st.sampled_from([1, 2, 4]), trans=st.booleans(), seed=st.integers(0, 2**31))
def test_ldmatrix_stmatrix_inverse(num, trans, seed):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 256, 4096, dtype=np.uint8)
    addr = rng.permutation(256)[:32] * 16
    regs = ldmatrix(src, addr, num, trans)
    out = np.zeros(4096, np.uint8)
    stmatrix(out, addr, regs, num, trans)
    rows = addr[:8 * num, None] + np.arange(16)
    assert (out[rows] == src[rows]).all()
    m0 = src[addr[:8, None] + np.arange(16)].view(np.uint16).reshape(8, 8)
    t = 5
    lo = regs[t, 0] & 0xFFFF
    assert lo == (m0[2 * (t % 4), t // 4] if trans else m0[t // 4, 2 * (t % 4)])


def test_ldmatrix_misaligned_raises():
    with pytest.raises(WgmmaError, match="16-byte"):
        ldmatrix(np.zeros(4096, np.uint8), [8] + [0] * 31, 1)


def test_matrix_wavefronts():
    assert banks.matrix_wavefronts(np.arange(32).reshape(4, 8) * 16) == 4          # 8 rows side by side: 1 each
    assert banks.matrix_wavefronts((np.arange(8) * 128).reshape(1, 8)) == 8      # 8 rows in one bank group
    sw = np.array([r * 128 + ((0 ^ r) << 4) for r in range(8)]).reshape(1, 8)    # 128B swizzle: conflict-free
    assert banks.matrix_wavefronts(sw) == 1


# -- numerics -----------------------------------------------------------------------------------------------

def _f(x, fmt):
    return numerics.from_float(np.array(x, np.float64), fmt)


def test_fp8_truncation_table():
    """hopper-spec-facts §10.4: 13 bits below the largest term, per-term RZ, f16 output RNE."""
    for n, kept in [(0, True), (1, True), (2, False), (5, False)]:
        for s in (1, -1):
            a = _f([[1.0, s * 2**-6] + [0] * 30], "e4m3")
            b = _f([[1.0], [2.0**-(6 + n)]] + [[0]] * 30, "e5m2")
            d = numerics.mma(a, b, atype="e4m3", btype="e5m2").view(np.float32)[0, 0]
            assert d == (1 + s * 2.0**-(12 + n) if kept else 1.0)
    a = _f([[1.0] + [2**-6] * 3 + [0] * 28], "e4m3")
    b = _f([[1.0]] + [[2**-6]] * 3 + [[0]] * 28, "e5m2")
    assert numerics.mma(a, b, atype="e4m3", btype="e5m2", dtype="f16").view(np.float16)[0, 0] == 1 + 2**-10


def test_bf16_rz_table():
    for dlt, want in [(22, 1 - 2**-22), (24, 1 - 2**-24), (25, 1 - 2**-24), (26, 1.0)]:
        a = _f([[1.0, -2.0**-dlt] + [0] * 14], "bf16")
        b = _f([[1.0], [1.0]] + [[0]] * 14, "bf16")
        assert numerics.mma(a, b, atype="bf16").view(np.float32)[0, 0] == np.float32(want)


def test_specials():
    a = _f([[np.inf, 1.0] + [0] * 14], "f16")
    b = _f([[1.0], [np.nan]] + [[0]] * 14, "f16")
    assert numerics.mma(a, b, atype="f16")[0, 0] == 0x7FFFFFFF
    b = _f([[-1.0], [1.0]] + [[0]] * 14, "f16")
    assert numerics.mma(a, b, atype="f16").view(np.float32)[0, 0] == -np.inf
    z = _f([[-0.0] * 16], "bf16")
    assert numerics.mma(z, _f([[1.0]] * 16, "bf16"), atype="bf16")[0, 0] == 0      # +0 [to be measured]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), atype=st.sampled_from(["f16", "bf16", "tf32", "e4m3", "e5m2"]),
       dtype=st.sampled_from(["f32", "f16"]))
def test_within_documented_bound_of_exact_sum(seed, atype, dtype):
    if dtype == "f16" and atype in ("bf16", "tf32"):
        return
    rng = np.random.default_rng(seed)
    K = {"f16": 16, "bf16": 16, "tf32": 8}.get(atype, 32)
    fmt_c = "f16" if dtype == "f16" else "f32"
    a = _f(rng.standard_normal((4, K)), atype)
    b = _f(rng.standard_normal((K, 3)), atype)
    c = _f(rng.standard_normal((4, 3)), fmt_c)
    d = numerics.to_float(numerics.mma(a, b, c, atype=atype, dtype=dtype), fmt_c)
    av, bv, cv = numerics.to_float(a, atype), numerics.to_float(b, atype), numerics.to_float(c, fmt_c)
    bound = numerics.error_bound(a, b, c, atype=atype, dtype=dtype)
    for i in range(4):
        for j in range(3):
            exact = sum((Fraction(float(av[i, k])) * Fraction(float(bv[k, j])) for k in range(K)), Fraction(float(cv[i, j])))
            assert abs(Fraction(float(d[i, j])) - exact) <= Fraction(float(bound[i, j]))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), at=st.sampled_from(["s8", "u8"]), bt=st.sampled_from(["s8", "u8"]),
       sat=st.booleans())
def test_integer_paths_exact(seed, at, bt, sat):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (8, 32), dtype=np.uint8)
    b = rng.integers(0, 256, (32, 8), dtype=np.uint8)
    c = rng.integers(-2**31, 2**31, (8, 8)).astype(np.int64)
    d = numerics.mma(a, b, (c & 0xFFFFFFFF).astype(np.uint32), atype=at, btype=bt, dtype="s32", satfinite=sat)
    av = a.view(np.int8 if at == "s8" else np.uint8).astype(np.int64)
    bv = b.view(np.int8 if bt == "s8" else np.uint8).astype(np.int64)
    tot = av @ bv + c
    want = np.clip(tot, -2**31, 2**31 - 1) if sat else ((tot + 2**31) % 2**32) - 2**31
    assert (d.view(np.int32) == want).all()


def test_b1_and_popc():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, (4, 256)).astype(np.uint8)
    b = rng.integers(0, 2, (256, 5)).astype(np.uint8)
    d = numerics.mma(a, b, np.full((4, 5), 7, np.uint32), atype="b1", dtype="s32")
    assert (d.view(np.int32) == (a.astype(int) @ b.astype(int)) + 7).all()
