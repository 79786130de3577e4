"""Exercise set 4 (chapter 4, "Tensor maps").

Every reference answer is computed by the model the chapter teaches (h100lab.tma, h100lab.memory) or, for
a kernel exercise, by running the solution kernel on the emulator in the grader's process (4.9, 4.10) or by the
model of what the kernel must deliver (4.11: h100lab.tma.load on maps encoded with each tensor's parameters) —
never typed in. The notebook states each exercise's parameters in its text; the same values are defined
here for the reference. The student edition imports nothing from this module.
"""
from __future__ import annotations

import numpy as np

from ..kernels import KernelRun, Property, Symptom, kernel_exercise
from ..registry import Mistake, exercise

# ---- the exercises' data (shared with solutions/04-tensormap.md) ----------------------------------
#: 4.1: a K-major bf16 tile, 64 elements (128 B) per row, 64 rows, 128B swizzle, loaded at shared address 0
E1 = dict(dtype="BFLOAT16", rank=2, global_address=0, global_dim=[4096, 4096], global_strides=[8192],
          box_dim=[64, 64], element_strides=[1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_128B")
E1_ELEMENT = (13, 5)          # (column, row) = box index innermost first
#: 4.2: an NHWC fp16 activation tensor with C = 20 channels, rows padded to the next 16-byte multiple
E2_SHAPE_NHWC = (2, 7, 9, 20)
#: 4.3: five encodings; which does the sm_90 driver refuse?
E3_CANDIDATES = [
    dict(dtype="FLOAT32", rank=2, global_address=0, global_dim=[1000, 1000], global_strides=[4000],
         box_dim=[32, 32], element_strides=[1, 1], swizzle="128B"),
    dict(dtype="FLOAT32", rank=2, global_address=0, global_dim=[1000, 1000], global_strides=[4008],
         box_dim=[32, 32], element_strides=[1, 1], swizzle="128B"),
    dict(dtype="FLOAT16", rank=2, global_address=0, global_dim=[1000, 1000], global_strides=[2016],
         box_dim=[64, 32], element_strides=[1, 1], swizzle="64B"),
    dict(dtype="UINT8", rank=3, global_address=0, global_dim=[64, 64, 64], global_strides=[64, 4096],
         box_dim=[64, 16, 4], element_strides=[1, 4, 8], swizzle="64B"),
    dict(dtype="INT32", rank=2, global_address=32, global_dim=[64, 64], global_strides=[256], box_dim=[16, 8],
         element_strides=[1, 1], swizzle="NONE", oob_fill="NAN_REQUEST_ZERO_FMA"),
]
#: 4.4: a 6 × 10 fp16 tensor (rows padded to 32 B) whose element (r, c) holds 10·r + c; box {8, 4} at (8, -2)
#: (column 8 = 16 bytes: a box must start on a 16-byte granule of dimension 0, or the H200 faults)
E4_COORDS = (8, -2)
#: 4.5: element strides
E5 = dict(dtype="FLOAT32", rank=2, global_address=0, global_dim=[256, 256], global_strides=[1024],
          box_dim=[32, 20], element_strides=[1, 3])
#: 4.6: a narrow box under a swizzle
E6 = dict(dtype="BFLOAT16", rank=2, global_address=0, global_dim=[256, 256], global_strides=[512],
          box_dim=[16, 10], element_strides=[1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_64B")
#: 4.7: 32 rows of 128 B, read one 16-byte column by 32 lanes
E7_ROWS = 32
#: 4.8: a 16-row box of 48-byte rows, rows 4096 B apart, with L2_128B promotion
E8 = dict(dtype="UINT8", rank=2, global_address=1 << 20, global_dim=[4096, 64], global_strides=[4096],
          box_dim=[48, 16], element_strides=[1, 1], l2_promotion="L2_128B")


def e4_tensor() -> np.ndarray:
    """The tensor of exercise 4.4: 6 rows of 16 fp16 slots (10 used), element (r, c) = 10 r + c."""
    g = np.zeros((6, 16), np.uint16)
    g[:, :10] = 10 * np.arange(6)[:, None] + np.arange(10)[None, :]
    return g


def e4_map():
    from h100lab import tma

    return tma.encode_tiled("FLOAT16", 2, 0, [10, 6], [32], [8, 4], [1, 1],
                            oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA")


def column_wavefronts(swizzle: str, rows: int = E7_ROWS) -> int:
    """Wavefronts of 32 lanes reading 16 bytes each from chunk 0 of ``rows`` 128-byte rows."""
    from h100lab import tma
    from h100lab.memory.banks import wavefronts

    tm = tma.encode_tiled("BFLOAT16", 2, 0, [64, 64], [128], [64, rows], [1, 1], swizzle=swizzle)
    return int(wavefronts(tma.column_addresses(tm, 0, width=16), 16))


# ---- reference answers --------------------------------------------------------------------------
def _bytes_not_elements(v, ref):
    return isinstance(v, (int, np.integer)) and v * 4 == ref


@exercise("4.1", points=2, hint="Find the element's byte offset in the box before any swizzle, then apply the "
          "128B pattern: which 16-byte chunk of its 128-byte line does it move to?",
          mistakes=[Mistake("That is the address before the swizzle: the TMA writes the element elsewhere in its "
                            "line. Which chunk does the 128B pattern send it to?", answer=5 * 128 + 13 * 2),
                    Mistake("Column 13 is 13 elements of 2 bytes, not 13 bytes.", answer=5 * 128 + 13)])
def _offset():
    from h100lab import tma

    return tma.smem_address(tma.encode_tiled(**E1), E1_ELEMENT)


@exercise("4.2", points=2, hint="globalStrides has rank - 1 byte strides, innermost dimension first, each a "
          "multiple of 16 bytes.",
          mistakes=[Mistake("Strides are in bytes, and every one must be a multiple of 16: pad a pixel's channels "
                            "first.", answer=[40, 360, 2520]),
                    Mistake("Strides are bytes, not elements.", answer=[24, 216, 1512]),
                    Mistake("Dimension 0's stride is implicit (the element size): list rank - 1 strides.",
                            answer=[2, 48, 432, 3024])])
def _strides():
    from h100lab import tma

    n, h, w, c = E2_SHAPE_NHWC
    row = c * 2
    pad = -row % 16
    return list(tma.row_major_strides([c, w, h, n], 2, pad))


@exercise("4.3", points=2, unordered=True, hint="Check each rule: strides a multiple of 16 bytes, the inner box "
          "within the swizzle span, elementStrides at most 8, the NaN fill only for floating-point types.",
          mistakes=[Mistake("An element stride up to 8 is allowed, and dimension 0's is ignored anyway.",
                            when=lambda v, ref: 3 in list(v))])
def _refused():
    from h100lab import tma

    return [i for i, c in enumerate(E3_CANDIDATES) if not tma.verdict(**c).ok]


@exercise("4.4", points=2, hint="Which elements of the box lie outside the tensor, and what does the NaN fill "
          "write into a 2-byte slot?",
          mistakes=[Mistake("This map asks for the NaN fill, not zeros: out-of-bounds slots hold the OOB-NaN "
                            "pattern.", when=lambda v, ref: np.array_equal(np.where(np.array(ref) == 0x7FF7, 0,
                                                                                      np.array(ref)), np.array(v)))])
def _oob_box():
    from h100lab import tma

    return tma.load(e4_map(), e4_tensor(), E4_COORDS).view(np.uint16).reshape(4, 8).tolist()


@exercise("4.5", points=1, hint="How many rows does an element stride of 3 deliver from a box of 20 rows?",
          mistakes=[Mistake("An element stride takes every 3rd row: fewer rows arrive than the box spans.",
                            answer=32 * 20 * 4),
                    Mistake("Count bytes, not elements (FP32 is 4 bytes).", when=_bytes_not_elements)])
def _tx():
    from h100lab import tma

    return tma.encode_tiled(**E5).tx_bytes


@exercise("4.6", points=1, hint="A row narrower than the swizzle span still occupies the whole span in shared "
          "memory.", mistakes=[Mistake("That is the data size; the footprint pads every row to the swizzle span.",
                                       answer=16 * 10 * 2)])
def _footprint():
    from h100lab import tma

    return tma.encode_tiled(**E6).smem_bytes


@exercise("4.7", points=2, hint="16-byte loads are served a quarter-warp (8 lanes) at a time; count the distinct "
          "4-byte words each bank must deliver per phase.",
          mistakes=[Mistake("16-byte loads run in phases of 8 lanes: even a perfect read takes 4 wavefronts.",
                            when=lambda v, ref: list(v)[1:] == [1])])
def _wavefronts():
    return [column_wavefronts("CU_TENSOR_MAP_SWIZZLE_NONE"), column_wavefronts("CU_TENSOR_MAP_SWIZZLE_128B")]


@exercise("4.8", points=1, hint="With promotion the L2 fetches whole aligned blocks of the promotion size around "
          "every row it touches.", mistakes=[Mistake("That is the data the box needs; L2 promotion fetches more.",
                                                     answer=16 * 48)])
def _promotion():
    from h100lab import tma

    tm = tma.encode_tiled(**E8)
    return tma.L2Cache(1 << 20).read_segments(tma.global_segments(tm, [0, 0]), promotion=128).hbm_bytes


# ---- kernel exercises ----------------------------------------------------------------------------
_KERNEL_HEAD = r"""#include <h100lab/tensormap.cuh>
"""

#: 4.9: a bf16 box of 64 x 16 loaded by one thread; status = 1 when the barrier's phase completed
SOLUTION_4_9 = _KERNEL_HEAD + r"""
#define BOX_X 64                           // bf16 elements per row (128 bytes)
#define BOX_Y 16                           // rows
#define TX_BYTES (BOX_X * BOX_Y * 2)       // what the box delivers: elements x sizeof(bf16)

extern "C" __global__ void load_box(const __grid_constant__ CUtensorMap map, int x, int y,
                                    unsigned short* out, int* status) {
    __shared__ alignas(1024) unsigned short tile[BOX_X * BOX_Y];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(TX_BYTES) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(d), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x), "r"(y), "r"(b) : "memory");
    }
    __syncthreads();
    unsigned done = 0;
    for (int i = 0; i < 32 && !done; ++i)          // a bounded wait: gives up instead of hanging
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(b) : "memory");
    if (threadIdx.x == 0) status[0] = done;
    __syncthreads();
    for (int i = threadIdx.x; i < BOX_X * BOX_Y; i += blockDim.x) out[i] = tile[i];
}
"""
PROMPT_4_9 = SOLUTION_4_9.replace("#define TX_BYTES (BOX_X * BOX_Y * 2)       // what the box delivers: elements x "
                                  "sizeof(bf16)", "#define TX_BYTES (BOX_X * BOX_Y)")
PLANTED_4_9 = SOLUTION_4_9.replace("BOX_X * BOX_Y * 2)", "BOX_X * BOX_Y * 4)")


def _run_4_9(program):
    from h100lab import emu

    x = np.random.default_rng(49).integers(0, 1 << 16, (64, 128), dtype=np.uint16)
    g = emu.to_device(x)
    m = emu.encode_tiled("BFLOAT16", 2, g, [128, 64], [256], [64, 16], [1, 1], swizzle="128B")
    out, st = emu.zeros(64 * 16, np.uint16), emu.zeros(1, np.int32)
    stats = emu.launch(program.function("load_box"), 1, 64, m, np.int32(64), np.int32(24), out, st)
    return KernelRun({"image": out.to_host(), "status": st.to_host()}, stats)


_TX_HINT = ("The barrier's phase never completed: expect_tx must announce exactly the bytes the copy delivers — the "
            "box's elements times the size of this map's element type.")
kernel_exercise("4.9", run=_run_4_9, reference=SOLUTION_4_9, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: int(out["status"][0]) == 0, _TX_HINT)],
                properties=[Property(lambda out, st: None if st.tma_bytes == 64 * 16 * 2 else
                                     f"the copies delivered {st.tma_bytes} bytes, not one box")],
                mistakes=[Mistake(_TX_HINT, answer=PROMPT_4_9), Mistake(_TX_HINT, answer=PLANTED_4_9)])

#: 4.10: read a 128B-swizzled tile back in row-major order
SOLUTION_4_10 = _KERNEL_HEAD + r"""
#define BOX_X 64                           // bf16 per row: one 128-byte line
#define BOX_Y 8

// The byte offset, inside the 1024-byte aligned tile, at which the TMA stored byte `off` of the
// row-major box under CU_TENSOR_MAP_SWIZZLE_128B.
__device__ __forceinline__ unsigned swizzled(unsigned off) {
    return off ^ (((off >> 7) & 7u) << 4);
}

extern "C" __global__ void unswizzle(const __grid_constant__ CUtensorMap map, unsigned short* out) {
    __shared__ alignas(1024) unsigned short tile[BOX_X * BOX_Y];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(BOX_X * BOX_Y * 2) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {0, 0}], [%2];"
                     :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(tile))),
                        "l"(reinterpret_cast<unsigned long long>(&map)), "r"(b) : "memory");
    }
    __syncthreads();
    asm volatile("{\n\t.reg .pred p;\nW:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t@!p bra W;\n\t}"
                 :: "r"(b) : "memory");
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(tile);
    for (int e = threadIdx.x; e < BOX_X * BOX_Y; e += blockDim.x)       // element (row e / 64, column e % 64)
        out[e] = *reinterpret_cast<const unsigned short*>(bytes + swizzled(2 * e));
}
"""
PROMPT_4_10 = SOLUTION_4_10.replace("    return off ^ (((off >> 7) & 7u) << 4);", "    return off;   // TODO")
PLANTED_4_10 = SOLUTION_4_10.replace("(off >> 7) & 7u", "(off >> 7) & 3u")


def _run_4_10(program):
    from h100lab import emu

    x = np.random.default_rng(410).integers(0, 1 << 16, (8, 64), dtype=np.uint16)
    g = emu.to_device(x)                   # keep the tensor alive while the kernel reads it
    m = emu.encode_tiled("BFLOAT16", 2, g, [64, 8], [128], [64, 8], [1, 1], swizzle="128B")
    out = emu.zeros(512, np.uint16)
    stats = emu.launch(program.function("unswizzle"), 1, 128, m, out)
    return KernelRun({"tile": out.to_host().reshape(8, 64)}, stats)


_NO_SWZ = ("Row 0 is right and the others are not: the TMA stored each 16-byte chunk of line r somewhere else in "
           "that line. Which address bits choose the new chunk?")
_MASK = ("Lines 0-3 are right, lines 4-7 are not: the 128B pattern repeats every 8 lines of 128 bytes, so it reads "
         "more line bits than the 64B pattern does.")
kernel_exercise("4.10", run=_run_4_10, reference=SOLUTION_4_10, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: np.array_equal(out["tile"][:4], ref["tile"][:4]), _MASK),
                          Symptom(lambda out, ref, st: np.array_equal(out["tile"][0], ref["tile"][0]), _NO_SWZ)],
                mistakes=[Mistake(_NO_SWZ, answer=PROMPT_4_10), Mistake(_MASK, answer=PLANTED_4_10)])

#: 4.11: one host map re-pointed at every tensor of a ragged batch (a map per tensor, edited in one pass), then
#: used tensor after tensor: the row pitch is a third edited field, and the publication must cover every map
E11_ROWS = (8, 3, 6, 1)                    # the batch the grader runs: rows of each tensor (32 fp32 used per row)
E11_PITCHES = (128, 256, 192, 144)         # bytes between consecutive rows of each tensor
SOLUTION_4_11 = r"""
// Lesson 4 exercise: one host-encoded map re-pointed on the device at every tensor of a ragged batch. Thread 0
// copies the map once per tensor (maps[j]: 128 bytes in global memory) and edits three fields of each copy with
// tensormap.replace: the tensor's address, its row count (global_dim of dimension 1) and its row pitch in bytes.
// Then the CTA loads the box at (0, 0) of every tensor through its map, one tensor after another; rows past a
// tensor's row count arrive as the out-of-bounds fill. tiles[j] receives tensor j's image.
#include <h100lab/tensormap.cuh>

#define BOX_X 32          // box: 32 fp32 (128 bytes) x 8 rows = 1024 bytes, no swizzle
#define BOX_Y 8
#define BOX_BYTES (BOX_X * BOX_Y * 4)

__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred done;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra WAIT_%=;\n\t}"
                 :: "r"(bar), "r"(parity) : "memory");
}

extern "C" __global__ void ragged_batch(const __grid_constant__ CUtensorMap map, int n, CUtensorMap* __restrict__ maps,
                                        const unsigned long long* __restrict__ bases, const int* __restrict__ rows,
                                        const unsigned long long* __restrict__ pitches, float* __restrict__ tiles) {
    __shared__ alignas(128) float tile[BOX_X * BOX_Y];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned bar_a = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int j = 0; j < n; ++j) {
            const uint4* from = reinterpret_cast<const uint4*>(&map);
            uint4* to = reinterpret_cast<uint4*>(maps + j);
            for (int i = 0; i < 8; ++i) to[i] = from[i];                      // maps[j] = the host's map
            asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;"
                         :: "l"(maps + j), "l"(bases[j]) : "memory");
            asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;"
                         :: "l"(maps + j), "r"(rows[j]) : "memory");
            asm volatile("tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;"
                         :: "l"(maps + j), "l"(pitches[j]) : "memory");       // between rows: stride 0, in bytes
        }
        asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");   // publish the edits
    }
    for (int j = 0; j < n; ++j) {
        if (threadIdx.x == 0) {
            asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(maps + j) : "memory");
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(BOX_BYTES) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(dst), "l"(maps + j), "r"(0), "r"(0), "r"(bar_a) : "memory");
        }
        wait_parity(bar_a, j & 1);                                            // box j has landed
        for (int i = threadIdx.x; i < BOX_X * BOX_Y; i += blockDim.x) tiles[j * BOX_X * BOX_Y + i] = tile[i];
        __syncthreads();                                                      // box j + 1 overwrites the tile
    }
}
"""
_RELEASE = ('        asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");   // publish the edits\n')
_ACQUIRE = ('            asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(maps + j) : '
            '"memory");\n')
_ACQUIRE_ONCE = '        asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(maps) : "memory");\n'
_PITCH = ('            asm volatile("tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;"\n'
          '                         :: "l"(maps + j), "l"(pitches[j]) : "memory");       // between rows: stride 0, '
          'in bytes\n')
_EDIT_LOOP = "    if (threadIdx.x == 0) {\n        for (int j = 0; j < n; ++j) {\n"
assert all(x in SOLUTION_4_11 for x in (_RELEASE, _ACQUIRE, _PITCH, _EDIT_LOOP))
#: the kernel as its author wrote it: fenced before editing (and acquiring only the first map), no pitch edit
PROMPT_4_11 = (SOLUTION_4_11.replace(_RELEASE, "").replace(_ACQUIRE, "")
               .replace(_PITCH, "            // TODO: tensor j's rows are pitches[j] bytes apart\n")
               .replace(_EDIT_LOOP, "    if (threadIdx.x == 0) {\n" + _RELEASE + _ACQUIRE_ONCE
                        + "        for (int j = 0; j < n; ++j) {\n"))
#: released after the edits, then only the first map acquired, once, before the copies
PLANTED_4_11_ONE = SOLUTION_4_11.replace(_ACQUIRE, "").replace(_RELEASE, _RELEASE + _ACQUIRE_ONCE)
#: every map acquired right after its edits, before the release
PLANTED_4_11_EARLY = SOLUTION_4_11.replace(_ACQUIRE, "").replace(_PITCH, _PITCH + _ACQUIRE.replace("    asm", "asm", 1))
#: the fences right, the row pitch never replaced
PLANTED_4_11_PITCH = SOLUTION_4_11.replace(_PITCH, "")
#: the row pitch written as the stride of dimension 1 (ord 1)
PLANTED_4_11_ORD = SOLUTION_4_11.replace("global_stride.global.b1024.b64 [%0], 0, %1", "global_stride.global.b1024.b64 "
                                                                                     "[%0], 1, %1")
_RUN_4_11: dict = {}      # where the last run's maps lay, so that a symptom can tell which map a copy failed on


def _batch_4_11():
    """Tensor j: 16 rows of pitch_j bytes, element (r, c) = 1000 j + r * pitch_j / 4 + c."""
    return [(1000 * j + np.arange(16 * p // 4)).astype(np.float32).reshape(16, p // 4)
            for j, p in enumerate(E11_PITCHES)]


def _run_4_11(program):
    from h100lab import emu

    hosts = _batch_4_11()
    mats = [emu.to_device(h) for h in hosts]
    m = emu.encode_tiled("FLOAT32", 2, mats[0], [32, 16], [E11_PITCHES[0]], [32, 8], [1, 1])   # tensor 0 only
    n = len(hosts)
    maps, tiles = emu.zeros((n, 128), np.uint8), emu.zeros((n, 8, 32), np.float32)
    _RUN_4_11["maps"] = maps.ptr
    stats = emu.launch(program.function("ragged_batch"), 1, 64, m, np.int32(n), maps,
                       emu.to_device(np.array([a.ptr for a in mats], np.uint64)),
                       emu.to_device(np.array(E11_ROWS, np.int32)), emu.to_device(np.array(E11_PITCHES, np.uint64)),
                       tiles)
    return KernelRun({"tiles": tiles.to_host()}, stats)


def _images_4_11(pitches) -> np.ndarray:
    """The model's image of every tensor's box (0, 0) through a map with the tensor's rows and the given pitches."""
    from h100lab import tma

    return np.stack([tma.load(tma.encode_tiled("FLOAT32", 2, 0, [32, r], [p], [32, 8], [1, 1]), h, [0, 0])
                     .view(np.float32).reshape(8, 32) for h, r, p in zip(_batch_4_11(), E11_ROWS, pitches)])


def _expect_4_11():
    return {"tiles": _images_4_11(E11_PITCHES)}


def _fence_report(err, words: str) -> bool:
    return type(err).__name__ == "ProxyFenceError" and words in str(getattr(err, "rule", err))


def _failed_map(err) -> int | None:
    """Which of the maps the copy that stopped the kernel read (from the address in the emulator's report)."""
    import re

    m = re.search(r"tensor map at 0x([0-9a-f]+)", str(getattr(err, "rule", err)))
    base = _RUN_4_11.get("maps")
    return None if m is None or base is None else (int(m.group(1), 16) - base) // 128


_UNRELEASED = ("The TMA read a map whose edits no release followed: a release publishes only the generic writes its "
               "thread made before it, so a release placed before the tensormap.replace edits publishes none of them.")
_EACH = ("The first copies worked, a later one read a map that was never acquired: an acquire covers only the 128-byte "
         "map whose address it names, so every map needs its own acquire, after the release and before its copy.")
_ORDER = ("The release is there, but the map was acquired before it: an acquire takes in what a release has already "
          "published, so it must come after the release (and before the copy that reads the map).")
_ORD = ("The edited map has two strides for a 2-D tensor: the ord of global_stride names the stride between indices "
        "of dimension ord + 1 — which dimension does the row index?")
_PITCH_HINT = ("Every box was read as if its tensor's rows were 128 bytes apart, the pitch of the host's map: the row "
               "pitch is a field of the map too, and each tensor has its own.")
kernel_exercise("4.11", run=_run_4_11, expect=_expect_4_11, points=3, budget=60,
                must_contain=[(r"tensormap\.replace", "keep the tensormap.replace edits: the exercise is about editing "
                                                      "and publishing them")],
                symptoms=[Symptom(lambda out, ref, err: out is None and _fence_report(err, "after the edit and"),
                                  _UNRELEASED),
                          Symptom(lambda out, ref, err: out is None and _fence_report(err, "the release is there")
                                  and (_failed_map(err) or 0) > 0, _EACH),
                          Symptom(lambda out, ref, err: out is None and _fence_report(err, "the release is there"),
                                  _ORDER),
                          Symptom(lambda out, ref, err: out is None and "globalStrides must have" in
                                  str(getattr(err, "rule", err)), _ORD),
                          Symptom(lambda out, ref, st: np.array_equal(out["tiles"],
                                                                      _images_4_11([E11_PITCHES[0]] * len(E11_ROWS))),
                                  _PITCH_HINT)],
                properties=[Property(lambda out, st: None if st.tma_bytes == len(E11_ROWS) * 1024 else
                                     f"the copies delivered {st.tma_bytes} bytes, not one box per tensor")],
                mistakes=[Mistake(_UNRELEASED, answer=PROMPT_4_11), Mistake(_EACH, answer=PLANTED_4_11_ONE),
                          Mistake(_ORDER, answer=PLANTED_4_11_EARLY), Mistake(_PITCH_HINT, answer=PLANTED_4_11_PITCH),
                          Mistake(_ORD, answer=PLANTED_4_11_ORD)])
