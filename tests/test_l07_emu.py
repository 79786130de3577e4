"""Lesson 7 on the emulator: wgmma.mma_async.sp (PTX ISA §9.7.15.6), the FP8 GEMM tile with per-block scales and
two-level accumulation, the stmatrix + TMA-store epilogue, FP8 chains and the timing kernels — executed by
h100lab.emu and compared bit for bit with h100lab.tensorcore."""
import numpy as np
import pytest

from h100lab import emu
from h100lab.measure import l07

pytestmark = pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")


def _same(c):
    got = l07.run_case(emu, c)
    want = l07.model_outputs(c)
    for k, m in want.items():
        assert (np.ascontiguousarray(got[k]).view(np.uint8) == np.ascontiguousarray(m).view(np.uint8)).all(), (c["id"], k)


_SP = [dict(c, grid=1) for c in l07.sparse_cases() if c["input"] != "invalid"]


@pytest.mark.parametrize("c", _SP[::4], ids=lambda c: c["id"])
def test_sparse_probes(c):
    _same(c)


@pytest.mark.parametrize("c", [c for c in l07.sparse_cases() if c["input"] == "invalid"][::7], ids=lambda c: c["id"])
def test_invalid_metadata_is_reported_with_the_rule_and_the_cuda_line(c):
    with pytest.raises(emu.ExecutionError) as e:
        l07.run_case(emu, c)
    assert "invalid metadata" in str(e.value) and "PTX ISA" in str(e.value) and "l07_sparse_probe" in str(e.value)


@pytest.mark.parametrize("c", [l07.fp8_gemm_cases()[i] for i in (1, 7, 12, 17)], ids=lambda c: c["id"])
def test_fp8_gemm_tile_bit_exact(c):
    _same(dict(c, grid=1))


@pytest.mark.parametrize("c", l07.epilogue_cases(), ids=lambda c: c["id"])
def test_epilogue_bit_exact(c):
    _same(dict(c, grid=1))


def test_epilogue_wavefronts_are_the_models():
    from h100lab.tensorcore import epilogue
    for out in ("bf16", "e4m3"):
        c = dict(l07.epilogue_cases()[0], out=out, grid=1)
        k = emu.compile_kernel("l07_fp8_gemm").function(f"epilogue_{out}")
        tile = emu.zeros(64 * (64 if out == "e4m3" else 128), np.uint8)
        tm = l07._tmap(emu, tile, out, 64)
        acc = emu.to_device(np.zeros(128 * 32, np.uint32))
        st = emu.launch(k, 1, 128, acc, tm, shared_mem=9216)
        assert st.matrix_wavefronts == epilogue.epilogue(np.zeros((64, 64), np.float32), out).total_wavefronts


@pytest.mark.parametrize("c", l07.accumulation_cases()[::3], ids=lambda c: c["id"])
def test_fp8_chains_bit_exact(c):
    _same(c)


def test_timing_kernels_run_and_count_wgmmas():
    for c in [c for c in l07.timing_cases() if c["n"] == 64 and c["per_group"] == 2 and c["depth"] == 1] + \
             [c for c in l07.timing_cases() if c["type"] in ("tf32", "s8", "sp_bf16") and c["n"] == 32][:3]:
        c = dict(c, iters=3, launches=1)
        out = l07.run_case(emu, c)
        assert out["cycles"][0] > 0


def test_dependency_kernels_run_on_the_emulator():
    """l07_wgmma_deps.cu: the run-time and compile-time depth entry points, chained and overwritten, 1-4 sets."""
    cases = [c for c in l07.dep_cases() if c["id"] in ("dep_chain_n64_a2_g2_d1", "dep_fresh_n64_a1_g4_d0")] + \
        [c for c in l07.depth_cases() if c["id"] in ("dep_chain_n64_a4_g1_d3_static", "dep_fresh_n256_a1_g1_d2_static")]
    assert len(cases) == 4
    for c in cases:
        out = l07.run_case(emu, dict(c, iters=c["sets"] * 2, launches=1))
        assert out["cycles"][0] > 0, c["id"]


def test_zero_alignment_probe_on_the_emulator_is_the_models():
    for c in l07.zero_align_cases():
        _same(c)
