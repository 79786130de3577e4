"""l05_copy_race2.cu (the second copy race: register copies with cache operators, bulk copies with L2 policies, the
SM-occupying spinner) on the PTX emulator, and the plan of h100lab.measure.copy_race2 without a GPU."""
import numpy as np
import pytest

from h100lab import nvrtc

needs_nvrtc = pytest.mark.skipif(nvrtc.unavailable_reason() is not None, reason=f"{nvrtc.unavailable_reason()}")
TIMEOUT = np.int64(2_000_000_000)
REG = ["reg_copy_nc_cs_u1", "reg_copy_plain_wb_u1", "reg_copy_plain_wb_u2", "reg_copy_plain_wb_u16", "reg_copy_nc_cs_u8", "reg_copy_pf_wb_u8", "reg_copy_nc_cs_u2",
       "reg_copy_plain_cs_u4", "reg_copy_pf_cs_u16", "reg_copy_plain_cs_u8"]


@needs_nvrtc
@pytest.mark.parametrize("name", REG)
@pytest.mark.parametrize("part,grid,block,n16", [(0, 3, 64, 1000), (1, 3, 64, 1000), (1, 7, 32, 4096),
                                                  (0, 2, 128, 4096), (1, 40, 32, 1000), (0, 40, 32, 1000),
                                                  (0, 4, 32, 1000), (1, 4, 32, 1000)])
def test_reg_copy_copies_every_vector(name, part, grid, block, n16):
    """Every register copy copies exactly n16 vectors — whole rounds and the ragged tail, both partitions,
    more threads than rounds — and writes nothing past them."""
    from h100lab import emu
    k = emu.compile_kernel("l05_copy_race2").function(name)
    src = emu.to_device(np.arange(4 * n16, dtype=np.uint32))
    dst = emu.to_device(np.full(4 * n16 + 8, 0xFFFFFFFF, np.uint32))
    err = emu.zeros(1, np.uint32)
    emu.launch(k, grid, block, src, dst, np.int64(n16), np.int32(part), err)
    out = dst.to_host()
    assert int(err.to_host()[0]) == 0
    assert np.array_equal(out[:4 * n16], np.arange(4 * n16, dtype=np.uint32))
    assert (out[4 * n16:] == 0xFFFFFFFF).all()


@needs_nvrtc
def test_reg_copy_refuses_an_unknown_partition():
    from h100lab import emu
    k = emu.compile_kernel("l05_copy_race2").function("reg_copy_nc_cs_u8")
    src = emu.to_device(np.arange(256, dtype=np.uint32))
    dst = emu.zeros(256, np.uint32)
    err = emu.zeros(1, np.uint32)
    emu.launch(k, 1, 32, src, dst, np.int64(64), np.int32(2), err)
    assert int(err.to_host()[0]) == 2 and not dst.to_host().any()


@needs_nvrtc
@pytest.mark.parametrize("tile,stages,lag,pol_ld,pol_st,part,grid", [(2048, 2, 0, 1, 2, 0, 3), (1024, 4, 3, 2, 1, 1, 2),
                                                                     (4096, 3, 1, 3, 4, 0, 4), (8192, 1, 0, 4, 0, 1, 40),
                                                                     (1024, 3, 2, 0, 0, 0, 5), (4096, 1, 0, 2, 1, 0, 6)])
