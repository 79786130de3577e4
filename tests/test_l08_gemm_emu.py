"""Lesson 8's capstone GEMM (h100lab/cuda/kernels/l08_gemm.cu) on the emulator: persistent, warp-specialized,
TMA + mbarrier ring, SS wgmma m64n256k16 (m64n128k16 with -DBN_TILE=128), cooperative and ping-pong consumers,
with and without one wgmma group in flight (-DINFLIGHT=1) — bit for bit the tensor-core model's answer
(h100lab.design.capstone.reference), on square, ragged and multi-lap shapes, race-clean.

[model: the emulator computes a wgmma when it is issued, so a ring stage released while its wgmma group is still in
flight reads the right bytes here; that INFLIGHT releases a stage only after wait_group 1 retired its group is
read from the source (test_inflight_releases_after_the_wait), not observed.]"""
import numpy as np
import pytest

from h100lab import emu
from h100lab.design import capstone as cap

pytestmark = pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")


def _inputs(M, N, K, seed=1):
    rng = np.random.default_rng(seed)
    A = cap.bf16_round(rng.standard_normal((M, K)).astype(np.float32))
    B = cap.bf16_round(rng.standard_normal((N, K)).astype(np.float32))
    C = cap.bf16_round(rng.standard_normal((M, N)).astype(np.float32))
    return A, B, C


def _run(variant, M, N, K, ctas, *, alpha=1.0, beta=0.0, group=8, raster=0, bias=False, relu=False, **options):
    v = cap.VARIANTS[variant]
    A, B, C0 = _inputs(M, N, K)
    b = cap.bf16_round(np.random.default_rng(7).standard_normal(N).astype(np.float32)) if bias else None
    k = emu.compile_kernel("l08_gemm", options=v.options).function("gemm_bf16")
    dC = emu.to_device(C0)
    st = cap.launch(emu, k, v, emu.to_device(A), emu.to_device(B), dC, M, N, K, alpha=alpha, beta=beta, sms=ctas,
                    group=group, raster=raster, bias=None if b is None else emu.to_device(b), relu=relu, **options)
    return dC.to_host(), cap.reference(A, B, C0, alpha=alpha, beta=beta, bias=b, relu=relu), st, v


ALL = sorted(cap.VARIANTS)


