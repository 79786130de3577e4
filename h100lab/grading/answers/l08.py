"""Exercise set 8 (chapter 8, "Kernel design").

Every reference answer is computed by the model the chapter teaches (h100lab.roofline, h100lab.design) or, for a
kernel exercise, by running the solution kernel on the emulator in the grader's process (8.8) or by the model of what
the kernel must produce (8.9: y = 2x + 1; 8.10: h100lab.design.schedule's grouped order with the snake) — never
typed in. The notebook states each exercise's parameters in its text; the same values are defined here. Symptoms
recognise a typical mistake from the emulator's report (a deadlock on a barrier whose first lap never passes or on a
skipped phase, an illegal setmaxnreg operand) or by comparing the student's output with the model's output for that
mistake (8.8: a consumer that read a stage before it was refilled writes, bit for bit, another slot's sums). The student edition imports nothing from this module.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels import KernelRun, Property, Symptom, kernel_exercise
from ..registry import Mistake, exercise

# ---- the exercises' data (shared with solutions/08-kernel-design.md) -----------------------------------
E1_DTYPE = "fp8"                                   # H200 datasheet ridge point for dense FP8
E2_TILE = (256, 128, 64)                           # BM x BN x BK, bf16: FLOP per byte staged
E3_LOAD, E3_MMA = 900, 200                         # cycles: load latency, MMA time per stage
E4_WAITS = [(4, 5), (6, 5), (7, 5), (3, 5)]        # (barrier's current phase, phase the waiter means)
E5_SHAPE, E5_TILE, E5_SMS = (2304, 2304), (128, 256), 132
E6_TILE = (128, 192, 64)                           # BM x BN x BK, bf16: most stages in 227 KiB
E7_MN = (8192, 8192)                               # bias + activation fused, bf16 output


def _is_num(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


# ---- predictions and derivations --------------------------------------------------------------------
@exercise("8.1", points=1, rtol=0.01, hint="Peak operations per second over peak bytes per second, both from the "
          "H200 datasheet, dense.",
          mistakes=[Mistake("Bandwidth in TB/s against FLOP/s: the ridge point is in FLOP per byte, so both rates "
                            "must be per second in base units.", when=lambda v, ref: _is_num(v) and
                            (abs(v / ref / 1000 - 1) < 0.02 or abs(v / ref / 1e12 - 1) < 0.02)),
                    Mistake("That is the sparse peak: a dense GEMM gets half of it.",
                            when=lambda v, ref: _is_num(v) and abs(v / ref - 2) < 0.02)])
def _ridge():
    from h100lab import roofline, specs

    return roofline.ridge_point(specs.H200_SXM, E1_DTYPE)


@exercise("8.2", points=1, rtol=1e-6, hint="Each stage brings an A tile and a B tile; the MMAs on it do one "
          "multiply and one add per (m, n, k).",
          mistakes=[Mistake("Counted elements, not bytes: a bf16 element is 2 bytes.",
                            when=lambda v, ref: _is_num(v) and abs(v / ref - 2) < 1e-6),
                    Mistake("A multiply-accumulate is two floating-point operations.",
                            when=lambda v, ref: _is_num(v) and abs(v / ref - 0.5) < 1e-6)])
def _intensity():
    from h100lab.design import tiles

    return tiles.evaluate(*E2_TILE, stages=3, consumers=2).intensity


def _min_stages(load, mma):
    from h100lab.design import ring

    for s in range(1, 64):
        tl = ring.timeline(s, 64, load, mma)
        if all(tl.mma_start[i] == tl.mma_end[i - 1] for i in range(1, 64)):
            return s
    raise AssertionError("no stage count hides the load")


@exercise("8.3", points=2, hint="A stage is occupied from the issue of its load until the MMA on it has finished.",
          mistakes=[Mistake("A stage is not free again when its load lands: it is held until the MMA reading it "
                            "ends, so the ring must also cover that MMA.",
                            answer=math.ceil(E3_LOAD / E3_MMA))])
def _stages():
    return _min_stages(float(E3_LOAD), float(E3_MMA))


@exercise("8.4", points=2, hint="try_wait.parity answers 'done' when the current phase's parity differs from the "
          "awaited one; compare that with whether the meant phase really completed.",
          mistakes=[Mistake("The parity only says 'different from the current phase's parity': a barrier two phases "
                            "past the meant one has the same parity as the meant one and reads as pending.",
                            when=lambda v, ref: isinstance(v, list) and len(v) == 4 and v[1] == "complete")])
def _classify():
    from h100lab.design import ring

    return [ring.classify(c, t) for c, t in E4_WAITS]


@exercise("8.5", points=2, rtol=1e-9, hint="Count the tiles (ceil in each dimension), then how many rounds of one "
          "tile per SM they need, and what fraction of those rounds' SM-slots do work.",
          mistakes=[Mistake("Tiles per SM is not the efficiency: the last, partial wave takes as long as a full one.",
                            when=lambda v, ref: isinstance(v, list) and len(v) == 3 and _is_num(v[2])
                            and abs(v[2] - ref[0] / E5_SMS) < 1e-3)])
def _waves():
    from h100lab.design import schedule

    tm, tn = math.ceil(E5_SHAPE[0] / E5_TILE[0]), math.ceil(E5_SHAPE[1] / E5_TILE[1])
    w = schedule.waves(tm * tn, E5_SMS)
    return [w.tiles, w.waves, w.efficiency]


@exercise("8.6", points=1, hint="227 KiB per CTA, minus the alignment slack of the swizzled tiles; each stage holds "
          "an A tile, a B tile (2 bytes per element) and two 8-byte mbarriers.",
          mistakes=[Mistake("Counted elements, not bytes: a bf16 element is 2 bytes.",
                            when=lambda v, ref: _is_num(v) and v >= 2 * ref - 1)])
def _max_stages():
    from h100lab.design import tiles

    return tiles.max_stages(*E6_TILE)


@exercise("8.7", points=2, hint="Unfused, each operation is its own kernel that reads the M x N intermediate and "
          "writes it back; fused, only the extra inputs are read.",
          mistakes=[Mistake("An unfused elementwise kernel both reads and writes the intermediate.",
                            when=lambda v, ref: _is_num(v) and abs(v - ref / 2) < E7_MN[1] * 4),
                    Mistake("Bytes, not bits (or elements): a bf16 value is 2 bytes.",
                            when=lambda v, ref: _is_num(v) and (abs(v / ref - 8) < 1e-3 or abs(v / ref - 0.5) < 1e-3))])
def _saved():
    from h100lab.design import epilogue

    return epilogue.plan(["bias", "activation"], *E7_MN).saved


# ---- kernel exercises ----------------------------------------------------------------------------
_HELPERS = r"""namespace {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void bar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}

