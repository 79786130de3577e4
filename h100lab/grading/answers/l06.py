"""Exercise set 6 (chapter 6, "WGMMA").

Every reference answer is computed by the model the chapter teaches (h100lab.tensorcore, h100lab.memory) or, for
a kernel exercise, by running the solution kernel on the emulator in the grader's process (6.9-6.11) or by the
tensor-core model (6.12: the causally masked product) — never typed in. The notebook states each exercise's
parameters in its text; the same values are defined here. The kernels are cut from
h100lab/cuda/kernels/l06_wgmma_gemm.cu (the chapter's SS and RS GEMM tiles) and turned into variants (6.9-6.11:
another swizzle, another K, another A layout; 6.12: an A fragment masked in registers, so the wgmma.fence moves)
whose fix the book does not print. Symptoms recognise a typical mistake by comparing the student's D with the
model's D for that mistake (the tile rebuilt in shared-memory bytes, read through the mistaken descriptor or
fragment). The student edition imports nothing from this module.
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


def _sub(text: str, *pairs: tuple[str, str]) -> str:
    """``text`` with each (old, new) replaced; every old must occur (the cut kernel still has that line)."""
    for old, new in pairs:
        assert old in text, f"the chapter kernel no longer has {old!r}"
        text = text.replace(old, new)
    return text


# The kernel exercises are *variants* of the chapter's tiles (another swizzle, another K, another A layout), so that
# their fix is no line the book prints: the student reasons from the rule, the chapter's line is a planted mistake.
_SW128_HELPER = ("// byte offset of 16-byte chunk `chunk` of row `row` in a 1024-aligned 128B-swizzled tile of 128-byte rows\n"
                 "__device__ __forceinline__ unsigned sw128(unsigned row, unsigned chunk) {\n"
                 "    return row * 128u + ((chunk ^ (row & 7u)) << 4);\n}\n")
_LOAD_128 = ("// a 64 x 64 bf16 row-major matrix (128 B per row) from global into a 128B-swizzled tile\n"
             "__device__ __forceinline__ void load_tile(unsigned char* tile, const uint4* g) {\n"
             "    for (int i = threadIdx.x; i < 64 * 8; i += blockDim.x) {\n"
             "        const unsigned row = i / 8, chunk = i % 8;\n"
             "        *reinterpret_cast<uint4*>(tile + sw128(row, chunk)) = g[i];\n")
_DESC_128 = ("__device__ __forceinline__ unsigned long long desc_sw128(unsigned addr) {\n"
             "    // the descriptor of a 64-row K-major operand of 128-byte rows stored 128B-swizzled at addr\n"
             "    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);\n")
_ADV_128 = "desc_sw128(base + 32 * k), db = desc_sw128(base + 8192 + 32 * k);"
_LOOP_4 = "for (int k = 0; k < 4; ++k)"

# 6.9: a 64 x 64 x 32 tile whose operands are 64B-swizzled (64-byte rows): the descriptor of that layout
_HEAD_6_9 = ("// Lesson 6 exercise: one warpgroup computes a 64 x 64 x 32 bf16 -> f32 tile D = A * B.\n"
             "// A (64 x 32) and Bt (B transposed, 64 x 32) are row-major (K-major) bf16 in global memory: 64 B per row.\n")
_DESC_OK = "    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (32ull << 32) | (2ull << 62);"
SOLUTION_6_9 = _sub(
    SOLUTION_SS, (_HEAD, _HEAD_6_9),
    (_SW128_HELPER, "// byte offset of 16-byte chunk `chunk` (0-3) of row `row` in a 512-aligned 64B-swizzled tile of "
                    "64-byte rows\n__device__ __forceinline__ unsigned sw64(unsigned row, unsigned chunk) {\n"
                    "    return row * 64u + ((chunk ^ ((row >> 1) & 3u)) << 4);\n}\n"),
    (_LOAD_128, "// a 64 x 32 bf16 row-major matrix (64 B per row) from global into a 64B-swizzled tile\n"
                "__device__ __forceinline__ void load_tile(unsigned char* tile, const uint4* g) {\n"
                "    for (int i = threadIdx.x; i < 64 * 4; i += blockDim.x) {\n"
                "        const unsigned row = i / 4, chunk = i % 4;\n"
                "        *reinterpret_cast<uint4*>(tile + sw64(row, chunk)) = g[i];\n"),
    (_DESC_128, "__device__ __forceinline__ unsigned long long desc_sw64(unsigned addr) {\n"
                "    // the descriptor of a 64-row K-major operand of 64-byte rows stored 64B-swizzled at addr\n"
                + _DESC_OK + "\n"),
    ("sa + 8192;", "sa + 4096;"), (_LOOP_4, "for (int k = 0; k < 2; ++k)"),
    (_ADV_128, "desc_sw64(base + 32 * k), db = desc_sw64(base + 4096 + 32 * k);"))
PROMPT_6_9 = SOLUTION_6_9.replace(
    _DESC_OK, "    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);   "
              "// TODO: the chapter's 128B descriptor; this tile is not that")
PLANTED_6_9_SBO = SOLUTION_6_9.replace("(32ull << 32)", "(64ull << 32)")      # the chapter's 8-row stride kept
PLANTED_6_9_RAW = SOLUTION_6_9.replace("(32ull << 32)", "(512ull << 32)")     # bytes, not bytes / 16
PLANTED_6_9_TYPE = SOLUTION_6_9.replace("(2ull << 62)", "(1ull << 62)")       # the chapter's layout code kept
PLANTED_6_9_ORDER = SOLUTION_6_9.replace("(2ull << 62)", "(3ull << 62)")      # codes guessed in order of size
_SEED9 = 609
_CHAPTER_HINT = ("D is what the chapter's descriptor reads from this tile: that descriptor describes 128-byte rows "
                 "with the 128-byte swizzle. Here each row is 64 bytes, swizzled in 64-byte atoms: work out every "
                 "field for this layout.")
_SBO_HINT = ("Only the first 8 rows of A and of B are read right: SBO is the distance from one group of 8 rows to the "
             "next, and here a row is 64 bytes.")
_TYPE_HINT = ("The rows are read with the wrong swizzle: the layout-type field must name the 64-byte swizzle (its "
              "code is not the modes' order by size).")
_RAW_HINT = ("The descriptor points outside shared memory: its fields hold byte quantities divided by 16.")


def _inputs(seed: int, k: int = 64):
    from h100lab.tensorcore import numerics

    rng = np.random.default_rng(seed)
    return (numerics.from_float(rng.standard_normal((64, k)), "bf16"),
            numerics.from_float(rng.standard_normal((64, k)), "bf16"))


def _runner(kernel: str, seed: int, k: int = 64, smem: int = 17 * 1024):
    def run(program):
        from h100lab import emu

        A, Bt = _inputs(seed, k)
        a_d, b_d = emu.to_device(A), emu.to_device(Bt)     # keep the inputs alive while the kernel reads them
        D = emu.zeros(64 * 64, np.float32)
        st = emu.launch(program.function(kernel), 1, 128, a_d, b_d, D, shared_mem=smem)
        out = D.to_host().reshape(64, 64)
        del a_d, b_d
        return KernelRun({"d": out}, st)
    return run


def _tile_addresses(swizzle: str, row_bytes: int, k: int) -> np.ndarray:
    """Byte address of every element (64 x k bf16, K-major) in a tile of 1024-aligned swizzle atoms with
    ``row_bytes`` per row: K beyond one atom's row goes to the next atom column, 64 * row_bytes further."""
    from h100lab.tensorcore import MatrixDescriptor, addresses

    per = row_bytes // 2
    a = addresses(MatrixDescriptor(0, 16, 8 * row_bytes, 0, swizzle), "K", 64, per, "bf16")
    return np.concatenate([a + j * 64 * row_bytes for j in range(k // per)], axis=1)


def _image(A, Bt, swizzle="128B", row_bytes=128) -> np.ndarray:
    """The shared image the SS kernels build: A, then Bt right after it, each in swizzle atoms (``_tile_addresses``)."""
    k = A.shape[1]
    a = _tile_addresses(swizzle, row_bytes, k)
    img = np.zeros(max(2 * 64 * k, 8192), np.uint16)   # at least 16 KB: a mistaken stride reads on (zeros)
    img[a // 2] = A
    img[(a + 128 * k) // 2] = Bt
    return img.view(np.uint8)


def _model_d(A_steps, B_steps) -> np.ndarray:
    """D (64 x 64 f32) of chained bf16 wgmmas on the given 64 x 16 A and 64 x 16 Bt slices."""
    from h100lab.tensorcore import mma

    D = None
    for a, b in zip(A_steps, B_steps):
        D = mma(a, b.T, D, atype="bf16", scale_d=D is not None)
    return D.view(np.float32)


def _ss_variant(seed: int, a_off, b_off, sbo=1024, swizzle="128B", *, k=64, stored="128B", row_bytes=128):
    """The model's D when K-step s reads A at byte ``a_off(s)`` and Bt at ``b_off(s)`` after A (SS kernel) through a
    descriptor of ``sbo`` and ``swizzle``, the tile stored as ``stored`` atoms of ``row_bytes`` rows; None where that
    descriptor leaves the image (the kernel faults instead)."""
    from h100lab.tensorcore import MatrixDescriptor, gather

    A, Bt = _inputs(seed, k)
    img = _image(A, Bt, stored, row_bytes)
    b0 = 128 * k
    try:
        As = [gather(img, MatrixDescriptor(a_off(s), 16, sbo, 0, swizzle), "K", 64, 16, "bf16") for s in range(k // 16)]
        Bs = [gather(img, MatrixDescriptor(b0 + b_off(s), 16, sbo, 0, swizzle), "K", 64, 16, "bf16")
              for s in range(k // 16)]
    except (IndexError, ValueError):
        return None
    return _model_d(As, Bs)


def _same(out, d) -> bool:
    return out is not None and d is not None and np.array_equal(np.asarray(out["d"]).view(np.uint32),
                                                                np.asarray(d).view(np.uint32))


def _wgmmas(n: int):
    def prop(out, st):
        return None if st.wgmma == n else (f"the kernel issued {st.wgmma} warpgroup wgmmas, not the {n} of its "
                                           f"64 x 64 x {16 * n} tile")
    return prop


_wgmma_count = _wgmmas(4)


def _sw64_read(sbo, swizzle):
    return lambda out, ref, st: _same(out, _ss_variant(_SEED9, lambda s: 32 * s, lambda s: 32 * s, sbo, swizzle,
                                                       k=32, stored="64B", row_bytes=64))


kernel_exercise("6.9", run=_runner("gemm_ss", _SEED9, k=32), reference=SOLUTION_6_9, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: out is None and "outside" in str(st), _RAW_HINT),
                          Symptom(_sw64_read(1024, "128B"), _CHAPTER_HINT),
                          Symptom(_sw64_read(1024, "64B"), _SBO_HINT),
                          Symptom(_sw64_read(512, "128B"), _TYPE_HINT),
                          Symptom(_sw64_read(512, "32B"), _TYPE_HINT)],
                properties=[Property(_wgmmas(2))],
                mistakes=[Mistake(_CHAPTER_HINT, answer=PROMPT_6_9), Mistake(_SBO_HINT, answer=PLANTED_6_9_SBO),
                          Mistake(_RAW_HINT, answer=PLANTED_6_9_RAW), Mistake(_TYPE_HINT, answer=PLANTED_6_9_TYPE),
                          Mistake(_TYPE_HINT, answer=PLANTED_6_9_ORDER)])

# 6.10: the K-advance of a 64 x 64 x 128 tile: K spans two 128B swizzle atoms (8 KB apart) per operand
_HEAD_6_10 = ("// Lesson 6 exercise: one warpgroup computes a 64 x 64 x 128 bf16 -> f32 tile D = A * B.\n"
              "// A (64 x 128) and Bt (B transposed, 64 x 128) are row-major (K-major) bf16 in global memory: 256 B "
              "per row.\n")
_ADV_OK = ("desc_sw128(base + (k / 4) * 8192 + 32 * (k % 4)), "
           "db = desc_sw128(base + 16384 + (k / 4) * 8192 + 32 * (k % 4));")
SOLUTION_6_10 = _sub(
    SOLUTION_SS, (_HEAD, _HEAD_6_10),
    (_LOAD_128, "// a 64 x 128 bf16 row-major matrix (256 B per row) from global into two 128B-swizzled 8 KB tiles: "
                "K 0-63, then K 64-127\n"
                "__device__ __forceinline__ void load_tile(unsigned char* tile, const uint4* g) {\n"
                "    for (int i = threadIdx.x; i < 64 * 16; i += blockDim.x) {\n"
                "        const unsigned row = i / 16, chunk = i % 16;\n"
                "        *reinterpret_cast<uint4*>(tile + (chunk / 8) * 8192u + sw128(row, chunk % 8)) = g[i];\n"),
    ("sa + 8192;", "sa + 16384;"), (_LOOP_4, "for (int k = 0; k < 8; ++k)"), (_ADV_128, _ADV_OK))
PROMPT_6_10 = SOLUTION_6_10.replace(_ADV_OK, "desc_sw128(base), db = desc_sw128(base + 16384);   // TODO: K-step k")
PLANTED_6_10_LINEAR = SOLUTION_6_10.replace(_ADV_OK, "desc_sw128(base + 32 * k), db = desc_sw128(base + 16384 + 32 * k);")
PLANTED_6_10_ELEMS = SOLUTION_6_10.replace(_ADV_OK, "desc_sw128(base + (k / 4) * 8192 + 16 * (k % 4)), "
                                                    "db = desc_sw128(base + 16384 + (k / 4) * 8192 + 16 * (k % 4));")
PLANTED_6_10_B = SOLUTION_6_10.replace(_ADV_OK, "desc_sw128(base + (k / 4) * 8192 + 32 * (k % 4)), "
                                                "db = desc_sw128(base + 16384);")
_SEED10 = 610
_K128 = dict(k=128)
_NOADV = ("Every K-step multiplied the same first 16 elements of K: each wgmma must read its own slice of K, moved to by "
          "the descriptors' start addresses.")
_LINEAR_K = ("K-steps 0-3 are right, 4-7 are not: the second half of K is not further along the same 128-byte rows — "
             "a swizzle atom's row holds 64 elements, and K 64-127 lie in the other 8 KB tile.")
_ELEMS = ("The K-steps overlap: one step is 16 bf16 elements of K, and the start address counts bytes.")
_BONLY = ("A advances along K but B does not: both operands are K-major, and both descriptors must step through K "
          "together.")


def _k128(a_off, b_off):
    return lambda out, ref, st: _same(out, _ss_variant(_SEED10, a_off, b_off, **_K128))


kernel_exercise("6.10", run=_runner("gemm_ss", _SEED10, k=128, smem=33 * 1024), reference=SOLUTION_6_10, points=3,
                budget=60,
                symptoms=[Symptom(_k128(lambda s: 0, lambda s: 0), _NOADV),
                          Symptom(_k128(lambda s: 32 * s, lambda s: 32 * s), _LINEAR_K),
                          Symptom(_k128(lambda s: (s // 4) * 8192 + 16 * (s % 4),
                                        lambda s: (s // 4) * 8192 + 16 * (s % 4)), _ELEMS),
                          Symptom(_k128(lambda s: (s // 4) * 8192 + 32 * (s % 4), lambda s: 0), _BONLY)],
                properties=[Property(_wgmmas(8))],
                mistakes=[Mistake(_NOADV, answer=PROMPT_6_10), Mistake(_LINEAR_K, answer=PLANTED_6_10_LINEAR),
                          Mistake(_ELEMS, answer=PLANTED_6_10_ELEMS), Mistake(_BONLY, answer=PLANTED_6_10_B)])

# 6.11: the RS kernel's ldmatrix addressing, A stored as four 32B-swizzled column blocks of 16 K
_SW32_A = ("\n// byte offset of 16-byte chunk `chunk` (0 or 1) of row `row` in a 256-aligned 32B-swizzled tile of "
           "32-byte rows\n__device__ __forceinline__ unsigned sw32(unsigned row, unsigned chunk) {\n"
           "    return row * 32u + ((chunk ^ ((row >> 2) & 1u)) << 4);\n}\n\n"
           "// A (64 x 64 bf16, 128 B per row) from global as four 2 KB column blocks of 16 K each, 32B-swizzled\n"
           "__device__ __forceinline__ void load_a_sw32(unsigned char* tile, const uint4* g) {\n"
           "    for (int i = threadIdx.x; i < 64 * 8; i += blockDim.x) {\n"
           "        const unsigned blk = i / 128, row = (i / 2) % 64, c = i % 2;   // column block, row, chunk in it\n"
           "        *reinterpret_cast<uint4*>(tile + blk * 2048u + sw32(row, c)) = g[row * 8 + 2 * blk + c];\n"
           "    }\n}\n")
_HEAD_6_11 = (_HEAD + "// A is stored for ldmatrix only: 32B-swizzled column blocks (load_a_sw32); Bt as in the chapter.\n")
_LDSM_CHAPTER = '"r"(base + sw128(arow, chunk))'
_LDSM_OK = '"r"(base + (chunk >> 1) * 2048u + sw32(arow, chunk & 1))'
SOLUTION_6_11 = _sub(SOLUTION_RS, (_HEAD, _HEAD_6_11),
                     ("__device__ __forceinline__ unsigned long long desc_sw128",
                      _SW32_A.lstrip("\n") + "\n__device__ __forceinline__ unsigned long long desc_sw128"),
                     ("    load_tile(sa, A);", "    load_a_sw32(sa, A);"), (_LDSM_CHAPTER, _LDSM_OK))
PROMPT_6_11 = SOLUTION_6_11.replace(_LDSM_OK, '"r"(base + arow * 128 + chunk * 16)')
PLANTED_6_11_CHAPTER = SOLUTION_6_11.replace(_LDSM_OK, _LDSM_CHAPTER)
PLANTED_6_11_NOXOR = SOLUTION_6_11.replace(_LDSM_OK, '"r"(base + (chunk >> 1) * 2048u + arow * 32 + (chunk & 1) * 16)')
PLANTED_6_11_SWAP = SOLUTION_6_11.replace("const unsigned arow = 16 * w + 8 * (mat & 1) + lane % 8;",
                                          "const unsigned arow = 16 * w + 8 * (mat >> 1) + lane % 8;").replace(
    "const unsigned chunk = 2 * k + (mat >> 1);", "const unsigned chunk = 2 * k + (mat & 1);")
assert PLANTED_6_11_SWAP.count("mat >> 1") == 1
_SEED11 = 611
_LINEAR = ("D is what ldmatrix reads from a plain row-major A: the A tile is stored in 32-byte-swizzled column "
           "blocks, so each lane's row address must follow the layout load_a_sw32 wrote.")
_CHAPTER_LAYOUT = ("D is what the chapter's 128B-swizzled A would give: this A tile is stored differently (column blocks "
                   "of 16 K, 32-byte rows, 32-byte swizzle) — address the layout this kernel wrote.")
_NOXOR = ("Rows whose bit 2 is 0 come out right: the column blocks are found, but inside a block the 32-byte swizzle "
          "moves a lane's 16-byte chunk — its address must go through the same XOR.")
_SWAP = ("The four matrices arrive in the wrong registers: register j of the A fragment is rows +8·(j & 1) and K "
         "half (j >> 1) — lanes 0-15 address the left 8 columns, lanes 16-31 the right 8.")


def _a_sw32_image(A) -> np.ndarray:
    """A (64 x 64 bf16) as load_a_sw32 stores it: 16-bit words of an 8 KB image."""
    img = np.zeros(4096, np.uint16)
    for row in range(64):
        for chunk in range(8):
            blk, c = chunk >> 1, chunk & 1
            off = blk * 2048 + row * 32 + ((c ^ ((row >> 2) & 1)) << 4)
            img[off // 2:off // 2 + 8] = A[row, 8 * chunk:8 * chunk + 8]
    return img


def _rs_variant(seed: int, address) -> np.ndarray:
    """The model's D of the RS kernel whose ldmatrix lane for (row, 16-byte K chunk) reads ``address(row, chunk)``."""
    A, Bt = _inputs(seed)
    img = _a_sw32_image(A)
    A_eff = np.zeros_like(A)
    for row in range(64):
        for chunk in range(8):
            off = address(row, chunk)
            A_eff[row, 8 * chunk:8 * chunk + 8] = img[off // 2:off // 2 + 8]
    return _model_d([A_eff[:, 16 * k:16 * k + 16] for k in range(4)], [Bt[:, 16 * k:16 * k + 16] for k in range(4)])


def _swapped_fragment_d(seed: int) -> np.ndarray:
    from h100lab.tensorcore import fragments

    A, Bt = _inputs(seed)
    As = []
    for k in range(4):
        regs = fragments.pack_a_fragment(A[:, 16 * k:16 * k + 16], "bf16")
        As.append(fragments.unpack_a_fragment(regs[:, [0, 2, 1, 3]], "bf16").astype(np.uint16))
    return _model_d(As, [Bt[:, 16 * k:16 * k + 16] for k in range(4)])


def _rs_reads(address):
    return lambda out, ref, st: _same(out, _rs_variant(_SEED11, address))


kernel_exercise("6.11", run=_runner("gemm_rs", _SEED11), reference=SOLUTION_6_11, points=3, budget=60,
                symptoms=[Symptom(_rs_reads(lambda r, c: r * 128 + c * 16), _LINEAR),
                          Symptom(_rs_reads(lambda r, c: r * 128 + ((c ^ (r & 7)) << 4)), _CHAPTER_LAYOUT),
                          Symptom(_rs_reads(lambda r, c: (c >> 1) * 2048 + r * 32 + (c & 1) * 16), _NOXOR),
                          Symptom(lambda out, ref, st: _same(out, _swapped_fragment_d(_SEED11)), _SWAP)],
                properties=[Property(_wgmma_count),
                            Property(lambda out, st: None if st.matrix_wavefronts == 64 else
                                     f"the ldmatrix loads took {st.matrix_wavefronts} wavefronts, not one per 8 x 8 "
                                     "matrix (64): they have bank conflicts")],
                mistakes=[Mistake(_LINEAR, answer=PROMPT_6_11), Mistake(_CHAPTER_LAYOUT, answer=PLANTED_6_11_CHAPTER),
                          Mistake(_NOXOR, answer=PLANTED_6_11_NOXOR), Mistake(_SWAP, answer=PLANTED_6_11_SWAP)])

# 6.12: the wgmma.fence of an RS kernel that masks its A fragment in registers (causal, as attention's P x V): the
# last writer of the A registers before each wgmma is the mask, not ldmatrix — the chapter's two places (once before
# the K loop, as the SS kernel has it; after ldmatrix and the accumulators' pin, as the RS kernel has it) leave the
# mask's writes unfenced
_HEAD_6_12 = ("// Lesson 6 exercise: one warpgroup computes a 64 x 64 x 64 bf16 -> f32 tile D = mask(A) * B, A masked\n"
              "// causally in registers (A[row][col] = 0 where col > row, as attention's P x V) between ldmatrix and wgmma.\n"
              "// A (64 x 64) and Bt (B transposed, 64 x 64) are row-major (K-major) bf16 in global memory.\n")
_CAUSAL = ("// the bits of a bf16x2 A register (columns col, col + 1 of row `row`) that a causal mask keeps: col <= row\n"
           "__device__ __forceinline__ unsigned causal(unsigned row, unsigned col) {\n"
           "    return (col <= row ? 0x0000FFFFu : 0u) | (col + 1 <= row ? 0xFFFF0000u : 0u);\n}\n\n")
_LDSM_END = '                     : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(base + sw128(arow, chunk)) : "memory");\n'
_KEEP_D = '#pragma unroll\n        for (int r = 0; r < 32; ++r) asm volatile("" : "+f"(d[r]) :: "memory");\n'
_FENCE_LINE = '        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");    // A registers were just written by ldmatrix\n'
_FENCE_6_12 = '        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");\n'
_MASK = ("        // register j holds row 16w + g + 8(j & 1), columns 16k + 2c + 8(j >> 1) and the next one\n"
         "        a0 &= causal(16 * w + g, 16 * k + 2 * c);\n"
         "        a1 &= causal(16 * w + g + 8, 16 * k + 2 * c);\n"
         "        a2 &= causal(16 * w + g, 16 * k + 2 * c + 8);\n"
         "        a3 &= causal(16 * w + g + 8, 16 * k + 2 * c + 8);\n"
         '        asm volatile("" : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3));   // the masked registers, here\n')
SOLUTION_6_12 = _sub(SOLUTION_RS, (_HEAD, _HEAD_6_12),
                     ("__device__ __forceinline__ unsigned long long desc_sw128", _CAUSAL +
                      "__device__ __forceinline__ unsigned long long desc_sw128"),
                     ("    const unsigned arow = 16 * w + 8 * (mat & 1) + lane % 8;\n",
                      "    const unsigned arow = 16 * w + 8 * (mat & 1) + lane % 8;\n"
                      "    const unsigned g = lane / 4, c = lane % 4;                  // this lane's fragment row, column pair\n"),
                     (_LDSM_END + _KEEP_D + _FENCE_LINE, _LDSM_END + _KEEP_D + _MASK + _FENCE_6_12))
_NO_FENCE_6_12 = SOLUTION_6_12.replace(_FENCE_6_12, "")
_LOOP_6_12 = "#pragma unroll\n    for (int k = 0; k < 4; ++k) {\n"
assert _NO_FENCE_6_12.count(_LOOP_6_12) == 1
#: the prompt: one fence before the K loop, after the accumulators are zeroed (the chapter's SS kernel)
PROMPT_6_12 = _NO_FENCE_6_12.replace(_LOOP_6_12, _FENCE_6_12.replace("        ", "    ", 1) + _LOOP_6_12)
#: after ldmatrix and the accumulators' pin, before the mask: the chapter's RS kernel's sequence
KEEP_6_12 = _NO_FENCE_6_12.replace(_LDSM_END + _KEEP_D, _LDSM_END + _KEEP_D + _FENCE_6_12)
#: right after ldmatrix
LDSM_6_12 = _NO_FENCE_6_12.replace(_LDSM_END, _LDSM_END + _FENCE_6_12)
#: no fence at all
NONE_6_12 = _NO_FENCE_6_12
_SEED12 = 612


def _expect_6_12():
    """D of the tensor-core model on the causally masked A (zeroed elements are +0.0 bf16)."""
    A, Bt = _inputs(_SEED12)
    A = np.where(np.arange(64)[None, :] <= np.arange(64)[:, None], A, np.uint16(0)).astype(A.dtype)
    return {"d": _model_d([A[:, 16 * k:16 * k + 16] for k in range(4)], [Bt[:, 16 * k:16 * k + 16] for k in range(4)])}


_FENCE_NONE = ("A warp's first wgmma must follow a wgmma.fence: the fence orders the registers the wgmma reads after "
               "every instruction that wrote them.")
_FENCE_WHERE = ("The A registers were written after the last wgmma.fence: each K-step, which instruction is the last to "
                "write the registers the wgmma reads — ldmatrix, or what comes after it?")
kernel_exercise("6.12", run=_runner("gemm_rs", _SEED12), expect=_expect_6_12, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, err: out is None and "without a wgmma.fence" in str(err), _FENCE_NONE),
                          Symptom(lambda out, ref, err: out is None and "after the last wgmma.fence" in str(err),
                                  _FENCE_WHERE)],
                properties=[Property(_wgmma_count)],
                must_contain=[(r"ldmatrix", "keep the ldmatrix loads: the exercise is about ordering the writes to the "
                                            "A registers")],
                mistakes=[Mistake(_FENCE_WHERE, answer=PROMPT_6_12), Mistake(_FENCE_WHERE, answer=KEEP_6_12),
                          Mistake(_FENCE_WHERE, answer=LDSM_6_12),
                          Mistake(_FENCE_NONE, answer=NONE_6_12)])
