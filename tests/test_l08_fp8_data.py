"""Golden tests on the H200 run of the capstone's FP8 form (data/l08/gemm_bench_fp8.json, benchmarks/bench_gemm.py
--fp8): its output equalled the tensor-core model (h100lab.design.capstone.reference_fp8) bit for bit wherever the
run compared them, it was accurate against the f32 product of its dequantised inputs at every shape, and every
FP8 variant was timed at every shape next to cuBLAS FP8 and cuBLAS bf16 of the same run."""
import json
from pathlib import Path

import pytest

from h100lab.design import capstone as cap

_P = Path(__file__).parent.parent / "data" / "l08" / "gemm_bench_fp8.json"


@pytest.fixture(scope="module")
def run():
    if not _P.exists():
        pytest.skip("data/l08/gemm_bench_fp8.json is not committed (silicon measurement pending)")
    obj = json.loads(_P.read_text())
    return obj["meta"], obj["records"]


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
