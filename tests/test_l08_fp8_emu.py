"""The capstone's FP8 form (h100lab/cuda/kernels/l08_gemm.cu -DFP8=1, entry gemm_e4m3) on the emulator: e4m3 A and
B with DeepSeek-V3 / DeepGEMM block scales (A 1 x 128, B 128 x 128), four k32 wgmmas per 128-K block into a partial
sum promoted by fma(P, sa * sb, acc) — bit for bit h100lab.design.capstone.reference_fp8 (built on
h100lab.tensorcore.accumulate.fp8_gemm, the FP8 accumulation model measured on the H200 in lesson 7), on square,
ragged (M, N, K not multiples of the tile; K not a multiple of the 128-K block) and multi-lap shapes, race-clean."""
import numpy as np
import pytest

from h100lab import emu
from h100lab.design import capstone as cap

pytestmark = pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")

FP8 = sorted(cap.FP8_VARIANTS)


def _inputs(M, N, K, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    # rows of different magnitudes, so the per-row and per-block scales differ
    x *= np.exp2(rng.integers(-6, 7, (M, 1))).astype(np.float32)
    return cap.quantize_fp8(x, w)


def _run(variant, M, N, K, ctas=1, *, alpha=1.0, beta=0.0, bias=False, relu=False, **options):
    v = cap.FP8_VARIANTS[variant]
    qa, sa, qb, sb = _inputs(M, N, K)
    rng = np.random.default_rng(5)
    C0 = cap.bf16_round(rng.standard_normal((M, N)).astype(np.float32))
    b = cap.bf16_round(rng.standard_normal(N).astype(np.float32)) if bias else None
    k = emu.compile_kernel("l08_gemm", options=v.options).function(v.entry)
    dC = emu.to_device(C0)
    dsa, dsb = (emu.to_device(s) for s in cap.fp8_scales(sa, sb))
    st = cap.launch(emu, k, v, emu.to_device(qa), emu.to_device(qb), dC, M, N, K, alpha=alpha, beta=beta, sms=ctas,
                    bias=None if b is None else emu.to_device(b), relu=relu, scales=(dsa, dsb), **options)
    want = cap.reference_fp8(qa, qb, sa, sb, C0, alpha=alpha, beta=beta, bias=b, relu=relu)
    return dC.to_host(), want, st, v


@pytest.mark.parametrize("variant", FP8)
def test_square_bit_exact(variant):
    """Two tiles side by side (a cluster pair: on top of each other), four 128-K blocks, each promoted with its own
    scales: BM x 2BN x 512 — for 192-column tiles the second tile starts 64 columns into a 128-column block of B's
    scales (the first at one's start). The wgmmas the emulator counts and the TMA bytes it moved are those of
    h100lab.design.tiles.smem_bytes_per_clock's shared-memory model of the tile."""
    from h100lab.design import tiles as tl
    from h100lab.tensorcore.timing import RATE
    v = cap.FP8_VARIANTS[variant]
    M, N = v.bm * v.cluster, 2 * v.bn // v.cluster
    got, want, st, v = _run(variant, M, N, 512, alpha=1.5)
    assert np.array_equal(got, want)
    tiles = int(np.prod(cap.tile_counts(v, M, N)))
    assert st.wgmma == (M // 64) * (N // v.bn) * 4 * 4             # m64 blocks x tile columns x blocks x k32 steps
    assert st.tma_bytes == tiles * 4 * v.stage_bytes + (M * N * 2 if v.tma_store else 0)
    assert v.stage_bytes == (v.bm + v.bn) * 128                    # BM rows of A and BN of B, 128 bytes of K each
    t = tl.smem_bytes_per_clock(v.dtype, v.bm, v.bn)
    blocks = tiles * 4
    # every m64 x BN x k32 wgmma: BN / 2 cycles at the dense rate, reading 64 + BN rows of 32 bytes
    assert t.tensor_cycles * blocks == st.wgmma * 64 * v.bn * 32 / RATE["e4m3"]
    assert t.reads * t.tensor_cycles * blocks == st.wgmma * (64 + v.bn) * 32
    assert t.writes * t.tensor_cycles * blocks == tiles * 4 * v.stage_bytes


@pytest.mark.parametrize("variant, M, N, K, beta", [("fp8_cooperative", 200, 135, 272, 0.5),
                                                     ("fp8_cooperative_tmastore", 200, 136, 528, 0.0),
                                                     ("fp8_cooperative_tmastore_cluster2", 200, 136, 400, 0.0),
                                                     ("fp8_cooperative_n192_staggered_tmastore", 200, 328, 400, 0.0),
                                                     ("fp8_cooperative_n192", 200, 330, 272, 0.5),
                                                     ("fp8_cooperative_n192_tmastore", 72, 100, 144, 0.0),
                                                     ("fp8_cooperative_m256", 300, 136, 272, 0.5),
                                                     ("fp8_cooperative_m256_tmastore", 130, 264, 400, 0.0),
                                                     ("fp8_cooperative_n192_tmastore_lead2", 200, 328, 272, 0.0),
                                                     ("fp8_cooperative_n192_tmastore_lead3", 72, 100, 528, 0.0),
                                                     ("fp8_cooperative_n192_tmastore_lead3", 130, 200, 16, 0.5),
                                                     ("fp8_cooperative_tmastore_lead2", 200, 135, 144, 0.5),
                                                     ("fp8_cooperative_m256_tmastore_lead2", 300, 136, 400, 0.0)])
def test_ragged_bit_exact(variant, M, N, K, beta):
    """Ragged M, N and K (K = 144 .. 528: the last 128-K block partly TMA zero fill, its scales still applied);
    odd N takes the direct stores; a second tile row of the cluster pair is half empty; 192-column tiles whose
    second 128-column scale block is partly (N = 328, 330) or wholly (N = 100: clamped to B's last block) past N;
    256-row tiles whose second consumer has 44 rows (M = 300) or 2 (M = 130); the scale ring (scale_lead 2, 3) with
    fewer blocks than its depth (K = 16, 144), an odd block count (K = 272: the unrolled pair's second half runs
    once) and one that is no multiple of 3 (K = 528: five blocks)."""
    got, want, _, _ = _run(variant, M, N, K, alpha=-0.75, beta=beta)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("variant", ["fp8_cooperative", "fp8_cooperative_tmastore"])
def test_bias_relu(variant):
    got, want, _, _ = _run(variant, 130, 264, 256, alpha=0.5, bias=True, relu=True)
    assert np.array_equal(got, want)
    assert 0.3 < np.mean(got == 0) < 0.7


def test_many_laps_through_the_ring():
    """Three 128 x 128 tiles on one CTA, five blocks each: 15 ring slots through 6 stages, the accumulator reset per
    tile and the scales prefetched one block ahead across tile boundaries."""
    got, want, st, v = _run("fp8_cooperative_tmastore", 128, 384, 640)
    assert np.array_equal(got, want)
    assert st.tma_bytes == 3 * 5 * v.stage_bytes + 128 * 384 * 2


@pytest.mark.parametrize("variant", ["fp8_cooperative_tmastore_lead2", "fp8_cooperative_n192_tmastore_lead3"])
def test_many_laps_with_the_scale_ring(variant):
    """Three tiles on one CTA, five blocks each (no multiple of the ring depth): the ring is refilled per tile, its
    unrolled k-loop ends part-way through a round, and the ring slots go 15 blocks around the stages."""
    v = cap.FP8_VARIANTS[variant]
    got, want, st, v = _run(variant, 128, 3 * v.bn, 640)
    assert np.array_equal(got, want)
    assert st.tma_bytes == 3 * 5 * v.stage_bytes + 128 * 3 * v.bn * 2


def test_scale_lead_is_an_fp8_option():
    """scale_lead reaches the compiler only when it is not the first form's 1 (so those forms keep their PTX), and
    the kernel refuses it without -DFP8=1."""
    from h100lab import nvrtc
    for v in cap.FP8_VARIANTS.values():
        assert (f"-DSCALE_LEAD={v.scale_lead}" in v.options) == (v.scale_lead != 1)
        assert v.scale_lead in (1, 2, 3)
    leads = {v.scale_lead for v in cap.FP8_VARIANTS.values()}
    assert {1, 2, 3} <= leads
    with pytest.raises(Exception, match="SCALE_LEAD"):
        nvrtc.compile_kernel("l08_gemm", options=cap.VARIANTS["cooperative"].options + ("-DSCALE_LEAD=2",))


def _disassembler():
    """nvdisasm or cuobjdump on PATH, or an nvdisasm of the nvidia-cuda-nvdisasm wheel on sys.path; None if none."""
    import glob
    import shutil
    import sys
    for tool in ("nvdisasm", "cuobjdump"):
        if shutil.which(tool):
            return shutil.which(tool)
    for p in sys.path:
        hits = glob.glob(f"{p}/nvidia/*/bin/nvdisasm")
        if hits:
            return hits[0]
    return None


def scale_load_readers(sass: str) -> list[str]:
    """The instructions that read a 32-bit scale load's destination (LDG.E.CONSTANT Rn) before the next full-barrier
    wait (SYNCS.PHASECHK: the next block) in program order -- each waits for a load issued in its own block."""
    import re
    lines = [ln.split("*/", 1)[-1].split(";")[0].strip() for ln in sass.splitlines() if "*/" in ln]
    found = []
    for i, ln in enumerate(lines):
        m = re.search(r"LDG\.E\.CONSTANT (R\d+),", ln)
        if not m:
            continue
        r = m.group(1)
        for x in lines[i + 1:]:
            if "SYNCS.PHASECHK" in x or "EXIT" in x:
                break
            regs = re.findall(r"\bR\d+", x)
            if r in regs[1:]:
                found.append(x)
                break
            if regs and regs[0] == r:                      # overwritten (a predicated zero, the next load)
                break
    return found


def test_scale_ring_reads_no_load_of_its_own_block(tmp_path):
    """The SASS (ptxas of NVRTC's sm_90a cubin, disassembled): in the first form (scale_lead 1) the end of every
    block copies the next block's scales out of the registers their loads write (IMAD.MOV, R2UR for B's uniform
    scales) -- a wait for a load of the same block; in the ring forms nothing reads a scale load before the next
    block's full-barrier wait."""
    import subprocess
    from h100lab import nvrtc
    tool = _disassembler()
    if tool is None:
        pytest.skip("no nvdisasm / cuobjdump")
    for name in ("fp8_cooperative_n192_tmastore", "fp8_cooperative_n192_tmastore_lead2",
                 "fp8_cooperative_tmastore", "fp8_cooperative_tmastore_lead2"):
        v = cap.FP8_VARIANTS[name]
        cubin = tmp_path / f"{name}.cubin"
        cubin.write_bytes(nvrtc.compile_kernel("l08_gemm", options=v.options).cubin)
        cmd = [tool, "-sass", str(cubin)] if tool.endswith("cuobjdump") else [tool, "-c", str(cubin)]
        sass = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        assert "LDG.E.CONSTANT" in sass and "QGMMA" in sass, name
        readers = scale_load_readers(sass)
        if v.scale_lead == 1:
            assert any("MOV" in x for x in readers), (name, readers)
        else:
            assert readers == [], (name, readers)


def test_model_is_the_two_level_accumulation():
    """The reference is lesson 7's model: promotion per 128-K block differs from one long tensor-core chain (which
    loses bits), and both are close to the exact product of the dequantised inputs."""
    from h100lab.tensorcore.accumulate import fp8_gemm, fp8_gemm_exact
    qa, sa, qb, sb = _inputs(64, 128, 1024)
    two = cap.reference_fp8(qa, qb, sa, sb)
    exact = fp8_gemm_exact(qa, qb, sa, np.repeat(sb, 128, axis=0)[:128], interval=4)
    got = (two.astype(np.uint32) << 16).view(np.float32)
    assert np.abs(got - exact).max() <= 2 ** -7 * np.abs(exact).max()
    one = fp8_gemm(qa, qb, np.ones((64, 1), np.float32), np.ones((128, 1), np.float32), interval=32)
    assert not np.array_equal(one, fp8_gemm(qa, qb, np.ones((64, 8), np.float32), np.ones((128, 8), np.float32)))


# the scale ring changes only when a consumer's global loads of the scales are issued, no shared-memory access: one
# ring form stands for the others under the race checker
@pytest.mark.parametrize("variant", [n for n in FP8 if cap.FP8_VARIANTS[n].scale_lead == 1]
                         + ["fp8_cooperative_n192_tmastore_lead2"])
def test_racecheck_with_shuffled_warps(variant):
    v = cap.FP8_VARIANTS[variant]
    got, want, _, _ = _run(variant, v.bm * v.cluster, 128, 256, racecheck=True, seed=3)
    assert np.array_equal(got, want)


def test_shape_and_scale_rules():
    v = cap.FP8_VARIANTS["fp8_cooperative"]
    with pytest.raises(cap.GemmShapeError, match="multiple of 16"):
        cap.check_shape(128, 128, 264, "e4m3")
    with pytest.raises(cap.GemmShapeError, match="scales"):
        cap.launch(emu, None, v, 0, 0, 0, 128, 128, 256)
    with pytest.raises(cap.GemmShapeError, match="scales"):
        cap.launch(emu, None, cap.VARIANTS["cooperative"], 0, 0, 0, 128, 128, 256, scales=(0, 0))
    qa, sa, qb, sb = _inputs(64, 128, 256)
    with pytest.raises(cap.GemmShapeError, match="128 x 128|128 × 128"):
        cap.reference_fp8(qa, qb, sa, sb[:, :1])
    assert cap.variant("fp8_cooperative") is v and cap.variant("cooperative") is cap.VARIANTS["cooperative"]
    with pytest.raises(KeyError):
        cap.variant("fp16_cooperative")


def test_variants_fit_the_h200():
    for v in cap.FP8_VARIANTS.values():
        assert v.smem_bytes <= 227 * 1024 and v.dtype == "e4m3" and v.entry == "gemm_e4m3"
        assert "-DFP8=1" in v.options and not v.pingpong and not v.inflight
        assert (v.bm, v.bn) in ((128, 128), (128, 192), (256, 128)) and not (v.stagger and v.bm == 256)
        assert ("-DBM_TILE=256" in v.options) == (v.bm == 256)
        # one more stage would not fit: the ring is as deep as shared memory allows
        from dataclasses import replace
        assert replace(v, stages=v.stages + 1).smem_bytes > 227 * 1024
    assert all("-DFP8=1" not in v.options for v in cap.VARIANTS.values())


def test_ptxas_keeps_wgmma_async():
    """Every FP8 form compiles for sm_90a with no spills (accumulator + partial sum fit the 232 registers) and
    without ptxas serializing the wgmmas."""
    from h100lab import nvrtc
    for v in cap.FP8_VARIANTS.values():
        log = nvrtc.compile_kernel("l08_gemm", options=v.options + ("--ptxas-options=-v",)).log
        assert "0 bytes spill stores" in log and "serialized" not in log, (v.name, log)
