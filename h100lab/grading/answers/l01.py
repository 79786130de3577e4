"""Exercise set 1 (chapter 1, "The Hopper architecture"): occupancy, banks, sectors, rooflines, waves, peaks,
Little's law — and three kernels graded on the emulator (1.14 coalescing, 1.15 a conflict-free transpose, 1.16
16-byte accesses).

Every reference answer is computed by the model the chapter teaches (h100lab.occupancy, h100lab.memory,
h100lab.roofline, h100lab.specs) or, for a kernel exercise, by running the solution kernel on the emulator in
the grader's process — never typed in. The notebook states each exercise's parameters in its text; the same
values are defined here for the reference. The student edition imports nothing from this module.
"""
from __future__ import annotations

import numpy as np

from ..kernels import KernelRun, Property, Symptom, kernel_exercise
from ..registry import Mistake, exercise

# ---- the exercises' data (shared with solutions/01-architecture.md) -----------------------------------
E1 = dict(threads=256, regs=90, smem=40 * 1024)        # 1.1, 1.2
E12 = dict(bandwidth=4.4e12, latency_s=1.1e-6)         # 1.12: a loaded HBM stream
E13_K = 16                                             # 1.13: the roofline kernel with K = 16


@exercise("1.1", points=1, hint="Compute each limit — warps, blocks, registers (per sub-partition, in units of 256 "
          "registers per warp), shared memory (footprint with the 1 KB reserve, in 128-byte units) — and name the "
          "smallest.", mistakes=[Mistake("Shared memory would allow more blocks than that: another resource binds "
                                         "first. Round the registers per warp up to a multiple of 256.",
                                         answer="shared_memory"),
                                 Mistake("Answer with the model's name for it: 'warps', 'blocks', 'registers', "
                                         "'shared_memory' or 'barriers'.", when=lambda v, ref: isinstance(v, str) and
                                         v.lower().strip() in ("register", "regs", "register file"))])
def _limiting_resource():
    from h100lab.occupancy import occupancy

    return occupancy(E1["threads"], E1["regs"], E1["smem"]).limiting[0]


@exercise("1.2", points=1, hint="90 registers round up to 3,072 per warp: how many warps fit in a sub-partition's "
          "16,384 registers, and how many 8-warp blocks in four sub-partitions?",
          mistakes=[Mistake("That is what shared memory alone allows; the register limit is lower.", answer=5)])
def _active_blocks():
    from h100lab.occupancy import occupancy

    return occupancy(E1["threads"], E1["regs"], E1["smem"]).active_blocks


@exercise("1.3", points=2, hint="Registers are allocated per warp in units of 256 (8 per thread); look for the first "
          "count whose rounded allocation no longer fits 8 warps in a sub-partition.",
          mistakes=[Mistake("63 and 64 registers round to the same 2,048 registers per warp: the allocation unit "
                            "is 256 registers per warp (8 per thread).", when=lambda v, ref: v in (57, 64))])
def _cliff():
    from h100lab.occupancy import next_cliff

    return next_cliff(256, 56).cliff_regs


@exercise("1.4", points=1, hint="Two blocks of 16 warps are 8 warps per sub-partition; 16,384 registers / 8 warps "
          "per warp, divided by 32 threads.",
          mistakes=[Mistake("That fits one block of 512 threads, not two.", answer=128),
                    Mistake("That is the full-SM bound (2,048 threads); two blocks of 512 are only 1,024.",
                            answer=32)])
def _max_regs():
    from h100lab.occupancy import max_regs_for_blocks

    return max_regs_for_blocks(512, 2)


@exercise("1.5", points=2, hint="A 50 % preference is 116,736 B, rounded up to the next carveout step; the block's "
          "footprint includes the 1 KB reserve.",
          mistakes=[Mistake("That is the answer without the preference. The preference lowers the shared memory "
                            "the SM offers: round 50 % of 228 KB up to a carveout step.", answer=2)])
def _carveout():
    from h100lab.occupancy import occupancy

    return occupancy(128, 32, 100 * 1024, carveout=50).active_blocks


@exercise("1.6", points=2, hint="64-bit loads go by half-warps: the 16 lanes of a phase must fall in different bank "
          "pairs.", mistakes=[Mistake("One word shifts each row by one bank, but a 64-bit access covers two banks and "
                                      "must stay 8-byte aligned: shift by whole bank pairs.", answer=1)])
def _padding():
    from h100lab.memory.banks import min_padding

    return min_padding(64 * 8, 8)


@exercise("1.7", points=1, hint="128-bit loads go by quarter-warps of 8 lanes, 128 bytes per wavefront: count the "
          "distinct words each phase needs from its busiest bank.",
          mistakes=[Mistake("That is a contiguous float4 load. With a 32-byte stride each quarter-warp spans 256 "
                            "bytes, twice what one wavefront serves.", answer=4)])
def _wavefronts():
    from h100lab.memory.banks import lane_addresses, wavefronts

    return int(wavefronts(lane_addresses(32, 16), 16))