def test_bulk_copy_pol_copies_every_byte(tile, stages, lag, pol_ld, pol_st, part, grid):
    """bulk_copy_pol with every L2 policy on loads and stores, both partitions, more CTAs than tiles: the bytes
    arrive exactly, each byte crosses the TMA twice, no error bit."""
    from h100lab import emu
    k = emu.compile_kernel("l05_copy_race2").function("bulk_copy_pol")
    n = 64 * 1024
    src = emu.to_device(np.arange(n // 4, dtype=np.uint32))
    dst = emu.to_device(np.full(n // 4, 0xFFFFFFFF, np.uint32))
    err = emu.zeros(1, np.uint32)
    st = emu.launch(k, grid, 32, src, dst, np.int64(n), np.int32(tile), np.int32(stages), np.int32(lag),
                    np.int32(pol_ld), np.int32(pol_st), np.int32(part), TIMEOUT, err, shared_mem=1024 + stages * tile)
    assert int(err.to_host()[0]) == 0
    assert np.array_equal(dst.to_host(), np.arange(n // 4, dtype=np.uint32))
    assert st.tma_bytes == 2 * n


@needs_nvrtc
@pytest.mark.parametrize("bad", [dict(pol_ld=5), dict(pol_st=-1), dict(part=2), dict(lag=2, stages=2),
                                 dict(tile=1000)])
def test_bulk_copy_pol_refuses_bad_parameters(bad):
    from h100lab import emu
    c = dict(tile=1024, stages=2, lag=0, pol_ld=0, pol_st=0, part=0) | bad
    k = emu.compile_kernel("l05_copy_race2").function("bulk_copy_pol")
    src = emu.to_device(np.arange(1024, dtype=np.uint32))
    dst = emu.zeros(1024, np.uint32)
    err = emu.zeros(1, np.uint32)
    emu.launch(k, 1, 32, src, dst, np.int64(4096), np.int32(c["tile"]), np.int32(c["stages"]), np.int32(c["lag"]),
               np.int32(c["pol_ld"]), np.int32(c["pol_st"]), np.int32(c["part"]), TIMEOUT, err,
               shared_mem=1024 + 2 * 1024)
    assert int(err.to_host()[0]) == 2 and not dst.to_host().any()


@needs_nvrtc
def test_occupy_counts_its_blocks():
    from h100lab import emu
    k = emu.compile_kernel("l05_copy_race2").function("occupy")
    done = emu.zeros(1, np.uint32)
    emu.launch(k, 3, 64, np.int64(0), done)
    assert int(done.to_host()[0]) == 3


# ------------------------------------------------------------------------------------------------
# the plan on a fake GPU (the CudaBackend interface of test_timing_sweep on NumPy buffers)

def test_plan_a_names_every_form_once_and_keeps_u16_to_512_threads():
    from h100lab.measure import copy_race2 as cr
    plan = cr.plan_a()
    names = [p[0] for p in plan]
    assert len(names) == len(set(names))
    regs = [c for _, k, c in plan if k == "reg"]
    assert {c[0] for c in regs} == set(cr.REG_KERNELS) and {c[3] for c in regs} == {0, 1}
    assert all(c[2] <= 512 for c in regs if cr.reg_form(c[0])["unroll"] >= 16)
    big = {(c[0], c[1]) for c in regs if c[1] >= 31}
    assert big == {(k, b) for k in cr.REG_BIG_KERNELS for b, _ in cr.REG_BIG_SHAPES}
    pols = [c for _, k, c in plan if k == "bulk_pol"]
    assert {(c[4], c[5]) for c in pols} >= set(cr.POL_PAIRS) and all(0 <= c[3] < c[1] and c[3] <= 3 for c in pols)
    assert {(c[0], c[1], c[2], c[3]) for c in pols if c[6] == 1 and c[4] == c[5] == 0} == set(cr.POL_BIG_SHAPES)
    assert len(cr.plan_a(quick=True)) < len(plan) / 4
    assert cr.estimate_seconds() < 180
    hyb = [c for _, k, c in plan if k == "hybrid"]
    assert {c[0] for c in hyb} == set(cr.HYBRID_KERNELS)
    assert all(c[1] * cr.hybrid_smem(c[0], c[2]) <= 227 * 1024 for c in hyb)


def test_plan_2_sizes_grids_from_the_copy_and_keeps_the_policies_around_the_first_run_s_best():
    from h100lab.measure import copy_race2 as cr
    plan = cr.plan_2()
    names = [p[0] for p in plan]
    assert len(names) == len(set(names)) and cr.estimate_seconds(plan=2) < 180
    regs = [c for _, k, c in plan if k == "reg_grid"]
    assert {c[0] for c in regs} == set(cr.PLAN2_REG_KERNELS)
    assert all(c[3] % cr.reg_form(c[0])["unroll"] == 0 and c[1] in cr.PLAN2_THREADS for c in regs)
    assert all(c[1] <= 512 for c in regs if cr.reg_form(c[0])["unroll"] >= 16)
    pols = {c for _, k, c in plan if k == "bulk_pol"}
    assert all((t, s, p, l, 2, 1, 0) in pols for t, s, p, l in cr.PLAN2_POL_SHAPES)
    assert {k for _, k, _ in plan} == {"reg_grid", "bulk_pol", "hybrid"}
    with pytest.raises(ValueError, match="plan 5"):
        cr.Race2Runner(_fake_gpu(), plan=5)


def test_plan_3_times_bulk_copies_only_over_grids_with_a_tile_per_cta():
    from h100lab.measure import copy_race2 as cr
    plan = cr.plan_3()
    names = [p[0] for p in plan]
    assert len(names) == len(set(names)) and cr.estimate_seconds(plan=3) < 180
    assert {k for _, k, _ in plan} == {"bulk_pol"}
    for _, _, (tkb, st, per, lag, pl, ps, part) in plan:
        assert 132 * per <= (1 << 30) // (tkb * 1024)        # every CTA has a tile
        assert lag == st - 1 and part in (0, 1) and 1024 + st * tkb * 1024 <= 227 * 1024
    assert (16, 1, 256, 0, 2, 1, 1) in {c for _, _, c in plan}   # the first pass's lead, a shorter chunk
    assert set(cr.PLAN_DATASETS) == set(cr.PLANS)


def test_plan_4_sizes_grids_by_tiles_per_cta():
    from h100lab.measure import copy_race2 as cr
    plan = cr.plan_4()
    names = [p[0] for p in plan]
    assert len(names) == len(set(names)) and cr.estimate_seconds(plan=4) < 180
    assert {k for _, k, _ in plan} == {"bulk_pol"}
    for _, _, (tkb, st, per, lag, pl, ps, part) in plan:
        tiles = (1 << 30) // (tkb * 1024)
        tpc = -(-tiles // (132 * per))                      # tiles per CTA the grid gives
        assert 1 <= tpc <= max(cr.PLAN4_TILES_PER_CTA) and st <= max(tpc, 1) and st * tkb <= 192 and lag == st - 1
    assert (4, 2, 993, 1, 2, 1, 0) in {c for _, _, c in plan}     # 4 KiB tiles, two per CTA, plan 3's best pair


def test_reg_form_reads_the_entry_name_and_refuses_others():
    from h100lab.measure import copy_race2 as cr
    f = cr.reg_form("reg_copy_pf_cs_u16")
    assert (f["ld"], f["st"], f["unroll"]) == ("pf", "cs", 16) and "L2::256B" in f["ld_ptx"]
    for bad in ("reg_copy_xx_wb_u8", "copy_tune", "reg_copy_nc_cs_8"):
        with pytest.raises(ValueError, match="register copy"):
            cr.reg_form(bad)


def test_every_register_copy_is_an_entry_point():
    from h100lab import emu
    from h100lab.measure import copy_race2 as cr
    entries = set(emu.compile_kernel("l05_copy_race2").entry_points())
    assert set(cr.REG_KERNELS) | set(cr.PLAN2_REG_KERNELS) | {"bulk_copy_pol", "occupy"} <= entries


def _fake_gpu():
    import test_timing_sweep as tts            # tests/ is on sys.path (pytest's prepend import mode)

    class Fake(tts.FakeGpu):
        """FakeGpu with the kernels of l05_copy_race2.cu and the overlap phase; one kernel copies wrongly."""

        def _reg(self, grid, block, src, dst, n16, part, err):
            assert int(part) in (0, 1)
            n = int(n16) * 16
            self._bytes(dst)[:n] = self._bytes(src)[:n]

        def _k_bulk_copy_pol(self, grid, block, src, dst, total, tile, stages, lag, pl, ps, part, timeout, err):
            assert block == 32 and 0 <= int(lag) < int(stages) and int(total) % int(tile) == 0
            assert 0 <= int(pl) <= 4 and 0 <= int(ps) <= 4 and int(part) in (0, 1)
            self._bytes(dst)[:int(total)] = self._bytes(src)[:int(total)]

        def _hybrid(self, grid, block, src, dst, n16, *rest):
            n = int(n16) * 16
            self._bytes(dst)[:n] = self._bytes(src)[:n]

        def __getattr__(self, name):
            if name.startswith(("_k_lsu_tma_copy_", "_k_tma_lsu_copy_")):
                return self._hybrid
            if name.startswith("_k_reg_copy_"):
                if name == "_k_reg_copy_plain_wb_u2":          # a broken copy: the check must catch it
                    return lambda *a: None
                return self._reg
            raise AttributeError(name)

        def overlap(self, occupy, grid, block, args, job):
            assert occupy.name == "occupy" and block == 1024
            job("stream")
            return dict(alone_ms=0.5, with_occupy_ms=20.3, occupy_ms=20.0)

        def memcpy_on(self, stream, dst, src, n):
            self.memcpy_dtod(dst, src, n)

        def launch_on(self, stream, k, grid, block, *args, shared_mem=0):
            self.launch(k, grid, block, *args, shared_mem=shared_mem)

    return Fake()


@needs_nvrtc
def test_the_race_on_a_fake_gpu(tmp_path, monkeypatch):
    """The whole run on the fake: every kernel gets the arguments its PTX takes (FakeGpu checks sizes), the broken
    copy is caught and kept out of phase B, phase B has ROUNDS rounds with a memcpy each and ratios over it, the
    overlap phase records the memcpy as delayed, and best_of picks by median ratio."""
    from h100lab.measure import copy_race2 as cr
    from h100lab.measure.timing_sweep import Budget
    monkeypatch.setitem(cr.PLANS, 1, lambda quick=False: [
        ("plain_wb_u2 2×1024 interleaved", "reg", ("reg_copy_plain_wb_u2", 2, 1024, 0)),
        ("nc_cs_u8 2×1024 chunk", "reg", ("reg_copy_nc_cs_u8", 2, 1024, 1)),
        ("bulk_pol", "bulk_pol", (16, 2, 1, 1, 1, 2, 0)),
        ("tma_lsu_copy_u8 2×256", "hybrid", ("tma_lsu_copy_u8", 2, 256)),
        ("lsu_tma_copy_u4 4×256", "hybrid", ("lsu_tma_copy_u4", 4, 256)),
        ("nc_cs_u4 256 thr, 8 vec/thr, chunk", "reg_grid", ("reg_copy_nc_cs_u4", 256, 1, 8))])
    gpu = _fake_gpu()
    r = cr.Race2Runner(gpu, quick=True, budget=Budget(600), log=open(tmp_path / "log", "w"))
    recs = r.step_copyrace2()
    a = [x for x in recs if x["phase"] == "A" and x["kind"] != "memcpy"]
    assert [x["correct"] for x in a] == [False, True, True, True, True, True] and a[0]["bad_words"] > 0
    assert a[5]["grid"] == -(-(a[5]["bytes"] // 16) // (256 * 8)) and a[5]["block"] == 256
    assert a[3]["smem_bytes"] == cr.hybrid_smem("tma_lsu_copy_u8", 256) == 1024 + 8 * 2 * 8 * 512
    b = [x for x in recs if x["phase"] == "B"]
    assert sum(x["kind"] == "memcpy" for x in b) == cr.ROUNDS
    names_b = {x["name"] for x in b}
    assert "plain_wb_u2 2×1024 interleaved" not in names_b and "nc_cs_u8 2×1024 chunk" in names_b
    assert {n for n, _, _ in cr.REFERENCES} <= names_b
    assert all(x["correct"] for x in b) and all(x["ratio_round"] > 0 for x in b)
    ov = [x for x in recs if x["phase"] == "overlap"]
    assert len(ov) == 6 and all(x["delayed"] for x in ov)
    best = cr.best_of(recs)
    assert best["rounds"] == cr.ROUNDS and best["name"] in names_b and best["memcpy_gbps_median"] > 0
    table = cr.race_table(recs)
    assert table[0]["kind"] == "memcpy" and {x["variant"] for x in table[1:]} == names_b - {"cuMemcpyDtoDAsync"}
    assert [x["ratio (median of rounds)"] for x in table[1:]] == sorted([x["ratio (median of rounds)"]
                                                                        for x in table[1:]], reverse=True)
    summ = cr.race_summary(recs)
    assert summ["memcpy_needs_sms"] is True and summ["control_delayed"] is True
    assert summ["failed"] == ["plain_wb_u2 2×1024 interleaved"] and summ["variants_a"] == 6
    assert summ["memcpy_beside_ms"] == 20.3 and summ["best"]["name"] == best["name"]
    fig = cr.chapter_figures([recs, recs])
    assert fig["variants"] == 12 and fig["failed"] == 2 and fig["best"]["name"] == best["name"]
    assert fig["best"]["min"] <= fig["best"]["ratio_median"] <= fig["best"]["max"] and fig["memcpy_needs_sms"] is True
    assert fig["tma_best_name"] == "bulk_pol" and fig["tma_evict_first_ld"] == fig["tma_best"]
    rows = [dict(phase="B", kind="memcpy", name="m", gbps=10.0, correct=True)] + [
        dict(phase="B", kind="reg", name=n, gbps=g, ratio_round=g / 10, correct=True)
        for n, g in (("x", 9.0), ("x", 12.0), ("x", 9.5), ("y", 10.0), ("y", 10.1), ("y", 9.9))]
    assert cr.best_of(rows)["name"] == "y"


@needs_nvrtc
@pytest.mark.parametrize("name", ["lsu_tma_copy_u4", "lsu_tma_copy_u8", "tma_lsu_copy_u4", "tma_lsu_copy_u8"])
@pytest.mark.parametrize("grid,block,chunks", [(1, 32, 5), (2, 64, 9), (3, 64, 2), (2, 96, 24)])
def test_hybrid_copies_copy_every_chunk(name, grid, block, chunks):
    """LSU loads + bulk stores and bulk loads + LSU stores: every chunk copied exactly (fewer chunks than warps, one
    warp with many chunks, both buffers reused), nothing written past the copy, no error bit."""
    from h100lab import emu
    from h100lab.measure import copy_race2 as cr
    k = emu.compile_kernel("l05_copy_race2").function(name)
    u = int(name[-1])
    n16 = chunks * u * 32
    src = emu.to_device(np.arange(4 * n16, dtype=np.uint32))
    dst = emu.to_device(np.full(4 * n16 + 64, 0xFFFFFFFF, np.uint32))
    err = emu.zeros(1, np.uint32)
    smem = cr.hybrid_smem(name, block)
    args = (src, dst, np.int64(n16)) + ((TIMEOUT,) if name.startswith("tma") else ()) + (err,)
    emu.launch(k, grid, block, *args, shared_mem=smem)
    out = dst.to_host()
    assert int(err.to_host()[0]) == 0
    assert np.array_equal(out[:4 * n16], np.arange(4 * n16, dtype=np.uint32))
    assert (out[4 * n16:] == 0xFFFFFFFF).all()


@needs_nvrtc
@pytest.mark.parametrize("name", ["lsu_tma_copy_u4", "tma_lsu_copy_u8"])
def test_hybrid_copies_refuse_a_partial_chunk(name):
    from h100lab import emu
    from h100lab.measure import copy_race2 as cr
    k = emu.compile_kernel("l05_copy_race2").function(name)
    src = emu.to_device(np.arange(4096, dtype=np.uint32))
    dst = emu.zeros(4096, np.uint32)
    err = emu.zeros(1, np.uint32)
    args = (src, dst, np.int64(100)) + ((TIMEOUT,) if name.startswith("tma") else ()) + (err,)
    emu.launch(k, 1, 32, *args, shared_mem=cr.hybrid_smem(name, 32))
    assert int(err.to_host()[0]) == 2 and not dst.to_host().any()


@pytest.mark.parametrize("name", ["l05/copy_race2", "l05/copy_race2_b", "l05/copy_race2_c", "l05/copy_race2_d"])
def test_committed_race_is_complete_and_checked(name):
    """The committed H200 runs: metadata of a real run, every copy checked word by word and correct, five phase-B
    rounds each with its own memcpy, the ratios those rounds' own, and the overlap phase's control delayed."""
    from h100lab import data
    from h100lab.measure import copy_race2 as cr
    if not data.available(name):
        pytest.skip(f"{name} is not committed")
    ds = data.load(name)
    assert ds.meta["gpu"].startswith("NVIDIA H") and ds.meta["complete"] and "copy_race2" in ds.meta["command"]
    recs = ds.records
    assert all(r["correct"] for r in recs)
    assert all(r.get("bad_words", 0) == 0 and r.get("error_bits", 0) == 0 for r in recs)
    b = [r for r in recs if r["phase"] == "B"]
    mem = {r["round"]: r["gbps"] for r in b if r["kind"] == "memcpy"}
    assert sorted(mem) == list(range(cr.ROUNDS))
    for r in b:
        assert r["ratio_round"] == pytest.approx(r["gbps"] / mem[r["round"]])
    s = cr.race_summary(recs)
    if s["control_delayed"] is not None:
        assert s["control_delayed"] is True
    assert s["best"]["rounds"] == cr.ROUNDS


def test_the_copy_goal_check_is_registered_and_passes_on_the_committed_run():
    from h100lab import data
    from h100lab.measure import copy_race2 as cr
    from h100lab.validation import _CHECKS, micro
    for title, copy in ((micro.COPY_GOAL_TITLE, cr.BOOK_COPY), (micro.REGISTER_COPY_TITLE, cr.REGISTER_COPY)):
        (c,) = [c for c in _CHECKS if c.title == title]
        if not data.available(c.dataset):
            pytest.skip(f"{c.dataset} is not committed")
        ds = data.load(c.dataset)
        res = c.run(ds)
        assert res.ok and res.cases == cr.ROUNDS, res.note
        # the check fails when a round falls below the memcpy, or a copy was wrong
        recs = [dict(r) for r in ds.records]
        rows = cr.book_copy_rounds(recs, copy)
        rows[0]["ratio_round"] = 0.999
        rows[1]["correct"] = False
        assert c.run(data.Dataset(ds.name, ds.meta, recs)).mismatches == 2
    # the book's copy kernel is a TMA copy (issue 13), and its check reads the run that measured it
    assert cr.BOOK_COPY[0] == "bulk_pol" and [c for c in _CHECKS if c.title == micro.COPY_GOAL_TITLE][0].dataset == \
        cr.BOOK_COPY_DATASET
