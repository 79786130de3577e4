"""Exercise set 7 (chapter 7, "WGMMA part 2: groups, stmatrix epilogues, FP8 and 2:4 sparsity").

Every reference answer is computed by the model the chapter teaches (h100lab.tensorcore.quant, .sparsity) or, for a
kernel exercise (7.6-7.8), by running the solution kernel on the emulator in the grader's process — never typed in.
The kernels are cut from h100lab/cuda/kernels/l07_fp8_gemm.cu (the chapter's FP8 tile and epilogue). Symptoms
recognise a typical mistake from its effect on the stored tile (a permutation of the model's bytes) or on the
accumulators (the float64 sum the mistake computes). The student edition imports nothing from this module.
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
_GEMM = _cut("// wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3", "// wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2")
_EPI = _cut("// the epilogue alone: kind 0 (bf16)")
SOLUTION_EPI = _HEAD + _HELPERS + _EPI
SOLUTION_GEMM = _HEAD + _HELPERS + _GEMM


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

# 7.8: two-level accumulation — the partial sum must restart at every promotion window
_SD_OK = "            const int sd = (n % interval) != 0;       // a fresh partial sum at the start of each window"
_WAIT_OK = ('                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");\n'
            '                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");\n')
assert _SD_OK in SOLUTION_GEMM and _WAIT_OK in SOLUTION_GEMM
PROMPT_7_8 = SOLUTION_GEMM.replace(_SD_OK, "            const int sd = n != 0;   // TODO: when must the partial sum start over?")
PLANTED_7_8_NOWAIT = SOLUTION_GEMM.replace(_WAIT_OK, '                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");\n')
CASE_7_8 = dict(id="ex7_8", kind="fp8_gemm", atype="e4m3", btype="e4m3", K=256, interval=2, grid=1, seed=708)


def _gemm_run(program):
    from h100lab import emu
    from h100lab.measure import l07 as m07
    out = m07._run_fp8_gemm(emu, CASE_7_8, lambda mod, name: program.function(name))
    return KernelRun({"acc": out["acc"]})


def _cumulative_sum() -> np.ndarray:
    """float64 accumulators (kernel order) of the mistake: window w's promotion adds the running sum of every
    window so far, times window w's scales."""
    from h100lab.measure import l07 as m07
    from h100lab.tensorcore import fragments, numerics
    A, B, SA, SB = m07._fp8_inputs(CASE_7_8)
    a, b = numerics.to_float(A[0], "e4m3"), numerics.to_float(B[0], "e4m3")
    L = 32 * CASE_7_8["interval"]
    run = np.zeros((64, 64))
    acc = np.zeros((64, 64))
    for w in range(CASE_7_8["K"] // L):
        run += a[:, w * L:(w + 1) * L] @ b[:, w * L:(w + 1) * L].T
        acc += run * SA[0][:, w][:, None] * SB[0][w]
    return fragments.matrix_to_accumulator(acc, 64).reshape(-1)


def _not_restarted(out, ref, st) -> bool:
    if out is None:
        return False
    got = np.asarray(out["acc"]).view(np.float32).astype(np.float64)
    want = _cumulative_sum()
    return bool(np.abs(got - want).max() <= 1e-2 * np.abs(want).max())


_RESTART = ("Each promotion adds the sum of every window so far, not just the last one: the partial sum must start "
            "over (scale-d = 0) at the first wgmma of each promotion window.")
_NOWAIT = ("The promotion reads the partial sum while its wgmmas may still be running: close the window's group and "
           "wait for it before the CUDA cores touch those registers.")

kernel_exercise("7.8", run=_gemm_run, reference=SOLUTION_GEMM, points=3, budget=60,
                symptoms=[Symptom(_not_restarted, _RESTART),
                          Symptom(lambda out, ref, st: out is None and "wait" in str(st).lower(), _NOWAIT)],
                mistakes=[Mistake(_RESTART, answer=PROMPT_7_8), Mistake(_NOWAIT, answer=PLANTED_7_8_NOWAIT)])
