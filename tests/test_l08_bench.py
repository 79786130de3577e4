"""benchmarks/bench_gemm.py on a fake GPU: the book's kernel runs on the emulator (tiny shapes), "cuBLAS" in NumPy,
the clock is fake — so the checks, the timing records, failures recorded per variant and the dataset written
with its metadata are exercised end to end without a GPU."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from h100lab import data, emu
from h100lab.design import capstone as cap

pytestmark = pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")

_spec = importlib.util.spec_from_file_location("bench_gemm", Path(__file__).parent.parent / "benchmarks" / "bench_gemm.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _f32(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


class FakeBackend:
    """TorchCuda's methods on NumPy bf16 bit arrays; our kernel through h100lab.emu."""

    def __init__(self, fail=()):
        self.fail = set(fail)
        self.launches = []

    def metadata(self, command):
        return {"gpu": "Fake H200", "compute_capability": "9.0", "driver": "0", "cuda": "0", "date": "2000-01-01",
                "command": command}

    def sm_count(self):
        return 2

    def inputs(self, M, N, K, seed):
        rng = np.random.default_rng(seed)
        return tuple(cap.bf16_round(rng.standard_normal(s).astype(np.float32)) for s in ((M, K), (N, K), (M, N)))

    def empty_like(self, C):
        return np.full_like(C, 0x7FC0)

    def copy(self, dst, src):
        dst[...] = src

    def ours(self, variant, A, B, C, M, N, K, alpha=1.0, beta=0.0, group=8, raster=0, sms=132):
        if variant in self.fail:
            raise RuntimeError(f"planted failure of {variant}")
        v = cap.VARIANTS[variant]
        k = emu.compile_kernel("l08_gemm", options=v.options).function("gemm_bf16")

        def run():
            dC, dA, dB = emu.to_device(C), emu.to_device(A), emu.to_device(B)
            maps = cap.tensor_maps(emu, v, dA, dB, M, N, K)
            if v.tma_store:                    # as TorchCuda.ours: C's map made once, passed in
                maps = (*maps, cap.c_map(emu, v, dC, M, N, beta))
            cap.launch(emu, k, v, dA, dB, dC, M, N, K, alpha=alpha, beta=beta, sms=sms, group=group, raster=raster,
                       maps=maps)
            C[...] = dC.to_host()
            self.launches.append((variant, M, N, K, group, raster))
        return run

    def cublas(self, A, B, C, alpha=1.0, beta=0.0):
        def run():
            r = alpha * (_f32(A).astype(np.float64) @ _f32(B).astype(np.float64).T)
            if beta != 0:                      # BLAS: C is not read when beta = 0
                r = r + beta * _f32(C)
            C[...] = cap.bf16_round(r.astype(np.float32))
        return run

    def sync(self):
        pass

    def time(self, fn, warmup, repeats):
        fn()                                   # once: the emulator is slow and the clock is fake
        return [1.0 + 0.01 * i for i in range(repeats)]

    def reference(self, A, B, C, alpha, beta):
        r = alpha * (_f32(A).astype(np.float64) @ _f32(B).astype(np.float64).T)
        return r + beta * _f32(C) if beta != 0 else r

    def errors(self, got, want, ref):
        g, w, r = _f32(got), _f32(want), np.asarray(ref, np.float64) if np.asarray(ref).dtype != np.uint16 else _f32(ref)
        return {"ours_max_abs": float(np.abs(g - r).max()), "cublas_max_abs": float(np.abs(w - r).max()),
                "ours_rel_fro": float(np.linalg.norm(g - r) / np.linalg.norm(r)),
                "cublas_rel_fro": float(np.linalg.norm(w - r) / np.linalg.norm(r)),
                "ours_vs_cublas_max_abs": float(np.abs(g - w).max()), "ref_max_abs": float(np.abs(r).max()),
                "nonfinite": int((~np.isfinite(g)).sum())}