__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred done;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra WAIT_%=;\n\t}"
                 :: "r"(bar), "r"(parity) : "memory");
}

}  // namespace
"""

SOLUTION_8_8 = r"""// Lesson 8 exercise: a 3-stage ring between one producer warp and two consumer warps (96 threads, one CTA),
// used for two passes over the same SLOTS slots; its barriers are initialised once. Slot i is 256 floats of `in`;
// consumer c (warp 1 + c) reads 4 values per lane of its half of a stage. Pass 0: each consumer lane keeps the
// largest value it reads. Pass 1: it writes, per slot, the sum of its 4 values minus that maximum to
// out[(2 i + c) * 32 + lane].
#define STAGES 3
#define SLOTS 10
""" + _HELPERS + r"""
extern "C" __global__ void ring_max_sum(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ __align__(16) float stage[STAGES][256];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(smem_u32(&full[s]), 1);       // the producer warp's arrival
            bar_init(smem_u32(&empty[s]), 2);      // one arrival per consumer warp
        }
    }
    __syncthreads();
    if (warp == 0) {                               // producer: streams the slots twice
        for (int pass = 0; pass < 2; ++pass) {
            for (int i = 0; i < SLOTS; ++i) {
                const int s = (pass * SLOTS + i) % STAGES;          // the ring goes on where pass 0 left it
                const unsigned lap = (pass * SLOTS + i) / STAGES;
                bar_wait(smem_u32(&empty[s]), (lap & 1) ^ 1);
                for (int j = lane; j < 256; j += 32) stage[s][j] = in[i * 256 + j];
                __syncwarp();
                if (lane == 0) bar_arrive(smem_u32(&full[s]));
            }
        }
    } else {                                       // consumers
        const int c = warp - 1;
        float m = __int_as_float(0xff800000);      // -infinity
        for (int pass = 0; pass < 2; ++pass) {
            for (int i = 0; i < SLOTS; ++i) {
                const int s = (pass * SLOTS + i) % STAGES;          // the ring goes on where pass 0 left it
                const unsigned lap = (pass * SLOTS + i) / STAGES;
                bar_wait(smem_u32(&full[s]), lap & 1);
                float v = 0.f;
                for (int j = 0; j < 4; ++j) {
                    const float x = stage[s][c * 128 + j * 32 + lane];
                    if (pass == 0) m = fmaxf(m, x);
                    else v += x - m;
                }
                if (pass == 1) out[(2 * i + c) * 32 + lane] = v;
                __syncwarp();
                if (lane == 0) bar_arrive(smem_u32(&empty[s]));
            }
        }
    }
}
"""
_STAGE_OK = "                const int s = (pass * SLOTS + i) % STAGES;          // the ring goes on where pass 0 left it\n"
_LAP_OK = "                const unsigned lap = (pass * SLOTS + i) / STAGES;\n"
_EMPTY_OK = "                bar_wait(smem_u32(&empty[s]), (lap & 1) ^ 1);\n"
_PRODUCER, _CONSUMERS = SOLUTION_8_8.split("// consumers\n")
assert SOLUTION_8_8.count(_STAGE_OK) == SOLUTION_8_8.count(_LAP_OK) == 2 and _EMPTY_OK in SOLUTION_8_8
_STAGE_RESTART = "                const int s = i % STAGES;\n"
_LAP_RESTART = "                const unsigned lap = i / STAGES;\n"


def _both(text, stage=_STAGE_OK, lap=_LAP_OK):
    return text.replace(_STAGE_OK, stage).replace(_LAP_OK, lap)


#: the prompt: each pass restarts the ring at stage 0, lap 0 (as if the barriers were fresh)
PROMPT_8_8 = _both(SOLUTION_8_8, _STAGE_RESTART, _LAP_RESTART)
#: the stage goes on, the lap restarts with the pass
PLANTED_8_8_LAP = _both(SOLUTION_8_8, lap=_LAP_RESTART)
#: the lap goes on, the stage restarts with the pass
PLANTED_8_8_STAGE = _both(SOLUTION_8_8, stage=_STAGE_RESTART)
#: one lap per whole pass counted (SLOTS / STAGES laps, rounded down), then the pass's own laps
PLANTED_8_8_WHOLE = _both(SOLUTION_8_8, lap="                const unsigned lap = pass * (SLOTS / STAGES) + i / STAGES;\n")
#: only the producer goes on; the consumers restart the ring
PLANTED_8_8_ONE_SIDE = _PRODUCER + "// consumers\n" + _both(_CONSUMERS, _STAGE_RESTART, _LAP_RESTART)
#: the producer waits on its empty barriers with the consumers' parity: a fresh barrier's first lap never passes
PLANTED_8_8_EMPTY = SOLUTION_8_8.replace(_EMPTY_OK, "                bar_wait(smem_u32(&empty[s]), lap & 1);\n")
_SEED8 = 808


def _run_8_8(program):
    from h100lab import emu

    x = np.random.default_rng(_SEED8).standard_normal(10 * 256).astype(np.float32)
    d_in = emu.to_device(x)
    d_out = emu.zeros(10 * 2 * 32, np.float32)
    st = emu.launch(program.function("ring_max_sum"), 1, 96, d_in, d_out, racecheck=True)
    out = d_out.to_host()
    del d_in
    return KernelRun({"out": out}, st)


_FIRST_LAP = ("The producer waits forever on a fresh empty barrier in pass 0: no stage has been filled yet, so its "
              "first wait on each stage must pass at once — on a fresh barrier, the phase before phase 0 counts as "
              "complete, and that is the phase the producer's first lap waits for.")
_STALE = ("In pass 1 a consumer summed what a stage held before the producer refilled it: its wait on `full` returned "
          "at once. The barriers are not initialised again between the passes: each keeps the phases pass 0 "
          "completed, and pass 0 ended part-way through a lap, so pass 1 cannot start the ring's stage and lap "
          "from zero as if the barriers were fresh.")
_SKIPPED = ("The kernel hangs in pass 1: a side waits for a phase its barrier will not complete next (a skipped "
            "phase), because the producer and the consumers disagree on a slot's stage or lap. Both sides must "
            "count the ring's slots from its very first one in pass 0, every slot of both passes — the parity of "
            "a wait is that of the laps the ring has made, not of the passes.")


def _phases(err) -> dict:
    """warp -> the phase parity of the barrier it waits on, from the emulator's deadlock report (the emulator's
    mbarrier keeps only the current phase's parity, as the hardware does)."""
    import re

    return {int(w): int(p) for w, p in re.findall(r"warp (\d+): mbarrier\.try_wait\.parity .*?phase (\d+),",
                                                   str(getattr(err, "where", "")) or str(err))}


