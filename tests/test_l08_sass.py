"""The SASS fingerprint of a kernel's main loops (h100lab.sass) and data/l08/mainloop_sass.json: the lesson-8 bf16
tables were measured from different commits of l08_gemm.cu, whose k-block loops compile alike."""
import pytest

from h100lab import data, nvrtc, sass
from h100lab.design import capstone

SASS = """
        .section        .text.k,"ax",@progbits
k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
.L_x_1:
        /*0020*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x8], R3 ;
        /*0030*/              @!P0 BRA `(.L_x_2) ;
        /*0040*/                   WARPGROUP.ARRIVE ;
        /*0050*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR24], R24 ;
        /*0060*/                   IADD3 R3, R3, 0x1, RZ ;
.L_x_3:
        /*0070*/                   UTMALDG.2D [UR8], [UR10] ;
        /*0080*/               @P1 BRA `(.L_x_1) ;
.L_x_2:
        /*0090*/                   STG.E [R4.64], R24 ;
        /*00a0*/                   EXIT ;
"""


def _rename(text, a, b):
    return text.replace(a, b)


def test_basic_blocks_keep_guards_and_modifiers_and_drop_operands():
    blocks = sass.basic_blocks(SASS)
    assert [label for label, _ in blocks] == ["entry", ".L_x_1", ".L_x_3", ".L_x_2"]
    assert blocks[1][1] == ["SYNCS.PHASECHK.TRANS64.TRYWAIT", "@!P0 BRA", "WARPGROUP.ARRIVE",
                            "HGMMA.64x256x16.F32.BF16", "IADD3"]
    assert blocks[2][1] == ["UTMALDG.2D", "@P1 BRA"]


def test_fingerprint_sees_the_loops_only_and_not_the_registers():
    fp = sass.mainloop_fingerprint(SASS)
    assert fp["blocks"] == 2 and fp["instructions"] == 7 and fp["hgmma"] == 1
    # registers, addresses and code outside the loops do not count
    other = _rename(_rename(SASS, "R24", "R40"), "STG.E [R4.64], R24", "STG.E.64 [R6.64], R8")
    assert sass.mainloop_fingerprint(other) == fp
    # an instruction moved inside a loop block: another order, the same instructions
    moved = SASS.replace("""        /*0040*/                   WARPGROUP.ARRIVE ;
        /*0050*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR24], R24 ;
        /*0060*/                   IADD3 R3, R3, 0x1, RZ ;""", """        /*0040*/                   IADD3 R3, R3, 0x1, RZ ;
        /*0050*/                   WARPGROUP.ARRIVE ;
        /*0060*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR24], R24 ;""")
    m = sass.mainloop_fingerprint(moved)
    assert m["sha256"] != fp["sha256"] and m["multiset_sha256"] == fp["multiset_sha256"]
    # a different guard or a different shape is another loop
    assert sass.mainloop_fingerprint(SASS.replace("@!P0 BRA", "@P0 BRA"))["sha256"] != fp["sha256"]
    assert sass.mainloop_fingerprint(SASS.replace("64x256x16", "64x128x16"))["multiset_sha256"] != \
        fp["multiset_sha256"]
    with pytest.raises(ValueError, match="HGMMA"):
        sass.mainloop_fingerprint("        /*0000*/                   EXIT ;\n")


def test_function_fingerprint_sees_every_block_and_counts_the_stores():
    fp = sass.function_fingerprint(SASS)
    ops = [op for _, b in sass.basic_blocks(SASS) for op in b]
    assert fp["instructions"] == len(ops) and fp["stg"] == sum(o.split(" ")[-1].startswith("STG") for o in ops) >= 1
    # registers do not count; code outside the loops does (the epilogue's store changed: another function)
    assert sass.function_fingerprint(_rename(SASS, "R24", "R40")) == fp
    other = sass.function_fingerprint(_rename(SASS, "STG.E [R4.64], R24", "STG.E.64 [R6.64], R8"))
    assert other["sha256"] != fp["sha256"] and other["stg"] == fp["stg"]
    assert sass.mainloop_fingerprint(_rename(SASS, "STG.E [R4.64], R24", "STG.E.64 [R6.64], R8")) == \
        sass.mainloop_fingerprint(SASS)


