"""Exercise set 6 (chapter 6, "WGMMA").

Every reference answer is computed by the model the chapter teaches (h100lab.tensorcore, h100lab.memory) or, for
a kernel exercise (6.9-6.12), by running the solution kernel on the emulator in the grader's process — never typed
in. The notebook states each exercise's parameters in its text; the same values are defined here. The kernels are
cut from h100lab/cuda/kernels/l06_wgmma_gemm.cu (the chapter's SS and RS GEMM tiles). Symptoms recognise a typical
mistake by comparing the student's D with the model's D for that mistake (the tile rebuilt in shared-memory bytes,
read through the mistaken descriptor or fragment). The student edition imports nothing from this module.
"""
from __future__ import annotations

import numpy as np

from ..kernels import KernelRun, Property, Symptom, kernel_exercise
from ..registry import Mistake, exercise

# ---- the exercises' data (shared with solutions/06-wgmma.md) ----------------------------------------
E1_ELEMENT, E1_N = (37, 5), 64                      # D[37][5] of m64n64k16.f32
E2_SHAPE = (256, "f32", "bf16")                      # m64n256k16.f32.bf16.bf16
E3_TYPES = ["tf32", "bf16", "e4m3", "s8", "b1"]
E4 = dict(start=0x2400, swizzle="128B")              # a K-major bf16 operand, 128B swizzle, canonical LBO/SBO
E5_OPCODES = ["wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32",
              "wgmma.mma_async.sync.aligned.m64n40k32.s32.u8.s8",
              "wgmma.mma_async.sync.aligned.m64n256k16.f16.f16.f16",
              "wgmma.mma_async.sync.aligned.m64n64k16.f16.bf16.bf16",
              "wgmma.mma_async.sync.aligned.m64n200k32.f32.e5m2.e4m3",
              "wgmma.mma_async.sync.aligned.m64n32k16.f32.tf32.tf32",
              "wgmma.mma_async.sync.aligned.m64n48k32.s32.s8.s8"]
E6_ROW, E6_ELEMENT, E6_MATRIX = 3, (5, 6), 2         # ldmatrix.x4: row 3 of matrix 2; element (5, 6) of matrix 2
E7_PITCH = 64                                        # 16 x 16 bf16 block of a tile with 64-byte rows
E8_TINY = 2.0 ** -7                                  # e4m3: 1·1 + three products (2^-7)·(2^-7)


def _opcode_ok(name: str) -> bool:
    from h100lab.tensorcore import shapes

    try:
        shapes.parse_opcode(name)
        return True
    except shapes.WgmmaError:
        return False


# ---- reference answers ------------------------------------------------------------------------------
def _owner_of(row: int, col: int) -> list:
    from h100lab.tensorcore import accumulator_owner

    return list(accumulator_owner(row, col, E1_N)[:2])


