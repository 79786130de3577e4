"""Exercise set 3 (chapter 3, "Asynchrony and barriers"): parity waits, mbarrier states, async-groups,
buffers, the tx-count of a broken pipeline, and five kernel exercises graded on the emulator — the starting parity
mask of a three-stage ring, the fence after ``mbarrier.init`` by each thread that initialised barriers, fence
generic writes before a bulk store, write the ``expect_tx`` byte count of a two-copy stage, and message passing
with release/acquire.

Every reference answer is computed by the model the chapter teaches (h100lab.sync, h100lab.sim), by NumPy (3.7,
3.8: tile sums; 3.9: the neighbour sums) or by running the reference kernel on the emulator in the grader's
process, never typed in. The kernels' sources live here (the solution notebook shows the same text); the student
edition shows only the prompts.
"""
from __future__ import annotations

import numpy as np

from ..kernels import KernelRun, Property, Symptom, kernel_exercise
from ..registry import Mistake, exercise

#: the operation sequence of exercises 3.2 and 3.3
SEQUENCE_3_2 = "arrive; arrive.expect_tx 2048; complete_tx 1024; arrive; complete_tx 1024; arrive_drop; arrive"

PARITY_HINT = ("Each round of a buffer is one phase of its barriers. Right after mbarrier.init, which parity names "
               "a phase that has already completed — the one the producer's first wait on 'empty' must ask for?")


@exercise("3.1", points=1, hint="Iteration k uses buffer k % S in round k // S; the consumer waits for that "
          "round's phase of full (parity round & 1), the producer for the previous round's release of empty.",
          mistakes=[Mistake("The parity is the round's, not the iteration's: the round is k // S.",
                            when=lambda v, ref: isinstance(v, tuple) and len(v) == 3 and v[1] == 7 % 2 != ref[1]),
                    Mistake(PARITY_HINT, when=lambda v, ref: isinstance(v, tuple) and len(v) == 3
                            and v[:2] == ref[:2] and v[2] == ref[1])])
def _parity():
    from h100lab.sim.pipeline import parity_for_iteration

    return (7 % 3, parity_for_iteration(7, 3), parity_for_iteration(7, 3, "producer"))


@exercise("3.2", points=2, hint="A phase completes when pending arrivals and tx-count are both 0; arrive_drop "
          "lowers the expected count for the phases after it too.")
def _state():
    from h100lab.sync.mbarrier import run_ops

    last = run_ops(3, SEQUENCE_3_2)[-1]
    return (last.phase_number, last.state.pending, last.state.expected, last.state.tx)


@exercise("3.3", points=1, hint="try_wait.parity(p) is true exactly when (current phase & 1) != p.")
def _waits():
    from h100lab.sync.mbarrier import run_ops

    return run_ops(3, SEQUENCE_3_2)[-1].waits


@exercise("3.4", points=1, hint="Count committed groups; a wait N leaves at most N of them pending, and an "
          "empty group is complete at once.",
          mistakes=[Mistake("An empty group (a commit with no copy since the last one) is complete as soon as it is "
                            "committed.", when=lambda v, ref: v == ref + 1)])
def _groups():
    from h100lab.sync.groups import pending_after

    return pending_after(["cp", "cp", "commit", "cp", "commit", "commit", "cp", "commit", "wait 2", "cp",
                          "cp", "commit"])


@exercise("3.5", points=1, hint="While the consumer works on one buffer the others must cover the round trip "
          "compute + latency + transfer.",
          mistakes=[Mistake("The buffer being consumed is in flight too: round up the whole round trip over the "
                            "time per tile.", when=lambda v, ref: v == ref - 1)])
def _buffers():
    from h100lab.sim.pipeline import buffers_to_hide

    return buffers_to_hide(1200, 350, 100)


TX_TILE_3_6 = 2048


@exercise("3.6", points=1, hint="expect_tx adds to the tx-count, the copy's completion subtracts the bytes it "
          "delivered; the phase completes only at exactly zero.",
          mistakes=[Mistake("Which happens first in the count, the expectation or the delivery? Mind the sign.",
                            when=lambda v, ref: v == -ref),
                    Mistake("The tile is 2048 bytes; expect_tx was given its count of 32-bit words.",
                            when=lambda v, ref: v == -TX_TILE_3_6)])