def _first_lap(out, ref, err):
    """A deadlock with every waited-on barrier still in phase 0: the ring never got past its first lap."""
    ph = _phases(err)
    return out is None and type(err).__name__ == "DeadlockError" and bool(ph) and not any(ph.values())


def _skipped(out, ref, err):
    """A deadlock after the first lap: some waited-on barrier has completed a phase."""
    return out is None and type(err).__name__ == "DeadlockError" and any(_phases(err).values())


def _stale(out, ref, st):
    """Every wrong row (one slot, one consumer: 32 lanes) is, bit for bit, what that consumer writes for another slot:
    it read a stage that held another slot."""
    got, want = out["out"].reshape(SLOTS_8_8, 2, 32), ref["out"].reshape(SLOTS_8_8, 2, 32)
    bad = [(i, c) for i in range(SLOTS_8_8) for c in range(2) if not np.array_equal(got[i, c], want[i, c])]
    return bool(bad) and all(any(np.array_equal(got[i, c], want[k, c]) for k in range(SLOTS_8_8) if k != i)
                             for i, c in bad)


SLOTS_8_8 = 10
assert f"#define SLOTS {SLOTS_8_8}\n" in SOLUTION_8_8
kernel_exercise("8.8", run=_run_8_8, reference=SOLUTION_8_8, points=3, budget=60,
                symptoms=[Symptom(_first_lap, _FIRST_LAP), Symptom(_skipped, _SKIPPED), Symptom(_stale, _STALE)],
                mistakes=[Mistake(_STALE, answer=PROMPT_8_8), Mistake(_FIRST_LAP, answer=PLANTED_8_8_EMPTY),
                          Mistake(_STALE, answer=PLANTED_8_8_LAP), Mistake(_SKIPPED, answer=PLANTED_8_8_STAGE),
                          Mistake(_SKIPPED, answer=PLANTED_8_8_WHOLE), Mistake(_SKIPPED, answer=PLANTED_8_8_ONE_SIDE)])

