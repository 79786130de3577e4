"""Exercise set 7 (chapter 7, "WGMMA part 2: groups, stmatrix epilogues, FP8 and 2:4 sparsity").

Every reference answer is computed by the model the chapter teaches (h100lab.tensorcore.quant, .sparsity) or, for a
kernel exercise, by running the solution kernel on the emulator in the grader's process (7.6, 7.7: the epilogue cut
from h100lab/cuda/kernels/l07_fp8_gemm.cu) or by the tensor-core model (7.8: h100lab.tensorcore.accumulate.fp8_gemm
on a block-scaled tile the chapter does not show) — never typed in. Symptoms recognise a typical mistake from its
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
def _source() -> str:
    from h100lab.nvrtc import kernel_source
    return kernel_source("l07_fp8_gemm")


def _cut(start: str, stop: str | None = None) -> str:
    src = _source()
    i = src.index(start)
    return src[i:src.index(stop, i)] if stop else src[i:]


_HEAD = ("// Lesson 7 exercise: the FP8 GEMM tile and its stmatrix + TMA-store epilogue (one warpgroup, 64 x 64).\n"
         "#include <h100lab/tensormap.cuh>\n\n")
_HELPERS = _cut("namespace {", "// wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3")
_EPI = _cut("// the epilogue alone: kind 0 (bf16)")
SOLUTION_EPI = _HEAD + _HELPERS + _EPI


def _tile_of(out) -> np.ndarray:
    return np.asarray(out["tile"], np.uint8)


def _epi_runner(kind: str, seed: int):
    def run(program):
        from h100lab import emu
        from h100lab.measure import l07 as m07
        from h100lab.tensorcore import fragments

        c = dict(id="ex", kind="epilogue", out=kind, input="normal", grid=1, seed=seed)
        D = m07._epi_inputs(c)
        acc = fragments.matrix_to_accumulator(D[0].view(np.uint32), 64).reshape(-1).astype(np.uint32)
        row_bytes = 64 if kind == "e4m3" else 128
        tile = emu.zeros(64 * row_bytes, np.uint8)
        tm = m07._tmap(emu, tile, kind, 64)
        a_d = emu.to_device(acc)
        st = emu.launch(program.function(f"epilogue_{kind}"), 1, 128, a_d, tm, shared_mem=8192 + 1024)
        out = tile.to_host().reshape(64, row_bytes)
        del a_d
        return KernelRun({"tile": out}, st)
    return run


def _chunks(t: np.ndarray) -> np.ndarray:
    """(64, chunks, 16) view of a staged tile's rows."""
    return np.asarray(t, np.uint8).reshape(64, -1, 16)


def _unswizzled(out, ref, st) -> bool:
    """The tile an unswizzled staging address produces: chunk j of row r holds chunk j ^ (r % 8)."""
    if out is None:
        return False
    r = _chunks(ref["tile"])
    want = np.stack([r[row, np.arange(r.shape[1]) ^ (row & 7)] for row in range(64)])
    return np.array_equal(_chunks(out["tile"]), want)


