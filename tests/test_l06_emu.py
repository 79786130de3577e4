"""Lesson 6 on the emulator: wgmma (PTX ISA §9.7.15.5.2, §9.7.15.7) and ldmatrix/stmatrix (§9.7.14.5.15-16)
executed by h100lab.emu on h100lab.tensorcore, compared with the model; the fence / wait / proxy rules."""
import numpy as np
import pytest

from h100lab import emu
from h100lab.measure import l06

pytestmark = pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")


def _same(c):
    got = l06.run_case(emu, c)
    want = l06.model_outputs(c)
    for k, m in want.items():
        assert (got[k].view(np.uint8) == np.ascontiguousarray(m).view(np.uint8)).all(), (c["id"], k)


@pytest.mark.parametrize("c", l06.gemm_cases()[::2], ids=lambda c: c["id"])
def test_gemm_tiles_bit_exact(c):
    _same(c)


def test_gemm_rs_counts():
    A, Bt = l06._gemm_inputs(l06.gemm_cases()[0])
    k = emu.compile_kernel("l06_wgmma_gemm").function("gemm_rs")
    st = emu.launch(k, 1, 128, emu.to_device(A), emu.to_device(Bt), emu.zeros(4096, np.float32), shared_mem=17 * 1024)
    assert st.wgmma == 4
    assert st.matrix_wavefronts == 64          # 16 ldmatrix.x4 on the 128B swizzle: one wavefront per matrix


@pytest.mark.parametrize("c", l06.ldmatrix_cases()[::2], ids=lambda c: c["id"])
def test_ldmatrix_probe(c):
    _same(c)


@pytest.mark.parametrize("c", l06.fragment_cases(), ids=lambda c: c["id"])
def test_fragment_probes(c):
    _same(c)


@pytest.mark.parametrize("c", l06.descriptor_cases()[::9], ids=lambda c: c["id"])
def test_descriptor_probes(c):
    _same(c)


_NUM = [c for c in l06.numerics_cases() if c["input"] in ("special",) or c["id"].endswith(("chain4", "scaled0"))]


@pytest.mark.parametrize("c", _NUM[::5], ids=lambda c: c["id"])
def test_numerics_probes(c):
    _same(c)


_HAZ = r'''
extern "C" __global__ void k(float* out, int mode) {
    __shared__ __align__(1024) unsigned char s[4096];
    for (int i = threadIdx.x; i < 4096; i += 128) s[i] = 0;
    if (mode != 2) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[4] = {1.f, 2.f, 3.f, 4.f};
    unsigned a = (unsigned)__cvta_generic_to_shared(s);
    unsigned long long desc = (unsigned long long)((a & 0x3FFFF) >> 4) | (8ull << 16) | (8ull << 32);
    for (int r = 0; r < 4; ++r) asm volatile("" : "+f"(d[r]) :: "memory");   // materialise C before the fence
    if (mode != 1) asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %4, 1, 1, 1, 0, 0;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(desc) : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if (mode == 3) out[threadIdx.x] = d[0];
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    out[threadIdx.x] = d[0] + d[1] + d[2] + d[3];
}
'''


@pytest.fixture(scope="module")
def hazard_kernel():
    return emu.compile(_HAZ, name="l06_hazard.cu").function("k")


def test_hazard_kernel_runs_clean(hazard_kernel):
    out = emu.zeros(128, np.float32)
    emu.launch(hazard_kernel, 1, 128, out, np.int32(0))
    assert (out.to_host() == 10).all()          # zero operands: D = C


@pytest.mark.parametrize("mode, err, words", [
    (1, emu.ExecutionError, "wgmma.fence"),
    (2, emu.ProxyFenceError, "fence.proxy.async"),
    (3, emu.ExecutionError, "wgmma.wait_group"),
])
def test_hazards_are_reported_with_the_cuda_line(hazard_kernel, mode, err, words):
    with pytest.raises(err) as e:
        emu.launch(hazard_kernel, 1, 128, emu.zeros(128, np.float32), np.int32(mode))
    assert words in str(e.value) and "PTX ISA" in str(e.value) and "l06_hazard.cu" in str(e.value)


def test_incomplete_warpgroup_raises(hazard_kernel):
    with pytest.raises(emu.ExecutionError, match="warpgroup"):
        emu.launch(hazard_kernel, 1, 64, emu.zeros(128, np.float32), np.int32(0))
