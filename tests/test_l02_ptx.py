"""Lesson 2: PTX data types (bit-exact packing) and the inline-asm builder (statements that compile)."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, strategies as st

from h100lab.ptx import (INSTRUCTIONS, TYPES, AsmError, ConstraintError, PtxTypeError, bit_fields, build,
                         constraint_for, cvt_x2, decode, encode, float_layout, imm, inout, inp, out, pack,
                         pack_register, ptx_type, round_trip, statement, unpack, unpack_register)


def _nvrtc_reason():
    try:
        from h100lab.cuda.compiler import compiler_unavailable_reason
    except ImportError as exc:
        return f"h100lab.cuda is not importable: {exc}"
    return compiler_unavailable_reason()


needs_nvrtc = pytest.mark.skipif(_nvrtc_reason() is not None, reason=f"NVRTC unavailable: {_nvrtc_reason()}")

finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


# ---------------------------------------------------------------------------------------------- types

def test_type_table_covers_the_lesson():
    for name in [".b8", ".b16", ".b32", ".b64", ".b128", ".u8", ".u64", ".s16", ".s32", ".f16", ".bf16", ".tf32",
                 ".f32", ".f64", ".e4m3", ".e5m2", ".f16x2", ".bf16x2", ".e4m3x2", ".e5m2x2", ".pred"]:
        assert name in TYPES
    assert ptx_type("bf16x2") is TYPES[".bf16x2"]
    assert ptx_type(".e4m3x2").bits == 16 and ptx_type(".bf16x2").bits == 32
    assert ptx_type(".bf16").container == ".b16" and ptx_type(".tf32").container == ".b32"
    assert float_layout(".bf16") == (8, 7, 127) and float_layout(".e4m3") == (4, 3, 7)


def test_known_encodings():
    assert encode(1.0, ".bf16") == 0x3F80
    assert encode(1.0, ".f16") == 0x3C00
    assert encode(1.0, ".f32") == 0x3F800000
    assert encode(-1, ".s32") == 0xFFFFFFFF and decode(0xFFFFFFFF, ".s32") == -1
    assert encode(255, ".u8") == 0xFF
    assert encode(1.0, ".e4m3") == 0x38 and encode(1.0, ".e5m2") == 0x3C


@pytest.mark.parametrize("x,e4m3,e5m2", [
    (0.0, 0x00, 0x00), (-0.0, 0x80, 0x80), (1.0, 0x38, 0x3C), (448.0, 0x7E, 0x5F), (449.0, 0x7E, 0x5F),
    (464.0, 0x7E, 0x5F), (480.0, 0x7E, 0x60), (500.0, 0x7E, 0x60), (1e6, 0x7E, 0x7B), (3e38, 0x7E, 0x7B),
    (math.inf, 0x7E, 0x7B), (-500.0, 0xFE, 0xE0), (-math.inf, 0xFE, 0xFB), (57344.0, 0x7E, 0x7B),
    (61439.0, 0x7E, 0x7B), (61440.0, 0x7E, 0x7B), (65536.0, 0x7E, 0x7B), (math.nan, 0x7F, 0x7F),
    (-math.nan, 0x7F, 0x7F), (2.0 ** -9, 0x01, 0x18), (2.0 ** -10, 0x00, 0x14), (1.5 * 2.0 ** -10, 0x01, 0x16),
    (2.0 ** -16, 0x00, 0x01), (2.0 ** -17, 0x00, 0x00), (7.7e-6, 0x00, 0x01),
])
def test_fp8_satfinite_matches_the_h200(x, e4m3, e5m2):
    # hopper-spec-facts §10.2: cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 measured on an H200
    assert encode(x, ".e4m3") == e4m3
    assert encode(x, ".e5m2") == e5m2


def test_tf32_rounds_ties_away_and_drops_low_bits():
    one = 0x3F800000
    assert encode(1.0, ".tf32") == one
    tie = np.array(one | 0x1000, np.uint32).view(np.float32)   # exactly half an ulp of 10-bit mantissa
    assert encode(float(tie), ".tf32") == one + 0x2000          # away from zero
    below = np.array(one | 0x0FFF, np.uint32).view(np.float32)
    assert encode(float(below), ".tf32") == one
    assert decode(one | 0x1FFF, ".tf32") == 1.0                  # low 13 bits ignored


@given(finite32)
def test_bf16_encode_is_round_to_nearest_even(x):
    import ml_dtypes
    want = int(np.array(x, np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))
    assert encode(x, ".bf16") == want


@given(st.sampled_from([".f16x2", ".bf16x2", ".e4m3x2", ".e5m2x2"]), finite32, finite32)
def test_pack_unpack_round_trip_and_element_order(t, a, b):
    e = TYPES[t].element_type
    bits = pack([a, b], t)
    assert 0 <= bits < (1 << TYPES[t].bits)
    assert bits & ((1 << e.bits) - 1) == encode(a, e)            # element 0 in the low half
    assert bits >> e.bits == encode(b, e)                         # element 1 in the high half
    lo, hi = unpack(bits, t)
    assert pack([lo, hi], t) == bits
    assert cvt_x2(b, a, t) == bits                                # cvt puts its first source up high


@given(st.integers(0, 0xFFFF), st.integers(-0x8000, 0x7FFF))
def test_packed_integers(u, s):
    assert unpack(pack([u, u], ".u16x2"), ".u16x2") == (u, u)
    assert unpack(pack([s, -1], ".s16x2"), ".s16x2") == (s, -1)


@given(st.lists(st.floats(-448, 448, allow_nan=False, width=32), min_size=4, max_size=4))
def test_four_fp8_in_a_b32_byte_i_is_element_i(xs):
    r = pack_register(xs, ".e4m3")
    for i, x in enumerate(xs):
        assert (r >> (8 * i)) & 0xFF == encode(x, ".e4m3")
    assert unpack_register(r, ".e4m3") == tuple(round_trip(x, ".e4m3") for x in xs)


@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_s32_round_trip(v):
    assert decode(encode(v, ".s32"), ".s32") == v


def test_bit_fields_of_bf16():
    f = bit_fields(-2.0, ".bf16")
    assert (f["sign"], f["exponent"], f["mantissa"]) == (1, 128, 0)
    assert f["exponent_bits"] == 8 and f["mantissa_bits"] == 7


@pytest.mark.parametrize("call,rule", [
    (lambda: encode(256, ".u8"), "does not fit .u8"),
    (lambda: encode(-1, ".u32"), "does not fit .u32"),
    (lambda: encode(1.0, ".bf16x2"), "packed type"),
    (lambda: pack([1.0, 2.0, 3.0], ".bf16x2"), "exactly 2 elements"),
    (lambda: pack([1.0, 2.0], ".f32"), "not a packed type"),
    (lambda: ptx_type(".f8"), "not a PTX data type"),
    (lambda: encode(1.0, ".e2m1"), "not supported on sm_90"),
    (lambda: decode(1 << 16, ".bf16"), "does not fit a 16-bit"),
    (lambda: cvt_x2(1.0, 2.0, ".u16x2"), "cvt packs two f32"),
    (lambda: pack_register([1, 2, 3], ".e4m3"), "holds 4 .e4m3 elements"),
])
def test_bad_types_name_the_rule(call, rule):
    with pytest.raises(PtxTypeError, match=re.escape(rule)):
        call()


# ---------------------------------------------------------------------------------------------- asm

def test_numbering_outputs_first_then_inputs():
    s = build("add.s32 {d}, {a}, {b};", a=inp("int", "j"), b=inp("int", "k"), d=out("int", "i"))
    assert s.text == 'asm volatile("add.s32 %0, %1, %2;" : "=r"(i) : "r"(j), "r"(k));'
    assert [n[1] for n in s.numbering] == ["d", "a", "b"]
    assert s.ptx == "add.s32 i, j, k;"


def test_readwrite_is_an_output_and_reused_in_place():
    s = build("fma.rn.f32 {acc}, {a}, {b}, {acc};", a=inp("float", "x"), b=inp("float", "y"),
              acc=inout("float", "c"))
    assert s.text == 'asm volatile("fma.rn.f32 %0, %1, %2, %0;" : "+f"(c) : "f"(x), "f"(y));'


def test_special_registers_are_escaped_and_memory_clobber():
    s = build("mov.u32 {d}, %cluster_ctarank;", d=out("unsigned", "r"))
    assert '"mov.u32 %0, %%cluster_ctarank;"' in s.text
    s = build("barrier.cluster.arrive.aligned;", memory=True)
    assert s.text == 'asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");'
    s = build("st.shared::cluster.u32 [{a}], {v};", a=inp("unsigned", "addr"), v=inp("unsigned", "x"), memory=True)
    assert s.text == 'asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(addr), "r"(x) : "memory");'


def test_vector_operands_get_braces_and_consecutive_numbers():
    s = build("ld.global.v4.f32 {d}, [{p}];", d=out("float", ["a", "b", "c", "e"]), p=inp("float*", "ptr"))
    assert '"ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"' in s.text
    assert s.text.endswith(': "=f"(a), "=f"(b), "=f"(c), "=f"(e) : "l"(ptr));')


def test_immediates_and_non_volatile():
    s = build("add.s32 {d}, {a}, {k};", d=out("int", "x"), a=inp("int", "y"), k=imm(7), volatile=False)
    assert s.text == 'asm("add.s32 %0, %1, %2;" : "=r"(x) : "r"(y), "n"(7));'


@pytest.mark.parametrize("ctype,letter", [("int", "r"), ("unsigned short", "h"), ("uint64_t", "l"),
                                          ("float", "f"), ("double", "d"), ("const float*", "l"),
                                          ("unsigned __int128", "q")])
def test_constraint_letters(ctype, letter):
    assert constraint_for(ctype) == letter


@pytest.mark.parametrize("call,rule", [
    (lambda: inp("int", "x", constraint="f"), "does not match C++ type 'int'"),
    (lambda: out("float", "x", constraint="=r"), "does not match C++ type 'float'"),
    (lambda: inp("int", "x", constraint="=r"), "never be write-only"),
    (lambda: inp("int", "x", constraint="+r"), "listed with the outputs"),
    (lambda: out("int", "x", constraint="r"), "needs modifier '='"),
    (lambda: inp("bool", "p"), "predicate cannot be an operand"),
    (lambda: inp("uint8_t", "b"), "no 8-bit constraint"),
    (lambda: inp("int", "x", ptx=".u64"), "expects a 64-bit .u64 operand"),
    (lambda: inp("float", "x", ptx=".f64"), "expects a 64-bit .f64 operand"),
    (lambda: imm(1.5), "integer constant"),
    (lambda: out("int", "k", constraint="=n"), "input-only"),
    (lambda: inout("int", "k", constraint="+n"), "input-only"),
    (lambda: out("float", "x", ptx=".bf16x2"), "Arguments mismatch"),
])
def test_constraint_mismatches_are_rejected(call, rule):
    with pytest.raises(ConstraintError, match=re.escape(rule)):
        call()


def test_eight_bit_ptx_types_accept_wider_registers():
    assert inp("unsigned short", "x", ptx=".u8").letter == "h"
    assert inp("unsigned", "x", ptx=".b8").letter == "r"


@pytest.mark.parametrize("call,rule", [
    (lambda: build("add.s32 {d}, {a}, {b};", d=out("int", "i"), a=inp("int", "j")), "no operand is given"),
    (lambda: build("add.s32 {d}, {a}, {a};", d=out("int", "i"), a=inp("int", "j"), b=inp("int", "k")),
     "never used"),
    (lambda: build("add.s32 %0, %1, %2;", d=out("int", "i")), "named placeholders"),
    (lambda: build("   "), "non-empty"),
    (lambda: statement("add.s32", ctypes={"a": "float"}), "Arguments mismatch"),
    (lambda: statement("nope"), "no catalogue instruction"),
    (lambda: statement("add.s32", ctypes={"z": "int"}), "has no operand"),
])
def test_bad_statements_name_the_rule(call, rule):
    with pytest.raises(AsmError, match=re.escape(rule)):
        call()


def test_kernel_source_declares_operands():
    src = statement("fma.rn.f64 (accumulate)").kernel_source()
    assert 'extern "C" __global__ void asm_probe(' in src
    assert "double acc = acc_init;" in src and "__double_as_longlong(acc)" in src


@needs_nvrtc
def test_every_catalogue_statement_compiles_for_sm90a():
    for name in INSTRUCTIONS:
        stmt = statement(name)
        ptx = stmt.compiled_ptx()
        mnemonic = INSTRUCTIONS[name].template.split()[0].lstrip("{")
        assert mnemonic.split(".")[0] in ptx, (name, ptx)


@needs_nvrtc
@pytest.mark.parametrize("ctypes", [{"d": "unsigned", "hi": "float", "lo": "float"},
                                    {"d": "int", "hi": "float", "lo": "float"}])
def test_other_c_types_of_the_same_width_compile(ctypes):
    statement("cvt.rn.bf16x2.f32", ctypes=ctypes).compile()


@needs_nvrtc
def test_hand_built_statements_compile():
    stmts = [
        build("mov.u32 {d}, %cluster_nctarank;", d=out("unsigned", "n")),
        build("mov.u32 {d}, %smid;", d=out("unsigned", "sm")),
        build("{\n .reg .pred p;\n mov.pred p, %is_explicit_cluster;\n selp.u32 {d}, 1, 0, p;\n}",
              d=out("unsigned", "e")),
        build("getctarank.shared::cluster.u32 {d}, {a};", d=out("unsigned", "r"), a=inp("unsigned", "addr")),
        build("mov.b32 {d}, {v};", d=out("unsigned", "w"), v=inp("unsigned short", ["lo", "hi"])),
        build("red.shared::cluster.add.u32 [{a}], {v};", a=inp("unsigned", "addr"), v=inp("unsigned", "x"),
              memory=True),
    ]
    for s in stmts:
        s.compile()