@exercise("1.8", points=1, hint="Count the distinct 32-byte sectors floor(address / 32) the 32 lanes touch.",
          mistakes=[Mistake("Count 32-byte sectors, not 128-byte cache lines.", answer=3)])
def _sectors():
    from h100lab.memory.banks import lane_addresses
    from h100lab.memory.coalescing import sectors

    return int(sectors(lane_addresses(3 * 4, 4), 4))


@exercise("1.9", points=2, rtol=1e-3, hint="Ridge point = peak FLOP/s / HBM bytes/s, in the order H100 SXM BF16, "
          "H100 SXM FP8, H200 BF16, H200 FP8.",
          mistakes=[Mistake("Mind the units: TFLOP/s over TB/s is already FLOP per byte.",
                            when=lambda v, ref: isinstance(v, (list, tuple)) and len(v) == len(ref) and
                            all(abs(x * 1e3 / r - 1) < 1e-2 or abs(x / 1e3 / r - 1) < 1e-2 for x, r in zip(v, ref)))])
def _ridges():
    from h100lab import roofline as rl
    from h100lab.specs import H100_SXM, H200_SXM

    return [rl.ridge_point(s, d) for s in (H100_SXM, H200_SXM) for d in ("bf16", "fp8")]


@exercise("1.10", points=2, hint="First the blocks per SM (occupancy), then the waves: idle SMs in the last wave.",
          mistakes=[Mistake("That is how many blocks the last wave runs; the question asks how many SMs it leaves "
                            "idle.", answer=72)])
def _idle_sms():
    from h100lab.occupancy import occupancy, waves

    return waves(600, occupancy(1024, 64)).idle_sms_last_wave


@exercise("1.11", points=2, rtol=2e-3, hint="SMs × tensor cores per SM × dense BF16 FLOP per tensor core per clock × "
          "clock; the first item at the clock the datasheet's tensor peaks assume, the second at the maximum SM "
          "clock.", mistakes=[Mistake("The items are in the wrong order: the datasheet's tensor clock (1830 MHz) "
                                      "first, the maximum SM clock (1980 MHz) second.",
                                      when=lambda v, ref: isinstance(v, (list, tuple)) and len(v) == 2 and
                                      abs(v[0] - ref[1]) < 1 and abs(v[1] - ref[0]) < 1),
                              Mistake("4,096 FLOP per clock is the rate of a whole SM (4 tensor cores); per tensor "
                                      "core it is 1,024.", when=lambda v, ref: isinstance(v, (list, tuple)) and
                                      len(v) == 2 and abs(v[0] / ref[0] - 4) < 0.01)])
def _peaks():
    from h100lab.specs import FLOP_PER_SM_PER_CLOCK, H200_SXM as s

    per_clock = s.sm_count * FLOP_PER_SM_PER_CLOCK["bf16"]
    return (per_clock * s.tensor_clock_mhz / 1e6, per_clock * s.boost_clock_mhz / 1e6)


@exercise("1.12", points=2, rtol=1e-2, hint="Little's law: bytes in flight = bandwidth × latency, for the whole GPU; "
          "then per SM, in KiB (1,024 bytes).",
          mistakes=[Mistake("That is the whole GPU's bytes in flight; the question asks per SM.",
                            when=lambda v, ref: isinstance(v, (int, float)) and abs(v / ref / 132 - 1) < 0.02),
                    Mistake("KiB are 1,024 bytes, not 1,000.",
                            when=lambda v, ref: isinstance(v, (int, float)) and abs(v / ref - 1.024) < 0.005)])
def _littles_law():
    from h100lab.memory.ladder import bytes_in_flight

    return bytes_in_flight(E12["bandwidth"], E12["latency_s"])["per_sm"] / 1024


@exercise("1.13", points=1, hint="Intensity = FLOPs / bytes of the kernel (K / 4 here); memory-bound means below the "
          "ridge point of the roofline this kernel runs on.",
          mistakes=[Mistake("This kernel runs on the FP32 lanes, not the tensor cores: compare with the FP32 ridge "
                            "(66.9 TFLOP/s over 4.8 TB/s).", answer=False)])
def _memory_bound():
    from h100lab import roofline as rl
    from h100lab.specs import H200_SXM

    return rl.bound(E13_K / 4, H200_SXM, "fp32") == "memory"


# ---- kernel exercises ------------------------------------------------------------------------------------

#: 1.14: y = a·x, each thread four floats; the prompt gives each thread 4 *consecutive* floats
SOLUTION_1_14 = r"""
#define PER_THREAD 4
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int threads = gridDim.x * blockDim.x;
    for (int j = 0; j < PER_THREAD; ++j) {
        const int i = j * threads + t;          // consecutive threads, consecutive elements
        if (i < n) y[i] = a * x[i];
    }
}
"""
PROMPT_1_14 = SOLUTION_1_14.replace("const int i = j * threads + t;          // consecutive threads, consecutive "
                                    "elements", "const int i = t * PER_THREAD + j;")
PLANTED_1_14 = SOLUTION_1_14.replace("j * threads + t", "j * blockDim.x + t")
N14 = 8192


