"""Exercise set 7 (chapter 7, "WGMMA part 2: groups, stmatrix epilogues, FP8 and 2:4 sparsity").

Every reference answer is computed by the model the chapter teaches (h100lab.tensorcore.quant, .sparsity) or, for a
kernel exercise, by the tensor-core model of an epilogue or tile the chapter does not show (7.6: bf16 staged as two
64B-swizzled halves, h100lab.tensorcore.epilogue.convert; 7.7: e5m2 with a fused ReLU, h100lab.tensorcore.quant.cvt_fp8
through the stmatrix column order; 7.8: h100lab.tensorcore.accumulate.fp8_gemm on a block-scaled tile) — never typed in. Symptoms recognise a typical mistake from its
effect on the stored tile (a permutation of the model's bytes) or on the accumulators (the model's accumulators of
the mistake, bit for bit). The student edition imports nothing from this module.
"""
from __future__ import annotations

import numpy as np

from ..kernels import KernelRun, Property, Symptom, kernel_exercise
from ..registry import Mistake, exercise

# ---- the exercises' data (shared with solutions/07-wgmma-fp8-sparsity.md) --------------------------------------
E1_VALUES = [450.0, 500.0, -1000.0, float("nan"), 0.3]      # cvt.rn.satfinite.e4m3 of each (f32)
E2_PAIR = (1.5, -3.0)                                        # cvt.rn.satfinite.e4m3x2.f32 d, 1.5, -3.0
E3_ROW = [0, 3, 0, -1, 5, 0, 0, 2]                           # two f16 groups of a 2:4 row
E4 = dict(atype="f16", sp_sel=1, row=13, group=6)            # where sp-meta keeps row 13, group 6
E5 = dict(amax=3.5, x=0.01)                                  # per-tensor e4m3 scale, then x quantised and back


# ---- reference answers ------------------------------------------------------------------------------------------
def _codes(values, fmt="e4m3"):
    from h100lab.tensorcore import quant
    return [int(c) for c in quant.cvt_fp8(np.array(values, np.float32), fmt)]


@exercise("7.1", points=2, hint="cvt.rn.satfinite rounds to nearest even, then clips anything beyond the largest "
          "finite value to it (keeping the sign); a NaN becomes the one canonical NaN.",
          mistakes=[Mistake("Without .satfinite a too-large value would become NaN in e4m3 (it has no infinity); "
                            ".satfinite clips it to the largest finite value instead.",
                            when=lambda v, ref: isinstance(v, list) and len(v) == 5 and v[0] in (0x7F, 0x7E + 1)),
                    Mistake("The canonical NaN the H200 writes is positive, whatever the input's sign or payload.",
                            when=lambda v, ref: isinstance(v, list) and len(v) == 5 and v[3] == 0xFF and v[:3] == ref[:3]),
                    Mistake("Values beyond the largest finite one saturate to it: 500 and -1000 give the largest "
                            "magnitude, not a rounded 512 or 1024 (e4m3 cannot hold those).",
                            when=lambda v, ref: isinstance(v, list) and len(v) == 5 and v[1] != ref[1] and v[0] == ref[0])])
def _cvt():
    return _codes(E1_VALUES)


@exercise("7.2", points=2, hint="The x2 form packs two conversions into 16 bits; which source lands in the upper "
          "byte is the point.",
          mistakes=[Mistake("Byte order reversed: cvt … d, a, b puts cvt(a) — the first source — in the high byte.",
                            when=lambda v, ref: isinstance(v, (int, np.integer)) and
                            int(v) == ((int(ref) & 0xFF) << 8 | int(ref) >> 8))])
def _pack():
    from h100lab.tensorcore import quant
    return int(quant.pack_x2(np.float32(E2_PAIR[0]), np.float32(E2_PAIR[1]), "e4m3"))


def _nibbles():
    from h100lab.tensorcore import numerics, sparsity
    _, nib = sparsity.compress(numerics.from_float(np.array([E3_ROW], np.float64), "f16"), "f16")
    return [int(n) for n in nib[0]]


@exercise("7.3", points=2, hint="Each nibble holds two 2-bit positions (0..3) of the kept values, the first kept "
          "value's position in the low two bits.",
          mistakes=[Mistake("That is a mask of the non-zero positions; the metadata stores the positions as two "
                            "2-bit indices.", answer=[0b1010, 0b1001]),
                    Mistake("Index order reversed: the first stored value's index goes in bits 1:0.",
                            when=lambda v, ref: isinstance(v, list) and len(v) == 2 and
                            v == [((n & 3) << 2) | (n >> 2) for n in ref])])
def _meta():
    return _nibbles()


