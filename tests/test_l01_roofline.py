"""Rooflines: peaks, ridge points, attainable throughput."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from h100lab import roofline as rl
from h100lab.specs import ALL, H100_PCIE, H100_SXM, H200_SXM


def test_ridge_points():
    assert rl.ridge_point(H100_SXM, "bf16") == pytest.approx(989.4e12 / 3.352e12)
    assert rl.ridge_point(H100_SXM, "fp8") == pytest.approx(2 * rl.ridge_point(H100_SXM, "bf16"), rel=1e-3)
    # the H200 has the same compute and more bandwidth: its ridge sits lower
    assert rl.ridge_point(H200_SXM, "bf16") < rl.ridge_point(H100_SXM, "bf16")
    assert rl.ridge_point(H200_SXM, "fp8") == pytest.approx(1978.9e12 / 4.8e12, rel=1e-3)
    assert rl.ridge_point(H100_SXM, "fp8", sparse=True) == pytest.approx(2 * rl.ridge_point(H100_SXM, "fp8"), rel=1e-3)


def test_peaks_and_errors():
    assert rl.peak_flops(H100_SXM, "fp32") == pytest.approx(66.9e12)
    assert rl.peak_flops(H100_PCIE, "fp64_simt") == pytest.approx(25.6e12)
    with pytest.raises(rl.RooflineError, match="no 2:4"):
        rl.peak_flops(H100_SXM, "fp64", sparse=True)
    with pytest.raises(ValueError, match="unknown dtype"):
        rl.peak_flops(H100_SXM, "fp4")
    with pytest.raises(ValueError, match="memory level"):
        rl.bandwidth(H100_SXM, "l3")
    assert rl.bandwidth(H100_SXM, "nvlink") == 900e9 and rl.bandwidth(H100_SXM, "pcie") == 128e9


@given(i=st.floats(1e-3, 1e5), spec=st.sampled_from(ALL), dtype=st.sampled_from(rl.ROOF_DTYPES))
def test_attainable_is_the_min_of_the_roofs(i, spec, dtype):
    a = rl.attainable(i, spec, dtype)
    assert a <= rl.peak_flops(spec, dtype) * (1 + 1e-12)
    assert a <= i * spec.hbm_bandwidth * (1 + 1e-12)
    assert a == pytest.approx(min(rl.peak_flops(spec, dtype), i * spec.hbm_bandwidth))
    assert rl.bound(i, spec, dtype) == ("memory" if i < rl.ridge_point(spec, dtype) else "compute")


def test_vectorised_and_bad_input():
    x = np.logspace(-1, 4, 50)
    y = rl.attainable(x, H200_SXM, "fp8")
    assert y.shape == (50,) and np.all(np.diff(y) >= 0)
    with pytest.raises(ValueError, match="positive"):
        rl.attainable(0.0)
    with pytest.raises(ValueError, match="positive"):
        rl.bound(-1.0)
    with pytest.raises(ValueError, match="positive"):
        rl.arithmetic_intensity(0, 10)


def test_gemm_intensity():
    # square bf16 GEMM: 2n^3 / (3 n^2 x 2 B) = n / 3
    assert rl.gemm_intensity(4096, 4096, 4096) == pytest.approx(4096 / 3)
    assert rl.gemm_intensity(4096, 4096, 4096, "fp8", "bf16") == pytest.approx(2 * 4096**3 / (2 * 4096**2 + 2 * 4096**2))
    # decode-like GEMV (m = 1) is far below every ridge
    assert rl.bound(rl.gemm_intensity(1, 8192, 8192), H200_SXM) == "memory"
    with pytest.raises(ValueError):
        rl.gemm_intensity(0, 1, 1)
    with pytest.raises(ValueError, match="unknown dtype"):
        rl.gemm_intensity(1, 1, 1, "fp4")


def test_roofs():
    r = rl.roofs()
    assert [x.device for x in r][:2] == ["H100 SXM5", "H100 SXM5"] and len(r) == 6
    assert r[0].ridge == pytest.approx(rl.ridge_point(H100_SXM, "bf16"))
    assert r[0].attainable(1.0) == pytest.approx(H100_SXM.hbm_bandwidth)
