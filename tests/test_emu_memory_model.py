"""The race checker's release/acquire patterns (PTX §8.4 strong operations, §8.8 release and acquire
patterns): message passing in shared memory between two warps, with and without the ordering."""
from __future__ import annotations

import numpy as np
import pytest

from h100lab import emu
from h100lab.emu.errors import RaceError

MP = r'''
__device__ __forceinline__ void put_flag(unsigned a, unsigned v) {
#if MODE == 0
    asm volatile("st.volatile.shared.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
#elif MODE == 1
    asm volatile("st.release.cta.shared.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
#elif MODE == 2
    asm volatile("fence.acq_rel.cta;\n\tst.relaxed.cta.shared.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
#else
    asm volatile("st.shared.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory");
#endif
}
__device__ __forceinline__ unsigned get_flag(unsigned a) {
    unsigned v;
#if MODE == 0
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
#elif MODE == 1
    asm volatile("ld.acquire.cta.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
#else
    asm volatile("ld.relaxed.cta.shared.u32 %0, [%1];\n\tfence.acq_rel.cta;" : "=r"(v) : "r"(a) : "memory");
#endif
    return v;
}
extern "C" __global__ void mp(unsigned* out) {
    __shared__ unsigned data, flag;
    if (threadIdx.x == 0) { data = 0; flag = 0; }
    __syncthreads();
    const unsigned f = static_cast<unsigned>(__cvta_generic_to_shared(&flag));
    if (threadIdx.x == 0) { data = 42; put_flag(f, 1); }
    else if (threadIdx.x == 32) { while (get_flag(f) == 0) { } out[0] = data; }
}
'''


def _run(mode, seed=None):
    k = emu.compile(f"#define MODE {mode}\n" + MP).function("mp")
    out = emu.zeros(1, np.uint32)
    emu.launch(k, 1, 64, out, seed=seed, racecheck=True)
    return int(out.to_host()[0])


@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize("seed", [None, 1, 2])
def test_release_acquire_orders_the_data(mode, seed):
    assert _run(mode, seed) == 42


def test_strong_accesses_without_release_acquire_leave_the_data_racy():
    with pytest.raises(RaceError, match="release/acquire"):
        _run(0)


def test_a_weak_flag_store_races_with_the_strong_load():
    with pytest.raises(RaceError, match="ld.relaxed|write"):
        _run(3)


def test_trap_aborts_the_launch_and_keeps_the_printf_lines():
    from h100lab.emu.errors import ExecutionError

    k = emu.compile(r'''extern "C" __global__ void t(int n) {
        if (threadIdx.x == 0) { printf("giving up after %d\n", n); __trap(); } }''').function("t")
    emu.synchronize()
    with pytest.raises(ExecutionError, match="trap") as e:
        emu.launch(k, 1, 32, np.int32(5))
    assert e.value.cuda_error == "CUDA_ERROR_LAUNCH_FAILED"
    assert emu.synchronize() == ["giving up after 5\n"]


def test_measure_litmus_runs_on_the_emulator():
    from h100lab.measure.l03 import LITMUS_KERNELS, measure_litmus

    recs = measure_litmus(emu, ctas=4, launches=1)
    assert [r["kernel"] for r in recs] == [*LITMUS_KERNELS, "tile_sums"] and recs[-1]["ok"]
    for r in recs[:3]:
        assert r["outcomes"] == [[1, 42, 4]]          # every CTA read the published data
    assert sum(n for _, _, n in recs[3]["outcomes"]) == 4