@exercise("6.1", points=2, hint="The warp is fixed by the row's block of 16, the group of 4 threads by the row "
          "inside it, the thread of the group by the column pair; the register counts column blocks of 8 first.",
          mistakes=[Mistake("Row and column swapped: the warp owns a band of 16 rows, not columns.",
                            when=lambda v, ref: isinstance(v, (list, tuple)) and list(v) == _owner_of(*E1_ELEMENT[::-1])),
                    Mistake("That is the register of a packed .f16 accumulator; .f32 values have one register each.",
                            when=lambda v, ref: isinstance(v, (list, tuple)) and len(v) == 2 and v[0] == ref[0]
                            and v[1] == ref[1] // 2)])
def _owner():
    from h100lab.tensorcore import accumulator_owner

    t, r, _ = accumulator_owner(*E1_ELEMENT, E1_N)
    return [t, r]


@exercise("6.2", points=1, hint="The 64 × N results are shared by the warpgroup's threads; an .f32 value fills a "
          "32-bit register.",
          mistakes=[Mistake("Two values share a register only for an .f16 accumulator.", answer=64),
                    Mistake("That is N: the results are divided among the 128 threads of the warpgroup, and each "
                            "holds 64·N / 128 of them.", answer=256),
                    Mistake("That is the whole tile, not one thread's share.", answer=64 * 256)])
def _registers():
    from h100lab.tensorcore import spec

    return spec(*E2_SHAPE).d_regs


@exercise("6.3", points=1, hint="One wgmma reads the same number of bytes of K per row for every type.",
          mistakes=[Mistake("TF32 elements are 4 bytes: one instruction takes K = 8 of them, not 16 (the course notes "
                            "slip here; the PTX shapes are m64nNk8).",
                            when=lambda v, ref: isinstance(v, list) and len(v) == 5 and v[0] == 16 and v[1:] == ref[1:])])
def _ks():
    from h100lab.tensorcore import shapes

    return [shapes.k_of(t) for t in E3_TYPES]


def _desc_value(start, lbo, sbo, layout, shift=4):
    return (start >> shift) | (lbo >> shift) << 16 | (sbo >> shift) << 32 | layout << 62


@exercise("6.4", points=2, hint="Each byte quantity is stored divided by 16 in its 14-bit field; the layout type "
          "has its own code for each swizzle mode.",
          mistakes=[Mistake("The layout-type codes are 0 none, 1 128B, 2 64B, 3 32B — not the modes in size order.",
                            answer=_desc_value(0x2400, 16, 1024, 3)),
                    Mistake("The fields hold byte quantities divided by 16 (the low 4 bits of a 16-byte aligned "
                            "address are always 0).", when=lambda v, ref: isinstance(v, int)
                            and v & 0x3FFF == 0x2400 & 0x3FFF)])
def _descriptor():
    from h100lab.tensorcore import MatrixDescriptor
    from h100lab.tensorcore.descriptor import canonical_lbo_sbo

    lbo, sbo = canonical_lbo_sbo("K", E4["swizzle"], "bf16")
    return MatrixDescriptor(E4["start"], lbo, sbo, 0, E4["swizzle"]).encode()


@exercise("6.5", points=2, unordered=True, hint="Check each name: K against the type, N against the type's list, "
          "the D type against the inputs.",
          mistakes=[Mistake("Mixed fp8 pairings (.e5m2 · .e4m3) are legal.",
                            when=lambda v, ref: isinstance(v, list) and 4 in v),
                    Mistake("TF32 wgmma has K = 8.", when=lambda v, ref: isinstance(v, list) and 0 in v),
                    Mistake("Integer wgmma takes N = 8, 16, 24, 32 and then steps of 16 only.",
                            when=lambda v, ref: isinstance(v, list) and 1 not in v and 0 not in v and 4 not in v)])
def _illegal():
    return [i for i, n in enumerate(E5_OPCODES) if not _opcode_ok(n)]


@exercise("6.6", points=2, hint="Addresses: thread 8j + i points at row i of matrix j. Data: register j holds "
          "matrix j; each row is spread over 4 consecutive threads, 2 elements each.",
          mistakes=[Mistake("The thread that supplies a row's address does not receive that row: the data is "
                            "redistributed, 4 threads per row.", when=lambda v, ref: isinstance(v, list)
                            and len(v) == 3 and v[0] == ref[0] and v[1] == ref[0])])
def _ldmatrix_roles():
    from h100lab.tensorcore import fragments

    addr_thread = next(t for t, role in enumerate(fragments.ldmatrix_roles(4)) if role == (E6_MATRIX, E6_ROW))
    r, c = E6_ELEMENT
    holder = next(t for t in range(32) if t // 4 == r and 2 * (t % 4) <= c <= 2 * (t % 4) + 1)
    return [addr_thread, holder, E6_MATRIX]


def ldmatrix_block_addresses(pitch: int, swizzle: str | None) -> np.ndarray:
    """(4, 8) row addresses of ldmatrix.x4 over the 16 x 16 bf16 block at the top left of a tile with ``pitch``-byte
    rows at a 1024-aligned address (lane t: row t % 16, 16-byte chunk t // 16), swizzled or not."""
    from h100lab.memory import swizzle as sw

    lane = np.arange(32)
    row, chunk = lane % 16, lane // 16
    a = row * pitch + chunk * 16
    return (sw.swizzle_address(a, swizzle) if swizzle else a).reshape(4, 8)


@exercise("6.7", points=2, hint="ldmatrix serves one 8 × 8 matrix per phase: 8 rows of 16 bytes. Count, per "
          "matrix, the most distinct 4-byte words any one bank must deliver.",
          mistakes=[Mistake("Rows 64 bytes apart: two rows fill the 32 banks, so only every other row collides.",
                            answer=[32, 4]),
                    Mistake("Without the swizzle the 8 rows of a matrix do not all fall in different banks.",
                            answer=[4, 4])])
def _wavefronts():
    from h100lab.memory.banks import matrix_wavefronts

    return [matrix_wavefronts(ldmatrix_block_addresses(E7_PITCH, None)),
            matrix_wavefronts(ldmatrix_block_addresses(E7_PITCH, "64B"))]


@exercise("6.8", points=2, hint="The tensor core does not round the exact sum: it aligns every product to the "
          "largest one and keeps a fixed number of bits below it (fewer for FP8 inputs).",
          mistakes=[Mistake("That is the exact sum. With FP8 inputs the products are aligned to the largest one and "
                            "cut to about 13 bits below it before they are added.",
                            answer=1.0 + 3 * E8_TINY ** 2)])
def _fp8_sum():
    from h100lab.tensorcore import mma, numerics

    a = np.zeros((64, 32))
    b = np.zeros((32, 8))
    a[0, 0] = b[0, 0] = 1.0
    a[0, 1:4] = E8_TINY
    b[1:4, 0] = E8_TINY
    d = mma(numerics.from_float(a, "e4m3"), numerics.from_float(b, "e4m3"), atype="e4m3", scale_d=False)
    return float(d.view(np.float32)[0, 0])


# ---- kernel exercises ----------------------------------------------------------------------------
def _gemm_source() -> str:
    from h100lab.nvrtc import kernel_source

    return kernel_source("l06_wgmma_gemm")


def _cut(start: str, stop: str) -> str:
    src = _gemm_source()
    return src[src.index(start):src.index(stop)]


_DESC_NOTE = ("    // start >> 4 (bits 0-13), LBO 16 B (unused for swizzled K-major; enc 1), SBO 1024 B (enc 64), layout "
              "type 1\n")
_HELPERS = _cut("namespace {", 'extern "C" __global__ void __launch_bounds__(128) gemm_ss(').replace(
    _DESC_NOTE, "    // the descriptor of a 64-row K-major operand of 128-byte rows stored 128B-swizzled at addr\n")
_SS_BODY = _cut('extern "C" __global__ void __launch_bounds__(128) gemm_ss(',
                'extern "C" __global__ void __launch_bounds__(128) gemm_rs(')
_RS_BODY = _cut('extern "C" __global__ void __launch_bounds__(128) gemm_rs(', "// ldmatrix / stmatrix probe")
_HEAD = ("// Lesson 6 exercise: one warpgroup computes a 64 x 64 x 64 bf16 -> f32 tile D = A * B.\n"
         "// A (64 x 64) and Bt (B transposed, 64 x 64) are row-major (K-major) bf16 in global memory.\n")
SOLUTION_SS = _HEAD + _HELPERS + _SS_BODY
SOLUTION_RS = _HEAD + _HELPERS + _RS_BODY


def _inputs(seed: int):
    from h100lab.tensorcore import numerics

    rng = np.random.default_rng(seed)
    return (numerics.from_float(rng.standard_normal((64, 64)), "bf16"),
            numerics.from_float(rng.standard_normal((64, 64)), "bf16"))


def _runner(kernel: str, seed: int):
    def run(program):
        from h100lab import emu

        A, Bt = _inputs(seed)
        a_d, b_d = emu.to_device(A), emu.to_device(Bt)     # keep the inputs alive while the kernel reads them
        D = emu.zeros(64 * 64, np.float32)
        st = emu.launch(program.function(kernel), 1, 128, a_d, b_d, D, shared_mem=17 * 1024)
        out = D.to_host().reshape(64, 64)
        del a_d, b_d
        return KernelRun({"d": out}, st)
    return run


def _image(A, Bt) -> np.ndarray:
    """The 16 KB shared image the kernels build: A then Bt, each a 1024-aligned 128B-swizzled K-major tile."""
    from h100lab.tensorcore import MatrixDescriptor, addresses

    img = np.zeros(16384, np.uint16)
    a = addresses(MatrixDescriptor(0, 16, 1024, 0, "128B"), "K", 64, 64, "bf16")
    img[a // 2] = A
    img[(a + 8192) // 2] = Bt
    return img.view(np.uint8)


def _model_d(A_steps, B_steps) -> np.ndarray:
    """D (64 x 64 f32) of four chained bf16 wgmmas on the given 64 x 16 A and 64 x 16 Bt slices."""
    from h100lab.tensorcore import mma

    D = None
    for a, b in zip(A_steps, B_steps):
        D = mma(a, b.T, D, atype="bf16", scale_d=D is not None)
    return D.view(np.float32)


def _ss_variant(seed: int, a_off, b_off, sbo=1024, swizzle="128B") -> np.ndarray:
    """The model's D when K-step k reads A at byte ``a_off(k)`` and Bt at ``8192 + b_off(k)`` (SS kernel)."""
    from h100lab.tensorcore import MatrixDescriptor, gather

    A, Bt = _inputs(seed)
    img = _image(A, Bt)
    As = [gather(img, MatrixDescriptor(a_off(k), 16, sbo, 0, swizzle), "K", 64, 16, "bf16") for k in range(4)]
    Bs = [gather(img, MatrixDescriptor(8192 + b_off(k), 16, sbo, 0, swizzle), "K", 64, 16, "bf16") for k in range(4)]
    return _model_d(As, Bs)


def _same(out, d) -> bool:
    return out is not None and np.array_equal(np.asarray(out["d"]).view(np.uint32), np.asarray(d).view(np.uint32))


def _wgmma_count(out, st):
    return None if st.wgmma == 4 else f"the kernel issued {st.wgmma} warpgroup wgmmas, not the 4 of a 64 x 64 x 64 tile"


# 6.9: the descriptor of a K-major 128B-swizzled tile
_DESC_OK = ("    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);")
assert _DESC_OK in SOLUTION_SS
PROMPT_6_9 = SOLUTION_SS.replace(_DESC_OK, "    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32);   "
                                          "// TODO: check every field")
PLANTED_6_9_SBO = SOLUTION_SS.replace("(64ull << 32)", "(8ull << 32)")
PLANTED_6_9_RAW = SOLUTION_SS.replace("(64ull << 32)", "(1024ull << 32)")
PLANTED_6_9_TYPE = SOLUTION_SS.replace("(1ull << 62)", "(3ull << 62)")
_SEED9 = 609
_SBO_HINT = ("Only the first 8 rows of A and of B are read right: SBO is the distance from one group of 8 rows to the "
             "next, and here each row is a whole 128-byte swizzled line.")
_TYPE_HINT = ("Rows 0, 8, 16, ... come out right and the others do not: the tile is swizzled, and the layout-type "
              "field must name the 128-byte swizzle (its code is not the modes' order by size).")
_RAW_HINT = ("The descriptor points outside shared memory: its fields hold byte quantities divided by 16.")


def _rows_multiple_of_8_only(out, ref, st):
    o, r = np.asarray(out["d"]), np.asarray(ref["d"])
    return np.array_equal(o[::8, ::8], r[::8, ::8]) and not np.array_equal(o, r)


kernel_exercise("6.9", run=_runner("gemm_ss", _SEED9), reference=SOLUTION_SS, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: out is None and "outside" in str(st), _RAW_HINT),
                          Symptom(lambda out, ref, st: _same(out, _ss_variant(_SEED9, lambda k: 32 * k,
                                                                               lambda k: 32 * k, sbo=128)), _SBO_HINT),
                          Symptom(_rows_multiple_of_8_only, _TYPE_HINT)],
                properties=[Property(_wgmma_count)],
                mistakes=[Mistake(_TYPE_HINT, answer=PROMPT_6_9), Mistake(_SBO_HINT, answer=PLANTED_6_9_SBO),
                          Mistake(_RAW_HINT, answer=PLANTED_6_9_RAW), Mistake(_TYPE_HINT, answer=PLANTED_6_9_TYPE)])

# 6.10: the K-advance inside the swizzle atom
_ADV_OK = "desc_sw128(base + 32 * k), db = desc_sw128(base + 8192 + 32 * k);"
assert _ADV_OK in SOLUTION_SS
SOLUTION_6_10 = SOLUTION_SS
PROMPT_6_10 = SOLUTION_SS.replace(_ADV_OK, "desc_sw128(base), db = desc_sw128(base + 8192);   // TODO: K-step k")
PLANTED_6_10_ELEMS = SOLUTION_SS.replace(_ADV_OK, "desc_sw128(base + 16 * k), db = desc_sw128(base + 8192 + 16 * k);")
PLANTED_6_10_B = SOLUTION_SS.replace(_ADV_OK, "desc_sw128(base + 32 * k), db = desc_sw128(base + 8192);")
_SEED10 = 610
_NOADV = ("Every K-step multiplied the same first 16 elements of K: each wgmma must read its own slice of K, moved to by "
          "the descriptors' start addresses.")
_ELEMS = ("The K-steps overlap: one step is 16 bf16 elements of K, and the start address counts bytes.")
_BONLY = ("A advances along K but B does not: both operands are K-major, and both descriptors must step through K "
          "together.")
kernel_exercise("6.10", run=_runner("gemm_ss", _SEED10), reference=SOLUTION_6_10, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: _same(out, _ss_variant(_SEED10, lambda k: 0, lambda k: 0)), _NOADV),
                          Symptom(lambda out, ref, st: _same(out, _ss_variant(_SEED10, lambda k: 16 * k,
                                                                               lambda k: 16 * k)), _ELEMS),
                          Symptom(lambda out, ref, st: _same(out, _ss_variant(_SEED10, lambda k: 32 * k, lambda k: 0)),
                                  _BONLY)],
                properties=[Property(_wgmma_count)],
                mistakes=[Mistake(_NOADV, answer=PROMPT_6_10), Mistake(_ELEMS, answer=PLANTED_6_10_ELEMS),
                          Mistake(_BONLY, answer=PLANTED_6_10_B)])

# 6.11: the RS kernel's ldmatrix addressing
_LDSM_OK = '"r"(base + sw128(arow, chunk))'
assert _LDSM_OK in SOLUTION_RS
PROMPT_6_11 = SOLUTION_RS.replace(_LDSM_OK, '"r"(base + arow * 128 + chunk * 16)')
PLANTED_6_11_SWAP = SOLUTION_RS.replace("const unsigned arow = 16 * w + 8 * (mat & 1) + lane % 8;",
                                        "const unsigned arow = 16 * w + 8 * (mat >> 1) + lane % 8;").replace(
    "const unsigned chunk = 2 * k + (mat >> 1);", "const unsigned chunk = 2 * k + (mat & 1);")
assert PLANTED_6_11_SWAP.count("mat >> 1") == 1
_SEED11 = 611
_LINEAR = ("Rows 0, 8, 16, ... of D are right and the others are not: the A tile is stored 128B-swizzled, so a "
           "lane's row address must go through the same XOR.")
_SWAP = ("The four matrices arrive in the wrong registers: register j of the A fragment is rows +8·(j & 1) and K "
         "half (j >> 1) — lanes 0-15 address the left 8 columns, lanes 16-31 the right 8.")


def _swapped_fragment_d(seed: int) -> np.ndarray:
    from h100lab.tensorcore import fragments

    A, Bt = _inputs(seed)
    As = []
    for k in range(4):
        regs = fragments.pack_a_fragment(A[:, 16 * k:16 * k + 16], "bf16")
        As.append(fragments.unpack_a_fragment(regs[:, [0, 2, 1, 3]], "bf16").astype(np.uint16))
    return _model_d(As, [Bt[:, 16 * k:16 * k + 16] for k in range(4)])


def _rows_mod8(out, ref, st):
    o, r = np.asarray(out["d"]), np.asarray(ref["d"])
    return np.array_equal(o[::8], r[::8]) and not np.array_equal(o, r)


kernel_exercise("6.11", run=_runner("gemm_rs", _SEED11), reference=SOLUTION_RS, points=3, budget=60,
                symptoms=[Symptom(_rows_mod8, _LINEAR),
                          Symptom(lambda out, ref, st: _same(out, _swapped_fragment_d(_SEED11)), _SWAP)],
                properties=[Property(_wgmma_count),
                            Property(lambda out, st: None if st.matrix_wavefronts == 64 else
                                     f"the ldmatrix loads took {st.matrix_wavefronts} wavefronts, not one per 8 x 8 "
                                     "matrix (64): they have bank conflicts")],
                mistakes=[Mistake(_LINEAR, answer=PROMPT_6_11), Mistake(_SWAP, answer=PLANTED_6_11_SWAP)])

# 6.12: the missing wgmma.fence of the RS kernel
_FENCE_LINE = '        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");    // A registers were just written by ldmatrix\n'
assert _FENCE_LINE in SOLUTION_RS
PROMPT_6_12 = SOLUTION_RS.replace(_FENCE_LINE, "")
_LDSM_STMT = '        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"'
PLANTED_6_12_EARLY = PROMPT_6_12.replace(_LDSM_STMT, '        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");\n'
                                         + _LDSM_STMT)
assert PLANTED_6_12_EARLY != PROMPT_6_12
_SEED12 = 612
_FENCE = ("Every K-step, ldmatrix writes the A registers (and the accumulators were zeroed by ordinary instructions): "
          "wgmma.fence must come after those writes and before the wgmma that reads the registers.")
kernel_exercise("6.12", run=_runner("gemm_rs", _SEED12), reference=SOLUTION_RS, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: out is None and "wgmma.fence" in str(st), _FENCE)],
                properties=[Property(_wgmma_count)],
                must_contain=[(r"ldmatrix", "keep the ldmatrix loads: the exercise is about ordering their writes")],
                mistakes=[Mistake(_FENCE, answer=PROMPT_6_12), Mistake(_FENCE, answer=PLANTED_6_12_EARLY)])