def _where(atype, sp_sel, row, group):
    from h100lab.tensorcore import sparsity
    rows, grps = sparsity._reg_map(atype)
    sel = sparsity.selected_lanes(atype, sp_sel)
    t, q = np.argwhere((rows == row) & (grps == group) & sel[:, None])[0]
    return [int(t), int(q)]


@exercise("7.4", points=2, hint="The warp is the row's band of 16; the quad is the row inside its half of the band; "
          "the selector picks the pair of the quad, and the lane's low bit picks the groups.",
          mistakes=[Mistake("That thread is in the pair sp-sel 0 names; with sp-sel 1 the instruction reads the other "
                            "pair of each quad.", when=lambda v, ref: isinstance(v, list) and
                            v == _where(E4["atype"], 0, E4["row"], E4["group"]))])
def _meta_where():
    return _where(**E4)


@exercise("7.5", points=2, rtol=1e-6, hint="The dequantisation scale maps the group's largest magnitude onto the "
          "format's largest finite value; the stored code is of x / s.",
          mistakes=[Mistake("That is the quantisation multiplier (FP8 max / amax); the scale stored beside the data is "
                            "its inverse, the one that multiplies the codes back.",
                            when=lambda v, ref: isinstance(v, list) and len(v) == 2 and
                            abs(v[0] * ref[0] - 1) < 1e-3 and v[0] > 1)])
def _scale():
    from h100lab.tensorcore import quant
    q, s = quant.quantize(np.array([[E5["amax"], E5["x"]]], np.float32), "e4m3", "tensor")
    return [float(s.reshape(-1)[0]), float(quant.dequantize(q, s, "e4m3", "tensor")[0, 1])]


# ---- kernel exercises ------------------------------------------------------------------------------------------
# 7.6 and 7.7 are epilogues the chapter does not print (its `epilogue` of l07_fp8_gemm.cu stages one 128B-swizzled
# bf16 tile and packs e4m3 pairs with a helper): 7.6 stages bf16 as two 64B-swizzled column halves stored by two TMA
# stores, 7.7 packs four accumulators into one stmatrix register as e5m2 with a fused ReLU. Each source holds only
# its own exercise, so one prompt never shows the other's answer. References from the epilogue model
# (h100lab.tensorcore.epilogue, .quant), never from the solution kernels.
_EPI_COMMON = r"""
#include <h100lab/tensormap.cuh>

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void stmatrix4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

__device__ __forceinline__ void store_tile(const CUtensorMap* map, int x, int y, unsigned src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(src) : "memory");
}
"""

_EPI_LOAD = r"""    extern __shared__ __align__(16) unsigned char dyn[];
    const unsigned raw = smem_u32(dyn), stage = (raw + 1023u) & ~1023u;
    const unsigned t = threadIdx.x, w = t / 32, lane = t % 32, q = lane / 8;
    const unsigned row = 16 * w + (lane % 8) + 8 * (q & 1);        // the row this lane addresses
    float v[32];                                                    // the m64n64 f32 fragment of this thread
#pragma unroll
    for (int r = 0; r < 32; ++r) v[r] = __uint_as_float(acc_in[((size_t)blockIdx.x * 128 + t) * 32 + r]);
"""

SOLUTION_7_6 = ("// Lesson 7 exercise 7.6: a bf16 epilogue whose 64 x 64 tile is staged as two column halves (columns 0-31,\n"
                "// then 32-63), each 64 rows x 64 B with the 64B swizzle, stored by two TMA stores of 32 x 64 boxes\n"
                "// through a CU_TENSOR_MAP_SWIZZLE_64B map (UINT16).\n" + _EPI_COMMON + r"""
// the chapter's staging layout: one 64 x 128 B tile, 128B swizzle
__device__ __forceinline__ unsigned sw128(unsigned row, unsigned chunk) {
    return row * 128u + ((chunk ^ (row & 7u)) << 4);
}

// 16-byte chunk `chunk` (0..3) of 64-byte row `row`, 64B swizzle (Swizzle<2,4,3>)
__device__ __forceinline__ unsigned sw64(unsigned row, unsigned chunk) {
    return row * 64u + ((chunk ^ ((row >> 1) & 3u)) << 4);
}

__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128) epilogue_bf16_halves(const unsigned* __restrict__ acc_in,
                                                                         const __grid_constant__ CUtensorMap out_map) {
""" + _EPI_LOAD + r"""#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {                 // column blocks 2jj, 2jj+1 (16 columns = 32 B of a row)
        const int a = 8 * jj, b = 8 * jj + 4;
        const unsigned r0 = pack_bf16(v[a], v[a + 1]), r1 = pack_bf16(v[a + 2], v[a + 3]);
        const unsigned r2 = pack_bf16(v[b], v[b + 1]), r3 = pack_bf16(v[b + 2], v[b + 3]);
        const unsigned chunk = 2 * jj + (q >> 1);    // this lane's 16-byte chunk of the 128-byte output row
        stmatrix4(stage + (chunk >> 2) * 4096u + sw64(row, chunk & 3u), r0, r1, r2, r3);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (t == 0) {
        store_tile(&out_map, 0, 64 * (int)blockIdx.x, stage);               // columns 0-31
        store_tile(&out_map, 32, 64 * (int)blockIdx.x, stage + 4096u);      // columns 32-63
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
""")
_ADDR_76 = "        stmatrix4(stage + (chunk >> 2) * 4096u + sw64(row, chunk & 3u), r0, r1, r2, r3);"
assert _ADDR_76 in SOLUTION_7_6