# 8.9: the setmaxnreg split
_SPLIT_BODY = r"""
extern "C" __global__ void __launch_bounds__(384, 1) split(const float* __restrict__ x, float* __restrict__ y,
                                                          unsigned* __restrict__ regs) {
    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    if (wg == 0) {                                                  // producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(PRODUCER_REGS));
        if (t == 0) regs[0] = PRODUCER_REGS;
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(CONSUMER_REGS));   // consumer warpgroups 1, 2
    if (t == 0) regs[wg] = CONSUMER_REGS;
    const int i = (wg - 1) * 128 + t;
    y[i] = 2.f * x[i] + 1.f;
}
"""
_SPLIT_HEAD = ("// Lesson 8 exercise: one producer warpgroup and two consumer warpgroups, 384 threads, launched with\n"
               "// __launch_bounds__(384, 1). Each warpgroup records the register count it asked for in regs[wg].\n")


def _split_src(p, c):
    return (_SPLIT_HEAD + f"constexpr int PRODUCER_REGS = {p};\nconstexpr int CONSUMER_REGS = {c};\n" + _SPLIT_BODY)


def _best():
    from h100lab.design import registers

    return registers.best_split(1, 2, producer_regs=24).regs


SOLUTION_8_9 = _split_src(*_best()[:2])
PROMPT_8_9 = _split_src(168, 168)
PLANTED_8_9_POOL = _split_src(24, 256)
PLANTED_8_9_PRODUCER = _split_src(40, 232)
_SEED9 = 809


def _run_8_9(program):
    from h100lab import emu

    x = np.random.default_rng(_SEED9).standard_normal(256).astype(np.float32)
    d_x = emu.to_device(x)
    y = emu.zeros(256, np.float32)
    regs = emu.zeros(3, np.uint32)
    st = emu.launch(program.function("split"), 1, 384, d_x, y, regs)
    out = {"y": y.to_host(), "regs": regs.to_host()}
    del d_x
    return KernelRun(out, st)


_POOL = ("The split must fit the registers the CTA received at launch (384 threads at the launch-bounds cap): "
         "an inc asking for more than the producer gave back waits forever.")
