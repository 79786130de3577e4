"""The emulator executes real NVRTC output: control flow, memories, warp-level operations, barriers,
mbarriers, bulk copies; and it reports broken kernels (deadlock, races, missing fences, bad addresses) with the
CUDA source line."""
from __future__ import annotations

import numpy as np
import pytest

from h100lab import cuda

pytestmark = pytest.mark.skipif(cuda.compiler_unavailable_reason() is not None,
                                reason=f"NVRTC unusable: {cuda.compiler_unavailable_reason()}")

emu = pytest.importorskip("h100lab.emu")


def kern(src: str, name: str):
    return emu.compile(src, name=f"{name}.cu").function(name)


def test_vector_add_and_counters():
    k = emu.compile_kernel("smoke_vector_add").function("vector_add")
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 0.5, np.float32)
    a, b, c = emu.to_device(x), emu.to_device(y), emu.empty(n, np.float32)
    st = emu.launch(k, (n + 255) // 256, 256, a, b, c, np.int32(n))
    np.testing.assert_array_equal(c.to_host(), x + y)
    # 32 warps per launch of 4 blocks, three global accesses per warp; 4 sectors per full warp, 1 for the
    # last warp's 8 threads (coalescing model)
    assert st.global_requests == 3 * 32
    assert st.global_sectors == 3 * (31 * 4 + 1)
    assert st.by_opcode["add.f32"] == 32


DIVERGE = r"""
extern "C" __global__ void diverge(int* out) {
    int t = threadIdx.x;
    int v = 0;
    if (t & 1) { v = t * 3; } else { for (int i = 0; i < t; ++i) v += i; }
    if (t < 5) return;
    __syncwarp();
    out[t] = v + __shfl_sync(0xffffffff, t, 31 - t % 32) * 1000;
}
"""


def test_divergence_reconverges_and_early_exit():
    k = kern(DIVERGE.replace("__syncwarp();\n    out[t] = v + __shfl_sync(0xffffffff, t, 31 - t % 32) * 1000;",
                             "out[t] = v;"), "diverge")
    out = emu.zeros(64, np.int32)
    emu.launch(k, 1, 64, out)
    t = np.arange(64)
    want = np.where(t & 1, t * 3, t * (t - 1) // 2)
    want[:5] = 0
    np.testing.assert_array_equal(out.to_host(), want)


def test_shfl_after_an_exit_is_reported():
    k = kern(DIVERGE, "diverge")
    with pytest.raises(emu.ExecutionError, match="membermask"):
        emu.launch(k, 1, 64, emu.zeros(64, np.int32))


WARPOPS = r"""
extern "C" __global__ void warpops(unsigned* out) {
    unsigned t = threadIdx.x;
    unsigned ballot = __ballot_sync(0xffffffff, t % 3 == 0);
    int any = __any_sync(0xffffffff, t == 7), all = __all_sync(0xffffffff, t < 32);
    unsigned x = __shfl_xor_sync(0xffffffff, t * 10, 1);
    unsigned up = __shfl_up_sync(0xffffffff, t, 2);
    unsigned down = __shfl_down_sync(0xffffffff, t, 3, 16);
    unsigned sum = __reduce_add_sync(0xffffffff, t);
    unsigned mx = __reduce_max_sync(0xffffffff, t ^ 5);
    unsigned peers = __match_any_sync(0xffffffff, t / 4);
    unsigned* o = out + 9 * t;
    o[0] = ballot; o[1] = any; o[2] = all; o[3] = x; o[4] = up; o[5] = down; o[6] = sum; o[7] = mx; o[8] = peers;
}
"""


def test_warp_level_operations():
    k = kern(WARPOPS, "warpops")
    out = emu.zeros(32 * 9, np.uint32)
    emu.launch(k, 1, 32, out)
    o = out.to_host().reshape(32, 9).astype(np.int64)
    t = np.arange(32)
    assert (o[:, 0] == sum(1 << i for i in range(32) if i % 3 == 0)).all()
    assert (o[:, 1] == 1).all() and (o[:, 2] == 1).all()
    np.testing.assert_array_equal(o[:, 3], (t ^ 1) * 10)
    np.testing.assert_array_equal(o[:, 4], np.where(t >= 2, t - 2, t))
    seg = t // 16 * 16
    np.testing.assert_array_equal(o[:, 5], np.where(t + 3 < seg + 16, t + 3, t))
    assert (o[:, 6] == t.sum()).all() and (o[:, 7] == (t ^ 5).max()).all()
    np.testing.assert_array_equal(o[:, 8], [0xF << (4 * (i // 4)) for i in t])


REDUCE = r"""
extern "C" __global__ void block_sum(const int* x, int* out) {
    __shared__ int s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
"""


def test_shared_memory_tree_reduction_with_syncthreads():
    k = kern(REDUCE, "block_sum")
    x = np.random.default_rng(1).integers(-1000, 1000, 4 * 256).astype(np.int32)
    out = emu.zeros(4, np.int32)
    st = emu.launch(k, 4, 256, emu.to_device(x), out)
    np.testing.assert_array_equal(out.to_host(), x.reshape(4, 256).sum(axis=1))
    assert st.barrier_waits > 0 and st.shared_requests > 0


def test_missing_syncthreads_is_a_race_under_racecheck():
    bad = REDUCE.replace("        __syncthreads();\n    }", "    }")
    k = kern(bad, "block_sum")
    x = np.ones(256, np.int32)
    with pytest.raises(emu.RaceError):
        emu.launch(k, 1, 256, emu.to_device(x), emu.zeros(1, np.int32), racecheck=True)


BANKS = r"""
extern "C" __global__ void strided(int stride, float* out) {
    __shared__ float s[32 * 33];
    int t = threadIdx.x;
    for (int i = t; i < 32 * 33; i += 32) s[i] = i;
    __syncwarp();
    out[t] = s[(t * stride) % (32 * 33)];
}
"""


@pytest.mark.parametrize("stride,wavefronts", [(1, 1), (2, 2), (32, 32), (33, 1)])
def test_bank_conflict_counters_follow_the_bank_model(stride, wavefronts):
    from h100lab.memory import banks

    k = kern(BANKS, "strided")
    st = emu.launch(k, 1, 32, np.int32(stride), emu.zeros(32, np.float32))
    line, text, requests, wf = [r for r in st.shared_by_pc if "ld.shared" in r[1]][0]
    assert requests == 1 and wf == wavefronts
    assert wf == banks.wavefronts([(t * stride % (32 * 33)) * 4 for t in range(32)])


PIPE = r"""
extern "C" __global__ void pipe(const int* src, int* out, int parity_bug, int extra) {
    __shared__ __align__(128) int buf[32];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar), d = (unsigned)__cvta_generic_to_shared(buf);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(b), "r"(1 + extra) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 128;" :: "r"(b) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 128, [%2];"
                     :: "r"(d), "l"(src), "r"(b) : "memory");
    }
    asm volatile("{\n\t.reg .pred p;\nW_%=:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t@!p bra W_%=;\n\t}"
                 :: "r"(b), "r"(parity_bug) : "memory");
    out[threadIdx.x] = buf[threadIdx.x] * 2;
}
"""


def test_bulk_copy_pipeline_and_its_counters():
    k = kern(PIPE, "pipe")
    src = emu.to_device(np.arange(32, dtype=np.int32) + 7)
    out = emu.zeros(32, np.int32)
    st = emu.launch(k, 1, 32, src, out, np.int32(0), np.int32(0))
    np.testing.assert_array_equal(out.to_host(), (np.arange(32) + 7) * 2)
    assert st.copies == 1 and st.tma_bytes == 128


def test_a_missing_arrival_deadlocks_with_a_report_naming_the_source_line():
    k = kern(PIPE, "pipe")
    src = emu.to_device(np.arange(32, dtype=np.int32))
    with pytest.raises(emu.DeadlockError) as e:
        emu.launch(k, 1, 32, src, emu.zeros(32, np.int32), np.int32(0), np.int32(1), max_idle_rounds=5)
    msg = str(e.value)
    assert "mbarrier.try_wait.parity" in msg and "parity 0" in msg and "pipe.cu:16" in msg
    assert "pending 1/2" in msg
    assert e.value.report and e.value.report[0]["source_line"] == 16


def test_wrong_parity_passes_at_once_and_reads_the_buffer_in_flight():
    k = kern(PIPE, "pipe")
    with pytest.raises(emu.RaceError, match="asynchronous copy"):
        emu.launch(k, 1, 32, emu.to_device(np.arange(32, dtype=np.int32)), emu.zeros(32, np.int32), np.int32(1),
                   np.int32(0))


def test_reading_before_the_wait_is_a_race():
    racy = PIPE.replace('    asm volatile("{\\n\\t.reg .pred p;', '    out[threadIdx.x] = buf[threadIdx.x];\n    asm volatile("{\\n\\t.reg .pred p;')
    assert racy != PIPE
    k = kern(racy, "pipe")
    with pytest.raises(emu.RaceError, match="asynchronous copy"):
        emu.launch(k, 1, 32, emu.to_device(np.arange(32, dtype=np.int32)), emu.zeros(32, np.int32), np.int32(0),
                   np.int32(0))


STORE = r"""
extern "C" __global__ void store(int* dst, int fence) {
    __shared__ __align__(128) int buf[32];
    buf[threadIdx.x] = threadIdx.x * 5;
    if (fence) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned s = (unsigned)__cvta_generic_to_shared(buf);
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 128;" :: "l"(dst), "r"(s) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
"""


def test_bulk_store_needs_the_proxy_fence():
    k = kern(STORE, "store")
    dst = emu.zeros(32, np.int32)
    emu.launch(k, 1, 32, dst, np.int32(1))
    np.testing.assert_array_equal(dst.to_host(), np.arange(32) * 5)
    with pytest.raises(emu.ProxyFenceError, match="fence.proxy.async"):
        emu.launch(k, 1, 32, emu.zeros(32, np.int32), np.int32(0))


OOB = r"""
extern "C" __global__ void oob(int* p, int n) {
    p[threadIdx.x + n] = 1;
}
"""


def test_out_of_bounds_store_names_the_cuda_line():
    k = kern(OOB, "oob")
    with pytest.raises(emu.MemoryFault) as e:
        emu.launch(k, 1, 32, emu.zeros(16, np.int32), np.int32(0))
    assert "oob.cu:3" in str(e.value) and "p[threadIdx.x + n] = 1;" in str(e.value)
    assert e.value.cuda_error == "CUDA_ERROR_ILLEGAL_ADDRESS"


def test_uninitialised_mbarrier_wait_is_reported():
    src = PIPE.replace('asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(b), "r"(1 + extra) : "memory");', "")
    assert src != PIPE
    k = kern(src, "pipe")
    with pytest.raises(emu.ExecutionError, match="does not hold a valid mbarrier"):
        emu.launch(k, 1, 32, emu.to_device(np.zeros(32, np.int32)), emu.zeros(32, np.int32), np.int32(0), np.int32(0))


def test_cluster_ring_through_dsmem():
    k = emu.compile_kernel("smoke_cluster_ring").function("cluster_ring")
    out = emu.zeros(32, np.uint32)
    emu.launch(k, 32, 128, out, cluster=4)
    b = np.arange(32)
    rank = b % 4
    nxt = b - rank + (rank + 1) % 4
    np.testing.assert_array_equal(out.to_host(), 1000 * nxt + (rank + 1) % 4)


def test_mapa_outside_the_cluster_is_reported():
    src = emu.compile_kernel("smoke_cluster_ring").source.replace("(rank + 1) % nrank", "rank + 1")
    k = emu.compile(src, name="ring_bad.cu").function("cluster_ring")
    with pytest.raises(emu.ExecutionError, match="mapa|outside the cluster"):
        emu.launch(k, 4, 32, emu.zeros(4, np.uint32), cluster=4)


def test_tma_load_matches_the_tma_model():
    from h100lab.tma import load

    g = (np.arange(64 * 128) % 65521).astype(np.uint16).reshape(64, 128)
    dg = emu.to_device(g)
    for swz, box0 in (("NONE", 64), ("32B", 16), ("64B", 32), ("128B", 64)):
        tm = emu.encode_tiled("CU_TENSOR_MAP_DATA_TYPE_UINT16", 2, dg, (128, 64), (256,), (box0, 8), (1, 1),
                              swizzle=f"CU_TENSOR_MAP_SWIZZLE_{swz}")
        nbytes = box0 * 8 * 2
        out = emu.zeros(nbytes, np.uint8)
        emu.launch(emu.compile_kernel("smoke_tma_load").function("tma_load_2d"), 1, 128, tm, np.int32(32),
                   np.int32(16), out, np.int32(nbytes))
        want = load(tm.model, g.reshape(-1).view(np.uint8), (32, 16)).reshape(-1)[:nbytes]
        np.testing.assert_array_equal(out.to_host(), want)


def test_printf_output_is_collected_in_order():
    k = kern(r'''extern "C" __global__ void hello(int x) { if (threadIdx.x < 2) printf("t%d x=%d f=%.2f\n", threadIdx.x, x, 1.5); }''',
             "hello")
    st = emu.launch(k, 1, 32, np.int32(7))
    assert st.output == ["t0 x=7 f=1.50\n", "t1 x=7 f=1.50\n"]


def test_launch_configuration_errors_match_the_gpu_backend():
    k = emu.compile_kernel("smoke_vector_add").function("vector_add")
    d = emu.zeros(4, np.float32)
    with pytest.raises(cuda.LaunchConfigError, match="1024"):
        emu.launch(k, 1, 2048, d, d, d, np.int32(4))
    with pytest.raises(cuda.LaunchConfigError, match="parameters"):
        emu.launch(k, 1, 32, d, d, d)
    with pytest.raises(cuda.LaunchConfigError, match="np.int32"):
        emu.launch(k, 1, 32, d, d, d, 4)


def test_seeded_shuffles_give_the_same_answer_for_a_correct_kernel():
    k = kern(REDUCE, "block_sum")
    x = np.arange(256, dtype=np.int32)
    outs = []
    for seed in (None, 1, 2):
        out = emu.zeros(1, np.int32)
        emu.launch(k, 1, 256, emu.to_device(x), out, seed=seed)
        outs.append(int(out.to_host()[0]))
    assert outs == [int(x.sum())] * 3


def test_backend_chooser_without_a_gpu(monkeypatch):
    import h100lab

    monkeypatch.setenv("H100LAB_NO_GPU", "1")
    cuda.device._probe.cache_clear()
    try:
        assert h100lab.backend() is emu
        with pytest.raises(cuda.CudaUnavailable):
            h100lab.backend("cuda")
    finally:
        cuda.device._probe.cache_clear()


def test_cuda_cell_magic_binds_a_program():
    from h100lab.magic import cuda_cell

    ns = {}
    cuda_cell("axpy --emu", 'extern "C" __global__ void axpy(float a, float* y) { y[threadIdx.x] *= a; }', ns)
    y = emu.to_device(np.ones(32, np.float32))
    emu.launch(ns["axpy"].function("axpy"), 1, 32, np.float32(3), y)
    assert (y.to_host() == 3).all()
    with pytest.raises(ValueError, match="usage"):
        cuda_cell("", "", ns)


INTRA = r"""
extern "C" __global__ void intra(const int* src, int* out) {
    __shared__ __align__(128) int buf[32];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar), d = (unsigned)__cvta_generic_to_shared(buf);
    unsigned lane = threadIdx.x;
    if (lane == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncwarp();
    if (lane != 0) {   // lanes 1..31 start waiting before lane 0 has issued anything
        asm volatile("{\n\t.reg .pred p;\nA_%=:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t@!p bra A_%=;\n\t}"
                     :: "r"(b) : "memory");
    } else {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 128;" :: "r"(b) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 128, [%2];"
                     :: "r"(d), "l"(src), "r"(b) : "memory");
        asm volatile("{\n\t.reg .pred p;\nB_%=:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t@!p bra B_%=;\n\t}"
                     :: "r"(b) : "memory");
    }
    __syncwarp();
    out[lane] = buf[lane] + 1;
}
"""


def test_lanes_of_one_warp_wait_for_a_copy_their_warp_mate_issues():
    """Independent thread scheduling: lanes spinning in try_wait are set aside so lane 0 can issue the copy,
    and __syncwarp waits for them all."""
    k = kern(INTRA, "intra")
    out = emu.zeros(32, np.int32)
    emu.launch(k, 1, 32, emu.to_device(np.arange(32, dtype=np.int32) * 3), out)
    np.testing.assert_array_equal(out.to_host(), np.arange(32) * 3 + 1)


def test_the_emulator_needs_no_gpu_backend_and_no_driver_bindings():
    """Issue 11: the NVRTC compiler has a neutral home (h100lab.nvrtc, ctypes on libnvrtc); compiling and
    running a kernel on the emulator imports neither h100lab.cuda nor cuda.bindings (no driver)."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\nfrom h100lab import emu\n"
            "p = emu.compile('extern \"C\" __global__ void k(int* x) { x[threadIdx.x] = 2 * threadIdx.x; }')\n"
            "d = emu.zeros(32, np.int32)\nemu.launch(p.function('k'), 1, 32, d)\n"
            "assert d.to_host().tolist() == list(range(0, 64, 2))\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('cuda.bindings', 'h100lab.cuda')))\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


FUNC_SRC = r"""
__device__ __noinline__ int twice(int v) { return v + v; }
__device__ __noinline__ int nested(int v) { return twice(v) + twice(v + 1); }
__device__ __noinline__ int collatz(unsigned v) {      // a loop and two returns inside a device function
    int steps = 0;
    while (v != 1u) { if (steps > 200) return -1; v = (v & 1u) ? 3u * v + 1u : v >> 1; ++steps; }
    return steps;
}
extern "C" __global__ void calls(int* out, int* guarded, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = nested(i) * 1000 + collatz((unsigned)i + 1u);
    if (i & 1) guarded[i] = twice(i);                  // a call only half the lanes make
}
"""


def _collatz(v):
    s = 0
    while v != 1:
        if s > 200:
            return -1
        v = 3 * v + 1 if v & 1 else v >> 1
        s += 1
    return s


def test_device_function_calls_are_inlined_with_their_returns_and_guards():
    """PTX §9.7.12.3 call / §9.7.12.4 ret on __noinline__ device functions: nested calls, a loop with two
    returns, a call made by half of the lanes — the results exact integer arithmetic gives."""
    p = emu.compile(FUNC_SRC, name="calls.cu")
    assert sum(ins.opcode == "call" for ins in p.module.functions["calls"].body) >= 2   # NVRTC kept the calls
    n = 150
    out, g = emu.zeros(n, np.int32), emu.zeros(n, np.int32)
    emu.launch(p.function("calls"), 3, 64, out, g, np.int32(n))
    want = [(4 * i + 2) * 1000 + _collatz(i + 1) for i in range(n)]
    assert out.to_host().tolist() == want
    assert g.to_host().tolist() == [2 * i if i & 1 else 0 for i in range(n)]


def test_recursion_is_refused_by_name():
    src = r"""
    __device__ __noinline__ int fib(int v) { return v < 2 ? v : fib(v - 1) + fib(v - 2); }
    extern "C" __global__ void k(int* o) { o[threadIdx.x] = fib(threadIdx.x); }
    """
    p = emu.compile(src, name="rec.cu")
    with pytest.raises(emu.UnsupportedInstruction, match="recursion"):
        p.function("k")


# lanes 1..31 of warp 0 reach bar.sync first (the if-block of lane 0 is laid out after the barrier, as NVRTC may
# place it); bar.sync is .aligned, so the warp arrives as one only once lane 0 gets there too
_BAR_AFTER_IF = r"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 spins) {
  .reg .pred p; .reg .b32 r<8>; .reg .b64 rd<6>;
  .shared .align 4 .b32 s;
  ld.param.u64 rd1, [out];
  ld.param.u32 r5, [spins];
  cvta.to.global.u64 rd2, rd1;
  mov.u32 r1, %tid.x;
  setp.eq.u32 p, r1, 0;
  @p bra LANE0;
BAR:
  bar.sync 0;
  ld.shared.u32 r2, [s];
  mul.wide.u32 rd3, r1, 4;
  add.s64 rd4, rd2, rd3;
  st.global.u32 [rd4], r2;
  ret;
LANE0:
  mov.u32 r3, 0;
LOOP:
  add.u32 r3, r3, 1;
  setp.lt.u32 p, r3, r5;
  @p bra LOOP;
  st.shared.u32 [s], 42;
  bra BAR;
}
"""


@pytest.mark.parametrize("threads", [32, 64, 96])
def test_bar_sync_waits_for_lanes_of_its_warp_behind_a_later_if_block(threads):
    k = emu.from_ptx(_BAR_AFTER_IF).function("k")
    out = emu.zeros(threads, np.uint32)
    emu.launch(k, 1, threads, out, np.uint32(50))
    assert (out.to_host() == 42).all()
