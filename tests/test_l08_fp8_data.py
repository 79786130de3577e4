"""Golden tests on the H200 run of the capstone's FP8 form (data/l08/gemm_bench_fp8.json, benchmarks/bench_gemm.py
--fp8): its output equalled the tensor-core model (h100lab.design.capstone.reference_fp8) bit for bit wherever the
run compared them, it was accurate against the f32 product of its dequantised inputs at every shape, and every
FP8 variant was timed at every shape next to cuBLAS FP8 and cuBLAS bf16 of the same run."""
import json
from pathlib import Path

import pytest

from h100lab.design import capstone as cap

_DATA = Path(__file__).parent.parent / "data" / "l08"


def _load(name):
    p = _DATA / f"{name}.json"
    if not p.exists():
        pytest.skip(f"data/l08/{name}.json is not committed (silicon measurement pending)")
    obj = json.loads(p.read_text())
    return obj["meta"], obj["records"]


@pytest.fixture(scope="module", params=["gemm_bench_fp8", "gemm_bench_fp8_stagger"])
def run(request):
    return _load(request.param)


def test_metadata(run):
    meta, _ = run
    assert meta["gpu"].startswith("NVIDIA H") and meta["complete"] and meta["mode"] == "fp8"
    assert set(meta["variants"]) <= set(cap.FP8_VARIANTS)
    assert "--fp8" in meta["command"]


def test_bit_exact_with_the_model(run):
    """Every comparison with the model (small square and ragged shapes, one with bias + ReLU; a sample of the
    largest-K output) found 0 mismatching bf16 outputs."""
    _, recs = run
    model = [r for r in recs if r["kind"] == "fp8_model"]
    assert model and all(r["ok"] and r["model_mismatches"] == 0 for r in model), model
    assert any(r["bias"] and r["relu"] for r in model)
    assert all(r["outputs"] == r["M"] * r["N"] for r in model)            # the whole output compared
    sampled = [r for r in recs if r["kind"] == "fp8_time" and "model_mismatches" in r]
    assert sampled and all(r["model_mismatches"] == 0 for r in sampled)


def test_accurate_and_every_variant_timed(run):
    meta, recs = run
    ours = [r for r in recs if r["kind"] in ("fp8_check", "fp8_time") and r["variant"] in cap.FP8_VARIANTS]
    assert ours and all(r["ok"] and r["nonfinite"] == 0 for r in ours)
    # the error against the exact product of the dequantised inputs: the bf16 output's rounding, not the
    # accumulation (2^-8 = one bf16 ulp, relative)
    assert all(r["rel_fro_vs_deq"] < 2.0 ** -8 for r in ours)
    timed = {(r["variant"], r["M"], r["N"], r["K"]) for r in recs if r["kind"] == "fp8_time" and "median_ms" in r}
    shapes = {(r["M"], r["N"], r["K"]) for r in recs if r["kind"] == "fp8_time"}
    for v in meta["variants"]:
        assert {(v, *s) for s in shapes} <= timed
    for s in shapes:
        assert ("cublas_bf16", *s) in timed and ("cublas_fp8_tensor", *s) in timed


def test_ratios_are_consistent(run):
    """Each ratio recorded is the cuBLAS time of the same shape over ours (the medians of the same run)."""
    _, recs = run
    for r in recs:
        if r["kind"] == "fp8_time" and r["variant"] in cap.FP8_VARIANTS:
            assert r["ratio_cublas_bf16"] == pytest.approx(r["cublas_bf16_ms"] / r["median_ms"])
            mode = r["ratio_cublas_fp8_mode"]
            assert r["ratio_cublas_fp8"] == pytest.approx(r["cublas_fp8_ms"][mode] / r["median_ms"])
            assert r["tflops"] == pytest.approx(cap.flops(r["M"], r["N"], r["K"]) / r["median_ms"] / 1e9)


def test_fp8_default_is_among_the_fastest():
    """capstone.FP8_DEFAULT was timed at every shape of the second run and is within 3 % of the fastest FP8 form
    without clusters at each; every FP8 form was slower than cuBLAS FP8 with per-tensor scales there (the ratio
    recorded per record, < 1)."""
    meta, recs = _load("gemm_bench_fp8_stagger")
    times = [r for r in recs if r["kind"] == "fp8_time" and r["variant"] in cap.FP8_VARIANTS]
    for M, N, K in sorted({(r["M"], r["N"], r["K"]) for r in times}):
        here = [r for r in times if (r["M"], r["N"], r["K"]) == (M, N, K)]
        (d,) = [r for r in here if r["variant"] == cap.FP8_DEFAULT]
        best = min(r["median_ms"] for r in here if cap.FP8_VARIANTS[r["variant"]].cluster == 1)
        assert d["median_ms"] <= 1.03 * best, (M, N, K)
        assert all(r["cublas_fp8_ms"]["tensor"] < r["median_ms"] for r in here)


def test_cluster_pairs_without_the_cluster_fence():
    """data/l08/gemm_bench_cluster2_ctascope: the remote empty arrive without .release.cluster made the bf16 cluster
    pair faster than the same pair with it at every shape, and the FP8 pair likewise
    (gemm_bench_fp8_stagger); the bf16 default stays within 1 % of the fastest bf16 form at every shape."""
    meta, recs = _load("gemm_bench_cluster2_ctascope")
    times = [r for r in recs if r["kind"] == "time" and r["variant"] != "cublas"]
    assert all(r["ok"] for r in recs if r["kind"] in ("time", "check"))
    for M, N, K in sorted({(r["M"], r["N"], r["K"]) for r in times}):
        by = {r["variant"]: r["median_ms"] for r in times if (r["M"], r["N"], r["K"]) == (M, N, K)}
        assert by["cooperative_inflight_tmastore_cluster2_ctascope"] < by["cooperative_inflight_tmastore_cluster2"]
        assert by[cap.DEFAULT] <= 1.01 * min(by.values())
    _, f8 = _load("gemm_bench_fp8_stagger")
    f8 = [r for r in f8 if r["kind"] == "fp8_time"]
    for M, N, K in sorted({(r["M"], r["N"], r["K"]) for r in f8}):
        by = {r["variant"]: r["median_ms"] for r in f8 if (r["M"], r["N"], r["K"]) == (M, N, K)}
        assert by["fp8_cooperative_staggered_tmastore_cluster2_ctascope"] < by["fp8_cooperative_tmastore_cluster2"]


def test_cluster_waves_with_odd_tile_rows():
    """The wave count of a cluster pair counts pairs: 1408 x 3072 is one wave of 128 x 256 tiles on 132 SMs, but its
    11 tile rows make 6 pair rows, more pairs than 66 clusters hold."""
    v1, v2 = cap.VARIANTS[cap.DEFAULT], cap.VARIANTS["cooperative_inflight_tmastore_cluster2_ctascope"]
    assert cap.waves(v1, 1408, 3072, 132) == 1 and cap.waves(v2, 1408, 3072, 132) == 2
    assert cap.waves(v2, 1280, 3840, 132) == cap.waves(v1, 1280, 3840, 132) == 2