def _table():
    if not data.available("l08/mainloop_sass"):
        pytest.skip("data/l08/mainloop_sass.json not committed")
    return data.load("l08/mainloop_sass")


def test_the_bf16_tables_ran_one_main_loop():
    """Golden: l08/gemm_bench (efb78df) and its five-process repeat (025c7ae) built every one of their seven
    variants with the same main loops, so the two tables' differences (6-24 % at some records) are the runs', not
    the kernel's; the TMA-store table's 128-column form had its loop's instructions scheduled in another order."""
    ds = _table()
    by = {}
    for r in ds.records:
        if r["kind"] == "mainloop":
            by.setdefault(r["variant"], {})[r["rev"]] = r
    meta = ds.meta["measured_from"]
    bench, repeats = meta["l08/gemm_bench"]["rev"], meta["l08/gemm_bench_repeats"]["rev"]
    seven = [v for v in by if "tmastore" not in v]
    assert len(seven) == 7
    for v in seven:
        assert by[v][bench]["sha256"] == by[v][repeats]["sha256"] == by[v]["worktree"]["sha256"], v
        assert by[v][bench]["hgmma"] > 0 and by[v][bench]["blocks"] >= 10
    t_old, t_new = meta["l08/gemm_bench_tmastore"]["rev"], meta["l08/gemm_bench_tmastore_repeats"]["rev"]
    assert by["cooperative_inflight_tmastore"][t_old]["sha256"] == by["cooperative_inflight_tmastore"][t_new]["sha256"]
    n128 = by["cooperative_n128_inflight_tmastore"]
    assert n128[t_old]["sha256"] != n128[t_new]["sha256"] and n128[t_old]["multiset_sha256"] == \
        n128[t_new]["multiset_sha256"]


def test_todays_kernel_still_compiles_to_the_measured_main_loops():
    """The working tree's l08_gemm.cu against the table (same NVRTC only: another compiler may schedule otherwise):
    a changed k-block loop means the lesson-8 timing tables measured another kernel — re-measure, then rerun
    benchmarks/mainloop_sass.py."""
    ds = _table()
    if sass.nvdisasm_path() is None:
        pytest.skip("nvdisasm: not on PATH and no nvidia-cuda-nvdisasm wheel")
    if nvrtc.unavailable_reason() is not None:
        pytest.skip(nvrtc.unavailable_reason())
    if nvrtc.version() != ds.meta["nvrtc"]:
        pytest.skip(f"NVRTC {nvrtc.version()}; the table was built with {ds.meta['nvrtc']}")
    latest = ds.meta["measured_from"]["l08/gemm_bench_repeats"]["rev"]
    want = {r["variant"]: r for r in ds.records if r["rev"] == latest and r["kind"] == "mainloop"}
    for name in ("cooperative", "pingpong_inflight", "cooperative_inflight_tmastore"):
        v = capstone.variant(name)
        c = nvrtc.compile_kernel("l08_gemm", options=v.options)
        got = sass.mainloop_fingerprint(sass.disassemble(c.cubin, "gemm_bf16"))
        assert got["sha256"] == want[name]["sha256"], name


def test_one_commit_changed_the_bf16_kernel_between_the_builds():
    """Golden: the whole gemm_bf16 (every opcode, in order) of the forms the two builds run apart changed at one commit
    of l08_gemm.cu between the first bf16 table's build and today's — cdfd596, the fused bias and ReLU epilogue — and
    its main loops did not (test above): the build difference of l08/gemm_bench_builds is that commit's."""
    from h100lab.validation import l08 as v8

    ds = _table()
    changes = v8.kernel_changes(ds)
    assert set(changes) == {"pingpong", "cooperative_n128"}
    assert all(c == ["cdfd596"] for c in changes.values()), changes
    fn = {(r["rev"], r["variant"]): r for r in ds.records if r["kind"] == "function"}
    assert fn[("efb78df", "pingpong")]["stg"] != fn[("cdfd596", "pingpong")]["stg"]
    assert len({r["rev"] for r in fn.values()}) >= 10        # every kernel commit since efb78df


