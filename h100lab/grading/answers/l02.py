"""Exercise set 2 (chapter 2, "Clusters, PTX, data types and state spaces").

Every reference answer is computed by the model the chapter teaches (h100lab.cluster, h100lab.ptx,
h100lab.memory.spaces) or, for a kernel exercise (2.14, 2.15), by running the solution kernel on the
emulator in the grader's process, or (2.11, 2.13) by NumPy — never typed in. 2.5 is an inline-PTX statement: it is judged by compiling
it with NVRTC inside a small kernel and running that on the emulator, so every correct spelling passes
(``asm`` or ``asm volatile``, any whitespace, either operand order of the product). The student edition
imports nothing from this module.
"""
from __future__ import annotations

import re

import numpy as np

from ..kernels import KernelRun, Property, Symptom, kernel_exercise
from ..registry import Feedback, Mistake, exercise

_BARRIER = 'asm volatile("barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");'


@exercise("2.1", points=1, hint="rank = x + nx·(y + ny·z) with (x, y, z) = %cluster_ctaid and (nx, ny, nz) the "
          "cluster shape.", mistakes=[Mistake("That is z + nz·(y + ny·x): the x index varies fastest.", answer=3)])
def _rank():
    from h100lab.cluster import cta_rank

    return cta_rank((1, 0, 1), (2, 2, 2))


@exercise("2.2", points=1, hint="First the block's position inside its cluster (%cluster_ctaid = %ctaid modulo the "
          "cluster shape, per dimension), then the rank of that position.",
          mistakes=[Mistake("That is a block id, not a rank: mapa takes the CTA's rank inside its cluster.",
                            when=lambda v, ref: v in (6 + 8 * 3, 30))])
def _rank_of_block():
    from h100lab.cluster import special_registers

    return special_registers((6, 3), (8, 4), (4, 2)).cluster_ctarank


@exercise("2.3", points=1, hint="bf16 keeps the upper 16 bits of the float32 (1.5 and -0.25 are exact); element 0 "
          "goes in bits 0-15.", mistakes=[Mistake("The halves are swapped: element 0 of the array sits in the low "
                                                  "half of the register.", answer=0x3FC0BE80)])
def _pack_bf16x2():
    from h100lab.ptx import pack

    return pack([1.5, -0.25], ".bf16x2")


@exercise("2.4", points=2, hint="cvt.rn.bf16x2.f32 d, a, b puts its first source a in the upper half — unlike memory "
          "order.", mistakes=[Mistake("That is the array's memory order; cvt puts its *first* source in the upper "
                                      "half.", answer=0xBE803FC0)])
def _cvt_operands():
    from h100lab.ptx import cvt_x2

    return cvt_x2(1.5, -0.25, ".bf16x2")


# ---- 2.5: an inline-PTX statement, judged by compiling and running it ---------------------------------------
_HARNESS = r"""
extern "C" __global__ void harness(const float* X, const float* Y, float* ACC) {
    const int t = threadIdx.x;
    float acc = ACC[t];
    const float x = X[t], y = Y[t];
    %s
    ACC[t] = acc;
}
"""


def _run_statement(statement: str) -> np.ndarray:
    from h100lab import emu

    statement = statement.strip()
    if not statement.endswith(";"):          # the statement's own terminator is optional in the answer
        statement += ";"
    program = emu.compile(_HARNESS % statement, name="statement_2_5.cu")
    ptx = program.ptx
    inline = re.findall(r"// begin inline asm(.*?)// end inline asm", ptx, re.S)
    if not any("fma.rn.f32" in block for block in inline):
        raise ValueError("no fma.rn.f32 in an inline-PTX statement")
    rng = np.random.default_rng(25)
    x, y, acc = (rng.standard_normal(32).astype(np.float32) for _ in range(3))
    d = emu.to_device(acc)
    emu.launch(program.function("harness"), 1, 32, emu.to_device(x), emu.to_device(y), d)
    return d.to_host()