_MORE = ("The producer can give back more (it only issues copies and waits on barriers), and the consumers can take "
         "every register the producer released.")


def _split_property(out, st):
    from h100lab.design import registers

    p, c1, c2 = (int(v) for v in out["regs"])
    sp = registers.split((p, c1, c2))
    if not sp.fits:
        return _POOL
    if (p, c1, c2) != _best():
        return _MORE
    return None


kernel_exercise("8.9", run=_run_8_9, expect=lambda: {"y": 2 * np.random.default_rng(_SEED9).standard_normal(256)
                                                       .astype(np.float32) + np.float32(1)},
                points=3, budget=60,
                properties=[Property(_split_property)],
                mistakes=[Mistake(_MORE, answer=PROMPT_8_9), Mistake(_POOL, answer=PLANTED_8_9_POOL),
                          Mistake(_MORE, answer=PLANTED_8_9_PRODUCER)])

# 8.10: a snake order grouped along N — the chapter's grouped raster with the odd groups walking M backwards
_SNAKE_OK = r"""    const int g = t / (group * tiles_m);                  // the group: tile-columns g * group, g * group + 1, ...
    const int first = g * group;                          // its first tile-column
    const int width = min(group, tiles_n - first);        // the last group may be narrower
    const int i = t - first * tiles_m;                    // the position inside the group
    const int down = i / width;                           // tile-rows the group has walked so far
    tn = first + i % width;
    tm = (g % 2 == 0) ? down : tiles_m - 1 - down;        // odd groups walk M bottom to top
"""
_SNAKE_HEAD = ("// Lesson 8 exercise: thread t writes the (m, n) tile at position t of a snake order grouped along N: the\n"
               "// tiles of `group` consecutive tile-columns (the last group may be narrower) are walked row by row —\n"
               "// along N inside the group, then one tile-row along M — top to bottom in even groups, bottom to top in\n"
               "// odd ones, so that each group starts on the tile-row where the previous one ended.\n"
               "__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int group, int& tm, int& tn) {\n")
_SNAKE_TAIL = r"""}

extern "C" __global__ void tile_order(int* __restrict__ out, int tiles_m, int tiles_n, int group) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tiles_m * tiles_n) return;
    int tm, tn;
    tile_coords(t, tiles_m, tiles_n, group, tm, tn);
    out[2 * t] = tm;
    out[2 * t + 1] = tn;
}
"""
SOLUTION_8_10 = _SNAKE_HEAD + _SNAKE_OK + _SNAKE_TAIL
PROMPT_8_10 = _SNAKE_HEAD + "    tm = t / tiles_n;       // TODO: the snake order grouped along N\n    tn = t % tiles_n;\n" + _SNAKE_TAIL
_TM_OK = "    tm = (g % 2 == 0) ? down : tiles_m - 1 - down;        // odd groups walk M bottom to top\n"
_WIDTH_OK = "    const int width = min(group, tiles_n - first);        // the last group may be narrower\n"
_TN_OK = "    tn = first + i % width;\n"
assert all(x in SOLUTION_8_10 for x in (_TM_OK, _WIDTH_OK, _TN_OK))
#: the chapter's grouped order along N, no snake
PLANTED_8_10_NOSNAKE = SOLUTION_8_10.replace(_TM_OK, "    tm = down;\n")
#: the snake on the even groups
PLANTED_8_10_PARITY = SOLUTION_8_10.replace(_TM_OK, "    tm = (g % 2 == 1) ? down : tiles_m - 1 - down;\n")
#: every group as wide as `group`
PLANTED_8_10_CLIP = SOLUTION_8_10.replace(_WIDTH_OK, "    const int width = group;\n")
#: the snake reverses the walk inside a row of the group instead of the walk along M
PLANTED_8_10_ROWWISE = SOLUTION_8_10.replace(_TN_OK, "    tn = (g % 2 == 0) ? first + i % width : first + width - 1 - i % width;\n"
                                             ).replace(_TM_OK, "    tm = down;\n")
#: grouped along M (tile-rows, walked down M), with the snake along N
PLANTED_8_10_ALONG_M = _SNAKE_HEAD + r"""    const int g = t / (group * tiles_n);
    const int first = g * group;
    const int height = min(group, tiles_m - first);
    const int i = t - first * tiles_n;
    const int across = i / height;
    tm = first + i % height;
    tn = (g % 2 == 0) ? across : tiles_n - 1 - across;
""" + _SNAKE_TAIL
#: (tiles_m, tiles_n, group) of the grader's launches: narrower last groups, an exact fit, a group wider than N
_CASES = [(5, 7, 3), (6, 4, 2), (4, 9, 4), (3, 5, 8)]