def _tx_left():
    from h100lab.sync import mbarrier as mb

    s = mb.init(1)
    s, _ = mb.arrive_expect_tx(s, TX_TILE_3_6 // 4)     # the words, not the bytes
    s = mb.complete_tx(s, TX_TILE_3_6)
    return s.tx


# ------------------------------------------------------------------------------------------------------------
# Kernel exercises (3.7-3.11), each a kernel of its own; the solution notebook shows the same text.

# 3.7: a three-stage ring that keeps each side's parities as a bit mask (bit s: the parity the next wait on stage s
# asks for, flipped after each wait) and walks the stages with a wrapping index — not the chapter's round & 1
# parities. The student derives the producer's starting mask: every stage's 'empty' barrier is fresh, so the
# first wait on each must ask for the parity of the phase that counts as completed.
RING_3_7 = r"""
#define STAGES 3
#define MAX_TILE_BYTES 2048
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void wait(unsigned bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred p;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra WAIT_%=;\n\t}" :: "r"(bar), "r"(parity) : "memory");
}
extern "C" __global__ void tile_sums(const unsigned* src, int tiles, int tile_bytes, unsigned* out) {
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    __shared__ __align__(128) unsigned char buf[STAGES * MAX_TILE_BYTES];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&full[s])) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&empty[s])) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // each side keeps, per stage s, the parity its next wait on that stage's barrier asks for: bit s of a mask
    if (warp == 0 && lane == 0) {
        unsigned empty_parity = (1u << STAGES) - 1u;
        for (int t = 0, s = 0; t < tiles; ++t, s = (s + 1 == STAGES) ? 0 : s + 1) {
            wait(smem_addr(&empty[s]), (empty_parity >> s) & 1u);
            empty_parity ^= 1u << s;
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         :: "r"(smem_addr(&full[s])), "r"(tile_bytes) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         :: "r"(smem_addr(buf + s * tile_bytes)), "l"(src + t * (tile_bytes / 4)),
                            "r"(tile_bytes), "r"(smem_addr(&full[s])) : "memory");
        }
    } else if (warp == 1) {
        unsigned full_parity = 0u;
        for (int t = 0, s = 0; t < tiles; ++t, s = (s + 1 == STAGES) ? 0 : s + 1) {
            wait(smem_addr(&full[s]), (full_parity >> s) & 1u);
            full_parity ^= 1u << s;
            const unsigned* tile = reinterpret_cast<const unsigned*>(buf + s * tile_bytes);
            unsigned acc = 0;
            for (int i = lane; i < tile_bytes / 4; i += 32) acc += tile[i];
            for (int d = 16; d > 0; d /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, d);
            if (lane == 0) out[t] = acc;
            __syncwarp();
            if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(&empty[s])) : "memory");
        }
    }
}
"""
_EMPTY_INIT = "        unsigned empty_parity = (1u << STAGES) - 1u;\n"
_FULL_INIT = "        unsigned full_parity = 0u;\n"
assert _EMPTY_INIT in RING_3_7 and _FULL_INIT in RING_3_7
#: 3.7's prompt: the producer starts from the consumer's mask (waits for a phase of a fresh 'empty' that never came)
PROMPT_3_7 = RING_3_7.replace(_EMPTY_INIT, "        unsigned empty_parity = 0u;\n")
#: a typical wrong fix: both masks start at all ones (the consumer then asks a fresh 'full' for the completed phase)
BOTH_ONES_3_7 = RING_3_7.replace(_FULL_INIT, "        unsigned full_parity = (1u << STAGES) - 1u;\n")
#: only the first stage counted free: the producer's second wait (stage 1) asks for a phase that never came
FIRST_ONLY_3_7 = RING_3_7.replace(_EMPTY_INIT, "        unsigned empty_parity = 1u;\n")

def _tiles_run(program, tiles=7, tile_bytes=1024, seed=11, **options):
    from h100lab import emu

    x = np.random.default_rng(seed).integers(0, 2**32, tiles * tile_bytes // 4, dtype=np.uint32)
    dx, out = emu.to_device(x), emu.zeros(tiles, np.uint32)
    from ..kernels import MAX_INSTRUCTIONS

    stats = emu.launch(program.function("tile_sums"), 1, 64, dx, np.int32(tiles), np.int32(tile_bytes), out,
                       max_instructions=MAX_INSTRUCTIONS, **options)
    return KernelRun({"out": out.to_host()}, stats)


def _report(err, kind):
    return type(err).__name__ == kind


def _deadlocked_on_parity(out, ref, err):
    return _report(err, "DeadlockError") and "waiting for the phase of parity" in str(err)


EARLY_READ_HINT = ("The consumer's wait returned before the copy had landed: its parity must name the phase of 'full' "
                   "that this tile's copy completes, and round 0 completes phase 0.")

RING_PARITY_HINT = ("Every stage's barriers start fresh, and a fresh barrier's wait returns at once only for the parity "
                    "of the phase that counts as already completed. Which stages are free when the producer starts, "
                    "and what must its first wait on each of them ask for?")


def _tile_sums_expected(tiles=7, tile_bytes=1024, seed=11):
    """The sum (mod 2^32) of each tile of _tiles_run's input: NumPy, not a kernel."""
    x = np.random.default_rng(seed).integers(0, 2**32, tiles * tile_bytes // 4, dtype=np.uint32)
    return {"out": x.reshape(tiles, -1).sum(axis=1, dtype=np.uint32)}


def _consumer_ran_ahead(out, ref, err) -> bool:
    """A deadlock in which the producer (warp 0) waits on an 'empty' barrier that has already completed a phase: the
    consumer released stages it never received, its first waits on fresh 'full' barriers having returned at once."""
    import re
    return _report(err, "DeadlockError") and re.search(
        r"warp 0: mbarrier\.try_wait\.parity [^\n]*barrier state: phase [1-9]", str(err)) is not None


kernel_exercise("3.7", run=_tiles_run, expect=_tile_sums_expected, points=3,
                hint="Write out, for the first four tiles, the stage, the phase of each barrier and the bit each wait "
                     "reads from its mask.",
                symptoms=[Symptom(_consumer_ran_ahead, EARLY_READ_HINT), Symptom(_deadlocked_on_parity, RING_PARITY_HINT),
                          Symptom(lambda out, ref, st: bool((out["out"] != ref["out"])[0]), EARLY_READ_HINT)],
                mistakes=[Mistake(RING_PARITY_HINT, answer=PROMPT_3_7), Mistake(RING_PARITY_HINT, answer=FIRST_ONLY_3_7),
                          Mistake(EARLY_READ_HINT, answer=BOTH_ONES_3_7)])

# 3.8: two streams, each with its own two-stage ring; warp 0 produces both, warps 1 and 2 each consume one stream and
# initialise that stream's barriers themselves. The fence after mbarrier.init belongs to each initialising thread,
# after its own inits — thread 0, where the chapter's pipeline has it, initialised nothing here.
STREAMS_3_8 = r"""
#define STAGES 2
#define MAX_TILE_BYTES 1024
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void init_barrier(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void wait(unsigned long long* bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred p;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra WAIT_%=;\n\t}" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}
// out[c * tiles + t] = the sum of tile t of stream c (src + c * tiles * tile_bytes / 4); 96 threads
extern "C" __global__ void two_streams(const unsigned* src, int tiles, int tile_bytes, unsigned* out) {
    __shared__ __align__(8) unsigned long long full[2][STAGES], empty[2][STAGES];
    __shared__ __align__(128) unsigned char buf[2][STAGES * MAX_TILE_BYTES];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp >= 1 && lane == 0) {                    // each consumer sets up its own stream's ring
        const int c = warp - 1;
        for (int s = 0; s < STAGES; ++s) init_barrier(&full[c][s], 1), init_barrier(&empty[c][s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == 0 && lane == 0) {                    // the producer: the tiles of both streams, alternately
        for (int t = 0; t < tiles; ++t)
            for (int c = 0; c < 2; ++c) {
                const int s = t % STAGES;
                wait(&empty[c][s], ((t / STAGES) & 1) ^ 1);
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                             :: "r"(smem_addr(&full[c][s])), "r"(tile_bytes) : "memory");
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                             :: "r"(smem_addr(buf[c] + s * tile_bytes)), "l"(src + (c * tiles + t) * (tile_bytes / 4)),
                                "r"(tile_bytes), "r"(smem_addr(&full[c][s])) : "memory");
            }
    } else if (warp >= 1) {                          // consumer of stream warp - 1
        const int c = warp - 1;
        for (int t = 0; t < tiles; ++t) {
            const int s = t % STAGES;
            wait(&full[c][s], (t / STAGES) & 1);
            const unsigned* tile = reinterpret_cast<const unsigned*>(buf[c] + s * tile_bytes);
            unsigned acc = 0;
            for (int i = lane; i < tile_bytes / 4; i += 32) acc += tile[i];
            for (int d = 16; d > 0; d /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, d);
            if (lane == 0) out[c * tiles + t] = acc;
            __syncwarp();
            if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(&empty[c][s])) : "memory");
        }
    }
}
"""
_INIT_FENCE_3_8 = '        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");\n'
assert _INIT_FENCE_3_8 in STREAMS_3_8
_NO_FENCE_3_8 = STREAMS_3_8.replace(_INIT_FENCE_3_8, "")
#: the prompt: no fence at all
PROMPT_3_8 = _NO_FENCE_3_8
#: the fence where the chapter's pipeline has it: by thread 0, which initialised nothing here
THREAD0_3_8 = _NO_FENCE_3_8.replace("    __syncthreads();\n    if (warp == 0 && lane == 0) {",
                                    "    if (threadIdx.x == 0) asm volatile(\"fence.mbarrier_init.release.cluster;\" "
                                    "::: \"memory\");\n    __syncthreads();\n    if (warp == 0 && lane == 0) {", 1)
#: the fence before the inits
BEFORE_3_8 = _NO_FENCE_3_8.replace("        const int c = warp - 1;\n        for (int s = 0; s < STAGES; ++s) init_barrier",
                                   "        const int c = warp - 1;\n" + _INIT_FENCE_3_8 +
                                   "        for (int s = 0; s < STAGES; ++s) init_barrier", 1)
#: a memory fence instead of the proxy fence, in the right place
MEMBAR_3_8 = STREAMS_3_8.replace(_INIT_FENCE_3_8, "        __threadfence_block();\n")
assert THREAD0_3_8 != _NO_FENCE_3_8 and BEFORE_3_8 != _NO_FENCE_3_8
TILES_3_8, TILE_BYTES_3_8 = 5, 512


def _streams_input():
    return np.random.default_rng(38).integers(0, 2**32, 2 * TILES_3_8 * TILE_BYTES_3_8 // 4, dtype=np.uint32)


def _streams_run(program):
    from h100lab import emu

    from ..kernels import MAX_INSTRUCTIONS

    from h100lab.emu.errors import EmuError

    out = emu.zeros(2 * TILES_3_8, np.uint32)
    try:
        stats = emu.launch(program.function("two_streams"), 1, 96, emu.to_device(_streams_input()),
                           np.int32(TILES_3_8), np.int32(TILE_BYTES_3_8), out, max_instructions=MAX_INSTRUCTIONS)
    except EmuError as exc:     # the symptoms tell a missing fence from a misplaced one by the compiled PTX
        exc.has_init_fence = "fence.mbarrier_init" in program.ptx
        raise
    return KernelRun({"out": out.to_host()}, stats)


def _streams_expected():
    return {"out": _streams_input().reshape(2 * TILES_3_8, -1).sum(axis=1, dtype=np.uint32)}


INIT_FENCE_HINT = ("mbarrier.init is an ordinary (generic-proxy) write; the copy engine signals the barrier through "
                   "the async proxy. A memory fence orders one proxy's accesses — which fence orders the two proxies "
                   "for a freshly initialised barrier?")
INIT_WHO_HINT = ("fence.mbarrier_init makes visible the inits of the thread that executes it, those it made before the "
                 "fence: here the consumers initialise their own barriers, so who must fence, and after what?")


def _unfenced_init(out, ref, err):
    return _report(err, "ProxyFenceError") and "mbarrier.init" in str(err)


kernel_exercise("3.8", run=_streams_run, expect=_streams_expected, points=3,
                hint="Who initialised each barrier, who reads it through which proxy, and in which order?",
                symptoms=[Symptom(lambda out, ref, err: _unfenced_init(out, ref, err) and err.has_init_fence, INIT_WHO_HINT),
                          Symptom(_unfenced_init, INIT_FENCE_HINT)],
                mistakes=[Mistake(INIT_FENCE_HINT, answer=PROMPT_3_8), Mistake(INIT_FENCE_HINT, answer=MEMBAR_3_8),
                          Mistake(INIT_WHO_HINT, answer=THREAD0_3_8), Mistake(INIT_WHO_HINT, answer=BEFORE_3_8)])

# ------------------------------------------------------------------------------------------------------------
# 3.9: a tile written twice by every thread (scaled, then replaced by a neighbour sum, in place), then one bulk store
# (async proxy). The fence belongs after each writer's LAST generic write, before the barrier that hands the tile to
# the issuer — after the first pass, where the chapter's single-pass kernel has it, the second pass goes unfenced.

STORE_3_9 = r"""
// dst[b * 128 + t] = 3 in[t] + 3 in[(t + 1) % 128] of block b's 128 words, computed in shared memory and stored
// with one bulk copy (cp.async.bulk shared -> global); 128 threads per block
extern "C" __global__ void neighbour_store(const unsigned* src, unsigned* dst) {
    __shared__ __align__(128) unsigned tile[128];
    const unsigned t = threadIdx.x;
    tile[t] = 3u * src[blockIdx.x * 128 + t];                   // pass 1: every thread writes (generic proxy)
    __syncthreads();
    const unsigned v = tile[t] + tile[(t + 1) % 128];          // reads a neighbour's word of pass 1
    __syncthreads();                                           // every read is done before anyone overwrites
    tile[t] = v;                                               // pass 2, in place
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (t == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 512;"
                     :: "l"(dst + blockIdx.x * 128), "r"(static_cast<unsigned>(__cvta_generic_to_shared(tile)))
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
"""
_STORE_FENCE = '    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");\n'
_PASS1 = "    tile[t] = 3u * src[blockIdx.x * 128 + t];                   // pass 1: every thread writes (generic proxy)\n"
assert STORE_3_9.count(_STORE_FENCE) == 1 and _PASS1 in STORE_3_9
PROMPT_3_9 = STORE_3_9.replace(_STORE_FENCE, "")
#: the fence where the chapter's single-pass kernel has it: after the first writes, before the first barrier
PASS1_3_9 = PROMPT_3_9.replace(_PASS1, _PASS1 + _STORE_FENCE)
#: one fence, by the issuing thread
ONE_FENCE_3_9 = PROMPT_3_9.replace('    if (t == 0) {\n', '    if (t == 0) {\n    ' + _STORE_FENCE)


def _store_input():
    return np.random.default_rng(23).integers(0, 2**30, 4 * 128, dtype=np.uint32)


def _store_run(program):
    from h100lab import emu
    from h100lab.emu.errors import EmuError

    from ..kernels import MAX_INSTRUCTIONS

    dx, out = emu.to_device(_store_input()), emu.zeros(4 * 128, np.uint32)
    try:
        stats = emu.launch(program.function("neighbour_store"), 4, 128, dx, out, max_instructions=MAX_INSTRUCTIONS)
    except EmuError as exc:     # the symptoms tell a missing fence from a misplaced one by the compiled PTX
        exc.has_proxy_fence = "fence.proxy.async" in program.ptx
        raise
    return KernelRun({"dst": out.to_host()}, stats)


def _store_expected():
    t = (3 * _store_input().astype(np.uint64)).astype(np.uint32).reshape(4, 128)
    return {"dst": (t + np.roll(t, -1, axis=1)).reshape(-1)}


STORE_NONE_HINT = ("The bulk store reads the tile through the async proxy: ordinary stores are not visible to it until "
                   "the threads that made them fence them (fence.proxy.async), before the barrier that hands the tile "
                   "to the issuing thread.")
STORE_EARLY_HINT = ("A fence orders the writes its thread made before it, not those it makes after: the tile's last "
                    "generic writes came after the fence.")
STORE_FENCE_HINT = ("fence.proxy.async orders the accesses of the thread that executes it. Which threads wrote the "
                    "tile, and where must their fences stand relative to the barrier that hands the tile to the "
                    "issuing thread?")


def _unfenced_store(by_warp0: bool):
    """The bulk store found bytes written with ordinary stores and not fenced, while the PTX has a proxy fence — by
    warp 0 (the issuer's own warp: its fence came before its last writes) or by another warp (no fence of its own)."""
    import re

    def test(out, ref, err):
        m = re.search(r"that warp (\d+) wrote with ordinary stores", str(err))
        return bool(_report(err, "ProxyFenceError") and m and err.has_proxy_fence and (m.group(1) == "0") == by_warp0)
    return test


kernel_exercise("3.9", run=_store_run, expect=_store_expected, points=3,
                hint="The tile is written by the generic proxy and read by the async proxy (the bulk store).",
                symptoms=[Symptom(_unfenced_store(True), STORE_EARLY_HINT), Symptom(_unfenced_store(False), STORE_FENCE_HINT),
                          Symptom(lambda out, ref, err: _report(err, "ProxyFenceError") and "ordinary stores" in str(err),
                                  STORE_NONE_HINT)],
                properties=[Property(lambda out, st: None if st.tma_bytes == 4 * 512 else
                                     f"the bulk stores moved {st.tma_bytes} B, not one 512-B tile per block")],
                mistakes=[Mistake(STORE_NONE_HINT, answer=PROMPT_3_9), Mistake(STORE_EARLY_HINT, answer=PASS1_3_9),
                          Mistake(STORE_FENCE_HINT, answer=ONE_FENCE_3_9)])

# ------------------------------------------------------------------------------------------------------------
# 3.10: the expect_tx of a stage filled by two copies

EXPECT_3_10 = r'''
extern "C" __global__ void scale_rows(const float* a, int na, const float* b, int nb, float* out) {
    __shared__ __align__(128) float sa[1024];
    __shared__ __align__(128) float sb[256];
    __shared__ __align__(8) unsigned long long full;
    const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&full));
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned tx_bytes = (na + nb) * sizeof(float);        // every byte that will signal `full`
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(tx_bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(sa))), "l"(a), "r"(na * 4), "r"(bar) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(sb))), "l"(b), "r"(nb * 4), "r"(bar) : "memory");
    }
    asm volatile("{\n\t.reg .pred p;\nW_%=:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t@!p bra W_%=;\n\t}"
                 :: "r"(bar) : "memory");
    for (int i = threadIdx.x; i < na; i += blockDim.x) out[i] = sa[i] * sb[i % nb];
}
'''
_TX_LINE = "        const unsigned tx_bytes = (na + nb) * sizeof(float);        // every byte that will signal `full`\n"
PROMPT_3_10 = EXPECT_3_10.replace(_TX_LINE, "        const unsigned tx_bytes = 0;   // YOUR ANSWER: every byte that will signal `full`\n")
ELEMENTS_3_10 = EXPECT_3_10.replace("(na + nb) * sizeof(float);", "na + nb;                    ")
ONE_COPY_3_10 = EXPECT_3_10.replace("(na + nb) * sizeof(float);", "na * sizeof(float);         ")
NA_3_10, NB_3_10 = 768, 96


#: schedules the kernel runs under: the default, and seed 3, which lands the second copy before the first
SEEDS_3_10 = (None, 3)


def _expect_run(program):
    from h100lab import emu

    from ..kernels import MAX_INSTRUCTIONS

    rng = np.random.default_rng(31)
    a = rng.standard_normal(NA_3_10).astype(np.float32)
    b = rng.standard_normal(NB_3_10).astype(np.float32)
    outs, stats = [], None
    for seed in SEEDS_3_10:
        out = emu.zeros(NA_3_10, np.float32)
        stats = emu.launch(program.function("scale_rows"), 1, 128, emu.to_device(a), np.int32(NA_3_10),
                           emu.to_device(b), np.int32(NB_3_10), out, seed=seed, max_instructions=MAX_INSTRUCTIONS)
        outs.append(out.to_host())
    return KernelRun({"out": np.concatenate(outs)}, stats)


def _tx_left(err):
    import re

    m = re.search(r"tx ([+-]?\d+)", str(err))
    return int(m.group(1)) if m and type(err).__name__ == "DeadlockError" else None


BYTES_HINT = "The tx-count counts bytes, not elements: how large is one element of each copy?"
BOTH_COPIES_HINT = "Both copies complete_tx on the same barrier: the expectation must cover every byte that signals it."

kernel_exercise("3.10", run=_expect_run, reference=EXPECT_3_10, points=3,
                hint="The phase completes when the tx-count returns exactly to zero.",
                symptoms=[Symptom(lambda out, ref, err: _tx_left(err) == -3 * (NA_3_10 + NB_3_10), BYTES_HINT),
                          Symptom(lambda out, ref, err: _tx_left(err) in (-4 * NB_3_10, -4 * NA_3_10), BOTH_COPIES_HINT),
                          Symptom(lambda out, ref, err: _tx_left(err) == -4 * (NA_3_10 + NB_3_10),
                                  "The barrier never expected any bytes: arrive.expect_tx must announce them."),
                          Symptom(lambda out, ref, err: (_tx_left(err) or 0) > 0,
                                  "The barrier expects more bytes than the copies bring."),
                          Symptom(lambda out, ref, err: _report(err, "RaceError"),
                                  "The phase completed before the bytes landed: with nothing expected, the producer's "
                                  "arrive alone completes it.")],
                properties=[Property(lambda out, st: None if st.tma_bytes == 4 * (NA_3_10 + NB_3_10) else
                                     f"the copies delivered {st.tma_bytes} B; the stage holds {4 * (NA_3_10 + NB_3_10)} B")],
                mistakes=[Mistake(BYTES_HINT, answer=ELEMENTS_3_10), Mistake(BOTH_COPIES_HINT, answer=ONE_COPY_3_10)])

# ------------------------------------------------------------------------------------------------------------
# 3.11: message passing between two warps with release/acquire, graded under several schedules + racecheck

MP_3_11 = r'''
extern "C" __global__ void publish(const unsigned* in, unsigned* out) {
    __shared__ unsigned data[32];
    __shared__ unsigned flag;
    const unsigned f = static_cast<unsigned>(__cvta_generic_to_shared(&flag));
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    const int lane = threadIdx.x % 32;
    if (threadIdx.x < 32) {                                   // warp 0: the producer
        data[lane] = 2u * in[lane] + 1u;
        __syncwarp();
        if (lane == 0) asm volatile("st.release.cta.shared.u32 [%0], 1;" :: "r"(f) : "memory");
    } else {                                                  // warp 1: the consumer
        unsigned seen = 0;
        while (!seen) asm volatile("ld.acquire.cta.shared.u32 %0, [%1];" : "=r"(seen) : "r"(f) : "memory");
        out[lane] = data[lane];
    }
}
'''
PROMPT_3_11 = MP_3_11.replace("st.release.cta.shared.u32", "st.volatile.shared.u32").replace(
    "ld.acquire.cta.shared.u32", "ld.volatile.shared.u32")
RELEASE_ONLY_3_11 = MP_3_11.replace("ld.acquire.cta.shared.u32", "ld.volatile.shared.u32")
SEEDS_3_11 = (None, 1, 2, 3)


def _mp_run(program):
    from h100lab import emu

    from ..kernels import MAX_INSTRUCTIONS

    x = np.random.default_rng(41).integers(0, 2**31, 32, dtype=np.uint32)
    outs, stats = [], None
    for seed in SEEDS_3_11:
        out = emu.zeros(32, np.uint32)
        stats = emu.launch(program.function("publish"), 1, 64, emu.to_device(x), out, seed=seed, racecheck=True,
                           max_instructions=MAX_INSTRUCTIONS)
        outs.append(out.to_host())
    return KernelRun({"out": np.concatenate(outs)}, stats)


MP_HINT = ("A release orders the writer's earlier stores only for a reader whose load *acquires* the flag (or who "
           "fences after reading it). Do both sides of the flag carry their half of the pair?")

kernel_exercise("3.11", run=_mp_run, reference=MP_3_11, points=3,
                hint="The flag must carry ordering, not just a value.",
                symptoms=[Symptom(lambda out, ref, err: _report(err, "RaceError"), MP_HINT)],
                mistakes=[Mistake(MP_HINT, answer=RELEASE_ONLY_3_11)])
