"""benchmarks/bench_gemm_orders.py on a fake GPU (tests/test_l08_bench.py's: the capstone on the emulator at tiny
shapes, "cuBLAS" in NumPy, a fake clock): every order's record, its grid and bookkeeping, a planted failure
recorded while the run goes on, and the dataset written with its metadata."""
import importlib.util
import json
from pathlib import Path

import pytest

from h100lab import emu

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")


def _module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_runs_of_lists_every_order_and_the_pairs_at_the_square_shapes():
    bench = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")
    runs = bench.runs_of((8192, 8192, 8192))
    assert len(runs) == len(bench.VARIANTS) * len(bench.ORDERS) + len(bench.PAIR_ORDERS) + 4
    assert ("pingpong", "persistent", 1, 0, None) in runs and ("cooperative_n128", "persistent", 16, 1, None) in runs
    assert ("pingpong", "pairs", 1, 0, None) in runs and ("pingpong", "persistent", 1, 0, 66) in runs
    assert not any(s == "pairs" or n for _, s, _, _, n in bench.runs_of((1280, 3840, 8192)))
    assert len(set(runs)) == len(runs)


def test_orders_bench_on_a_fake_gpu(tmp_path):
    bench = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")
    fake = _module("fake_l08_bench", HERE / "test_l08_bench.py")
    be = fake.FakeBackend(fail={"cooperative"})
    be.sm_count = lambda: 2
    logs = []
    out = bench.main(["--out", str(tmp_path), "--variants", "pingpong,cooperative"], backend=be,
                     shapes=[(128, 512, 64)], orders=((1, 0), (2, 1)), pair_orders=((1, 0),),
                     pair_shapes=[(128, 512, 64)], grid_runs=(((128, 512, 64), "pingpong", ((1, 0),), (1,)),),
                     log=logs.append)
    obj = json.loads(Path(out["path"]).read_text())
    meta, recs = obj["meta"], obj["records"]
    assert Path(out["path"]).name.startswith("gemm_orders") and meta["complete"] is True
    assert meta["command"].startswith("PYTHONPATH=. python3 benchmarks/bench_gemm_orders.py")
    assert meta["orders"] == [[1, 0], [2, 1]] and meta["variants"] == ["pingpong", "cooperative"]
    assert all(r["kind"] == "orders" for r in recs)
    got = [(r["variant"], r.get("schedule"), r.get("group"), r.get("raster"), r.get("grid"), r["ok"]) for r in recs]
    # ping-pong 64 x 256 tiles: 2 x 2 = 4 tiles on 2 CTAs (persistent) or 2 (pairs); cooperative 128 x 256: 2 tiles
    assert got == [("cublas", None, None, None, None, True),
                   ("pingpong", "persistent", 1, 0, 2, True), ("pingpong", "persistent", 2, 1, 2, True),
                   ("cooperative", "persistent", 1, 0, 2, False), ("cooperative", "persistent", 2, 1, 2, False),
                   ("pingpong", "pairs", 1, 0, 2, True), ("pingpong", "persistent", 1, 0, 1, True)]
    pp = recs[1]
    assert pp["tiles"] == 4 and pp["waves"] == 2 and (pp["bm"], pp["bn"]) == (64, 256)
    assert pp["ratio_cublas"] == pytest.approx(1.0) and len(pp["samples_ms"]) == 20
    assert "planted failure" in recs[3]["error"] and out["failed"] == 2
    assert ("pingpong", 128, 512, 64, 2, 1) in be.launches and recs[-1]["waves"] == 4


def test_pairs_flag_runs_the_pairs_schedule_at_every_shape_swept(tmp_path):
    bench = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")
    fake = _module("fake_l08_bench", HERE / "test_l08_bench.py")
    be = fake.FakeBackend()
    be.sm_count = lambda: 2
    out = bench.main(["--out", str(tmp_path), "--variants", "pingpong", "--pairs", "--shapes", "128x512x64",
                      "--name", "l08/gemm_orders_delivery"], backend=be, orders=((1, 0),), grid_runs=(),
                     log=lambda *a: None)
    recs = json.loads(Path(out["path"]).read_text())["records"]
    assert Path(out["path"]).name.startswith("gemm_orders_delivery") and out["failed"] == 0
    got = [(r.get("schedule"), r.get("group"), r.get("raster")) for r in recs if r["variant"] == "pingpong"]
    assert got == [("persistent", 1, 0)] + [("pairs", g, r) for g, r in bench.PAIR_ORDERS]


