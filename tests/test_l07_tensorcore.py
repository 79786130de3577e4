"""Lesson 7 models: 2:4 sparsity (PTX ISA §9.7.15.6), FP8 conversion and scaling (§9.7.9.21), two-level
accumulation, the stmatrix epilogue (§9.7.14.5.16) and the wgmma timing model."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from h100lab import data
from h100lab.tensorcore import accumulate, epilogue, numerics, quant, sparsity, timing


# ---- sparsity -----------------------------------------------------------------------------------

@pytest.mark.parametrize("atype", sparsity.SPARSE_TYPES)
def test_metadata_registers_round_trip_and_ignore_other_lanes(atype):
    rng = np.random.default_rng(1)
    vals = np.zeros((64, sparsity.sparse_k(atype) // 2), np.uint8)
    nib = sparsity.random_sparse(rng, 64, atype, vals)
    for sel in ((0, 1) if atype in ("f16", "bf16", "tf32") else (0,)):
        regs = sparsity.metadata_registers(nib, atype, sel, fill=rng.integers(0, 2**32, 128, dtype=np.uint64))
        assert (sparsity.metadata_from_registers(regs, atype, sel) == nib).all()


def test_register_layout_examples():
    """f16: thread 0 nibbles 0-3 = row 0 groups 0-3, 4-7 = row 8; thread 1 = groups 4-7; 8-bit: thread 1 = row 8,
    thread 2 = row 0 groups 8-15 (hopper-spec-facts §11, CuTe ELayout_64x32 / 64x64)."""
    nib = np.arange(64 * 8).reshape(64, 8) % 16
    r = sparsity.metadata_registers(nib, "f16", 0)
    assert r[0] == sum(int(nib[0, q]) << 4 * q for q in range(4)) | sum(int(nib[8, q]) << 4 * (4 + q) for q in range(4))
    assert r[1] == sum(int(nib[0, 4 + q]) << 4 * q for q in range(4)) | sum(int(nib[8, 4 + q]) << 4 * (4 + q) for q in range(4))
    assert r[2] == 0 and r[3] == 0                         # sp-sel 0: lanes 2, 3 are not read
    n8 = np.arange(64 * 16).reshape(64, 16) % 16
    r8 = sparsity.metadata_registers(n8, "e4m3", 0)
    assert r8[1] == sum(int(n8[8, q]) << 4 * q for q in range(8))
    assert r8[2] == sum(int(n8[0, 8 + q]) << 4 * q for q in range(8))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(["f16", "bf16", "tf32", "e4m3", "s8"]))
def test_compress_decompress_round_trip(seed, atype):
    rng = np.random.default_rng(seed)
    kept, grp = sparsity.granularity(atype)
    K = sparsity.sparse_k(atype)
    raw = {"f16": np.uint16, "bf16": np.uint16, "tf32": np.uint32}.get(atype, np.uint8)
    vals = rng.integers(1, 100, (64, K // 2)).astype(raw)
    nib = sparsity.random_sparse(rng, 64, atype, vals)
    dense = sparsity.decompress(vals, nib, atype)
    v2, n2 = sparsity.compress(dense, atype)
    assert (v2 == vals).all() and (n2 == nib).all()
    assert ((dense.reshape(64, -1, grp) != 0).sum(axis=2) == kept).all()


def test_compress_rejects_dense_groups_naming_the_rule():
    a = np.ones((64, 32), np.uint16) * 0x3C00
    with pytest.raises(sparsity.SparsityError, match="2:4"):
        sparsity.compress(a, "f16")


@pytest.mark.parametrize("atype, bad", [("f16", 0b0000), ("bf16", 0b0101), ("e4m3", 0b1111), ("tf32", 0b1000)])
def test_invalid_metadata_raises(atype, bad):
    nib = np.full((64, sparsity.groups_per_row(atype)), 0b0100, np.uint8)
    nib[3, 2] = bad
    with pytest.raises(sparsity.SparsityError, match="PTX ISA"):
        sparsity.check_metadata(nib, atype)


def test_selector_rules():
    with pytest.raises(sparsity.SparsityError, match="sp-sel"):
        sparsity.sparse_spec(64, "f32", "e4m3", sp_sel=1)
    with pytest.raises(sparsity.SparsityError, match="sp-sel"):
        sparsity.sparse_spec(64, "f32", "bf16", sp_sel=2)
    with pytest.raises(sparsity.SparsityError, match="b1"):
        sparsity.sparse_spec(64, "s32", "b1")
    s = sparsity.parse_sparse_opcode("wgmma.mma_async.sp.sync.aligned.m64n128k64.s32.s8.u8")
    assert s.k == 64 and s.packed_k == 32 and s.n == 128 and s.d_regs == 64


@pytest.mark.parametrize("atype", ["f16", "bf16", "tf32", "e4m3", "u8"])
def test_sparse_mma_equals_dense_mma_of_the_decompressed_a(atype):
    rng = np.random.default_rng(5)
    K = sparsity.sparse_k(atype)
    if atype == "u8":
        vals = rng.integers(0, 256, (64, K // 2), dtype=np.uint8)
        B = rng.integers(0, 256, (K, 32), dtype=np.uint8)
        dt = "s32"
    else:
        vals = numerics.from_float(rng.standard_normal((64, K // 2)), atype)
        B = numerics.from_float(rng.standard_normal((K, 32)), atype)
        dt = "f32"
    nib = sparsity.random_sparse(rng, 64, atype, vals)
    got = sparsity.mma_sp(vals, nib, B, atype=atype, dtype=dt)
    want = numerics.mma(sparsity.decompress(vals, nib, atype), B, None, atype=atype, dtype=dt)
    assert (got == want).all()


def test_pruned_positions_never_meet_b():
    """Gather model: an Inf in a B row no stored value names does not reach D (a dense 0 · Inf would be NaN)."""
    vals = numerics.from_float(np.ones((64, 16)), "f16")
    nib = np.full((64, 8), 0b0100, np.uint8)                 # positions 0, 1 of every group
    B = numerics.from_float(np.ones((32, 8)), "f16")
    B[2] = 0x7C00                                            # +inf at a pruned K
    d = sparsity.mma_sp(vals, nib, B, atype="f16").view(np.float32)
    assert (d == 16).all()


# ---- FP8 conversion and scaling -------------------------------------------------------------------

def test_cvt_fp8_is_the_h200s_on_every_recorded_conversion():
    if not data.available("l01/cvt_bits"):
        pytest.skip("data/l01/cvt_bits not present")
    from h100lab.measure.l04 import unpack
    n = 0
    for r in data.load("l01/cvt_bits").records:
        op = r["op"]
        if not op.startswith("cvt.rn.satfinite"):
            continue
        if "x2" not in op or "f16x2" == op.split(".")[-1] and False:
            continue
        fmt = "e4m3" if "e4m3" in op else "e5m2"
        relu = "relu" in op
        a = unpack(r["a"]).view(np.uint32)
        want = unpack(r["out"]).view(np.uint32) & 0xFFFF
        if r["kind"] == "f32x2_b16":
            got = quant.pack_x2(a, unpack(r["b"]).view(np.uint32), fmt, relu)
        elif r["kind"] == "b32_b16":
            hi, lo = (a >> 16).astype(np.uint16), (a & 0xFFFF).astype(np.uint16)
            got = (quant.cvt_fp8_f16(hi, fmt, relu).astype(np.uint32) << 8) | quant.cvt_fp8_f16(lo, fmt, relu)
        else:
            continue
        assert (got == want).all(), op
        n += a.size
    assert n > 300_000


def test_first_operand_goes_to_the_high_byte():
    assert quant.pack_x2(np.float32(1.0), np.float32(-2.0), "e4m3") == (0x38 << 8) | 0xC0


def test_saturation_and_nan():
    c = quant.cvt_fp8(np.array([449, 1e9, np.inf, -np.inf, np.nan, -np.nan], np.float32), "e4m3")
    assert c.tolist() == [0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0x7F]
    assert quant.cvt_fp8(np.float32(61440.0), "e5m2") == 0x7B


@pytest.mark.parametrize("gran", quant.GRANULARITIES)
def test_quantize_round_trip_bounded(gran):
    rng = np.random.default_rng(2)
    x = quant.real_looking(rng, (256, 256), "activations")
    q, s = quant.quantize(x, "e4m3", gran)
    y = quant.dequantize(q, s, "e4m3", gran)
    e = quant.errors(x, y)
    assert e["max_rel"] <= 2 ** -4 + 1e-6 and not np.isnan(y).any()


def test_finer_scaling_has_smaller_error_on_outliers():
    rng = np.random.default_rng(3)
    x = quant.real_looking(rng, (256, 512), "activations")
    err = {g: quant.errors(x, quant.dequantize(*quant.quantize(x, "e4m3", g), "e4m3", g))["rel_rms"]
           for g in ("tensor", "block_1x128")}
    assert err["block_1x128"] <= err["tensor"]


def test_delayed_scaling_saturates_a_growing_tensor():
    ds = quant.DelayedScaling("e4m3", length=4)
    rng = np.random.default_rng(4)
    for step in range(6):
        ds.step((rng.standard_normal((16, 16)) * 2 ** step).astype(np.float32))
    assert ds.saturated > 0 and len(ds.history) == 4


# ---- two-level accumulation ----------------------------------------------------------------------

@settings(max_examples=50, deadline=None)
@given(st.floats(-1e6, 1e6, width=32), st.floats(-1e3, 1e3, width=32), st.floats(-1e6, 1e6, width=32))
def test_fma_f32_rounds_once(a, b, c):
    from fractions import Fraction
    got = accumulate.fma_f32(np.float32(a), np.float32(b), np.float32(c))
    exact = Fraction(float(np.float32(a))) * Fraction(float(np.float32(b))) + Fraction(float(np.float32(c)))
    lo = np.float32(float(exact))
    cands = [lo, np.nextafter(lo, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))]
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.float32(v).view(np.uint32)) & 1))
    assert float(got) == float(best)


def test_promotion_reduces_the_error_of_long_k():
    rng = np.random.default_rng(7)
    K = 1024
    x = np.abs(rng.standard_normal((64, K))).astype(np.float32)
    w = np.abs(rng.standard_normal((16, K))).astype(np.float32)
    qa, sa = quant.quantize(x, "e4m3", "tensor")
    qb, sb = quant.quantize(w, "e4m3", "tensor")
    err = {}
    for it in (1, K // 32):
        W = K // (32 * it)
        got = accumulate.fp8_gemm(qa, qb, np.full(W, sa[0, 0]), np.full(W, sb[0, 0]), interval=it)
        ref = accumulate.fp8_gemm_exact(qa, qb, np.full(W, sa[0, 0]), np.full(W, sb[0, 0]), interval=it)
        err[it] = np.abs(got - ref).max() / np.abs(ref).max()
    assert err[1] < err[K // 32] / 4


# ---- epilogue ------------------------------------------------------------------------------------

@pytest.mark.parametrize("out", sorted(epilogue.OUTPUTS))
def test_epilogue_stores_the_converted_tile(out):
    rng = np.random.default_rng(8)
    D = (rng.standard_normal((64, 64)) * 3).astype(np.float32)
    r = epilogue.epilogue(D, out)
    conv = epilogue.convert(D, out)
    if out == "e4m3":
        assert (r.tile == conv[:, epilogue.fp8_column_order(64)]).all()
    else:
        assert (r.tile.view(np.uint16) == conv).all()
    assert r.total_wavefronts == 4 * r.addresses.shape[1] * 4     # one wavefront per 8x8 matrix: no conflicts


def test_fp8_column_order_is_a_permutation():
    o = epilogue.fp8_column_order(64)
    assert sorted(o.tolist()) == list(range(64)) and o[:4].tolist() == [0, 1, 8, 9]


# ---- timing --------------------------------------------------------------------------------------

def test_more_groups_in_flight_raise_utilisation():
    u = [timing.utilisation("bf16", 256, 1, d) for d in (0, 1, 2)]
    assert u[0] < u[1] <= u[2] <= 1.0
    assert timing.exec_cycles("bf16", 256) == timing.exec_cycles("e4m3", 256) == timing.exec_cycles("sp_bf16", 256) == 128


def _timing_record(kernel, atype, n, g, d, sets, cycles):
    r = dict(id=f"{kernel}_{atype}_{n}_{g}_{d}_{sets}", type=atype, n=n, per_group=g, depth=d, sets=sets,
             iters=1024 // g if kernel == "l07_wgmma_deps" else 64, cycles=[cycles])
    if kernel == "l07_wgmma_deps":
        r.update(kind="timing_dep", static=True, mode="chain")
    else:
        r.update(kind="timing")
    return r


def test_calibration_recovers_known_constants_from_the_documented_subset():
    """Records made by the model itself (fence and wait equal, the depth-3 loop warp-bound, as on the H200)."""
    truth = timing.WgmmaTiming(issue=timing.ISSUE, min_exec=23.0, slowdown=1.0, overhead=0.5, sparse_extra=18.0,
                               latency_start=0.0, latency_tail=40.0, wait=6.0, fence=6.0, loop=20.0, work=90.0,
                               work_wait=(120.0, 110.0, 140.0, 140.0), work_block4=60.0)
    recs = []
    for key in timing.CALIBRATION:
        r = _timing_record(*key, cycles=0)
        r["cycles"] = [timing.predict_case(r, truth)]
        recs.append(r)
    p = timing.calibrate(recs)
    for f in ("min_exec", "slowdown", "overhead", "sparse_extra", "latency_tail", "loop", "work", "work_block4"):
        assert getattr(p, f) == pytest.approx(getattr(truth, f), abs=0.1), f
    assert p.fence + p.wait == pytest.approx(truth.fence + truth.wait)
    assert p.work_wait == pytest.approx(truth.work_wait, abs=0.1)
    # records outside the subset change nothing; none at all gives the prior
    other = _timing_record("l07_wgmma_deps", "bf16", 128, 4, 2, 1, cycles=1)
    assert not timing.is_calibration(other) and timing.calibrate(recs + [other]) == p
    assert timing.calibrate([other]) == timing.PRIOR


def test_timing_kernel_program_is_what_ptxas_emitted():
    """l07_wgmma_timing.cu (run-time group size): blocks of 16/8/4 and singles, one empty m64n8 HGMMA per commit."""
    prog = timing.pattern("bf16", 64, 6, 1, 1, kernel="l07_wgmma_timing")
    commits = sum(op == ("commit",) for op in prog)
    assert commits == 1 + 2 + 1                 # a 4-block, two singles, the empty HGMMA
    assert [op for op in prog if op[0] == "mma"][-1] == ("mma", "f16", 8)
    dep = timing.pattern("bf16", 64, 6, 1, 4, sets=2)
    assert sum(op == ("commit",) for op in dep) == 4 and sum(op == ("loop",) for op in dep) == 2


def test_no_dependency_between_groups_on_one_accumulator():
    """Groups in flight overlap: wait_group 1 hides the latency of one m64n256 wgmma per group (measured:
    data/l07/wgmma_depth, 128.3 cycles per wgmma at depths 1-3)."""
    p = timing.PRIOR
    one = timing.simulate(timing.pattern("bf16", 256, 1, 1, 64), p)
    assert one.cycles / 64 == pytest.approx(timing.exec_cycles("bf16", 256, p), rel=0.05)
    zero = timing.simulate(timing.pattern("bf16", 256, 1, 0, 64), p)
    assert zero.cycles > one.cycles * 1.2


def test_promotion_cost_falls_with_the_interval():
    c = [timing.promotion_cost(i) for i in (1, 2, 4, 8, 64)]
    assert all(a > b for a, b in zip(c, c[1:])) and c[-1] == pytest.approx(1.0)


def test_accumulation_error_grows_with_k_without_promotion():
    one = [accumulate.accumulation_error(K, K // 32, n=8) for K in (256, 1024)]
    two = accumulate.accumulation_error(1024, 4, n=8)
    assert one[0] < one[1] and two < one[1] / 4


def test_scaling_errors_table():
    x = quant.real_looking(np.random.default_rng(0), (128, 256), "activations")
    t = quant.scaling_errors(x)
    assert set(t) == set(quant.GRANULARITIES) and t["block_1x128"]["rel_rms"] < t["tensor"]["rel_rms"]