def _same_effect(statement, expected) -> Feedback:
    from h100lab.nvrtc import CompileError

    if not isinstance(statement, str) or "asm" not in statement:
        return Feedback(False, "the answer is one inline-PTX statement as a string: asm(...) or asm volatile(...);")
    try:
        got = _run_statement(statement)
    except CompileError as exc:
        lines = str(exc).splitlines()
        return Feedback(False, "the statement does not compile: " + " ".join(x.strip() for x in lines[1:2]))
    except ValueError as exc:
        return Feedback(False, f"the statement must compute the product-sum in inline PTX with fma.rn.f32 ({exc})")
    want = _run_statement(expected)
    bad = int(np.count_nonzero(got.view(np.uint32) != want.view(np.uint32)))
    return Feedback(bad == 0, "" if bad == 0 else f"it compiles, but acc comes out different for {bad} of 32 threads")


def _plain(s) -> str:
    return re.sub(r"\s+", "", str(s))


_WRITE_ONLY = ("acc is read by the instruction as well as written: a write-only output (=) is never loaded, so the "
               "instruction reads whatever its register held. Use the read-write modifier.")
PLANTED_2_5 = 'asm volatile("fma.rn.f32 %0, %1, %2, %0;" : "=f"(acc) : "f"(x), "f"(y));'


@exercise("2.5", points=2, hint="Outputs first (acc, read and written: '+'), then the inputs x and y; the letter for "
          "a float is f; the template reads acc again as its last source.", equal=_same_effect, budget=60,
          mistakes=[Mistake(_WRITE_ONLY, answer=PLANTED_2_5,
                            when=lambda v, ref: isinstance(v, str) and '"=f"(acc)' in _plain(v))])
def _asm_text():
    from h100lab.ptx import build, inout, inp

    return build("fma.rn.f32 {acc}, {a}, {b}, {acc};", acc=inout("float", "acc"), a=inp("float", "x"),
                 b=inp("float", "y")).text


@exercise("2.6", points=1, hint="A constraint letter follows the size of the C++ type: 16, 32 or 64 bits.",
          mistakes=[Mistake("r is a 32-bit register; an unsigned long long has 64 bits.", answer="r")])
def _letter():
    from h100lab.ptx import constraint_for

    return constraint_for("unsigned long long")


@exercise("2.7", points=1, hint="The own CTA's slot is .shared::cta; another rank's slot is reachable only as "
          ".shared::cluster.", mistakes=[Mistake("That window belongs to the executing CTA (rank 1); the address "
                                                  "names rank 0.", answer=".shared::cta")])
def _space():
    from h100lab.memory.spaces import SHARED_RESERVED, AddressMap, cluster_address

    m = AddressMap(cta_rank=1, cluster_size=2)
    return m.space_of(m.cvta(".shared::cluster", cluster_address(0, SHARED_RESERVED)))


@exercise("2.8", points=1, hint="Byte address r·128 + c·2, bank (address / 4) mod 32.",
          mistakes=[Mistake("Banks count 4-byte words of the byte address, not elements: element (r, c) of a bf16 "
                            "tile is at byte r·128 + c·2.", answer=(37 * 64 + 21) % 32)])
def _bank():
    from h100lab.memory.spaces import tile_banks

    return int(tile_banks(64, 64, 2)[37, 21])