@pytest.mark.parametrize("variant", ALL)
def test_one_tile_square(variant):
    M = 128 * cap.VARIANTS[variant].cluster            # a cluster of 2 takes two tiles along M
    got, want, st, v = _run(variant, M, 256, 128, 1, alpha=1.5)
    assert np.array_equal(got, want)
    # every stage's bytes land through the TMA: (tiles x k-blocks) stages of bm x 64 + bn x 64 bf16 (with clusters:
    # each CTA receives its whole stage, half of B from the other's multicast) (+ C's bytes stored by the TMA-store
    # epilogue)
    tiles = np.prod(cap.tile_counts(v, M, 256))
    assert st.tma_bytes == tiles * 2 * v.stage_bytes + (M * 256 * 2 if v.tma_store else 0)
    # M x 256 outputs in m64 x bn wgmmas: two k-blocks x four k16 steps each
    assert st.wgmma == (M // 64) * (256 // v.bn) * 2 * 4


@pytest.mark.parametrize("variant, ctas, beta", [("cooperative", 1, 0.5), ("pingpong", 2, 0.5),
                                                 ("cooperative", 2, 0.0), ("cooperative_inflight", 1, 0.5),
                                                 ("cooperative_n128_inflight", 2, 0.5), ("pingpong_inflight", 2, 0.0),
                                                 ("pingpong_n128_inflight", 1, 0.5),
                                                 ("cooperative_inflight_tmastore", 2, 0.0),
                                                 ("cooperative_n128_inflight_tmastore", 1, 0.0),
                                                 ("cooperative_n128_inflight_tmastore", 1, 0.5)])
def test_ragged_edges(variant, ctas, beta):
    """M, N, K not multiples of the tile: rows past M and K columns past 72 are the TMA's zero fill; the epilogue
    stores only inside M x N (the emulator faults on any store outside C; the TMA store clips at M x N). With
    beta != 0 a TMA_STORE variant takes the direct stores."""
    got, want, _, _ = _run(variant, 200, 136, 72, ctas, alpha=-0.75, beta=beta)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("variant", ["cooperative", "cooperative_n128", "cooperative_inflight_tmastore"])
def test_odd_n_scalar_stores(variant):
    """N = 135: 2N bytes is no TMA stride (a multiple of 16), so a TMA_STORE variant stores directly too."""
    got, want, _, _ = _run(variant, 72, 135, 64, 1, beta=-1.0)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("variant", ["pingpong", "pingpong_inflight", "pingpong_n128_inflight"])
def test_pingpong_many_laps_raster_n(variant):
    """Six 64 x 256 (or 128 x 128) tiles on one CTA, three k-blocks each: 18 ring slots through 5 (7) stages, the two
    consumers alternating through the ordered barrier pair (INFLIGHT: handed over before the drain, so the next
    mainloop issues while the last group is in flight); tiles walked along N in groups of 2."""
    got, want, st, v = _run(variant, 130, 300, 192, 1, group=2, raster=1)
    assert np.array_equal(got, want)
    assert st.tma_bytes == 6 * 3 * v.stage_bytes


def test_n128_inflight_laps():
    """Three 128 x 128 tiles on one CTA, four k-blocks each: 12 ring slots through 7 stages, the stage before
    released after wait_group 1 and the last one after the drain of each tile."""
    got, want, st, v = _run("cooperative_n128_inflight", 128, 300, 256, 1, alpha=0.5)
    assert np.array_equal(got, want)
    assert st.tma_bytes == 3 * 4 * v.stage_bytes


def test_inflight_releases_after_the_wait():
    """The emulator cannot see a stage released too early (see the module docstring), so the order is checked
    on the source: under INFLIGHT the mainloop's only release follows ``wait_group 1`` and names the stage before,
    and the drain's release follows ``wait_group 0``."""
    import re
    from pathlib import Path
    src = (Path(cap.__file__).parent.parent / "cuda" / "kernels" / "l08_gemm.cu").read_text()
    block = src[src.index("#if INFLIGHT\n            //"):src.index("#elif PINGPONG")]
    waits = [m.start() for m in re.finditer(r"wait_group\.sync\.aligned [01]", block)]
    releases = [m.start() for m in re.finditer(r"release\(bars \+ 8 \* \(STAGES \+ \(it - 1\) % STAGES\)\)", block)]
    assert len(waits) == 3 and len(releases) == 2       # wait 1 (INFLIGHT), wait 0 (the old form), drain wait 0
    assert "wait_group.sync.aligned 1" in block[waits[0]:waits[0] + 30] and waits[0] < releases[0] < waits[1]
    assert "wait_group.sync.aligned 0" in block[waits[2]:waits[2] + 30] and waits[2] < releases[1]


def test_tile_order_matches_the_scheduler_model():
    """The kernel's tile_coords and h100lab.design.schedule.static_order give the same tile sequence (C written by
    tile index shows it): checked by the model here, since the kernel's order leaves no trace in C."""
    from h100lab.design import schedule
    order = schedule.static_order(5, 3, group=2, raster="m")
    assert sorted(order) == [(m, n) for m in range(5) for n in range(3)]
    assert order[:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]


def test_bad_shapes_raise():
    with pytest.raises(cap.GemmShapeError, match="16 bytes"):
        cap.check_shape(64, 64, 60)
    with pytest.raises(cap.GemmShapeError, match="positive"):
        cap.check_shape(0, 64, 64)


def test_smem_fits_the_h200():
    for v in cap.VARIANTS.values():
        assert v.smem_bytes <= 227 * 1024


@pytest.mark.parametrize("variant, M, N, K, beta", [("cooperative_inflight_cluster2", 100, 136, 72, 0.5),
                                                     ("cooperative_n128_inflight_cluster2", 130, 300, 192, 0.0)])
def test_cluster_pairs(variant, M, N, K, beta):
    """Clusters of two CTAs, B multicast: an odd number of tile rows (the second CTA's A tile is all TMA zero fill
    and it stores nothing), and three tile pairs on one cluster through 7 stages (9 ring slots)."""
    got, want, st, v = _run(variant, M, N, K, 1, alpha=-1.25, beta=beta)
    assert np.array_equal(got, want)
    assert cap.grid_size(v, M, N, 1) == 2


def test_cluster_producer_waits_for_every_release():
    """The other CTA's consumers arrive on our empty barriers (remote, mapa): a producer leaves only after waiting
    for every stage's release, read from the source (the emulator does not report an arrival on a CTA that has
    exited)."""
    from pathlib import Path
    src = (Path(cap.__file__).parent.parent / "cuda" / "kernels" / "l08_gemm.cu").read_text()
    prod = src[src.index("---- producer warpgroup"):src.index("---- consumer warpgroups")]
    tail = prod[prod.rindex("#if CLUSTER == 2"):]
    assert "for (int i = 0; i < STAGES; ++i, ++it)" in tail and "bar_wait(bars + 8 * (STAGES + it % STAGES)" in tail
    assert tail.index("bar_wait") < tail.index("return;")
    assert "4 * CONSUMERS_PER_STAGE * CLUSTER" in src            # empty counts both CTAs' consumer warps


def test_tma_store_waits_before_reusing_a_staging_tile():
    """Like INFLIGHT's release, the staging tile's reuse is read from the source (the emulator's bulk store reads
    its shared memory when issued): each chunk first lets the store issued from its tile two chunks ago finish
    reading (wait_group.read 1) and a warpgroup barrier publishes that before stmatrix writes; fence.proxy.async
    and a second barrier come before the store is issued; the kernel's last act waits for every store."""
    import re
    from pathlib import Path
    src = (Path(cap.__file__).parent.parent / "cuda" / "kernels" / "l08_gemm.cu").read_text()
    body = src[src.index("void epilogue_tma"):src.index("#endif", src.index("void epilogue_tma"))]
    order = [m.group(0) for m in re.finditer(
        r"wait_group\.read 1|bar\.sync|stmatrix4\(|fence\.proxy\.async|global\.shared::cta|commit_group", body)]
    assert order == ["wait_group.read 1", "bar.sync", "stmatrix4(", "fence.proxy.async", "bar.sync",
                     "global.shared::cta", "commit_group"]
    tail = src[src.rindex("#if TMA_STORE"):]
    assert "cp.async.bulk.wait_group 0" in tail


def test_ptxas_keeps_wgmma_async():
    """Every variant compiles for sm_90a with no spills and without ptxas serializing the wgmmas (its warning
    "wgmma.mma_async instructions are serialized" would cost most of the speed)."""
    from h100lab import nvrtc
    for v in cap.VARIANTS.values():
        log = nvrtc.compile_kernel("l08_gemm", options=v.options + ("--ptxas-options=-v",)).log
        assert "0 bytes spill stores" in log and "serialized" not in log, (v.name, log)


def test_tile_choice_wave_model():
    big, small = "cooperative_inflight", "cooperative_n128_inflight"
    assert cap.tile_choice(1280, 3840, 132, (big, small)) == small     # 150 tiles: 2 waves -> 300: 3 half waves
    assert cap.tile_choice(1408, 3072, 132, (big, small)) == big       # 132 tiles: one full wave
    assert cap.tile_choice(8192, 8192, 132, (big, small)) == big
    assert cap.DEFAULT in cap.VARIANTS and set(cap.TILE_CANDIDATES) <= set(cap.VARIANTS)
    assert cap.tile_choice(1280, 3840) in cap.TILE_CANDIDATES


@pytest.mark.parametrize("variant", ALL)
def test_racecheck_with_shuffled_warps(variant):
    """The ring's handshakes order every shared-memory access: racecheck finds nothing with warps and copies
    shuffled (seed), and the answer is still the model's."""
    got, want, _, _ = _run(variant, 128, 256, 128, 1, racecheck=True, seed=3)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("variant, M, N, K, beta", [("cooperative", 200, 136, 72, 0.5),
                                                     ("cooperative_inflight_tmastore", 200, 136, 72, 0.0),
                                                     ("cooperative_n128_inflight_tmastore", 130, 264, 64, 0.0),
                                                     ("pingpong_n128_inflight", 72, 135, 64, -1.0)])
def test_bias_relu_epilogue(variant, M, N, K, beta):
    """alpha -> beta*C -> + bias[col] -> ReLU -> bf16 (h100lab.design.epilogue.ORDER) in the direct stores (odd N
    too) and the TMA-store epilogue (ragged N: bias columns past N are not read, the TMA clips): bit for bit the
    reference, and about half the outputs clipped to +0 by the ReLU."""
    got, want, _, _ = _run(variant, M, N, K, 1, alpha=-0.75, beta=beta, bias=True, relu=True)
    assert np.array_equal(got, want)
    assert 0.3 < np.mean(got == 0) < 0.7 and not np.any(got == 0x8000)      # ReLU: +0, never -0


def test_bias_without_relu_and_relu_without_bias():
    got, want, _, _ = _run("cooperative_inflight_tmastore", 128, 256, 64, 1, alpha=1.5, bias=True)
    assert np.array_equal(got, want)
    plain = cap.reference(*_inputs(128, 256, 64)[:2], alpha=1.5)
    assert not np.array_equal(got, plain)                                   # the bias was added
    got, want, _, _ = _run("cooperative", 128, 256, 64, 1, alpha=1.5, relu=True)
    assert np.array_equal(got, want) and np.all(cap._epilogue(np.float32([[-1.0, 2.0]]), None, 1.0, 0.0, None,
                                                               True) == cap.bf16_round(np.float32([[0.0, 2.0]])))


def test_epilogue_steps_follow_the_fixed_order():
    """The kernel's epilogue steps, marked ``// epilogue: <op>`` in the source, appear in the order of
    h100lab.design.epilogue.ORDER (the single list of that order; the reference composes its steps from it too),
    in the FP8 promotion, the direct-store epilogue and the TMA-store epilogue's pair helper alike."""
    import re
    from pathlib import Path

    from h100lab.design import epilogue
    src = (Path(cap.__file__).parent.parent / "cuda" / "kernels" / "l08_gemm.cu").read_text()
    marks = re.findall(r"// epilogue: (\w+)", src)
    assert set(marks) == {"scale_ab", "alpha", "beta_c", "bias", "activation"}

    def steps(fn):                         # a function's steps in the order they first appear (bias_act: two)
        body = src[src.index(fn):]
        body = body[:body.index("\n}\n")]
        seq = []
        for name, call in re.findall(r"// epilogue: (\w+)|(bias_act\(v0)", body):
            for op in (["bias", "activation"] if call else [name]):
                if op not in seq:
                    seq.append(op)
        return seq
    assert steps("void bias_act(") == ["bias", "activation"]
    assert steps("void epilogue(") == ["alpha", "beta_c", "bias", "activation"]
    assert steps("unsigned epi_pair(") == ["alpha", "bias", "activation"]
    for fn in ("void epilogue(", "unsigned epi_pair("):
        idx = [epilogue.ORDER.index(op) for op in steps(fn)]
        assert idx == sorted(idx)
    # the FP8 promotion (scale_ab) happens in the mainloop, before any epilogue function runs
    assert src.index("// epilogue: scale_ab") < src.rindex("epilogue_tma(d[m]") < src.rindex("epilogue(d[m]")
    assert cap.epilogue_ops(0.5, [0], True) == ("alpha", "beta_c", "bias", "activation")
    assert cap.epilogue_ops(fp8=True) == ("scale_ab", "alpha")
