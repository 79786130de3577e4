"""Lesson 2's kernels: the inline-PTX bug zoo (what NVRTC emits for each bug, what the emulator computes), the
DSMEM histogram and the swizzle read on the emulator, the measurement's case lists and checks — and, on a Hopper
GPU, the same launches bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from h100lab.measure import l02 as m
from h100lab.validation import l02 as v


def _emu():
    from h100lab import emu

    if not emu.available():
        pytest.skip(f"NVRTC unavailable: {emu.unavailable_reason()}")
    return emu


def _entry(ptx: str, name: str) -> str:
    body = ptx[ptx.index(f".entry {name}("):]
    return body[: body.index("\n}") + 2]


def test_the_bug_zoo_bugs_show_in_the_ptx():
    emu = _emu()
    ptx = emu.compile_kernel("l02_asm_zoo").ptx
    assert "atom.global.add.u32" not in _entry(ptx, "count_dead")          # deleted: no volatile, output unused
    assert "atom.global.add.u32" in _entry(ptx, "count_live")
    stale, fresh = _entry(ptx, "reread_stale"), _entry(ptx, "reread_fresh")
    assert stale.count("ld.global.u32") == 1 and fresh.count("ld.global.u32") == 2   # the re-read is gone
    wo, rw = _entry(ptx, "accumulate_write_only"), _entry(ptx, "accumulate_read_write")
    assert wo.count("ld.global.u32") == 1 and rw.count("ld.global.u32") == 2         # acc's load is gone


def test_the_bug_zoo_on_the_emulator():
    emu = _emu()
    out = {k: m.asm_zoo_run(emu, k).tolist() for bad, good, _ in m.ASM_ZOO for k in (bad, good)}
    recs = [{"kernel": k, "role": "fix" if k in {g for _, g, _ in m.ASM_ZOO} else "bug", "output": o}
            for k, o in out.items()]
    assert v.check_asm_zoo(recs).ok
    assert out["count_dead"] == [0] and out["reread_stale"] == [0] * 32
    assert v.asm_zoo_intended("accumulate_read_write") == out["accumulate_read_write"]
    wrong = [dict(r, output=v.asm_zoo_intended(r["kernel"])) if r["role"] == "bug" else r for r in recs]
    assert v.check_asm_zoo(wrong).mismatches == 3


def test_wrong_width_operands_do_not_compile():
    from h100lab import emu

    _emu()
    from h100lab.nvrtc import CompileError

    frontend = 'extern "C" __global__ void k(float* p, unsigned* o) { unsigned v; ' \
               'asm("ld.global.u32 %0, [%1];" : "=r"(v) : "r"(p)); o[0] = v; }'
    with pytest.raises(CompileError, match="does not match type/size implied by constraint 'r'"):
        emu.compile(frontend)
    ptxas = 'extern "C" __global__ void k(const long long* a, long long* o) { long long s; ' \
            'asm("add.s32 %0, %1, %2;" : "=l"(s) : "l"(a[0]), "l"(a[1])); o[0] = s; }'
    with pytest.raises(CompileError, match="Arguments mismatch for instruction 'add'"):
        emu.compile(ptxas)


@pytest.mark.parametrize("nbins,cluster", [(64, 2), (100, 4), (256, 8)])
def test_histograms_on_the_emulator_count_exactly(nbins, cluster):
    emu = _emu()
    p = emu.compile_kernel("l02_cluster_histogram")
    data = m.histogram_data(3000, nbins, seed=nbins)
    ref = np.bincount(data, minlength=nbins)
    d = emu.to_device(data)
    per = -(-nbins // cluster)
    for kernel, kw, extra in (("hist_global", {}, ()), ("hist_shared", {"shared_mem": 4 * nbins}, (np.int32(nbins),)),
                              ("hist_cluster", {"shared_mem": 4 * per, "cluster": cluster}, (np.int32(nbins),))):
        h = emu.zeros(nbins, np.uint32)
        st = emu.launch(p.function(kernel), 2 * cluster, 64, d, np.int64(data.size), h, *extra, **kw)
        assert (h.to_host() == ref).all(), kernel
        if kernel == "hist_cluster":
            assert st.by_opcode["red.shared::cluster.add.u32"] == data.size // 32 + (data.size % 32 > 0) or \
                st.by_opcode["red.shared::cluster.add.u32"] >= data.size // 32


@pytest.mark.parametrize("which", [0, 1])
def test_cluster_histogram_without_a_cluster_barrier_is_caught(which):
    """Without barrier 1 the counts are wrong and racecheck names the race; without barrier 2 a CTA adds into a
    neighbour that has already exited, which the emulator faults on."""
    emu = _emu()
    from h100lab.nvrtc import kernel_source
    from h100lab.emu.errors import RaceError

    src = kernel_source("l02_cluster_histogram")
    tok = 'asm volatile("barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");'
    at = [i for i in range(len(src)) if src.startswith(tok, i)]
    assert len(at) == 2
    broken = src[:at[which]] + src[at[which] + len(tok):]
    p = emu.compile(broken, name="broken.cu")
    data = m.histogram_data(512, 64)
    args = (emu.to_device(data), np.int64(512), None, np.int32(64))
    h = emu.zeros(64, np.uint32)
    if which == 1:
        from h100lab.emu import MemoryFault

        with pytest.raises(MemoryFault, match="which has exited"):
            emu.launch(p.function("hist_cluster"), 8, 64, args[0], args[1], h, args[3], shared_mem=64, cluster=4, seed=1)
        return
    emu.launch(p.function("hist_cluster"), 8, 64, args[0], args[1], h, args[3], shared_mem=64, cluster=4, seed=1)
    assert not (h.to_host() == np.bincount(data, minlength=64)).all()
    with pytest.raises(RaceError, match="data race on shared memory"):
        emu.launch(p.function("hist_cluster"), 8, 64, args[0], args[1], emu.zeros(64, np.uint32), args[3],
                   shared_mem=64, cluster=4, seed=1, racecheck=True)


def test_swizzle_read_on_the_emulator_matches_the_bank_model():
    emu = _emu()
    from h100lab.memory.banks import bank_access
    from h100lab.memory.swizzle import swizzle_address

    k = emu.compile_kernel("l02_swizzle_read").function("swizzle_read")
    rows = [128 * t for t in range(32)]
    swz = [int(swizzle_address(a, "128B")) for a in rows]
    model = {0: bank_access(rows, 4), 1: bank_access(swz, 4), 2: bank_access(rows, 16), 3: bank_access(swz, 16)}
    for mode in range(4):
        out = emu.zeros(32, np.uint32)
        st = emu.launch(k, 1, 32, np.int32(mode), out)
        assert out.to_host().tolist() == [64 * t for t in range(32)]       # element (t, 0) of the tile
        _, _, reqs, waves = next(x for x in st.shared_by_pc if "ld.shared.u16" in x[1] or "ld.shared.v4" in x[1])
        assert reqs == 1 and waves == int(model[mode])
    assert [int(model[i]) for i in range(4)] == [32, 4, 32, 4]


def test_histogram_cases_and_check():
    cases = m.histogram_cases()
    assert {c["kernel"] for c in cases} == {"global", "shared", "cluster"}
    assert all(c["smem"] <= 232448 for c in cases)
    assert not any(c["kernel"] == "shared" and c["nbins"] == 65536 for c in cases)      # 256 KiB: no single CTA
    assert {c["cluster"] for c in cases if c["nbins"] == 262144 and c["kernel"] == "cluster"} == {8, 16}
    recs = [dict(c, gelems=1.0 if c["kernel"] == "global" else 3.0, grid=v.histogram_grid_model(c), correct=True)
            for c in cases]
    res = v.check_histogram(recs)
    assert res.ok and "3.0 x" in res.note
    rows = v.histogram_rows(recs)
    assert [r["bins"] for r in rows] == sorted(m.HIST_BINS) and rows[0]["best on chip / global"] == 3.0
    recs[1]["correct"] = False
    assert not v.check_histogram(recs).ok
    recs[1]["correct"], recs[2]["grid"] = True, recs[2]["grid"] + 1
    assert "model" in v.check_histogram(recs).examples[0]["why"]
    assert {"histogram", "asm", "sass"} <= set(m.STEPS)


def test_cluster_sync_rows_from_the_sync_dataset():
    from h100lab import data

    if not data.available("l03/sync_cost"):
        pytest.skip("l03/sync_cost not measured yet")
    rows = v.cluster_sync_rows(data.load("l03/sync_cost").records)
    assert [r["cluster size"] for r in rows] == [1, 2, 4, 8, 16]
    assert all(r["relaxed (ns)"] < r["release (ns)"] for r in rows)
    assert all(r["bar.sync, one CTA (ns)"] < r["relaxed (ns)"] for r in rows)


def test_committed_lesson2_kernel_datasets_pass_their_checks():
    from h100lab import data

    for name, check in (("l02/cluster_histogram", v.check_histogram), ("l02/asm_zoo", v.check_asm_zoo)):
        if not data.available(name):
            pytest.skip(f"{name} not measured yet")
        res = check(data.load(name).records)
        assert res.ok, res


# ---------------------------------------------------------------------------------------------------------
# on a Hopper GPU


@pytest.mark.gpu
def test_bug_zoo_and_histogram_agree_with_the_emulator_on_the_gpu():
    from h100lab import cuda, emu

    for bad, good, _ in m.ASM_ZOO:
        for k in (bad, good):
            g, e = m.asm_zoo_run(cuda, k), m.asm_zoo_run(emu, k)
            if k != "accumulate_write_only":          # reads a register nothing wrote: the GPU's is not 0
                assert g.tolist() == e.tolist(), k
    data = m.histogram_data(5000, 96, seed=3)
    outs = []
    for be in (emu, cuda):
        p = be.compile_kernel("l02_cluster_histogram")
        h = be.zeros(96, np.uint32)
        be.launch(p.function("hist_cluster"), 8, 64, be.to_device(data), np.int64(data.size), h, np.int32(96),
                  shared_mem=4 * 24, cluster=4)
        be.synchronize()
        outs.append(h.to_host())
    assert (outs[0] == outs[1]).all() and (outs[0] == np.bincount(data, minlength=96)).all()


def test_swizzle_read_records_from_nsight_compute_csv():
    from h100lab.measure.l01 import parse_ncu_csv

    head = '"ID","Kernel Name","Metric Name","Metric Value"\n'
    rows = "".join(f'"{i}","swizzle_read","{m.SWIZZLE_METRIC}","{w}"\n' for i, w in enumerate([32, 4, 32, 4]))
    recs = m.swizzle_records(parse_ncu_csv("==PROF== x\n" + head + rows))
    assert [r["wavefronts"] for r in recs] == [32, 4, 32, 4] and recs[1]["swizzled"] and recs[2]["width"] == 16
    assert v.check_swizzle_read(recs).ok
    assert not v.check_swizzle_read([dict(recs[0], wavefronts=1)]).ok
    with pytest.raises(ValueError, match="expected 4 launches"):
        m.swizzle_records(parse_ncu_csv(head + rows.splitlines(True)[0]))


_PULL_RING = r"""
extern "C" __global__ void pull_ring(const unsigned* in, unsigned* out) {
    __shared__ unsigned slot;
    unsigned rank, n;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    if (threadIdx.x == 0) slot = in[blockIdx.x];              // publish in my own shared memory
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (threadIdx.x == 0) {                                    // read my left neighbour's slot
        unsigned local = (unsigned)__cvta_generic_to_shared(&slot), remote, v;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"((rank + n - 1) % n));
        asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(remote) : "memory");
        out[blockIdx.x] = v;
    }
    KEEP_ALIVE
}
"""


def test_emulator_faults_on_a_read_of_an_exited_cta():
    """A pull ring (each CTA reads its left neighbour's slot through mapa) is right with a cluster barrier before the
    exit, and without it the emulator reports the read of a CTA that has exited."""
    emu = _emu()
    from h100lab.emu import MemoryFault

    barrier = 'asm volatile("barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");'
    x = np.arange(16, dtype=np.uint32)
    out = emu.zeros(16, np.uint32)
    emu.launch(emu.compile(_PULL_RING.replace("KEEP_ALIVE", barrier)).function("pull_ring"), 16, 64, emu.to_device(x),
               out, cluster=4)
    assert out.to_host().tolist() == np.roll(x.reshape(4, 4), 1, axis=1).ravel().tolist()
    with pytest.raises(MemoryFault, match="which has exited"):
        emu.launch(emu.compile(_PULL_RING.replace("KEEP_ALIVE", "")).function("pull_ring"), 16, 64, emu.to_device(x),
                   out, cluster=4, seed=211)