def test_bench_on_a_fake_gpu(tmp_path):
    be = FakeBackend(fail={"pingpong"})
    logs = []
    out = bench.main(["--out", str(tmp_path), "--repeats", "20", "--variants",
                      "cooperative,cooperative_n128_inflight,pingpong,cooperative_inflight_tmastore,cooperative_inflight_cluster2"],
                     backend=be, shapes=[(128, 256, 64)], checks=[(200, 136, 72, 0.5, -1.0)], log=logs.append)
    import json
    p = Path(out["path"])
    assert p.parent.parent == tmp_path and p.name.startswith("gemm_bench")
    obj = json.loads(p.read_text())
    recs = obj["records"]
    assert obj["meta"]["command"].startswith("PYTHONPATH=. python3 benchmarks/bench_gemm.py")
    assert obj["meta"]["kernel"].endswith("l08_gemm.cu")
    assert obj["meta"]["complete"] is True and obj["meta"]["variants"][0] == "cooperative"
    checks = [r for r in recs if r["kind"] == "check"]
    assert [(r["variant"], r["ok"]) for r in checks] == [("cooperative", True), ("cooperative_n128_inflight", True),
                                                          ("pingpong", False),
                                                          ("cooperative_inflight_tmastore", True),
                                                          ("cooperative_inflight_cluster2", True)]
    assert "planted failure" in checks[2]["error"]
    times = {r["variant"]: r for r in recs if r["kind"] == "time"}
    assert set(times) == {"cublas", "cooperative", "cooperative_n128_inflight", "pingpong",
                          "cooperative_inflight_tmastore", "cooperative_inflight_cluster2"}
    assert times["cooperative_inflight_cluster2"]["ok"] and times["cooperative_inflight_cluster2"]["grid"] == 2
    assert times["cooperative_inflight_tmastore"]["ok"]
    n128 = times["cooperative_n128_inflight"]
    assert n128["ok"] and n128["tiles"] == 2 and n128["bn"] == 128 and n128["grid"] == 2
    (pick,) = [r for r in recs if r["kind"] == "pick"]
    assert pick["best"] in ("cooperative", "cooperative_n128_inflight") and pick["model_pick"] in cap.VARIANTS
    coop = times["cooperative"]
    assert coop["ok"], coop
    assert coop["tiles"] == 1 and coop["grid"] == 1 and coop["waves"] == 1
    assert coop["median_ms"] == pytest.approx(1.095) and coop["ratio_cublas"] == pytest.approx(1.0)
    assert len(coop["samples_ms"]) == 20 and coop["tflops"] == pytest.approx(2 * 128 * 256 * 64 / 1.095 / 1e9)
    assert not times["pingpong"]["ok"] and out["failed"] == 2
    assert ("cooperative", 200, 136, 72, 8, 0) in be.launches
    assert ("cooperative_n128_inflight", 200, 136, 72, 8, 0) in be.launches
    assert any("FAILED" in line for line in logs)


def test_pass_rule():
    e = {"cublas_max_abs": 0.5, "ref_max_abs": 256.0, "ours_max_abs": 1.9, "ours_rel_fro": 0.003,
         "cublas_rel_fro": 0.002, "nonfinite": 0}
    assert bench._passes(e)
    assert not bench._passes(dict(e, ours_max_abs=2.1))
    assert not bench._passes(dict(e, nonfinite=1))


def test_default_variants_are_known():
    assert set(bench.VARIANTS) <= set(cap.VARIANTS) and "cooperative" in bench.VARIANTS


def test_dataset_name_option(tmp_path):
    out = bench.main(["--out", str(tmp_path), "--variants", "cooperative", "--name", "l08/gemm_bench_x"],
                     backend=FakeBackend(), shapes=[], checks=[])
    assert Path(out["path"]).name.startswith("gemm_bench_x") and out["failed"] == 0


def test_unknown_variant_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        bench.main(["--out", str(tmp_path), "--variants", "nope"], backend=FakeBackend(), shapes=[], checks=[])


_DATA = Path(__file__).parent.parent / "data" / "l08"


def _records(name):
    import json
    p = _DATA / f"{name}.json"
    if not p.exists():
        pytest.skip(f"data/l08/{name}.json is not committed (silicon measurement pending)")
    obj = json.loads(p.read_text())
    return obj["meta"], obj["records"]


@pytest.mark.parametrize("name", ["gemm_bench", "gemm_bench_tmastore"])
def test_silicon_runs_are_correct_and_complete(name):
    meta, recs = _records(name)
    assert meta["gpu"].startswith("NVIDIA H") and meta.get("complete", True)
    checks = [r for r in recs if r["kind"] == "check"]
    assert checks and all(r["ok"] for r in checks)
    assert all(r["ok"] for r in recs if r["kind"] == "time")


def test_silicon_default_and_tile_choice():
    """The default variant and the tile pair capstone.tile_choice picks from are the ones the H200 data favours:
    the default reaches the issue's 95 % of cuBLAS at 8192^3 and is the fastest measured in its run at every shape
    but the two-wave one, where the wave model's pick (the 128 x 128 form) is the fastest."""
    meta, recs = _records("gemm_bench_tmastore")
    times = [r for r in recs if r["kind"] == "time" and r.get("group", 8) == 8 and r.get("raster", 0) == 0]
    by = {(r["variant"], r["M"], r["N"], r["K"]): r for r in times}
    assert by[(cap.DEFAULT, 8192, 8192, 8192)]["ratio_cublas"] >= 0.95
    for M, N, K in sorted({(r["M"], r["N"], r["K"]) for r in times}):
        ours = [r for r in times if (r["M"], r["N"], r["K"]) == (M, N, K) and r["variant"] != "cublas"]
        fastest = min(ours, key=lambda r: r["median_ms"])["variant"]
        pick = cap.tile_choice(M, N, int(meta["sm_count"]))
        assert pick == fastest, (M, N, K, pick, fastest)
