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
# Kernel exercises on vector_add

VECTOR_ADD = r'''
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
'''
PROMPT_0_6 = VECTOR_ADD.replace("blockIdx.x * blockDim.x + threadIdx.x", "threadIdx.x")
BLOCK_ONLY_0_6 = VECTOR_ADD.replace("blockIdx.x * blockDim.x + threadIdx.x", "blockIdx.x + threadIdx.x")
PROMPT_0_7 = VECTOR_ADD.replace("if (i < n) ", "")
OFF_BY_ONE_0_7 = VECTOR_ADD.replace("if (i < n) ", "if (i < n - 1) ")
N_HIDDEN = 3000


def _vector_add_run(program):
    from h100lab import emu

    from ..kernels import MAX_INSTRUCTIONS

    rng = np.random.default_rng(17)
    a, b = rng.standard_normal(N_HIDDEN).astype(np.float32), rng.standard_normal(N_HIDDEN).astype(np.float32)
    c = emu.empty(N_HIDDEN, np.float32)
    stats = emu.launch(program.function("vector_add"), -(-N_HIDDEN // 256), 256, emu.to_device(a), emu.to_device(b), c,
                       np.int32(N_HIDDEN), max_instructions=MAX_INSTRUCTIONS)
    return KernelRun({"c": c.to_host()}, stats)


FIRST_BLOCK_HINT = "Only the first block's elements are right: which element does thread 0 of block 1 own?"
STRIDE_HINT = "Neighbouring blocks overlap: a block covers blockDim.x elements, so where does block b start?"


def _only_first_block(out, ref, st):
    good = out["c"].view(np.uint32) == ref["c"].view(np.uint32)
    return bool(good[:256].all() and not good[256:].any())


def _coalesced(out, st):
    want = _sectors_vector_add(N_HIDDEN)
    return None if st.global_sectors == want else (f"the kernel moved {st.global_sectors} global sectors where "
                                                   f"{want} suffice: each element is read and written once")


kernel_exercise("0.6", run=_vector_add_run, reference=VECTOR_ADD, points=2,
                hint="Each thread must own a different element of the whole array, across all blocks.",
                symptoms=[Symptom(_only_first_block, FIRST_BLOCK_HINT),
                          Symptom(lambda out, ref, st: bool((out["c"][:1].view(np.uint32) == ref["c"][:1].view(np.uint32)).all()),
                                  STRIDE_HINT)],
                properties=[Property(_coalesced)],
                mistakes=[Mistake(FIRST_BLOCK_HINT, answer=PROMPT_0_6), Mistake(STRIDE_HINT, answer=BLOCK_ONLY_0_6)])

LAST_HINT = "The last element is not written: the guard must let every index below n through, and only those."


def _only_last_wrong(out, ref, st):
    bad = out["c"].view(np.uint32) != ref["c"].view(np.uint32)
    return bool(bad[-1] and not bad[:-1].any())


def _out_of_bounds(out, ref, err):
    return type(err).__name__ == "MemoryFault"


kernel_exercise("0.7", run=_vector_add_run, reference=VECTOR_ADD, points=2,
                hint="The grid has more threads than elements.",
                symptoms=[Symptom(_only_last_wrong, LAST_HINT),
                          Symptom(_out_of_bounds, "The last block has threads past the end of the arrays: they must "
                                                  "not touch memory at all.")],
                mistakes=[Mistake(LAST_HINT, answer=OFF_BY_ONE_0_7)])

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

    emu.synchronize()
    stats = emu.launch(program.function("share"), -(-N_0_8 // BLOCK_0_8), BLOCK_0_8, np.int32(N_0_8),
                       max_instructions=MAX_INSTRUCTIONS)
    return KernelRun({"lines": np.array(emu.synchronize())}, stats)


PARTIAL_HINT = "The last block is partial: its threads past n own nothing."

kernel_exercise("0.8", run=_share_run, reference=SHARE, points=2,
                hint="Block b's threads own the elements from b·blockDim.x on, but never past n.",
                symptoms=[Symptom(lambda out, ref, st: bool((out["lines"][:-1] == ref["lines"][:-1]).all()), PARTIAL_HINT)],
                mistakes=[Mistake(PARTIAL_HINT, answer=FULL_BLOCKS_0_8)])