def _run_1_14(program):
    from h100lab import emu

    x = np.random.default_rng(114).standard_normal(N14).astype(np.float32)
    y = emu.zeros(N14, np.float32)
    stats = emu.launch(program.function("scale"), 8, 256, emu.to_device(x), y, np.float32(1.5), np.int32(N14))
    return KernelRun({"y": y.to_host()}, stats)


_COALESCE = ("each warp-wide load and store should touch 4 sectors (32 lanes × 4 consecutive bytes = 128 bytes); "
             "yours touch more: neighbouring threads must access neighbouring elements")
_GRID = ("Some elements are never written: thread t of block b must cover elements no other thread covers — step by "
         "the whole grid (gridDim.x × blockDim.x), not by one block.")


def _sectors_ok(out, st):
    ideal = 2 * N14 * 4 // 32
    return None if st.global_sectors <= ideal else f"{_COALESCE} ({st.global_sectors} sectors, ideal {ideal})"


kernel_exercise("1.14", run=_run_1_14, reference=SOLUTION_1_14, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: bool((out["y"] == 0).any()), _GRID)],
                properties=[Property(_sectors_ok, "coalesced")],
                mistakes=[Mistake(_COALESCE, answer=PROMPT_1_14), Mistake(_GRID, answer=PLANTED_1_14)])

#: 1.15: a 64 × 64 float transpose through a 32 × 32 shared tile; the prompt's tile has no padding
SOLUTION_1_15 = r"""
#define TILE 32
extern "C" __global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float tile[TILE][TILE + 1];      // one word of padding: a column spans all 32 banks
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}
"""
PROMPT_1_15 = SOLUTION_1_15.replace("__shared__ float tile[TILE][TILE + 1];      // one word of padding: a column "
                                    "spans all 32 banks", "__shared__ float tile[TILE][TILE];")
PLANTED_1_15 = SOLUTION_1_15.replace("tile[TILE][TILE + 1]", "tile[TILE][TILE + 2]")
N15 = 64


def _run_1_15(program):
    from h100lab import emu

    a = np.random.default_rng(115).standard_normal((N15, N15)).astype(np.float32)
    out = emu.zeros(N15 * N15, np.float32)
    stats = emu.launch(program.function("transpose"), (2, 2), (32, 32), emu.to_device(a), out, np.int32(N15))
    return KernelRun({"out": out.to_host()}, stats)


_CONFLICT = ("the tile's column reads still have bank conflicts: with a row pitch of P words, rows r and r + 32 / "
             "gcd(P, 32) share a bank — make the pitch odd")


def _no_conflicts(out, st):
    return None if st.bank_conflicts == 0 else f"{_CONFLICT} ({st.bank_conflicts} extra wavefronts)"


kernel_exercise("1.15", run=_run_1_15, reference=SOLUTION_1_15, points=3, budget=60,
                properties=[Property(_no_conflicts, "conflict-free")],
                mistakes=[Mistake(_CONFLICT, answer=PROMPT_1_15), Mistake(_CONFLICT, answer=PLANTED_1_15)])

#: 1.16: a copy moving 16 bytes per thread per access; the prompt copies one float at a time
SOLUTION_1_16 = r"""
extern "C" __global__ void copy(const float* __restrict__ x, float* __restrict__ y, int n) {
    const float4* x4 = reinterpret_cast<const float4*>(x);   // n is a multiple of 4, x and y 16-byte aligned
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 4; i += gridDim.x * blockDim.x) y4[i] = x4[i];
}
"""
PROMPT_1_16 = r"""
extern "C" __global__ void copy(const float* __restrict__ x, float* __restrict__ y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i];
}
"""
PLANTED_1_16 = SOLUTION_1_16.replace("float4", "float2").replace("n / 4", "n / 2")
N16 = 8192


def _run_1_16(program):
    from h100lab import emu

    x = np.random.default_rng(116).standard_normal(N16).astype(np.float32)
    y = emu.zeros(N16, np.float32)
    stats = emu.launch(program.function("copy"), 4, 128, emu.to_device(x), y, np.int32(N16))
    return KernelRun({"y": y.to_host()}, stats)


_WIDE = ("each thread should move 16 bytes per load and per store (a float4): a warp then moves 512 bytes per "
         "instruction and the kernel issues a quarter of the instructions")
_QUARTER = ("Only part of the array is copied: with 16-byte elements there are n / 4 of them, and the loop must "
            "cover all n / 4.")


def _wide(out, st):
    ideal = 2 * N16 * 4 // 512
    return None if st.global_requests <= ideal else f"{_WIDE} ({st.global_requests} warp-wide accesses, ideal {ideal})"


kernel_exercise("1.16", run=_run_1_16, reference=SOLUTION_1_16, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: bool((out["y"][N16 // 4:] == 0).all()), _QUARTER)],
                properties=[Property(_wide, "16-byte accesses")],
                mistakes=[Mistake(_WIDE, answer=PROMPT_1_16), Mistake(_WIDE, answer=PLANTED_1_16)])