def test_the_first_tables_build_against_todays_side_by_side():
    """Golden on data/l08/gemm_bench_builds (the A/B run): the old build reproduces l08/gemm_bench and
    l08/gemm_bench_tmastore, today's build runs the ping-pong and 128-column forms faster in the same session,
    cuBLAS alike on both sides; nothing of it is a timing record of the model."""
    from h100lab.design import perf
    from h100lab.validation import l08 as v8

    if not data.available(v8.BUILDS_DATASET):
        pytest.skip("data/l08/gemm_bench_builds.json not committed")
    ds = data.load(v8.BUILDS_DATASET)
    assert not any(r.get("kind") in perf.TIME_KINDS for r in ds.records)
    assert v8.BUILDS_DATASET not in perf.timing_datasets()
    procs = {(r["build"], r["process"], r["table"]) for r in ds.records}
    assert len(procs) == 12 and set(ds.meta["return_codes"]) == {"0"}
    s = v8.build_summary()
    assert s["n"] == s["n_orig"] == 52 and s["repro"] >= 51
    assert all(abs(v) <= 0.05 for v in s["cublas"].values())
    faster = dict(s["faster_new"])
    assert faster["8192×8192×8192 pingpong [gemm_bench]"] < -0.05
    assert faster["16384×16384×16384 cooperative_n128 [gemm_bench]"] < -0.2
    assert not any("tmastore" in k for k in faster)          # the TMA-store table's forms ran alike
    rows = v8.build_rows()
    r16 = next(r for r in rows if r["variant"] == "cooperative_n128" and r["shape"] == (16384,) * 3
               and r["group"] == 8 and r["raster"] == 0)
    res = v8._builds_repro(ds)              # the one original its build does not reproduce within ±10 %
    assert res.ok and [e["case"] for e in res.examples] == ["16384×16384×16384 cooperative_n128"]
    assert v8._builds_cublas(ds).ok and abs(r16["model_vs_new"]) <= v8.TOLERANCE < abs(r16["model_vs_old"])
    assert len(r16["old"]) == len(r16["new"]) == 3 and r16["new_vs_old"] == pytest.approx(
        sorted(r16["new"])[1] / sorted(r16["old"])[1] - 1)