def _quadrants_swapped(out, ref, st) -> bool:
    """Matrices 1 and 2 of each stmatrix.x4 exchanged: rows +8 / chunk 2jj and rows +0 / chunk 2jj+1."""
    if out is None:
        return False
    r = _chunks(ref["tile"]).copy()
    want = r.copy()
    for band in range(4):
        lo, hi = slice(16 * band, 16 * band + 8), slice(16 * band + 8, 16 * band + 16)
        for jj in range(r.shape[1] // 2):
            want[lo, 2 * jj + 1] = r[hi, 2 * jj]
            want[hi, 2 * jj] = r[lo, 2 * jj + 1]
    return np.array_equal(_chunks(out["tile"]), want)


def _wavefronts(kind):
    def prop(out, st):
        from h100lab.tensorcore import epilogue
        want = epilogue.epilogue(np.zeros((64, 64), np.float32), kind).total_wavefronts
        return None if st.matrix_wavefronts == want else \
            f"the stmatrix instructions took {st.matrix_wavefronts} shared-memory wavefronts, the swizzled tile needs {want}"
    return prop


# 7.6: the stmatrix row address into the 128B-swizzled staging tile
_ADDR_OK = "            stmatrix4(stage + sw128(row, 2 * jj + (q >> 1)), r0, r1, r2, r3);"
_ROW_OK = "    const unsigned row = 16 * w + (lane % 8) + 8 * (q & 1);        // the row this lane addresses"
assert _ADDR_OK in SOLUTION_EPI and _ROW_OK in SOLUTION_EPI
PROMPT_7_6 = SOLUTION_EPI.replace(_ADDR_OK, "            stmatrix4(stage + row * 128u + ((2 * jj + (q >> 1)) << 4), r0, r1, r2, r3);"
                                            "   // TODO: the staging tile is 128B-swizzled")
PLANTED_7_6_QUAD = SOLUTION_EPI.replace(_ROW_OK, "    const unsigned row = 16 * w + (lane % 8) + 8 * (q >> 1);").replace(
    _ADDR_OK, "            stmatrix4(stage + sw128(row, 2 * jj + (q & 1)), r0, r1, r2, r3);")
_SEED6 = 706
_UNSW = ("Every row's 16-byte chunks come out rotated by the row number: the TMA store reads the staging tile as "
         "128B-swizzled, so each stmatrix row must go to the chunk the swizzle moves it to.")
_QUAD = ("Inside each 16 x 16 block the upper-right and lower-left 8 x 8 matrices are exchanged: lanes 8-15 address "
         "matrix 1, which holds rows 8-15 of the first column block — the second quarter of lanes picks the lower "
         "rows, the upper half of lanes the next chunk.")

kernel_exercise("7.6", run=_epi_runner("bf16", _SEED6), reference=SOLUTION_EPI, points=3, budget=60,
                symptoms=[Symptom(_unswizzled, _UNSW), Symptom(_quadrants_swapped, _QUAD)],
                properties=[Property(_wavefronts("bf16"))],
                mistakes=[Mistake(_UNSW, answer=PROMPT_7_6), Mistake(_QUAD, answer=PLANTED_7_6_QUAD)])

# 7.7: the FP8 x2 packing order in the e4m3 epilogue
_PACK_OK = '    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));   // hi -> byte 1'
_HALF_OK = "            const unsigned r0 = pack_e4m3(v[a], v[a + 1]) | (pack_e4m3(v[a + 4], v[a + 5]) << 16);"
assert _PACK_OK in SOLUTION_EPI and _HALF_OK in SOLUTION_EPI
PROMPT_7_7 = SOLUTION_EPI.replace(_PACK_OK, '    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(lo), "f"(hi));'
                                            "   // TODO: check the byte order")
PLANTED_7_7_HALVES = SOLUTION_EPI.replace(
    _HALF_OK, "            const unsigned r0 = pack_e4m3(v[a + 4], v[a + 5]) | (pack_e4m3(v[a], v[a + 1]) << 16);").replace(
    "            const unsigned r1 = pack_e4m3(v[a + 2], v[a + 3]) | (pack_e4m3(v[a + 6], v[a + 7]) << 16);",
    "            const unsigned r1 = pack_e4m3(v[a + 6], v[a + 7]) | (pack_e4m3(v[a + 2], v[a + 3]) << 16);").replace(
    "            const unsigned r2 = pack_e4m3(v[a + 8], v[a + 9]) | (pack_e4m3(v[a + 12], v[a + 13]) << 16);",
    "            const unsigned r2 = pack_e4m3(v[a + 12], v[a + 13]) | (pack_e4m3(v[a + 8], v[a + 9]) << 16);").replace(
    "            const unsigned r3 = pack_e4m3(v[a + 10], v[a + 11]) | (pack_e4m3(v[a + 14], v[a + 15]) << 16);",
    "            const unsigned r3 = pack_e4m3(v[a + 14], v[a + 15]) | (pack_e4m3(v[a + 10], v[a + 11]) << 16);")
assert PLANTED_7_7_HALVES.count("pack_e4m3(v[a + 4], v[a + 5]) | (pack_e4m3(v[a], v[a + 1]) << 16)") == 1
_SEED7 = 707
_BYTES = ("Every pair of neighbouring FP8 columns is swapped: cvt … e4m3x2.f32 d, a, b writes cvt(a) to the high "
          "byte, and the column with the higher index belongs in the high byte.")
_HALVES = ("Pairs of 16-bit halves are swapped inside every 32-bit register: stmatrix stores a register's low half "
           "first, and the low half must hold the lower columns of the fragment.")


def _bytes_swapped(out, ref, st) -> bool:
    return out is not None and np.array_equal(np.asarray(out["tile"]).reshape(-1, 2)[:, ::-1].ravel(),
                                              np.asarray(ref["tile"]).ravel())


def _halves_swapped(out, ref, st) -> bool:
    return out is not None and np.array_equal(np.asarray(out["tile"]).reshape(-1, 2, 2)[:, ::-1].ravel(),
                                              np.asarray(ref["tile"]).ravel())


kernel_exercise("7.7", run=_epi_runner("e4m3", _SEED7), reference=SOLUTION_EPI, points=3, budget=60,
                symptoms=[Symptom(_bytes_swapped, _BYTES), Symptom(_halves_swapped, _HALVES)],
                properties=[Property(_wavefronts("e4m3"))],
                mistakes=[Mistake(_BYTES, answer=PROMPT_7_7), Mistake(_HALVES, answer=PLANTED_7_7_HALVES)])

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

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

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
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, q, 1, 1;\n\t}"
                 : "+f"(p[0]), "+f"(p[1]), "+f"(p[2]), "+f"(p[3]), "+f"(p[4]), "+f"(p[5]), "+f"(p[6]), "+f"(p[7]),
                   "+f"(p[8]), "+f"(p[9]), "+f"(p[10]), "+f"(p[11]), "+f"(p[12]), "+f"(p[13]), "+f"(p[14]), "+f"(p[15]),
                   "+f"(p[16]), "+f"(p[17]), "+f"(p[18]), "+f"(p[19]), "+f"(p[20]), "+f"(p[21]), "+f"(p[22]), "+f"(p[23]),
                   "+f"(p[24]), "+f"(p[25]), "+f"(p[26]), "+f"(p[27]), "+f"(p[28]), "+f"(p[29]), "+f"(p[30]), "+f"(p[31])
                 : "l"(da), "l"(db), "r"(sd) : "memory");
}

__device__ __forceinline__ void keep(float (&p)[32]) {       // p stays in registers across the wgmma fences
#pragma unroll
    for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(p[r]) :: "memory");
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

extern __shared__ __align__(16) unsigned char dyn[];

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