def _addr_76(expr: str, note: str = "") -> str:
    return SOLUTION_7_6.replace(_ADDR_76, f"        stmatrix4(stage + {expr}, r0, r1, r2, r3);{note}")


#: the chapter's address (one 128B-swizzled tile): what the student starts from
PROMPT_7_6 = _addr_76("sw128(row, chunk)", "   // TODO: the layout the two stores read")
#: the halves, unswizzled
PLANTED_7_6_PLAIN = _addr_76("(chunk >> 2) * 4096u + row * 64u + ((chunk & 3u) << 4)")
#: the 64B swizzle keyed by the row's low bits (as the 128B pattern is), not by its 128-byte line
PLANTED_7_6_ROWBITS = _addr_76("(chunk >> 2) * 4096u + row * 64u + (((chunk & 3u) ^ (row & 3u)) << 4)")
#: the half's offset forgotten: both halves go to the first 4 KiB
PLANTED_7_6_ONEHALF = _addr_76("sw64(row, chunk & 3u)")

SOLUTION_7_7 = ("// Lesson 7 exercise 7.7: an e5m2 epilogue with the ReLU fused (the output of a layer whose gradients are\n"
                "// kept in e5m2): out = e5m2(max(D, 0)), staged 64 rows x 64 B with the 64B swizzle, one TMA store\n"
                "// through a CU_TENSOR_MAP_SWIZZLE_64B map (UINT8).\n" + _EPI_COMMON + r"""
// 16-byte chunk `chunk` (0..3) of 64-byte row `row`, 64B swizzle (Swizzle<2,4,3>)
__device__ __forceinline__ unsigned sw64(unsigned row, unsigned chunk) {
    return row * 64u + ((chunk ^ ((row >> 1) & 3u)) << 4);
}

// one 32-bit stmatrix register from four accumulators: the e5m2 codes of ReLU(b0), ReLU(b1), ReLU(b2), ReLU(b3)
// in bytes 0, 1, 2, 3 (byte 0 the lowest)
__device__ __forceinline__ unsigned pack4(float b0, float b1, float b2, float b3) {
    unsigned short lo, hi;
    asm("cvt.rn.satfinite.relu.e5m2x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(b1), "f"(b0));
    asm("cvt.rn.satfinite.relu.e5m2x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(b3), "f"(b2));
    return (unsigned)lo | ((unsigned)hi << 16);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128) epilogue_e5m2_relu(const unsigned* __restrict__ acc_in,
                                                                       const __grid_constant__ CUtensorMap out_map) {
""" + _EPI_LOAD + r"""#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {                 // column blocks 4jj .. 4jj+3 (32 fp8 columns = 32 B of a row)
        const int a = 16 * jj;
        const unsigned r0 = pack4(v[a], v[a + 1], v[a + 4], v[a + 5]);
        const unsigned r1 = pack4(v[a + 2], v[a + 3], v[a + 6], v[a + 7]);
        const unsigned r2 = pack4(v[a + 8], v[a + 9], v[a + 12], v[a + 13]);
        const unsigned r3 = pack4(v[a + 10], v[a + 11], v[a + 14], v[a + 15]);
        stmatrix4(stage + sw64(row, 2 * jj + (q >> 1)), r0, r1, r2, r3);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (t == 0) {
        store_tile(&out_map, 0, 64 * (int)blockIdx.x, stage);
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
""")
_PACK_77 = ('    asm("cvt.rn.satfinite.relu.e5m2x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(b1), "f"(b0));\n'
            '    asm("cvt.rn.satfinite.relu.e5m2x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(b3), "f"(b2));\n'
            '    return (unsigned)lo | ((unsigned)hi << 16);\n')
assert _PACK_77 in SOLUTION_7_7


def _pack_77(cvt: str, lo: str, hi: str, ret: str = "(unsigned)lo | ((unsigned)hi << 16)", note: str = "") -> str:
    return SOLUTION_7_7.replace(_PACK_77, f'    asm("{cvt} %0, %1, %2;" : "=h"(lo) : {lo});{note}\n'
                                          f'    asm("{cvt} %0, %1, %2;" : "=h"(hi) : {hi});\n'
                                          f'    return {ret};\n')