def test_the_old_kernel_in_todays_harness():
    """Golden on data/l08/gemm_bench_kernels (the kernel A/B run: efb78df's l08_gemm.cu and today's in one process,
    one harness): the outputs agree bit for bit, every configuration the two trees' run found faster on today's build
    is faster here too (so the kernel's code is the difference, not the harness), and the counters show where: the
    old 128 × 128 form at 8192³ moves about twice the DRAM bytes with its tensor pipe less busy, the same SM cycles
    for ping-pong at a lower clock. Nothing of it is a timing record of the model."""
    from h100lab.design import perf
    from h100lab.validation import l08 as v8

    if not data.available(v8.KERNELS_DATASET):
        pytest.skip("data/l08/gemm_bench_kernels.json not committed")
    ds = data.load(v8.KERNELS_DATASET)
    assert not any(r.get("kind") in perf.TIME_KINDS for r in ds.records)
    assert v8.KERNELS_DATASET not in perf.timing_datasets()
    assert set(ds.meta["return_codes"]) == {"0"} and ds.meta["gpu"] == "NVIDIA H200"
    s = v8.kernel_ab_summary()
    assert s["n"] == s["equal"] == 20
    assert s["builds_faster"] >= 6 and s["builds_reproduced"] == s["builds_faster"]
    faster = dict(s["faster_new"])
    assert faster["16384×16384×16384 cooperative_n128"] < -0.2 and faster["8192×8192×8192 cooperative_n128"] < -0.1
    rows = {(r["variant"], r["shape"]): r for r in v8.kernel_ab_rows()}
    assert all(abs(r["new_vs_old"]) <= 0.03 for (v, _), r in rows.items() if v == "cooperative")
    assert all(len(r["old"]) == len(r["new"]) == 4 for r in rows.values())
    c = {(r["variant"], r["side"]): r for r in v8.kernel_ab_counters()}
    assert len(c) == 6 and all(r["launches"] == 2 for r in c.values())
    old, new = c[("cooperative_n128", "old")], c[("cooperative_n128", "new")]
    assert old["dram_gb"] > 1.8 * new["dram_gb"] and old["l2_hit"] < new["l2_hit"] - 8
    assert old["tensor_active"] < new["tensor_active"] - 8 and old["mcycles"] > 1.1 * new["mcycles"]
    po, pn = c[("pingpong", "old")], c[("pingpong", "new")]
    assert abs(po["mcycles"] / pn["mcycles"] - 1) < 0.03 and po["ghz"] < pn["ghz"] and po["dram_gb"] > pn["dram_gb"]
    res = v8._kernels_ab(ds)
    assert res.ok and res.mismatches == 0
    m = v8._kernels_model(ds)
    assert m.ok and s["model_new"] >= 15


@pytest.mark.parametrize("name", ["fp8_cooperative_tmastore_cluster2", "fp8_cooperative_tmastore_cluster2_lead2"])
def test_the_fp8_pair_releases_after_wait_group_with_a_gpu_barrier(name):
    """What h100lab.validation.l08_fence's readings rest on: in the FP8 cluster pair's consumer loop the stage goes
    back right after WARPGROUP.DEPBAR (wait_group 0) — the local arrive, then MEMBAR.ALL.GPU and ERRBAR ahead of the
    remote arrive (.release.cluster) — with the promotion's FFMAs after it but for the few ptxas hoists above it;
    with lead 1 the block's scale loads (LDG.E.CONSTANT) are issued between the wgmmas (QGMMA) and that wait, so they
    are in flight at the barrier."""
    if sass.nvdisasm_path() is None:
        pytest.skip("nvdisasm: not on PATH and no nvidia-cuda-nvdisasm wheel")
    if nvrtc.unavailable_reason() is not None:
        pytest.skip(nvrtc.unavailable_reason())
    v = capstone.variant(name)
    ops = [line.split("*/", 1)[1].strip().rstrip(" ;") for line in
           sass.disassemble(nvrtc.compile_kernel("l08_gemm", options=v.options).cubin, v.entry).splitlines()
           if "/*" in line and "*/" in line]
    bar = next(i for i, o in enumerate(ops) if o.endswith("MEMBAR.ALL.GPU") and "@" in o)   # the loop's (guarded)
    dep = max(i for i in range(bar) if ops[i].startswith("WARPGROUP.DEPBAR"))
    assert any(o.split()[-1].startswith("SYNCS.ARRIVE") or "SYNCS.ARRIVE" in o for o in ops[dep:bar])   # local arrive
    after = ops[bar:bar + 4]
    assert any("ERRBAR" in o for o in after) and any("SYNCS.ARRIVE.TRANS64.RED" in o for o in ops[bar:bar + 6])
    hgmma = max(i for i in range(dep) if "GMMA" in ops[i])
    loads = [i for i in range(hgmma, dep) if "LDG.E.CONSTANT" in ops[i]]
    assert bool(loads) == (v.scale_lead == 1)
    ffma = lambda a, b: sum(o.split()[-1].startswith("FFMA") or " FFMA " in f" {o} " for o in ops[a:b])  # noqa: E731
    assert ffma(bar, bar + 200) > 4 * ffma(dep, bar)                     # the promotion mostly follows the release
