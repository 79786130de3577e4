"""Lesson 2 real-GPU side: kernels compile for sm_90a, the measurement's case lists and record builders, the
silicon checks on model-made records, the PTX snapshot — and, on a Hopper GPU, the kernels themselves."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from h100lab.cluster import H200_CGA, CgaLayout, all_special_registers, cluster_capacity, place_clusters
from h100lab.memory.spaces import cluster_address
from h100lab.measure import l02 as m
from h100lab.ptx import cvt_x2, encode
from h100lab.validation import CheckResult
from h100lab.validation import l02 as v

KERNELS = ["l02_cluster_probe", "l02_dsmem_ring", "l02_pack", "l02_spaces", "l02_axpy"]
SNAPSHOT = Path(__file__).resolve().parent.parent / "h100lab" / "cuda" / "snapshots" / "l02_axpy.ptx"


def _nvrtc_reason():
    from h100lab.cuda import compiler_unavailable_reason
    return compiler_unavailable_reason()


needs_nvrtc = pytest.mark.skipif(_nvrtc_reason() is not None, reason=f"NVRTC unavailable: {_nvrtc_reason()}")


@needs_nvrtc
@pytest.mark.parametrize("name", KERNELS)
def test_kernels_compile_for_sm90a(name):
    from h100lab import cuda
    prog = cuda.compile_kernel(name)
    assert prog.cubin and prog.entry_points()
    assert cuda.kernel_info(name).lesson == 2


@needs_nvrtc
def test_ptx_snapshot_is_what_nvrtc_emits():
    from h100lab import cuda
    snap = SNAPSHOT.read_text()
    assert ".target sm_90a" in snap and "fma.rn.f32" in snap and "// begin inline asm" in snap
    assert ".loc" not in snap and ".file" not in snap
    version = re.search(r"release (\d+\.\d+)", snap).group(1)
    if cuda.nvrtc_version() == version:
        assert m.ptx_snapshot() == snap
    else:  # another NVRTC: the same instructions, possibly other register numbers
        ops = lambda t: [ln.split()[0] for ln in t.splitlines() if ln.startswith("\t") and not ln.strip().startswith("//")]
        assert ops(m.ptx_snapshot()) == ops(snap)


def test_smem_for_blocks_hits_every_target():
    from h100lab.occupancy import occupancy
    for t in m.BLOCKS_PER_SM_TARGETS:
        d = m.smem_for_blocks(t)
        assert occupancy(32, 16, d).limits["shared_memory"] == (t if t < 32 else None) or t >= 32
    with pytest.raises(ValueError):
        m.smem_for_blocks(0)


def test_occupancy_cases_cover_the_lesson():
    cases = m.occupancy_cases()
    sizes = {c["cluster_size"] for c in cases}
    assert sizes == set(range(1, 17))
    assert any(c["cluster"][1] > 1 for c in cases) and any(c["cluster"][2] > 1 for c in cases)
    assert {c["block_size"] for c in cases} == set(m.BLOCK_SIZES)
    assert len({c["dynamic_smem"] for c in cases}) == len(m.BLOCKS_PER_SM_TARGETS)
    assert len(cases) < 2000


def test_pack_inputs_are_deterministic_and_cover_edges():
    a, b = m.pack_inputs()
    a2, b2 = m.pack_inputs()
    assert np.array_equal(np.float32(a), np.float32(a2), equal_nan=True) and len(a) == len(b)
    assert any(np.isnan(x) for x in a) and float("inf") in a and 61440.0 in a


def _sreg_raw(grid, cluster):
    regs = all_special_registers(grid, cluster, non_portable=True)
    raw = []
    for k, r in enumerate(regs):
        raw += [k % 7, *r.ctaid, *r.clusterid, *r.nclusterid, *r.cluster_ctaid, *r.cluster_nctaid,
                r.cluster_ctarank, r.cluster_nctarank, int(r.is_explicit_cluster), 0]
    return raw


def test_sreg_check_accepts_the_model_and_catches_a_swap():
    recs = []
    for grid, cluster, nonport in m.SREG_LAUNCHES:
        recs += m.probe_records(_sreg_raw(grid, cluster), grid, cluster, str(grid), {"non_portable": nonport})
    res = v.check_sregs(recs)
    assert res.cases == len(recs) and res.mismatches == 0
    recs[3] = dict(recs[3], cluster_ctarank=recs[3]["cluster_ctarank"] ^ 1)   # block id mistaken for rank
    assert v.check_sregs(recs).mismatches == 1


def _ring_raw(grid, cluster):
    n = cluster[0] * cluster[1] * cluster[2]
    regs = all_special_registers(grid, cluster, non_portable=True)
    sent = {}
    for k, r in enumerate(regs):
        sent[(r.cluster_linear_id, r.cluster_ctarank)] = 7919 * k + 13
    raw = []
    for k, r in enumerate(regs):
        rank = r.cluster_ctarank
        raw += [sent[(r.cluster_linear_id, (rank - 1) % n)], sent[(r.cluster_linear_id, rank)],
                cluster_address(rank, 0x400), cluster_address((rank + 1) % n, 0x400), (rank + 1) % n,
                n * (n + 1) // 2 if rank == 0 else 0, rank, n]
    return raw


def test_ring_check_on_model_records():
    recs = []
    for s in m.RING_SHAPES:
        grid = (s[0] * 4, s[1], s[2])
        recs += m.ring_records(_ring_raw(grid, s), grid, s)
    assert v.check_ring(recs).mismatches == 0
    recs[5] = dict(recs[5], received=recs[5]["received"] + 1)
    assert v.check_ring(recs).mismatches == 1
    old = dict(recs[9], mapa_addr=((recs[9]["rank"] + 1) % recs[9]["nrank"] + 1) << 24 | 0x400)  # rank + 1 slots
    assert v.check_ring(recs[6:9] + [old]).mismatches == 1


def test_pack_check_on_model_records():
    a, b = m.pack_inputs(16)
    recs = []
    for x, y in zip(a, b):
        x32, y32 = float(np.float32(x)), float(np.float32(y))
        bf = cvt_x2(x32, y32, ".bf16x2")
        recs.append({"a_bits": encode(x32, ".f32"), "b_bits": encode(y32, ".f32"), "f16x2": cvt_x2(x32, y32, ".f16x2"),
                     "bf16x2": bf, "e4m3x2": cvt_x2(x32, y32, ".e4m3x2"), "e5m2x2": cvt_x2(x32, y32, ".e5m2x2"),
                     "mov_b32": bf})
    assert v.check_pack(recs).mismatches == 0
    swapped = dict(recs[2], bf16x2=((recs[2]["bf16x2"] & 0xFFFF) << 16) | (recs[2]["bf16x2"] >> 16),
                   mov_b32=((recs[2]["bf16x2"] & 0xFFFF) << 16) | (recs[2]["bf16x2"] >> 16))
    assert v.check_pack(recs[:2] + [swapped]).mismatches >= 1


def _spaces(block, rank_bits=True):
    rank = block % 2
    base = 0x7F9000000000
    own = cluster_address(rank, 0x400) if rank_bits else 0x400
    return {"block": block, "shared": 3, "peer_shared": 2, "local": 8, "global": 4, "const": 16,
            "shared_offset": own, "cvta_round_trip": True, "shared_generic": base + own,
            "peer_generic": base + cluster_address(1 - rank, 0x400)}


def test_spaces_check():
    good = [_spaces(b) for b in range(4)]
    res = v.check_spaces(good)
    assert res.mismatches == 0 and res.cases == 4 and "0x7f9000000000" in res.note
    assert v.check_spaces([dict(good[0], peer_shared=3)] + good[1:]).mismatches == 1
    # the old [model] encoding (a rank-free .shared::cta offset) is what the H200 contradicted
    assert v.check_spaces([_spaces(b, rank_bits=False) for b in range(4)]).mismatches >= 2


def test_occupancy_and_placement_checks_on_model_records():
    g = CgaLayout((18, 18, 18, 18, 16, 16, 14, 10), 2)
    occ = [{"cluster": c["cluster"], "cluster_size": c["cluster_size"], "block_size": c["block_size"],
            "dynamic_smem": c["dynamic_smem"], "blocks_per_sm": b,
            "clusters": cluster_capacity(c["cluster"], 128, blocks=b, non_portable=True, grouping=g).clusters}
           for c in m.occupancy_cases(m.QUICK["shapes"], (128,), (1,)) for b in (1, 3, 8, 16)]
    assert v.check_cluster_occupancy(occ, g).mismatches == 0
    res = v.check_cluster_occupancy(occ, H200_CGA)
    assert res.mismatches > 0                                # a wrong layout is caught
    assert v.check_cluster_occupancy(occ + [dict(occ[0], blocks_per_sm=None)], g).cases == len(occ)

    p = place_clusters(40, 8, 1)                             # the H200 layout: the map check compares %smid too
    gmap = [{"gpc": i, "sms": list(s), "sm_count": len(s)} for i, s in enumerate(p.sm_ids)]
    assert v.check_gpc_map(gmap).mismatches == 0 and v.measured_grouping(gmap) == H200_CGA
    moved = [dict(gmap[0], sms=gmap[0]["sms"][:-1] + [gmap[1]["sms"][0]])] + gmap[1:]
    assert v.check_gpc_map(moved).mismatches >= 1
    recs = [{"launch": "w", "clusterid": [c.cluster, 0, 0], "smid": c.sm} for c in p.ctas]
    assert v.check_placement(recs, gmap).mismatches == 0
    recs[0] = dict(recs[0], smid=p.sm_ids[7][0] if p.ctas[0].domain != 7 else p.sm_ids[0][0])
    assert v.check_placement(recs, gmap).mismatches == 1


def test_placement_check_compares_full_waves():
    p = place_clusters(7, 16, 1)
    gmap = [{"gpc": i, "sms": list(s), "sm_count": len(s)} for i, s in enumerate(p.sm_ids)]
    wave = [{"launch": "wave c16 b1", "cluster_size": 16, "blocks_per_sm": 1, "clusterid": [c.cluster, 0, 0],
             "smid": c.sm} for c in p.ctas]
    res = v.check_placement(wave, gmap)
    assert res.cases == 7 + 1 and res.mismatches == 0
    # the same clusters on other SMs of their domains: a different idle set is caught
    idle = sorted(set(p.sm_ids[0]) - {c.sm for c in p.ctas})
    shifted = [dict(r, smid=idle[0]) if r["smid"] == p.sm_ids[0][0] else r for r in wave]
    assert v.check_placement(shifted, gmap).mismatches == 1


def test_idle_sms_and_occupancy_curve_from_records():
    recs = []
    for c, b in ((2, 1), (16, 1), (8, 4)):
        p = place_clusters(cluster_capacity(c, 128, blocks=b, non_portable=True).clusters, c, b)
        recs += [{"launch": f"wave c{c} b{b}", "cluster_size": c, "blocks_per_sm": b, "clusterid": [x.cluster, 0, 0],
                  "smid": x.sm} for x in p.ctas]
    recs.append({"launch": "more", "clusterid": [0, 0, 0], "smid": 5})          # not a full wave: ignored
    assert v.measured_idle_sms(recs) == {(2, 1): 0, (8, 4): 8, (16, 1): 20}
    occ = [{"cluster": [c, 1, 1], "cluster_size": c, "block_size": 128, "blocks_per_sm": 8, "clusters": 10 * c}
           for c in (1, 2)] + [{"cluster": [2, 2, 1], "cluster_size": 4, "block_size": 128, "blocks_per_sm": 8,
                                "clusters": 1}, {"cluster": [3, 1, 1], "cluster_size": 3, "block_size": 256,
                                                 "blocks_per_sm": 8, "clusters": 2}]
    assert v.occupancy_curve(occ) == {1: 10, 2: 20}


def test_residency_records_and_check():
    recs = [m.residency_record(c, b, cluster_capacity(c, 32, blocks=b).clusters, 132 * b, 0.1,
                               0.1 * v.residency_waves({"cluster_size": c, "block": 32, "blocks_per_sm": b,
                                                        "grid": 132 * b}) * 1.04)
            for c, b in m.RESIDENCY_CASES]
    assert [r["waves"] for r in recs] == [1, 2, 2, 4, 5]
    assert v.check_residency(recs).mismatches == 0
    uncapped = dict(recs[1], cluster_ms=recs[1]["plain_ms"] * 1.02, ratio=1.02, waves=1)   # 16 CTAs/SM ran at once
    assert v.check_residency([uncapped]).mismatches == 1


def test_measure_residency_plumbing(monkeypatch):
    """The residency measurement's calls, against a fake backend that runs 8 CTAs per SM in a cluster launch."""
    from types import SimpleNamespace

    from h100lab import cuda

    class FakeKernel:
        def set_max_dynamic_shared_memory(self, n):
            assert n == m.SMEM_OPTIN

        def allow_non_portable_cluster_size(self, on):
            assert on

    calls = []

    def time_kernel(k, grid, block, buf, spin, shared_mem=0, cluster=None, warmup=3, repeats=20):
        calls.append((grid, block, cluster, shared_mem))
        assert block == 32 and buf.nbytes == 4 * m.PROBE_FIELDS * grid and int(spin) == m.RESIDENCY_SPIN_NS
        if cluster is None:
            return SimpleNamespace(median_ms=0.1)
        c = cluster[0]
        cap = cluster_capacity(c, 32, blocks=grid // 132, non_portable=True).clusters
        return SimpleNamespace(median_ms=0.1 * -(-(grid // c) // cap))

    monkeypatch.setattr(cuda, "compile_kernel", lambda name: SimpleNamespace(function=lambda n: FakeKernel()))
    monkeypatch.setattr(cuda, "device_properties", lambda d=0: {"multiProcessorCount": 132})
    monkeypatch.setattr(cuda, "occupancy_max_active_blocks", lambda k, b, smem: 32 if smem == 0 else
                        __import__("h100lab.occupancy", fromlist=["occupancy"]).occupancy(b, 32, smem).active_blocks)
    monkeypatch.setattr(cuda, "occupancy_max_active_clusters", lambda k, g, b, c, smem:
                        cluster_capacity(c, b, blocks=32 if smem == 0 else 16 if smem < 20000 else 8,
                                         non_portable=True).clusters)
    monkeypatch.setattr(cuda, "zeros", lambda n, dt: SimpleNamespace(nbytes=4 * n))
    monkeypatch.setattr(cuda, "time_kernel", time_kernel)
    recs = m.measure_residency()
    assert [r["waves"] for r in recs] == [1, 2, 2, 4, 5] and len(calls) == 2 * len(m.RESIDENCY_CASES)
    assert v.check_residency(recs).mismatches == 0


def test_run_on_reports_every_check():
    out = v.run_on(occ=[], gmap=[{"gpc": 0, "sms": list(range(132)), "sm_count": 132}], placement=[], sregs=[],
                   ring=[], pack=[], spaces=[], residency=[])
    assert [t for t, _ in out] == ["cluster occupancy", "cluster domains", "placement", "special registers",
                                   "DSMEM ring", "packing", "state spaces", "cluster residency"]
    assert all(isinstance(r, CheckResult) for _, r in out)


def test_main_without_gpu_says_so(capsys):
    from h100lab import cuda
    if cuda.available():
        pytest.skip("a GPU is present")
    assert m.main(["--quick"]) == 2
    assert "no usable GPU" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ on a GPU

@pytest.mark.gpu
def test_gpu_ring_and_sregs_match_the_model():
    ring = m.measure_ring(shapes=((2, 1, 1), (8, 1, 1), (16, 1, 1), (2, 2, 2)))
    assert v.check_ring(ring).mismatches == 0
    assert v.check_sregs(m.measure_sregs()).mismatches == 0


@pytest.mark.gpu
def test_gpu_cluster_occupancy_with_the_measured_grouping():
    _, gmap = m.measure_placement(waves=3, progress=False)
    assert v.check_gpc_map(gmap).mismatches == 0
    occ = m.measure_occupancy(m.occupancy_cases(m.QUICK["shapes"], (128, 1024), (1, 2, 8)), progress=False)
    res = v.check_cluster_occupancy(occ, v.measured_grouping(gmap))
    assert res.mismatches == 0, res.examples


@pytest.mark.gpu
def test_gpu_pack_and_spaces():
    assert v.check_pack(m.measure_pack()).mismatches == 0
    assert v.check_spaces(m.measure_spaces()).mismatches == 0


def test_spaces_records_and_sass_without_tools(tmp_path, monkeypatch):
    raw = ([3, 8, 4, 16, 2, 0x400, 1, 0x400, 0x7F90, 0x1000400, 0x7F90, 0x30, 0x7E]
           + [3, 8, 4, 16, 2, 0x1000400, 1, 0x1000400, 0x7F90, 0x400, 0x7F90, 0x30, 0x7E])
    recs = m.spaces_records(raw, 2, 8)
    assert recs[1]["shared_generic"] == 0x7F9001000400 and recs[0]["shared_offset"] == 0x400
    assert v.check_spaces(recs).mismatches == 0
    monkeypatch.setattr(m.shutil, "which", lambda name: None)
    assert m.dump_sass(tmp_path) == []


def test_hardware_report_without_gpu_or_data(tmp_path, monkeypatch):
    from h100lab import cuda
    if cuda.available():
        pytest.skip("a GPU is present")
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    assert v.hardware_report() == {"source": None, "command": "python -m h100lab.measure l02"}


@pytest.mark.gpu
def test_gpu_cluster_residency():
    res = v.check_residency(m.measure_residency(cases=((1, 16), (2, 16))))
    assert res.mismatches == 0, res.examples
