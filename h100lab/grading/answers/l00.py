"""Exercise set 0 (chapter 0, "How to use this book"): launching a kernel — blocks, idle threads, the
sectors the emulator counts, the least time memory allows, printf lines — and three kernel exercises on
the emulator: fix vector_add's index, add its bounds guard, and make every block print its share.

Reference answers are computed from the model (h100lab.specs, h100lab.memory.coalescing) or by running the
reference kernel on the emulator in the grader's process, never typed in.
"""
from __future__ import annotations

import numpy as np

from ..kernels import KernelRun, Property, Symptom, kernel_exercise
from ..registry import Mistake, exercise

N_0_1, BLOCK_0_1 = 10_000, 256


@exercise("0.1", hint="Every element needs a thread, and a grid is made of whole blocks.",
          mistakes=[Mistake("Integer division drops the last, partial block: its elements would get no thread.",
                            when=lambda v, ref: v == N_0_1 // BLOCK_0_1)])
def _blocks():
    return -(-N_0_1 // BLOCK_0_1)


@exercise("0.2", hint="The grid has whole blocks; count the threads of the grid and the elements that have work.",
          mistakes=[Mistake("That is how many threads of the last block *do* have an element; the question asks for "
                            "those that do not.", when=lambda v, ref: v == N_0_1 % BLOCK_0_1)])
def _idle():
    return -(-N_0_1 // BLOCK_0_1) * BLOCK_0_1 - N_0_1


def _sectors_vector_add(n: int) -> int:
    """Global sectors of vector_add over n floats: per warp, the sectors of a, b (loads) and c (store), from the
    coalescing model (h100lab.memory.coalescing.sectors, 32-byte sectors), arrays 256-byte aligned."""
    from h100lab.memory.coalescing import sectors

    total = 0
    for w0 in range(0, n, 32):
        lanes = [4 * i if i < n else None for i in range(w0, w0 + 32)]     # None: a lane the guard switched off
        total += 3 * sectors(lanes).sectors
    return total


@exercise("0.3", hint="A warp's access is served in 32-byte sectors; vector_add touches three arrays.",
          mistakes=[Mistake("That is a count of bytes; the emulator counts 32-byte sectors.",
                            when=lambda v, ref: v == 3 * 4 * N_0_1),
                    Mistake("The store of c moves sectors too, not only the loads of a and b.",
                            when=lambda v, ref: v == ref * 2 // 3),
                    Mistake("That counts elements (or requests); a sector holds eight floats.",
                            when=lambda v, ref: v == 3 * N_0_1)])
def _sectors():
    return _sectors_vector_add(N_0_1)


N_0_4 = 1 << 26


@exercise("0.4", rtol=1e-3, hint="Count the bytes the kernel must move per element (reads and writes), then divide "
          "by the H200's HBM bandwidth; answer in microseconds.",
          mistakes=[Mistake("The result c is written to memory too: count its bytes.",
                            when=lambda v, ref: abs(v - ref * 2 / 3) <= 1e-3 * ref),
                    Mistake("Check the unit: the answer is in microseconds.",
                            when=lambda v, ref: any(abs(v - ref * f) <= 1e-3 * ref * f for f in (1e3, 1e-3, 1e-6)))])
def _min_time_us():
    from h100lab.specs import H200_SXM

    return 3 * 4 * N_0_4 / H200_SXM.hbm_bandwidth * 1e6


@exercise("0.5", hint="A block of 100 threads is made of whole warps; which of its threads have threadIdx.x % 32 == 0?",
          mistakes=[Mistake("The last warp of a 100-thread block is partial but still has a lane 0.",
                            when=lambda v, ref: v == 3 * (100 // 32))])
def _printf_lines():
    return 3 * len([t for t in range(100) if t % 32 == 0])


# ------------------------------------------------------------------------------------------------------------
# Kernel exercises on vector_add's relatives. 0.6: two elements per thread, chosen so that each warp instruction
# reads consecutive elements (the chapter's one-element index does not say which two); 0.7: a matrix add on a 2-D
# grid whose rows are padded to a leading dimension, so the guard has two bounds and the padding must stay untouched.

VECTOR_ADD2 = r"""
// c = a + b, each thread adding two elements: a block of blockDim.x threads covers the 2 * blockDim.x consecutive
// elements starting at blockIdx.x * 2 * blockDim.x. Launched with ceil(n / (2 * blockDim.x)) blocks.
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
    const int i = blockIdx.x * 2 * blockDim.x + threadIdx.x;     // this thread's two elements: i and j
    const int j = i + blockDim.x;
    if (i < n) c[i] = a[i] + b[i];
    if (j < n) c[j] = a[j] + b[j];
}
"""
_IJ_0_6 = ("    const int i = blockIdx.x * 2 * blockDim.x + threadIdx.x;     // this thread's two elements: i and j\n"
           "    const int j = i + blockDim.x;\n")
assert _IJ_0_6 in VECTOR_ADD2


def _ij_0_6(i: str, j: str) -> str:
    return VECTOR_ADD2.replace(_IJ_0_6, f"    const int i = {i};     // this thread's two elements: i and j\n"
                                        f"    const int j = {j};\n")


#: the prompt: each thread takes two neighbouring elements (right values, every warp instruction strided)
PROMPT_0_6 = _ij_0_6("2 * (blockIdx.x * blockDim.x + threadIdx.x)", "i + 1")
#: the chapter's one-element index with the second element a block further on: blocks overlap, the end is never added
CHAPTER_0_6 = _ij_0_6("blockIdx.x * blockDim.x + threadIdx.x", "i + blockDim.x")
#: the block's start right, the second element the neighbour: threads of a block overlap
NEIGHBOUR_0_6 = _ij_0_6("blockIdx.x * 2 * blockDim.x + threadIdx.x", "i + 1")
#: the block forgotten: every block adds the first block's elements
THREAD_ONLY_0_6 = _ij_0_6("threadIdx.x", "i + blockDim.x")
N_HIDDEN, BLOCK_0_6 = 3000, 256


def _vector_add2_run(program):
    from h100lab import emu

    from ..kernels import MAX_INSTRUCTIONS

    rng = np.random.default_rng(17)
    a, b = rng.standard_normal(N_HIDDEN).astype(np.float32), rng.standard_normal(N_HIDDEN).astype(np.float32)
    c = emu.zeros(N_HIDDEN, np.float32)
    stats = emu.launch(program.function("vector_add"), -(-N_HIDDEN // (2 * BLOCK_0_6)), BLOCK_0_6, emu.to_device(a),
                       emu.to_device(b), c, np.int32(N_HIDDEN), max_instructions=MAX_INSTRUCTIONS)
    return KernelRun({"c": c.to_host()}, stats)


def _expect_0_6():
    rng = np.random.default_rng(17)
    a, b = rng.standard_normal(N_HIDDEN).astype(np.float32), rng.standard_normal(N_HIDDEN).astype(np.float32)
    return {"c": a + b}


def _written(i_of, j_of) -> np.ndarray:
    """Which elements a kernel with first element i_of(block, thread) and second j_of(i) writes (NumPy)."""
    blocks, t = np.meshgrid(np.arange(-(-N_HIDDEN // (2 * BLOCK_0_6))), np.arange(BLOCK_0_6), indexing="ij")
    i = i_of(blocks, t)
    mask = np.zeros(N_HIDDEN, bool)
    for k in (i, j_of(i)):
        mask[k[k < N_HIDDEN]] = True
    return mask


def _writes_as(i_of, j_of):
    """Symptom: exactly the elements that kernel writes are right (the others were never added)."""
    def test(out, ref, st):
        good = out["c"].view(np.uint32) == ref["c"].view(np.uint32)
        return bool(np.array_equal(good, _written(i_of, j_of)))
    return test


OVERLAP_HINT = ("The first elements are right and the end of the array was never added: a block now covers "
                "2·blockDim.x elements, so neighbouring blocks overlap when each starts blockDim.x after the last.")
FIRST_BLOCK_HINT = "Only the first block's elements are right: which elements does thread 0 of block 1 own?"
NEIGHBOUR_HINT = ("Inside each block, the second half is mostly never added: two threads of a block must never "
                  "share an element, and together they must cover all 2·blockDim.x of the block's.")
STRIDED_HINT = ("Each warp instruction reads every other element, so it touches twice the sectors its data needs "
                "and the next instruction reads the same sectors again: neighbouring lanes should read neighbouring "
                "elements in each of the two instructions.")


def _coalesced(out, st):
    want = _sectors_vector_add(N_HIDDEN)
    return None if st.global_sectors == want else (f"the kernel moved {st.global_sectors} global sectors where "
                                                   f"{want} suffice. {STRIDED_HINT}")


kernel_exercise("0.6", run=_vector_add2_run, expect=_expect_0_6, points=2,
                hint="Each thread owns two elements of its block's 2·blockDim.x; which two, so that a warp's loads "
                     "are consecutive?",
                symptoms=[Symptom(_writes_as(lambda blk, t: t + 0 * blk, lambda i: i), FIRST_BLOCK_HINT),
                          Symptom(_writes_as(lambda blk, t: t + 0 * blk, lambda i: i + BLOCK_0_6), FIRST_BLOCK_HINT),
                          Symptom(_writes_as(lambda blk, t: blk * BLOCK_0_6 + t, lambda i: i + BLOCK_0_6), OVERLAP_HINT),
                          Symptom(_writes_as(lambda blk, t: blk * 2 * BLOCK_0_6 + t, lambda i: i + 1), NEIGHBOUR_HINT)],
                properties=[Property(_coalesced)],
                mistakes=[Mistake(STRIDED_HINT, answer=PROMPT_0_6), Mistake(OVERLAP_HINT, answer=CHAPTER_0_6),
                          Mistake(NEIGHBOUR_HINT, answer=NEIGHBOUR_0_6), Mistake(FIRST_BLOCK_HINT, answer=THREAD_ONLY_0_6)])

MATRIX_ADD = r"""
// C = A + B for rows x cols matrices stored row by row with a leading dimension ld >= cols (row r starts at
// element r * ld; elements cols .. ld - 1 of a row are padding that belongs to someone else). A 2-D grid of
// 16 x 16 blocks, ceil(cols / 16) x ceil(rows / 16) of them.
extern "C" __global__ void matrix_add(const float* a, const float* b, float* c, int rows, int cols, int ld) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows && col < cols) c[row * ld + col] = a[row * ld + col] + b[row * ld + col];
}
"""
_GUARD_0_7 = "    if (row < rows && col < cols) c[row * ld + col] = a[row * ld + col] + b[row * ld + col];\n"
assert _GUARD_0_7 in MATRIX_ADD


def _guard_0_7(cond: str | None) -> str:
    body = "c[row * ld + col] = a[row * ld + col] + b[row * ld + col];"
    return MATRIX_ADD.replace(_GUARD_0_7, f"    {'if (' + cond + ') ' if cond else ''}{body}\n")


PROMPT_0_7 = _guard_0_7(None)
#: only the rows guarded: the threads past the last column write the row's padding
ROWS_ONLY_0_7 = _guard_0_7("row < rows")
#: the columns bounded by the leading dimension: the padding is written
LD_0_7 = _guard_0_7("row < rows && col < ld")
#: the last row and column left out
OFF_BY_ONE_0_7 = _guard_0_7("row < rows - 1 && col < cols - 1")
ROWS_0_7, COLS_0_7, LD_0_7_ = 50, 70, 80   # the grid's last column (79) lies in the padding
SENTINEL_0_7 = -7.0


def _matrices_0_7():
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal(ROWS_0_7 * LD_0_7_).astype(np.float32) for _ in range(2))
    return a, b


def _matrix_add_run(program):
    from h100lab import emu

    from ..kernels import MAX_INSTRUCTIONS

    a, b = _matrices_0_7()
    c = emu.to_device(np.full(ROWS_0_7 * LD_0_7_, SENTINEL_0_7, np.float32))
    stats = emu.launch(program.function("matrix_add"), (-(-COLS_0_7 // 16), -(-ROWS_0_7 // 16)), (16, 16),
                       emu.to_device(a), emu.to_device(b), c, np.int32(ROWS_0_7), np.int32(COLS_0_7), np.int32(LD_0_7_),
                       max_instructions=MAX_INSTRUCTIONS)
    return KernelRun({"c": c.to_host().reshape(ROWS_0_7, LD_0_7_)}, stats)


def _expect_0_7():
    a, b = (x.reshape(ROWS_0_7, LD_0_7_) for x in _matrices_0_7())
    c = np.full((ROWS_0_7, LD_0_7_), SENTINEL_0_7, np.float32)
    c[:, :COLS_0_7] = a[:, :COLS_0_7] + b[:, :COLS_0_7]
    return {"c": c}


PADDING_HINT = ("The padding at the end of each row was overwritten: a thread past the last column is still inside "
                "the row's memory, but not inside the matrix — the guard must bound the column by the matrix's width.")
EDGE_HINT = ("The last row or the last column of the matrix was never added: the guard must let every index below "
             "the bound through, and only those.")
FAULT_HINT = ("The grid has more threads than elements in both directions: the threads past the last row or the "
              "last column must not touch memory at all.")


def _padding_written(out, ref, st):
    body = slice(None, COLS_0_7)
    return bool(np.array_equal(out["c"][:, body], ref["c"][:, body]) and
                not np.array_equal(out["c"][:, COLS_0_7:], ref["c"][:, COLS_0_7:]))


def _edge_missing(out, ref, st):
    bad = out["c"] != ref["c"]
    return bool(bad.any() and (bad[-1].any() or bad[:, COLS_0_7 - 1].any()) and not bad[:-1, :COLS_0_7 - 1].any())


kernel_exercise("0.7", run=_matrix_add_run, expect=_expect_0_7, points=2,
                hint="The grid has more threads than elements, in two directions.",
                symptoms=[Symptom(_padding_written, PADDING_HINT), Symptom(_edge_missing, EDGE_HINT),
                          Symptom(lambda out, ref, err: type(err).__name__ == "MemoryFault", FAULT_HINT)],
                mistakes=[Mistake(FAULT_HINT, answer=PROMPT_0_7), Mistake(PADDING_HINT, answer=ROWS_ONLY_0_7),
                          Mistake(PADDING_HINT, answer=LD_0_7), Mistake(EDGE_HINT, answer=OFF_BY_ONE_0_7)])

# 0.8: printf from every block

SHARE = r'''
extern "C" __global__ void share(int n) {
    if (threadIdx.x == 0) {
        int first = blockIdx.x * blockDim.x;
        int count = n - first < (int)blockDim.x ? n - first : (int)blockDim.x;
        printf("block %d: %d elements\n", blockIdx.x, count);
    }
}
'''
PROMPT_0_8 = r'''
extern "C" __global__ void share(int n) {
    if (threadIdx.x == 0) {
        int count = 0;   // YOUR CODE: how many of the n elements this block's threads own
        printf("block %d: %d elements\n", blockIdx.x, count);
    }
}
'''
FULL_BLOCKS_0_8 = SHARE.replace("n - first < (int)blockDim.x ? n - first : (int)blockDim.x", "(int)blockDim.x")
N_0_8, BLOCK_0_8 = 1000, 128


def _share_run(program):
    from h100lab import emu

    from ..kernels import MAX_INSTRUCTIONS

    # this launch's own printf lines (stats.output): emu.synchronize() flushes the whole process's output, and the
    # grader runs two notebooks' checks at once — a flush in one thread took the other's lines (half of 0.8's lines
    # went missing in a parallel test run)
    stats = emu.launch(program.function("share"), -(-N_0_8 // BLOCK_0_8), BLOCK_0_8, np.int32(N_0_8),
                       max_instructions=MAX_INSTRUCTIONS)
    return KernelRun({"lines": np.array(list(stats.output))}, stats)


PARTIAL_HINT = "The last block is partial: its threads past n own nothing."

kernel_exercise("0.8", run=_share_run, reference=SHARE, points=2,
                hint="Block b's threads own the elements from b·blockDim.x on, but never past n.",
                symptoms=[Symptom(lambda out, ref, st: bool((out["lines"][:-1] == ref["lines"][:-1]).all()), PARTIAL_HINT)],
                mistakes=[Mistake(PARTIAL_HINT, answer=FULL_BLOCKS_0_8)])