@exercise("2.9", points=2, hint="CTAs per SM by shared memory first; then each domain of n SMs holds ⌊n·b / c⌋ "
          "clusters of c CTAs if n ≥ c (each CTA of a cluster on an SM of its own), none otherwise.",
          mistakes=[Mistake("That pools every SM's CTA slots over the whole GPU; clusters must fit inside one domain, "
                            "and a singleton TPC takes none of 8 CTAs.", answer=132 * 3 // 8)])
def _clusters():
    from h100lab.cluster import max_active_clusters

    return max_active_clusters((4, 2), 256, 60000)


@exercise("2.10", points=1, hint="One CTA per SM: a domain of n SMs holds ⌊n / 16⌋ clusters of 16; count the SMs "
          "left over in every domain.", mistakes=[Mistake("Count the SMs of the domains too small for a cluster of "
                                                          "16 as well: the 8-SM virtual GPC and the singleton TPCs.",
                                                          answer=4)])
def _idle():
    from h100lab.cluster import cluster_capacity

    return cluster_capacity(16, 128, blocks=1, non_portable=True).idle_sms


@exercise("2.12", points=1, hint="A .shared::cta address on an H200 is (rank << 24) | offset, and the first variable "
          "sits after the 1 KB reserved per block.",
          mistakes=[Mistake("That is the offset inside the CTA's window; on an H200 the address also carries the "
                            "rank in bits 24 and up.", answer=0x400)])
def _cta_address():
    from h100lab.memory.spaces import SHARED_RESERVED, cluster_address

    return cluster_address(2, SHARED_RESERVED)


@exercise("2.16", points=1, hint="Look at the rule the measured cluster capacity follows: where may the CTAs of one "
          "cluster be placed?", mistakes=[Mistake("On the H200 the CTAs of one cluster never shared an SM, even with "
                                                  "8 CTAs per SM: an SM holds CTAs of different clusters.",
                                                  answer=True)])
def _share_sm():
    from h100lab.cluster import place_clusters

    p = place_clusters(124, 8, 8)
    return any(len(set(p.cluster_sms(c))) < 8 for c in range(124))


# ---- kernel exercises ------------------------------------------------------------------------------------

#: 2.11: a push ring over several rounds, its inbox double-buffered by round: the cluster barrier must separate each
#: round's push from the read of that round — the place where the chapter's rings put their last barrier (before the
#: exit, after every remote access) is the prompt, and the emulator's race checker rejects it
SOLUTION_2_11 = r"""
// A push ring over `rounds` rounds: each round, every CTA pushes its running value v into inbox[round % 2] of its
// right neighbour (rank + 1) % n, then adds what its left neighbour pushed into its own inbox: after round r, v is
// the sum over the ring of in[] weighted by binomial coefficients. out[b] = v of block b after the last round.
extern "C" __global__ void push_ring(const unsigned* in, int rounds, unsigned* out) {
    __shared__ unsigned inbox[2];
    unsigned rank, n;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    unsigned v = in[blockIdx.x];
    // every CTA of the cluster has started before anyone writes into its shared memory
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    for (int r = 0; r < rounds; ++r) {
        if (threadIdx.x == 0) {                                // push v into the right neighbour's inbox
            unsigned local = (unsigned)__cvta_generic_to_shared(&inbox[r & 1]), remote;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"((rank + 1) % n));
            asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(remote), "r"(v) : "memory");
        }
        asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
        v += inbox[r & 1];                                     // what the left neighbour pushed this round
    }
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}
"""
_ROUND_BARRIER = "        " + _BARRIER + "\n"
_READ_2_11 = "        v += inbox[r & 1];                                     // what the left neighbour pushed this round\n"
_EXIT_2_11 = "    if (threadIdx.x == 0) out[blockIdx.x] = v;\n"
assert SOLUTION_2_11.count(_ROUND_BARRIER + _READ_2_11) == 1 and _EXIT_2_11 in SOLUTION_2_11
_NO_ROUND_BARRIER = SOLUTION_2_11.replace(_ROUND_BARRIER + _READ_2_11, _READ_2_11)
#: the prompt: the barrier where the chapter's rings put their last one — after the loop, before the exit
PROMPT_2_11 = _NO_ROUND_BARRIER.replace(_EXIT_2_11, "    " + _BARRIER + "\n" + _EXIT_2_11)
#: the barrier at the top of each round, before the push
TOP_2_11 = _NO_ROUND_BARRIER.replace("        if (threadIdx.x == 0) {                                // push",
                                     _ROUND_BARRIER + "        if (threadIdx.x == 0) {                                // push")
#: the barrier after the read, at the end of each round
END_2_11 = _NO_ROUND_BARRIER.replace(_READ_2_11, _READ_2_11 + _ROUND_BARRIER)
#: the right place, but arrive without wait
ARRIVE_2_11 = SOLUTION_2_11.replace(_ROUND_BARRIER, '        asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");\n', 1)
assert ARRIVE_2_11.count("barrier.cluster.wait") == 1
ROUNDS_2_11, SEEDS_2_11 = 3, (211, 5)


def _x_2_11():
    return np.random.default_rng(211).integers(0, 1 << 20, 16).astype(np.uint32)


def _run_2_11(program):
    from h100lab import emu

    out, stats = {}, []
    for seed in SEEDS_2_11:          # two schedules, the race checker on: an unordered push and read is reported
        o = emu.zeros(16, np.uint32)
        stats.append(emu.launch(program.function("push_ring"), 16, 64, emu.to_device(_x_2_11()), np.int32(ROUNDS_2_11),
                                o, cluster=4, seed=seed, racecheck=True))
        out[f"out (seed {seed})"] = o.to_host()
    return KernelRun(out, stats)


def _expect_2_11():
    v = _x_2_11().reshape(4, 4)
    for _ in range(ROUNDS_2_11):
        v = v + np.roll(v, 1, axis=1)        # CTA rank k adds what rank k - 1 pushed
    return {f"out (seed {seed})": v.reshape(-1) for seed in SEEDS_2_11}


_UNORDERED = ("A CTA's read of its inbox and its neighbour's push into it are not ordered: a cluster barrier orders "
              "what each CTA did before it with what every CTA does after it, so it must stand between each round's "
              "push and that round's read — one before the exit, or at the top or the end of a round, orders other "
              "pairs.")
_EXITED = ("A CTA wrote into the shared memory of a neighbour that had already exited: every remote access must come "
           "before a cluster barrier that the target waits at before it exits.")
_ARRIVE_ONLY = ("barrier.cluster.arrive alone does not wait, and a thread must not arrive again before the phase "
                "completes: the read needs the wait of the same barrier.")

kernel_exercise("2.11", run=_run_2_11, expect=_expect_2_11, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, err: out is None and "has exited" in str(err), _EXITED),
                          Symptom(lambda out, ref, err: out is None and "barrier.cluster.arrive twice" in str(err),
                                  _ARRIVE_ONLY),
                          Symptom(lambda out, ref, err: out is None and type(err).__name__ == "RaceError", _UNORDERED)],
                mistakes=[Mistake(_UNORDERED, answer=PROMPT_2_11), Mistake(_UNORDERED, answer=TOP_2_11),
                          Mistake(_UNORDERED, answer=END_2_11), Mistake(_ARRIVE_ONLY, answer=ARRIVE_2_11)])

#: 2.13: keep the positive elements (stream compaction) and their largest value, both with atomics written in inline
#: PTX and neither volatile; the compiler keeps the one whose result is used (the slot) and deletes the other
SOLUTION_2_13 = r"""
// out[0 .. *count) = the positive elements of x (in any order); *largest = the largest of them, as its f32 bits
// (for positive floats, the order of the bits read as unsigned integers is the order of the values)
extern "C" __global__ void keep_positive(const float* x, int n, float* out, unsigned* count, unsigned* largest) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.0f) {
        const float v = x[i];
        unsigned slot, old;
        asm("atom.global.add.u32 %0, [%1], 1;" : "=r"(slot) : "l"(count));
        out[slot] = v;
        asm volatile("atom.global.max.u32 %0, [%1], %2;" : "=r"(old) : "l"(largest), "r"(__float_as_uint(v)) : "memory");
    }
}
"""
_MAX_2_13 = 'asm volatile("atom.global.max.u32 %0, [%1], %2;" : "=r"(old) : "l"(largest), "r"(__float_as_uint(v)) : "memory");'
assert _MAX_2_13 in SOLUTION_2_13
#: the prompt: the max statement as written at first, neither volatile nor with its result used
PROMPT_2_13 = SOLUTION_2_13.replace(_MAX_2_13, 'asm("atom.global.max.u32 %0, [%1], %2;" : "=r"(old) : "l"(largest), "r"(__float_as_uint(v)));')
#: volatile, but the maximum taken over every element (negative ones too) before the test
EVERY_2_13 = SOLUTION_2_13.replace("        " + _MAX_2_13 + "\n", "").replace(
    "    if (i < n && x[i] > 0.0f) {\n",
    "    unsigned old;\n    if (i < n) asm volatile(\"atom.global.max.u32 %0, [%1], %2;\" : \"=r\"(old) : \"l\"(largest), "
    "\"r\"(__float_as_uint(x[i])) : \"memory\");\n    if (i < n && x[i] > 0.0f) {\n").replace("unsigned slot, old;", "unsigned slot;")
N_2_13 = 1000


def _x_2_13():
    return np.random.default_rng(213).standard_normal(N_2_13).astype(np.float32)


def _run_2_13(program):
    from h100lab import emu

    x = _x_2_13()
    out, count, largest = emu.zeros(N_2_13, np.float32), emu.zeros(1, np.uint32), emu.zeros(1, np.uint32)
    stats = emu.launch(program.function("keep_positive"), 4, 256, emu.to_device(x), np.int32(N_2_13), out, count,
                       largest)
    n = int(count.to_host()[0])
    return KernelRun({"count": count.to_host(), "largest": largest.to_host(),
                      "kept (sorted)": np.sort(out.to_host()[:min(n, N_2_13)])}, stats)


def _expect_2_13():
    x = _x_2_13()
    pos = np.sort(x[x > 0])
    return {"count": np.array([pos.size], np.uint32), "largest": pos[-1:].view(np.uint32),
            "kept (sorted)": pos}


_DELETED = ("The compaction worked but 'largest' never moved: compare the two atomics in the PTX "
            "(emu.compile(kernel_2_13).ptx). The compiler keeps a statement for its results — one whose results nobody "
            "reads, and that it was not told to keep, is dead code to it.")
_SIGNED_BITS = ("'largest' holds the bits of a negative number: as unsigned integers the bits of every negative float "
                "(sign bit set) compare above those of every positive one, so only the positive values may enter the "
                "maximum.")

kernel_exercise("2.13", run=_run_2_13, expect=_expect_2_13, points=2, budget=60,
                symptoms=[Symptom(lambda out, ref, st: int(out["largest"][0]) == 0 and
                                  np.array_equal(out["count"], ref["count"]), _DELETED),
                          Symptom(lambda out, ref, st: int(out["largest"][0]) >= 0x80000000, _SIGNED_BITS)],
                mistakes=[Mistake(_DELETED, answer=PROMPT_2_13), Mistake(_SIGNED_BITS, answer=EVERY_2_13)])

#: 2.14: the DSMEM histogram of the chapter, with the owner of a bin left to the student
_HIST_HEAD = r"""
extern "C" __global__ void hist_cluster(const unsigned* __restrict__ data, long long n, unsigned* __restrict__ hist,
                                        int nbins) {
    extern __shared__ unsigned bins[];
    unsigned rank, nrank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
    const int per = (nbins + (int)nrank - 1) / (int)nrank;           // the CTA of rank r owns [r·per, (r + 1)·per)
    for (int b = threadIdx.x; b < per; b += blockDim.x) bins[b] = 0u;
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    const unsigned base = (unsigned)__cvta_generic_to_shared(bins);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned v = data[i];
"""
_HIST_TAIL = r"""        unsigned remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(slot), "r"(owner));
        asm volatile("red.shared::cluster.add.u32 [%0], 1;" :: "r"(remote) : "memory");
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    for (int b = threadIdx.x; b < per; b += blockDim.x) {
        const int bin = (int)rank * per + b;
        if (bin < nbins && bins[b]) atomicAdd(&hist[bin], bins[b]);
    }
}
"""
SOLUTION_2_14 = _HIST_HEAD + """        const unsigned owner = v / per;                          // the CTA that owns bin v ...
        const unsigned slot = base + 4u * (v - owner * per);     // ... and v's count in its slice
""" + _HIST_TAIL
PROMPT_2_14 = _HIST_HEAD + """        // TODO: which CTA owns bin v, and where in that CTA's slice its count lives
        const unsigned owner = rank;
        const unsigned slot = base + 4u * v;
""" + _HIST_TAIL
PLANTED_2_14 = _HIST_HEAD + """        const unsigned owner = v % nrank;                        // bins dealt round-robin
        const unsigned slot = base + 4u * (v / nrank);
""" + _HIST_TAIL
NB14, NV14, CL14 = 200, 4096, 4


def _run_2_14(program):
    from h100lab import emu

    data = np.random.default_rng(214).integers(0, NB14, NV14).astype(np.uint32)
    hist = emu.zeros(NB14, np.uint32)
    per = -(-NB14 // CL14)
    stats = emu.launch(program.function("hist_cluster"), 2 * CL14, 128, emu.to_device(data), np.int64(NV14), hist,
                       np.int32(NB14), shared_mem=4 * per, cluster=CL14)
    return KernelRun({"hist": hist.to_host()}, stats)


_OWNER = ("Each CTA owns a slice of per consecutive bins: bin v belongs to the CTA of rank v / per, at offset v − "
          "owner·per in that CTA's slice (the flush at the end relies on exactly this layout).")
_OUTSIDE = ("A thread added outside a CTA's slice: the slice holds only per = ceil(nbins / cluster size) counts, so "
            "bin v must go to the CTA that owns it, at its offset inside that CTA's slice.")

kernel_exercise("2.14", run=_run_2_14, reference=SOLUTION_2_14, points=3, budget=90,
                symptoms=[Symptom(lambda out, ref, err: out is None and "outside the CTA's shared memory" in str(err),
                                  _OUTSIDE),
                          Symptom(lambda out, ref, st: int(out["hist"].sum()) == int(ref["hist"].sum()), _OWNER)],
                mistakes=[Mistake(_OUTSIDE, answer=PROMPT_2_14), Mistake(_OWNER, answer=PLANTED_2_14)])

#: 2.15: a transpose through an unpadded tile, made conflict-free with an XOR swizzle
SOLUTION_2_15 = r"""
#define TILE 32
extern "C" __global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float tile[TILE * TILE];                                        // no padding
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y * TILE + (threadIdx.x ^ threadIdx.y)] = in[y * n + x];    // (r, c) at word 32·r + (c ^ r)
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x * TILE + (threadIdx.y ^ threadIdx.x)];   // element (tx, ty), same swizzle
}
"""
PROMPT_2_15 = (SOLUTION_2_15
               .replace("tile[threadIdx.y * TILE + (threadIdx.x ^ threadIdx.y)] = in[y * n + x];    // (r, c) at word "
                        "32·r + (c ^ r)", "tile[threadIdx.y * TILE + threadIdx.x] = in[y * n + x];")
               .replace("out[y * n + x] = tile[threadIdx.x * TILE + (threadIdx.y ^ threadIdx.x)];   // element (tx, ty), "
                        "same swizzle", "out[y * n + x] = tile[threadIdx.x * TILE + threadIdx.y];"))
PLANTED_2_15 = SOLUTION_2_15.replace("tile[threadIdx.x * TILE + (threadIdx.y ^ threadIdx.x)]",
                                     "tile[threadIdx.x * TILE + threadIdx.y]")
N15 = 64


def _run_2_15(program):
    from h100lab import emu

    a = np.random.default_rng(215).standard_normal((N15, N15)).astype(np.float32)
    out = emu.zeros(N15 * N15, np.float32)
    stats = emu.launch(program.function("transpose"), (2, 2), (32, 32), emu.to_device(a), out, np.int32(N15))
    return KernelRun({"out": out.to_host()}, stats)


_SAME = ("The store and the load must agree on where element (r, c) lives: apply the same swizzle of the column by "
         "the row on both sides.")
_CONFLICTS = ("the column reads still have bank conflicts: without padding, element (r, c) must go to a column that "
              "differs for every row r of a warp's 32 — XOR the column with the row")


def _no_conflicts(out, st):
    return None if st.bank_conflicts == 0 else f"{_CONFLICTS} ({st.bank_conflicts} extra wavefronts)"


kernel_exercise("2.15", run=_run_2_15, reference=SOLUTION_2_15, points=3, budget=60,
                symptoms=[Symptom(lambda out, ref, st: not np.array_equal(out["out"], ref["out"]), _SAME)],
                properties=[Property(_no_conflicts, "conflict-free")],
                mistakes=[Mistake(_CONFLICTS, answer=PROMPT_2_15), Mistake(_SAME, answer=PLANTED_2_15)])