class _EmuSkew:
    """bench_gemm_orders' SkewCuda on the emulator (the traced capstone, -DTRACE=1)."""

    def metadata(self, command):
        return {"gpu": "Fake H200", "compute_capability": "9.0", "driver": "0", "cuda": "0", "date": "2000-01-01",
                "command": command}

    def sm_count(self):
        return 4

    def traced(self, variant, M, N, K, grid, group, raster, cap_n, n, seed):
        import numpy as np

        from h100lab.design import capstone as cap

        tg = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")._trace_module()
        v = cap.variant(variant)
        k = emu.compile_kernel("l08_gemm", options=tg.traced_options(v)).function(v.entry)
        k.set_max_dynamic_shared_memory(v.smem_bytes)
        rng = np.random.default_rng(seed)
        A, B = (emu.to_device(cap.bf16_round(rng.standard_normal(s).astype(np.float32))) for s in ((M, K), (N, K)))
        C = emu.to_device(np.zeros((M, N), np.uint16))
        buf = emu.to_device(np.zeros(n, np.uint64))
        self.keep = (A, B, C, buf)                      # device arrays live while the launch may run
        args = tg.launch_args(v, cap.tensor_maps(emu, v, A, B, M, N, K), C, M, N, K, trace=buf, cap_n=cap_n,
                              group=group, raster=raster)
        return (lambda: emu.launch(k, grid, cap.THREADS, *args, shared_mem=v.smem_bytes)), buf

    def zero(self, buf):
        import numpy as np

        buf.copy_from_host(np.zeros(buf.shape, np.uint64))

    def host(self, buf):
        import numpy as np

        return buf.to_host().view(np.uint64)


def test_skew_mode_on_the_emulator(tmp_path):
    """--skew: the traced capstone (-DTRACE=1) on the emulator standing in for the GPU — CTA 0's and CTA grid / 2's
    starts and tile starts read back; the records carry the start skew and the per-tile drift."""
    bench = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")
    logs = []
    out = bench.main(["--out", str(tmp_path), "--skew"], backend=_EmuSkew(), log=logs.append,
                     skew_runs=(((128, 1024, 128), 2, 1, 0), ((128, 1024, 128), 4, 8, 0)))
    obj = json.loads(Path(out["path"]).read_text())
    assert Path(out["path"]).name.startswith("gemm_skew") and obj["meta"]["complete"] is True
    recs = obj["records"]
    assert [r["kind"] for r in recs] == ["skew", "skew"] and all(r["ok"] for r in recs), recs
    two, four = recs
    assert [c["cta"] for c in two["ctas"]] == [0, 1] and [c["cta"] for c in four["ctas"]] == [0, 2]
    # 128 x 1024 = 4 tiles of 128 x 256: two per CTA on 2 CTAs, one per CTA on 4
    assert len(two["ctas"][0]["tile_start_ns"]) == 2 and len(four["ctas"][1]["tile_start_ns"]) == 1
    assert len(two["tile_drift_ns"]) == 2 and "start_skew_ns" in two
    assert two["ctas"][0]["start_ns"][0] == 0 and two["ctas"][0]["end_ns"] >= 0


def test_l2_mode_without_ncu_records_why(tmp_path, monkeypatch):
    """--l2 where ncu is missing (and no GPU): every run's 'l2' record says why, the timed ones and the placement
    probe fail on their own, and the dataset is still written with the metric list."""
    import h100lab.measure.l01 as l01

    bench = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")
    fake = _module("fake_l08_bench", HERE / "test_l08_bench.py")
    be = fake.FakeBackend()
    be.sm_count = lambda: 132
    monkeypatch.setattr(l01, "find_ncu", lambda: None)
    monkeypatch.setattr(bench, "L2_RUNS", bench.L2_RUNS[:2])
    out = bench.main(["--l2", "--out", str(tmp_path), "--l2-timeout", "120"], backend=be, log=lambda *a: None)
    obj = json.loads(Path(out["path"]).read_text())
    assert Path(out["path"]).name.startswith("gemm_l2_traffic") and obj["meta"]["metrics"]
    kinds = [r["kind"] for r in obj["records"]]
    assert kinds == ["l2", "l2", "l2time", "l2time", "placement"]
    assert all(not r["ok"] for r in obj["records"]) and "ncu" in obj["records"][0]["error"]


def test_l2_runs_are_persistent_grids_of_the_sms():
    bench = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")
    grids = [bench.l2_grid(r, 132) for r in bench.L2_RUNS]
    assert len(set(map(tuple, (r[:5] + (r[5],) for r in bench.L2_RUNS)))) == len(bench.L2_RUNS)
    assert all(g == (132, 132) for (r, g) in zip(bench.L2_RUNS, grids) if r[2] == "persistent" and r[5] is None)
    assert (2048, 2048) in grids and (66, 66) in grids          # pairs at 8192³: 4096 tiles / 2; the 66-CTA grid