#: the chapter's e4m3 conversion, the values in reading order: what the student starts from
PROMPT_7_7 = _pack_77("cvt.rn.satfinite.e4m3x2.f32", '"f"(b0), "f"(b1)', '"f"(b2), "f"(b3)',
                      note="   // TODO: e5m2 of ReLU(b), b0 in byte 0")
#: e5m2, no ReLU
PLANTED_7_7_NORELU = _pack_77("cvt.rn.satfinite.e5m2x2.f32", '"f"(b1), "f"(b0)', '"f"(b3), "f"(b2)')
#: e5m2 with the ReLU, the pair's first source taken for the low byte
PLANTED_7_7_BYTES = _pack_77("cvt.rn.satfinite.relu.e5m2x2.f32", '"f"(b0), "f"(b1)', '"f"(b2), "f"(b3)')
#: the two 16-bit pairs in the wrong halves of the register
PLANTED_7_7_HALVES = _pack_77("cvt.rn.satfinite.relu.e5m2x2.f32", '"f"(b1), "f"(b0)', '"f"(b3), "f"(b2)',
                              ret="(unsigned)hi | ((unsigned)lo << 16)")

_SEED6, _SEED7 = 706, 707


def _accumulators(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A 64 x 64 f32 tile D (the chapter's epilogue inputs, seeded) and its m64n64 fragment in register order."""
    from h100lab.measure import l07 as m07
    from h100lab.tensorcore import fragments

    D = m07._epi_inputs(dict(input="normal", grid=1, seed=seed))[0]
    return D, fragments.matrix_to_accumulator(D.view(np.uint32), 64).reshape(-1).astype(np.uint32)


def _map(tile, kind: str):
    """The output tensor map: bf16 halves (UINT16, 32 x 64 boxes, 64B swizzle) or e5m2 (UINT8, 64 x 64, 64B)."""
    from h100lab import emu

    dt, row_bytes, box = {"bf16": ("UINT16", 128, 32), "e5m2": ("UINT8", 64, 64)}[kind]
    return emu.encode_tiled(f"CU_TENSOR_MAP_DATA_TYPE_{dt}", 2, tile, [64, 64], [row_bytes], [box, 64], [1, 1],
                            "CU_TENSOR_MAP_INTERLEAVE_NONE", "CU_TENSOR_MAP_SWIZZLE_64B",
                            "CU_TENSOR_MAP_L2_PROMOTION_NONE", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")


def _epi_runner(function: str, kind: str, seed: int):
    def run(program):
        from h100lab import emu

        row_bytes = 128 if kind == "bf16" else 64
        tile = emu.zeros(64 * row_bytes, np.uint8)
        a_d = emu.to_device(_accumulators(seed)[1])
        st = emu.launch(program.function(function), 1, 128, a_d, _map(tile, kind), shared_mem=8192 + 1024)
        out = tile.to_host().reshape(64, row_bytes)
        del a_d
        return KernelRun({"tile": out}, st)
    return run


def _expect_7_6() -> dict:
    """The bf16 tile in row-major order: cvt.rn.bf16 of each element of D (h100lab.tensorcore.epilogue.convert)."""
    from h100lab.tensorcore import epilogue
    return {"tile": epilogue.convert(_accumulators(_SEED6)[0], "bf16").view(np.uint8).reshape(64, 128)}


def _tile_77(seed: int, fmt: str = "e5m2", relu: bool = True) -> np.ndarray:
    """The fp8 tile the epilogue stores: staged column s of a row holds accumulator column fp8_column_order()[s]
    (a stmatrix b16 element is a pair of fp8 values), converted by cvt.rn.satfinite{.relu}.{fmt}."""
    from h100lab.tensorcore import epilogue, quant
    D = _accumulators(seed)[0]
    return quant.cvt_fp8(D[:, epilogue.fp8_column_order(64)], fmt, relu).reshape(64, 64)


def _expect_7_7() -> dict:
    return {"tile": _tile_77(_SEED7)}


def _wavefronts(kind: str):
    """Property: each 8 x 8 matrix of every stmatrix.x4 in one shared-memory wavefront, its eight 16-byte rows in
    distinct 16-byte bank groups — the count of h100lab.tensorcore.epilogue's conflict-free staging of a 64 x 64 tile
    of 16-bit (``bf16``: 4 stmatrix.x4 per warp) or 8-bit (``e4m3``: 2 per warp) values."""
    def prop(out, st):
        from h100lab.tensorcore import epilogue
        want = epilogue.epilogue(np.zeros((64, 64), np.float32), kind).total_wavefronts
        return None if st.matrix_wavefronts == want else \
            f"the stmatrix instructions took {st.matrix_wavefronts} shared-memory wavefronts, a conflict-free staging needs {want}"
    return prop


def _staged_76(ref: np.ndarray, addr) -> np.ndarray:
    """The tile two 64B-swizzled half stores read back when 16-byte chunk C of row r was staged at addr(r, C)
    (a bijection onto the 8 KiB staging tile), ref being the right tile."""
    r, c = np.meshgrid(np.arange(64), np.arange(8), indexing="ij")
    staging = np.zeros((512, 16), np.uint8)
    staging[addr(r, c) // 16] = np.asarray(ref, np.uint8).reshape(64, 8, 16)
    read = (c >> 2) * 4096 + r * 64 + (((c & 3) ^ ((r >> 1) & 3)) << 4)
    return staging[read // 16].reshape(64, 128)


def _staged_as(addr):
    return lambda out, ref, st: out is not None and np.array_equal(out["tile"], _staged_76(ref["tile"], addr))


_SW128_76 = ("The stores read the staging tile as two halves of 64-byte rows, each with the 64B swizzle: the chapter's "
             "one tile of 128-byte rows with the 128B pattern puts each chunk where these two stores do not look.")
_PLAIN_76 = ("Inside each half the 16-byte chunks come out permuted every other pair of rows: the map's 64B swizzle "
             "un-swizzles what it reads, so the staging address must apply the same pattern.")
_ROWBITS_76 = ("Half the rows come out right and half permuted: with 64-byte rows, two rows share one 128-byte line, so "
               "the 64B pattern changes every two rows — it is keyed by the line, not by the row's lowest bits.")
_ONEHALF_76 = ("Columns 0-31 hold the values of columns 32-63 and the right half stays empty: both halves were staged "
               "into the same 4 KiB, so the second overwrote the first.")

kernel_exercise("7.6", run=_epi_runner("epilogue_bf16_halves", "bf16", _SEED6), expect=_expect_7_6, points=3, budget=60,
                symptoms=[Symptom(_staged_as(lambda r, c: r * 128 + (((c ^ (r & 7))) << 4)), _SW128_76),
                          Symptom(_staged_as(lambda r, c: (c >> 2) * 4096 + r * 64 + ((c & 3) << 4)), _PLAIN_76),
                          Symptom(_staged_as(lambda r, c: (c >> 2) * 4096 + r * 64 + (((c & 3) ^ (r & 3)) << 4)),
                                  _ROWBITS_76),
                          Symptom(lambda out, ref, st: out is not None and
                                  np.array_equal(out["tile"][:, :64], ref["tile"][:, 64:]), _ONEHALF_76)],
                properties=[Property(_wavefronts("bf16"))],
                mistakes=[Mistake(_SW128_76, answer=PROMPT_7_6), Mistake(_PLAIN_76, answer=PLANTED_7_6_PLAIN),
                          Mistake(_ROWBITS_76, answer=PLANTED_7_6_ROWBITS),
                          Mistake(_ONEHALF_76, answer=PLANTED_7_6_ONEHALF)])


_FMT_77 = ("The bytes are e4m3 codes: this layer's output is e5m2 (5 exponent bits, 2 mantissa bits), a different "
           "conversion with a different largest value.")
_RELU_77 = ("Negative values were stored: the ReLU is fused into the conversion here — a negative result must become "
            "+0 before (or while) it is converted.")
_BYTES_77 = ("Every pair of neighbouring FP8 columns is swapped: an x2 conversion writes its first source to the high "
             "byte, so the value meant for the lower byte goes second.")
_HALVES_77 = ("Pairs of 16-bit halves are swapped inside every 32-bit register: stmatrix stores a register's low half "
              "first, and the low half holds b0 and b1.")


def _tile_is(fmt: str, relu: bool, perm):
    """Symptom: the tile is the model's of (fmt, relu), bytes permuted by ``perm``, for any of the byte/half orders
    when ``perm`` is None."""
    def test(out, ref, st):
        if out is None:
            return False
        t = _tile_77(_SEED7, fmt, relu)
        perms = [perm] if perm else [lambda x: x, _swap_bytes, _swap_halves, lambda x: _swap_halves(_swap_bytes(x))]
        return any(np.array_equal(out["tile"], p(t)) for p in perms)
    return test


def _swap_bytes(t):
    return np.asarray(t).reshape(-1, 2)[:, ::-1].reshape(64, 64)


def _swap_halves(t):
    return np.asarray(t).reshape(-1, 2, 2)[:, ::-1].reshape(64, 64)


kernel_exercise("7.7", run=_epi_runner("epilogue_e5m2_relu", "e5m2", _SEED7), expect=_expect_7_7, points=3, budget=60,
                symptoms=[Symptom(_tile_is("e4m3", True, None), _FMT_77), Symptom(_tile_is("e4m3", False, None), _FMT_77),
                          Symptom(_tile_is("e5m2", False, None), _RELU_77),
                          Symptom(_tile_is("e5m2", True, _swap_bytes), _BYTES_77),
                          Symptom(_tile_is("e5m2", True, _swap_halves), _HALVES_77)],
                properties=[Property(_wavefronts("e4m3"))],
                mistakes=[Mistake(_FMT_77, answer=PROMPT_7_7), Mistake(_RELU_77, answer=PLANTED_7_7_NORELU),
                          Mistake(_BYTES_77, answer=PLANTED_7_7_BYTES), Mistake(_HALVES_77, answer=PLANTED_7_7_HALVES)])


# 7.8: two-level accumulation with DeepSeek-style block scales: one scale per 128-element K-block whatever the
# promotion interval, A's stored K-block by K-block, B's per 32 columns of D — the student writes the promotion factor
SOLUTION_7_8 = r"""
// Lesson 7 exercise: a 64 x 64 x K FP8 GEMM tile (e4m3 x e4m3, one warpgroup, K a multiple of 128) with two-level
// accumulation and block scales. A (64 x K) and B (stored N x K) are K-major bytes; each K-block of 128 bytes
// per row is staged into 128B-swizzled tiles and consumed by four m64n64k32 wgmmas. The tensor core sums
// `interval` wgmmas (1, 2 or 4: a window never crosses a K-block) into the partial sum p, restarted by scale-d = 0;
// then the CUDA cores promote it: acc = fma(p, scale, acc), with scale = (A's scale) x (B's scale) rounded to f32.
// The scales are per 128-element K-block, whatever the promotion interval (DeepSeek-V3 / DeepGEMM quantisation):
// A has one per row of A and K-block, stored K-block by K-block (the 64 rows' scales of K-block 0, then those of
// K-block 1, ...); B has one per 32 rows of B (= 32 columns of D) and K-block, stored K-block by K-block (for each
// K-block, the scale of D's columns 0-31, then that of columns 32-63).
// acc_out[thread * 32 + register] = the raw f32 accumulators.
#include <h100lab/wgmma_probe.cuh>   // the book's wgmma helpers: dyn, smem_u32, pin, the operand macros WG_D32, WG_ACC32

namespace {

__device__ __forceinline__ unsigned sw128(unsigned row, unsigned chunk) {
    return row * 128u + ((chunk ^ (row & 7u)) << 4);
}

// K-block `blk` (128 bytes of each of 64 rows, row pitch K bytes) into a 128B-swizzled tile
__device__ __forceinline__ void load_block(unsigned char* tile, const unsigned char* g, int K, int blk) {
    for (int i = threadIdx.x; i < 64 * 8; i += blockDim.x) {
        const unsigned row = i / 8, chunk = i % 8;
        *reinterpret_cast<uint4*>(tile + sw128(row, chunk)) =
            *reinterpret_cast<const uint4*>(g + (size_t)row * K + blk * 128 + chunk * 16);
    }
}

__device__ __forceinline__ unsigned long long desc_sw128(unsigned addr) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_e4m3(float (&p)[32], unsigned long long da, unsigned long long db, int sd) {
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %34, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " WG_D32 ", %32, %33, q, 1, 1;\n\t}"
                 : WG_ACC32("+f", p, 0) : "l"(da), "l"(db), "r"(sd) : "memory");
}

__device__ __forceinline__ void keep(float (&p)[32]) {       // p stays in registers across the wgmma fences
#pragma unroll
    for (int r = 0; r < 32; ++r) pin(p[r]);
}

}  // namespace

// The factor that promotes element (row, col) of the partial sum of the window closed by wgmma number n (n counts
// from 1: wgmma k of K-block blk is number 4 * blk + k + 1; a window is `interval` wgmmas), K being k_blocks
// K-blocks of 128 elements.
__device__ __forceinline__ float promote_scale(const float* __restrict__ sa, const float* __restrict__ sb, int n,
                                               int interval, int k_blocks, unsigned row, unsigned col) {
    const int blk = (n - 1) / 4;                       // the K-block every wgmma of the window belongs to
    return __fmul_rn(sa[blk * 64 + row], sb[blk * 2 + col / 32]);
}

extern "C" __global__ void __launch_bounds__(128) fp8_block_scaled(
        const unsigned char* __restrict__ A, const unsigned char* __restrict__ B, const float* __restrict__ sa,
        const float* __restrict__ sb, int K, int interval, unsigned* __restrict__ acc_out) {
    const unsigned raw = smem_u32(dyn), base = (raw + 1023u) & ~1023u;
    unsigned char* ta = dyn + (base - raw);
    unsigned char* tb = ta + 8192;
    const unsigned t = threadIdx.x, w = t / 32, g = (t % 32) / 4;
    float acc[32], p[32];
#pragma unroll
    for (int r = 0; r < 32; ++r) acc[r] = 0.f, p[r] = 0.f;
    int n = 0;                                        // wgmmas issued so far
    for (int blk = 0; blk < K / 128; ++blk) {
        __syncthreads();                              // every warp is done with the previous block
        load_block(ta, A, K, blk);
        load_block(tb, B, K, blk);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            keep(p);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            wgmma_e4m3(p, desc_sw128(base + 32 * k), desc_sw128(base + 8192 + 32 * k), (n % interval) != 0);
            ++n;
            if (n % interval == 0) {                  // close the window, wait for it, promote p
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                keep(p);
#pragma unroll
                for (int r = 0; r < 32; ++r) {        // register r of the m64n64 fragment: element (row, col)
                    const unsigned row = 16 * w + g + 8 * ((r >> 1) & 1), col = 8 * (r >> 2) + 2 * (t % 4) + (r & 1);
                    acc[r] = __fmaf_rn(p[r], promote_scale(sa, sb, n, interval, K / 128, row, col), acc[r]);
                }
            }
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");   // the tiles are overwritten next block
        keep(p);
    }
#pragma unroll
    for (int r = 0; r < 32; ++r) acc_out[t * 32 + r] = __float_as_uint(acc[r]);
}
"""
_SCALE_OK = ("    const int blk = (n - 1) / 4;                       // the K-block every wgmma of the window belongs to\n"
             "    return __fmul_rn(sa[blk * 64 + row], sb[blk * 2 + col / 32]);\n")
assert _SCALE_OK in SOLUTION_7_8


def _scale_body(body: str) -> str:
    return SOLUTION_7_8.replace(_SCALE_OK, body)


PROMPT_7_8 = _scale_body("    return 1.0f;   // TODO: A's scale of this row times B's scale of this column, for this window\n")
#: the chapter's habit: one scale per promotion window
PLANTED_7_8_WINDOW = _scale_body("    const int w = n / interval - 1;\n"
                                 "    return __fmul_rn(sa[w * 64 + row], sb[w * 2 + col / 32]);\n")
#: A's scales read row by row (the chapter's layout)
PLANTED_7_8_AROWS = _scale_body("    const int blk = (n - 1) / 4;\n"
                                "    return __fmul_rn(sa[row * k_blocks + blk], sb[blk * 2 + col / 32]);\n")
#: one B scale per K-block
PLANTED_7_8_BBLOCK = _scale_body("    const int blk = (n - 1) / 4;\n    return __fmul_rn(sa[blk * 64 + row], sb[blk]);\n")
#: B's scale chosen by the row of D
PLANTED_7_8_BROW = _scale_body("    const int blk = (n - 1) / 4;\n"
                               "    return __fmul_rn(sa[blk * 64 + row], sb[blk * 2 + row / 32]);\n")
#: A's scale chosen by the column of D
PLANTED_7_8_ACOL = _scale_body("    const int blk = (n - 1) / 4;\n"
                               "    return __fmul_rn(sa[blk * 64 + col], sb[blk * 2 + col / 32]);\n")
#: (K, promotion interval in wgmmas, seed) of the grader's launches: windows finer than the 128-element blocks
CASES_7_8 = ((256, 2, 781), (384, 1, 782))


def _inputs_7_8(K: int, seed: int):
    """Real-looking activations and weights, A quantised per 1 x 128 block (scales (64, K/128)), B per block of 32
    rows (= 32 columns of D) x 128 (scales (K/128, 2)) — raw e4m3 bytes and f32 dequantisation scales."""
    from h100lab.tensorcore import quant
    rng = np.random.default_rng(seed)
    x = quant.real_looking(rng, (64, K), "activations")
    wt = quant.real_looking(rng, (64, K), "weights")
    qa, sa = quant.quantize(x, "e4m3", "block_1x128")
    nb = K // 128
    qb, sb = np.zeros((64, K), np.uint8), np.zeros((nb, 2), np.float32)
    for b in range(nb):
        for h in range(2):
            q, sc = quant.quantize(wt[32 * h:32 * h + 32, 128 * b:128 * b + 128], "e4m3", "tensor")
            qb[32 * h:32 * h + 32, 128 * b:128 * b + 128] = q
            sb[b, h] = sc.reshape(-1)[0]
    return qa, qb, np.asarray(sa, np.float32).reshape(64, nb), sb


def _run_7_8(program):
    from h100lab import emu
    out, stats = {}, []
    for i, (K, interval, seed) in enumerate(CASES_7_8):
        qa, qb, SA, SB = _inputs_7_8(K, seed)
        acc = emu.zeros(128 * 32, np.uint32)
        args = [emu.to_device(qa.reshape(-1)), emu.to_device(qb.reshape(-1)),
                emu.to_device(np.ascontiguousarray(SA.T).reshape(-1)),        # K-block by K-block
                emu.to_device(SB.reshape(-1))]
        stats.append(emu.launch(program.function("fp8_block_scaled"), 1, 128, *args, np.int32(K), np.int32(interval),
                                acc, shared_mem=16384 + 1024))
        out[f"acc{i}"] = acc.to_host()
        del args
    return KernelRun(out, stats)


def _ones(SA, SB, blk):
    return np.ones((64, len(blk)), np.float32)


#: effective (A scale per row, B scale per column) of each window, as a promotion factor reads them: the right one
#: and those of the typical mistakes (a mistake that mixes A and B goes entirely into one side; the f32 product of
#: the two scales is rounded once, as the kernel's __fmul_rn does)
_SCALINGS = {
    "right": lambda SA, SB, blk: (SA[:, blk], SB[blk][:, np.arange(64) // 32].T),
    "unscaled": lambda SA, SB, blk: (_ones(SA, SB, blk), _ones(SA, SB, blk)),
    "a_rows": lambda SA, SB, blk: (np.ascontiguousarray(SA.T).reshape(-1)[np.arange(64)[:, None] * SA.shape[1] + blk],
                                   SB[blk][:, np.arange(64) // 32].T),
    "b_block": lambda SA, SB, blk: (SA[:, blk], np.broadcast_to(SB.reshape(-1)[blk], (64, len(blk)))),
    "b_row": lambda SA, SB, blk: (SA[:, blk] * SB[blk][:, np.arange(64) // 32].T, _ones(SA, SB, blk)),
    "a_col": lambda SA, SB, blk: (_ones(SA, SB, blk), SA[:, blk] * SB[blk][:, np.arange(64) // 32].T),
}


def _model_7_8(scaling: str = "right") -> dict:
    """The raw f32 accumulators (kernel order) the model computes with ``_SCALINGS[scaling]``: each promotion window
    of ``interval`` wgmmas takes the scales of the 128-element K-block it lies in."""
    from h100lab.tensorcore import accumulate, fragments
    out = {}
    for i, (K, interval, seed) in enumerate(CASES_7_8):
        qa, qb, SA, SB = _inputs_7_8(K, seed)
        blk = np.arange(K // (32 * interval)) * interval // 4            # the K-block of each window
        sa_w, sb_w = _SCALINGS[scaling](SA, SB, blk)
        D = accumulate.fp8_gemm(qa, qb, np.asarray(sa_w, np.float32), np.asarray(sb_w, np.float32), atype="e4m3",
                                btype="e4m3", interval=interval)
        out[f"acc{i}"] = fragments.matrix_to_accumulator(D.view(np.uint32), 64).reshape(-1).astype(np.uint32)
    return out


_MODELS: dict = {}


def _as(scaling: str):
    """Symptom: the student's accumulators are, bit for bit, those of the mistake ``scaling``."""
    def test(out, ref, st):
        if out is None:
            return False
        if scaling not in _MODELS:
            _MODELS[scaling] = _model_7_8(scaling)
        return all(np.array_equal(out[k], v) for k, v in _MODELS[scaling].items())
    return test


_UNSCALED = ("The partial sums were promoted without their scales: the quantised products must be multiplied back by "
             "the scale of A's row and that of B's column for the K-block the window covers.")
_WINDOW = ("The promotion read past the end of the scales: there is one scale per 128-element K-block, not one per "
           "promotion window — when a window is shorter than a K-block, several windows share that block's scales.")
_AROWS = ("A's scales are read as if stored row by row (a row's K-blocks next to each other): here they are stored "
          "K-block by K-block, all 64 rows of one K-block together.")
_BBLOCK = ("B's scales are read as one per K-block: each K-block has two, one for each group of 32 columns of D "
           "(32 rows of B).")
_BROW = "B's scale was picked by the row of D: B's rows are D's columns, so its scale follows the element's column."
_ACOL = "A's scale was picked by the column of D: A's rows are D's rows, so its scale follows the element's row."

kernel_exercise("7.8", run=_run_7_8, expect=_model_7_8, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, err: out is None and type(err).__name__ == "MemoryFault", _WINDOW),
                          Symptom(_as("unscaled"), _UNSCALED), Symptom(_as("a_rows"), _AROWS),
                          Symptom(_as("b_block"), _BBLOCK), Symptom(_as("b_row"), _BROW), Symptom(_as("a_col"), _ACOL)],
                mistakes=[Mistake(_UNSCALED, answer=PROMPT_7_8), Mistake(_WINDOW, answer=PLANTED_7_8_WINDOW),
                          Mistake(_AROWS, answer=PLANTED_7_8_AROWS), Mistake(_BBLOCK, answer=PLANTED_7_8_BBLOCK),
                          Mistake(_BROW, answer=PLANTED_7_8_BROW), Mistake(_ACOL, answer=PLANTED_7_8_ACOL)])
