"""The emulator against the H200: random launches of the same kernels on both, compared bit for bit
(``make test-gpu``; skipped without a Hopper GPU)."""
from __future__ import annotations

import numpy as np
import pytest

from h100lab import cuda, emu

pytestmark = pytest.mark.gpu

RANDOM_KERNELS = r"""
extern "C" __global__ void mix(const unsigned* a, const float* f, unsigned* out, float* fout, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = a[(i * 7 + k) % n];
    int s = (int)x;
    unsigned r = (x * 2654435761u) ^ (y >> (k & 31)) ^ __brev(x) ^ __popc(y) ^ __clz(x | 1);
    r += (unsigned)(s / (k - 17)) + (unsigned)(s % (k + 3)) + __umulhi(x, y) + __byte_perm(x, y, k & 0x7777);
    r ^= __funnelshift_l(x, y, k) + (unsigned)__mul24((int)x, (int)y) + __sad(x, y, k);
    unsigned lane = threadIdx.x & 31;
    r += __shfl_xor_sync(0xffffffff, r, 1 + (k % 16)) + __ballot_sync(0xffffffff, r & 1) + __reduce_add_sync(0xffffffff, x);
    out[i] = r;
    float a0 = f[i], b0 = f[(i + k) % n];
    float g = __fmaf_rn(a0, b0, a0) + __fmul_rz(a0, b0) + __fadd_rd(a0, b0) + __fdiv_rn(a0, b0 + 3.0f)
              + __fsqrt_rn(fabsf(a0)) + (float)(int)(a0 * 1000.0f) + __int2float_rz(s) + __uint2float_ru(x);
    unsigned short h, bh;
    float hf, bf;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(a0));
    asm("cvt.f32.f16 %0, %1;" : "=f"(hf) : "h"(h));
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bh) : "f"(b0));
    asm("cvt.f32.bf16 %0, %1;" : "=f"(bf) : "h"(bh));
    fout[i] = g + hf + bf;
}
"""
HEADER = ""


@pytest.fixture(scope="module")
def programs():
    if not cuda.available():
        pytest.skip(f"no Hopper GPU: {cuda.unavailable_reason()}")
    src = HEADER + RANDOM_KERNELS
    return cuda.compile(src, name="mix.cu"), emu.compile(src, name="mix.cu")


@pytest.mark.parametrize("seed", range(12))
def test_random_launches_are_bit_identical(programs, seed):
    g, e = programs
    rng = np.random.default_rng(seed)
    block = int(rng.choice([32, 64, 128, 256]))
    n = block * int(rng.integers(1, 9))          # whole warps: the full-mask shuffles need every lane
    k = int(rng.integers(0, 1000))
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    f = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n)).astype(np.float32)
    grid = n // block
    outs = []
    for be, prog in ((cuda, g), (emu, e)):
        out, fout = be.zeros(n, np.uint32), be.zeros(n, np.float32)
        be.launch(prog.function("mix"), grid, block, be.to_device(a), be.to_device(f), out, fout, np.int32(n),
                  np.int32(k))
        if be is cuda:
            cuda.synchronize()
        outs.append((out.to_host(), fout.to_host()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1].view(np.uint32), outs[1][1].view(np.uint32))


@pytest.mark.parametrize("name,kernel,args", [
    ("smoke_vector_add", "vector_add", "vadd"),
    ("smoke_cluster_ring", "cluster_ring", "ring"),
])
def test_book_kernels_agree(name, kernel, args):
    if not cuda.available():
        pytest.skip(f"no Hopper GPU: {cuda.unavailable_reason()}")
    res = []
    for be in (cuda, emu):
        k = be.compile_kernel(name).function(kernel)
        if args == "vadd":
            x = np.arange(5000, dtype=np.float32) * 0.37
            y = np.sqrt(np.arange(5000, dtype=np.float32))
            c = be.zeros(5000, np.float32)
            be.launch(k, 20, 256, be.to_device(x), be.to_device(y), c, np.int32(5000))
        else:
            c = be.zeros(64, np.uint32)
            be.launch(k, 64, 64, c, cluster=8)
        if be is cuda:
            cuda.synchronize()
        res.append(c.to_host())
    assert res[0].tobytes() == res[1].tobytes()


def test_device_function_calls_agree():
    """__noinline__ device functions (PTX call/ret, inlined by the emulator) give the H200's results."""
    if not cuda.available():
        pytest.skip(f"no Hopper GPU: {cuda.unavailable_reason()}")
    from test_emu_exec import FUNC_SRC

    res = []
    for be in (cuda, emu):
        k = be.compile(FUNC_SRC, name="calls.cu").function("calls")
        out, g = be.zeros(1000, np.int32), be.zeros(1000, np.int32)
        be.launch(k, 8, 128, out, g, np.int32(1000))
        if be is cuda:
            cuda.synchronize()
        res.append((out.to_host().tobytes(), g.to_host().tobytes()))
    assert res[0] == res[1]
