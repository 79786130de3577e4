"""Warp fusion (h100lab.emu.fuse) changes how fast the emulator runs, never what a launch computes or counts:
every launch here runs with fuse=True and fuse=False and must give the same bytes and the same counters."""
from __future__ import annotations

import numpy as np
import pytest

from h100lab import cuda, emu

pytestmark = pytest.mark.skipif(cuda.compiler_unavailable_reason() is not None,
                                reason=f"NVRTC unusable: {cuda.compiler_unavailable_reason()}")

KERNELS = r"""
extern "C" __global__ void mix(const unsigned* __restrict__ a, unsigned* out, float* fout, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = i < n ? a[i] : 7u; float f = v * 0.25f;
    for (int k = 0; k < iters; ++k) {
        v = v * 1664525u + 1013904223u; f = fmaf(f, 0.999f, (float)(v & 15));
        if (v & 1u) f = -f;                       // divergent inside the fused loop
    }
    if (i < n) { out[i] = v; fout[i] = f; }
}
extern "C" __global__ void stride_copy(const ulonglong2* src, ulonglong2* dst, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = src[i];
}
extern "C" __global__ void last_writer(unsigned* out) {   // every warp stores to the same word: the order shows
    out[0] = threadIdx.x; out[1 + (threadIdx.x & 7)] = blockIdx.x * 1000 + threadIdx.x;
}
"""


def _stats(st):
    return (st.instructions, dict(st.by_opcode), st.global_requests, st.global_sectors, st.shared_wavefronts,
            st.bank_conflicts, st.tma_bytes)


def _both(fn):
    out = {}
    for fuse in (False, True):
        emu.reset()
        out[fuse] = fn(fuse)
    return out[False], out[True]


@pytest.mark.parametrize("n,block,iters", [(1000, 128, 20), (77, 96, 5), (4096, 256, 3)])
def test_fused_arithmetic_and_divergence_match_unfused(n, block, iters):
    k = emu.compile(KERNELS, name="fuse.cu").function("mix")
    a = np.random.default_rng(n).integers(0, 2**32, n, dtype=np.uint32)

    def run(fuse):
        da, o, fo = emu.to_device(a), emu.zeros(n, np.uint32), emu.zeros(n, np.float32)
        st = emu.launch(k, (n + block - 1) // block, block, da, o, fo, np.int32(n), np.int32(iters), fuse=fuse)
        return o.to_host(), fo.to_host().view(np.uint32), _stats(st)

    plain, fused = _both(run)
    assert (plain[0] == fused[0]).all() and (plain[1] == fused[1]).all()
    assert plain[2] == fused[2]


def test_fused_global_loads_and_stores_count_like_separate_warps():
    k = emu.compile(KERNELS, name="fuse.cu").function("stride_copy")
    n = 5000
    src = np.random.default_rng(1).integers(0, 2**63, 2 * n, dtype=np.uint64)

    def run(fuse):
        s, d = emu.to_device(src), emu.zeros(2 * n, np.uint64)
        st = emu.launch(k, 7, 160, s, d, np.int32(n), fuse=fuse)
        return d.to_host(), _stats(st)

    plain, fused = _both(run)
    assert (plain[0] == src).all() and (fused[0] == src).all()
    assert plain[1] == fused[1]


def test_fused_stores_keep_the_warp_order_of_the_unfused_schedule():
    k = emu.compile(KERNELS, name="fuse.cu").function("last_writer")

    def run(fuse):
        o = emu.zeros(9, np.uint32)
        st = emu.launch(k, 3, 256, o, fuse=fuse)
        return o.to_host(), _stats(st)

    plain, fused = _both(run)
    assert (plain[0] == fused[0]).all() and plain[1] == fused[1]


def test_a_fault_inside_a_fused_stretch_is_reported_as_without_fusion():
    src = r"""extern "C" __global__ void oob(float* x) { x[blockIdx.x * blockDim.x + threadIdx.x + 64] = 1.0f; }"""
    k = emu.compile(src, name="oob.cu").function("oob")

    def run(fuse):
        x = emu.zeros(128, np.float32)
        with pytest.raises(emu.errors.MemoryFault, match=r"oob.cu:1") as ei:
            emu.launch(k, 1, 128, x, fuse=fuse)
        return str(ei.value)

    plain, fused = _both(run)
    assert plain == fused and "fused" not in fused
