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


CEIL_RECORDS = [dict(kind="gemm", dtype="bf16", m=8192, n=8192, k=8192, tflops=700.0),
                dict(kind="gemm", dtype="bf16", m=4096, n=4096, k=4096, tflops=650.0),
                dict(kind="memcpy", bytes=1 << 30, gbps=4100.0), dict(kind="device_copy", gbps=3900.0),
                dict(kind="tma_copy_stream", gbps=4150.0, correct=False),      # a wrong copy never counts
                dict(kind="read_stream", gbps=4300.0), dict(kind="tma_read", gbps=4350.0)]


def test_measured_ceilings_from_records():
    c = rl.measured_ceilings(CEIL_RECORDS, gpu="NVIDIA H200")
    assert c.gemm_flops == {"bf16": 700e12} and c.best["gemm_bf16"]["m"] == 8192
    assert c.read_bandwidth == 4350e9 and c.copy_bandwidth == 4100e9 and c.memcpy_bandwidth == 4100e9
    f = c.fraction_of(H200_SXM)
    assert f["compute"] == pytest.approx(700 / 989.4, rel=1e-3) and f["copy"] < 1 and f["read"] < 1
    r = rl.measured_roofs(c, ("bf16", "fp8"))
    assert [x.device for x in r] == ["NVIDIA H200 measured read", "NVIDIA H200 measured copy"]
    assert all(x.peak == 700e12 for x in r) and r[0].ridge < rl.ridge_point(H200_SXM, "bf16") * 1.2
    with pytest.raises(rl.RooflineError, match="no GEMM"):
        rl.measured_ceilings([dict(kind="other")])


def test_measured_ceilings_read_the_dataset(tmp_path, monkeypatch):
    from h100lab import data
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    assert rl.measured_ceilings() is None
    meta = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "driver": "580", "cuda": "13.0", "date": "2026-01-01",
            "command": "python -m h100lab.measure.timing_sweep"}
    data.write(rl.CEILINGS_DATASET, CEIL_RECORDS, meta)
    c = rl.measured_ceilings()
    assert c.gpu == "NVIDIA H200" and "timing_sweep" in c.where and c.copy_bandwidth == 4100e9
    import matplotlib
    matplotlib.use("Agg")
    from h100lab.viz.roofline import draw_rooflines
    fig = draw_rooflines(("bf16",))
    labels = [ln.get_label() for ln in fig.axes[0].lines]
    assert any("measured copy" in s for s in labels) and any("(datasheet)" in s for s in labels)
    fig2 = draw_rooflines(("bf16",), measured=None)
    assert not any("measured" in ln.get_label() for ln in fig2.axes[0].lines)