FAKE_NCU = r'''#!/usr/bin/env python3
import json, sys
a = sys.argv
if "--version" in a:
    print("Version 0.0 (fake)")
    sys.exit(0)
plan = json.load(open(a[a.index("--l2-child") + 1]))
runs, n = plan["runs"], plan.get("launches", 1)
json.dump([{"index": i, "ok": True, "grid": 132} for i in range(len(runs))], open(a[a.index("--l2-result") + 1], "w"))
print("==PROF== Connected")
print('"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"')
for i in range(len(runs) * n):
    for m, v in (("dram__bytes_read.sum", f"{1000 + i:,}"), ("gpu__time_duration.sum", "3,500,000")):
        print(f'"{i}","gemm_bf16","Command line profiler metrics","{m}","byte","{v}"')
'''


def test_l2_mode_maps_each_launch_of_a_run_to_its_record(tmp_path, monkeypatch):
    """--l2 --l2-set bistable --l2-launches 3 with a stand-in ncu: launch j of run i is ncu's launch 3i + j."""
    import os
    import h100lab.measure.l01 as l01

    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU)
    os.chmod(ncu, 0o755)
    bench = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")
    fake = _module("fake_l08_bench", HERE / "test_l08_bench.py")
    be = fake.FakeBackend()
    be.sm_count = lambda: 132
    monkeypatch.setattr(l01, "find_ncu", lambda: str(ncu))
    out = bench.main(["--l2", "--l2-set", "bistable", "--l2-launches", "3", "--name", "l08/gemm_l2_bistable",
                      "--out", str(tmp_path), "--l2-time-timeout", "60"], backend=be, log=lambda *a: None)
    obj = json.loads(Path(out["path"]).read_text())
    assert obj["meta"]["l2_set"] == "bistable" and obj["meta"]["launches_per_run"] == 3
    l2 = [r for r in obj["records"] if r["kind"] == "l2"]
    assert [(r["M"], r["N"], r["group"], r["raster"]) for r in l2] == [
        (s[0], s[1], g, r) for s, _, _, g, r, _ in bench.L2_RUN_SETS["bistable"]]
    assert all(r["ok"] for r in l2)
    assert [[m["dram__bytes_read.sum"] for m in r["launch_metrics"]] for r in l2[:2]] == [[1000, 1001, 1002],
                                                                                           [1003, 1004, 1005]]


def test_shapes_option_sweeps_the_given_depths(tmp_path):
    """--shapes (the drift law's fresh depths, --name l08/gemm_orders_k): the shapes given, in order, and nothing
    else; a malformed list is refused."""
    bench = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")
    fake = _module("fake_l08_bench", HERE / "test_l08_bench.py")
    be = fake.FakeBackend(fail=set())
    be.sm_count = lambda: 2
    out = bench.main(["--out", str(tmp_path), "--variants", "pingpong", "--shapes", "128x512x64,64x256x128",
                      "--name", "l08/gemm_orders_k"], backend=be, orders=((1, 0),), log=lambda *a: None)
    obj = json.loads(Path(out["path"]).read_text())
    assert Path(out["path"]).name == "gemm_orders_k.json" and "--shapes 128x512x64,64x256x128" in obj["meta"]["command"]
    shapes = list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in obj["records"]))
    assert shapes == [(128, 512, 64), (64, 256, 128)] and out["failed"] == 0
    for bad in ("128x512", "axbxc", "128x0x64"):
        with pytest.raises(SystemExit):
            bench.main(["--out", str(tmp_path), "--shapes", bad], backend=be, log=lambda *a: None)


def test_skew_mode_traces_the_pingpong_by_its_producer(tmp_path):
    """--skew --skew-variant pingpong: the ping-pong's consumers each run every other tile, so the drift comes from
    the producer's TMA issue of each tile's first k-block."""
    bench = _module("bench_gemm_orders", HERE.parent / "benchmarks" / "bench_gemm_orders.py")
    out = bench.main(["--out", str(tmp_path), "--skew", "--skew-variant", "pingpong", "--name", "l08/gemm_skew_pp"],
                     backend=_EmuSkew(), log=lambda *a: None, skew_runs=(((128, 1024, 128), 2, 1, 0),))
    rec = json.loads(Path(out["path"]).read_text())["records"][0]
    assert rec["ok"] and rec["variant"] == "pingpong", rec
    # 128 x 1024 = 8 tiles of 64 x 256 on 2 CTAs: four each, the producer stamps all four
    assert [len(c["producer_tile_ns"]) for c in rec["ctas"]] == [4, 4] and len(rec["tile_drift_ns"]) == 4
    assert all(b > a for c in rec["ctas"] for a, b in zip(c["producer_tile_ns"], c["producer_tile_ns"][1:]))
    assert bench.SKEW_RUNS_PINGPONG and all(g in (1, 8) for _, _, g, _ in bench.SKEW_RUNS_PINGPONG)