def _run_8_10(program):
    from h100lab import emu

    out, stats = {}, []
    for k, (tm, tn, g) in enumerate(_CASES):
        d = emu.zeros(2 * tm * tn, np.int32)
        stats.append(emu.launch(program.function("tile_order"), 1, 64, d, np.int32(tm), np.int32(tn), np.int32(g)))
        out[f"order{k}"] = d.to_host().reshape(-1, 2)
    return KernelRun(out, stats)


def _orders(raster: str = "n", snake: str = "m", odd: int = 1) -> dict:
    """Every case's order from the chapter's grouped raster (h100lab.design.schedule.tile_at along ``raster``) with
    the walk along ``snake`` ("m", "n" or "" for none) reversed in the groups of parity ``odd``."""
    from h100lab.design import schedule

    out = {}
    for k, (tiles_m, tiles_n, group) in enumerate(_CASES):
        major, minor = (tiles_n, tiles_m) if raster == "n" else (tiles_m, tiles_n)
        rows = []
        for t in range(tiles_m * tiles_n):
            m, n = schedule.tile_at(t, tiles_m, tiles_n, group, raster)
            g = t // (group * minor)
            if g % 2 == odd and snake:
                first, size = g * group, min(group, major - g * group)
                if snake == "m":
                    m = (tiles_m - 1 - m) if raster == "n" else first + size - 1 - (m - first)
                else:
                    n = (tiles_n - 1 - n) if raster == "m" else first + size - 1 - (n - first)
            rows.append((m, n))
        out[f"order{k}"] = np.array(rows, np.int32)
    return out


def _same_as(**variant):
    return lambda out, ref, st: all(np.array_equal(out[k], v) for k, v in _orders(**variant).items())


def _rowmajor(out, ref, st):
    return all(np.array_equal(out[f"order{k}"], [[t // c[1], t % c[1]] for t in range(c[0] * c[1])])
               for k, c in enumerate(_CASES))


def _outside(out, ref, st):
    return any((out[f"order{k}"][:, 0] >= c[0]).any() or (out[f"order{k}"][:, 1] >= c[1]).any() or
               len({tuple(x) for x in out[f"order{k}"]}) != c[0] * c[1] for k, c in enumerate(_CASES))


_ROW = ("That is the plain row-major order: a group covers only `group` tile-columns and walks all the tile-rows of "
        "those columns before the next group starts, so the tiles running together share panels of A and of B.")
_SNAKE = ("Every group walks M from the top: the odd groups walk it bottom to top, so that a group starts on the "
          "tile-row where the previous one ended (its A panel is still in L2).")
_PARITY = "The first group must start at the top (tile-row 0): it is the second, fourth, ... group that walks back up."
_CLIP = ("Some tiles are visited twice or never: the last group is narrower when the tile-columns are not a multiple "
         "of the group size, and its walk must use its own width.")
_ROWWISE = ("The snake reverses the walk along M (the order of the tile-rows), not the order of the tiles inside a "
            "row of the group.")
_ALONG_M = ("The groups here are tile-columns (walked along N inside a group), not tile-rows: the roles of M and N "
            "are those of the chapter's raster along N.")
kernel_exercise("8.10", run=_run_8_10, expect=_orders, points=3, budget=60,
                symptoms=[Symptom(_rowmajor, _ROW), Symptom(_same_as(snake=""), _SNAKE),
                          Symptom(_same_as(odd=0), _PARITY), Symptom(_same_as(snake="n"), _ROWWISE),
                          Symptom(_same_as(raster="m", snake="n"), _ALONG_M), Symptom(_outside, _CLIP)],
                mistakes=[Mistake(_ROW, answer=PROMPT_8_10), Mistake(_SNAKE, answer=PLANTED_8_10_NOSNAKE),
                          Mistake(_PARITY, answer=PLANTED_8_10_PARITY), Mistake(_CLIP, answer=PLANTED_8_10_CLIP),
                          Mistake(_ROWWISE, answer=PLANTED_8_10_ROWWISE), Mistake(_ALONG_M, answer=PLANTED_8_10_ALONG_M)])
