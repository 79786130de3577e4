"""design.traffic.capacity_reads: DRAM reads with the L2's capacity and the CTAs' drift (issue 17), its drift fit on
the bf16 DRAM counters and its byte check on the held-out runs."""
import math

import pytest

from h100lab import data
from h100lab.design import perf
from h100lab.design import traffic as T

F8 = perf.form("fp8_cooperative_tmastore")
BF = perf.form("cooperative")


def test_unlimited_l2_reads_each_panel_once():
    # no capacity limit, no drift: every panel read once over the launch (A and B compulsory bytes)
    for f, (M, N, K) in ((F8, (4096, 4096, 4096)), (BF, (8192, 8192, 4096)), (F8, (1280, 3840, 8192))):
        got = sum(T.capacity_reads(f, M, N, K, 132, drift=0.0, l2_bytes=math.inf))
        assert got == pytest.approx((M + N) * K * f.elem_bytes)


def test_tiny_l2_without_drift_is_the_in_step_estimate():
    # sharers of one wave in step share a read; nothing survives to the next wave
    for f, shape in ((F8, (8192, 8192, 8192)), (BF, (4096, 4096, 4096))):
        got = T.capacity_reads(f, *shape, 132, drift=0.0, l2_bytes=1.0)
        lay = perf._layout(f, *shape, 132, 8, 0)
        assert got == pytest.approx(tuple(float(d) for _, d, _ in lay.waves), rel=1e-9)


def test_drift_adds_reads_at_16384():
    a = sum(T.capacity_reads(F8, 16384, 16384, 16384, 132, drift=0.0))
    b = sum(T.capacity_reads(F8, 16384, 16384, 16384, 132, drift=0.004))
    c = sum(T.capacity_reads(F8, 16384, 16384, 16384, 132, drift=0.008))
    assert a < b < c


def test_bad_input():
    with pytest.raises(ValueError, match="drift"):
        T.capacity_reads(F8, 4096, 4096, 4096, 132, drift=-0.1)
    with pytest.raises(ValueError, match="capacity"):
        T.capacity_reads(F8, 4096, 4096, 4096, 132, drift=0.0, l2_bytes=0.0)
    with pytest.raises(ValueError):
        T.fit_drift([])


def test_one_tile_per_cta_launch_keeps_its_layout():
    f = perf.form("cooperative", schedule="tiles")
    lay = perf._layout(f, 4096, 4096, 4096, 132, 8, 0)
    assert T.capacity_reads(f, 4096, 4096, 4096, 132, drift=0.0) == tuple(float(d) for _, d, _ in lay.waves)


@pytest.mark.skipif(not (data.available(T.L2_DATASET) and data.available("l08/gemm_l2_traffic_fp8")),
                    reason="the DRAM-counter runs are not committed")
def test_byte_check():
    d = T.calibrated_drift()
    assert d in T.DRIFTS and 0 < d < 0.01            # fitted: 0.004 (~0.8 % between two CTAs measured, gemm_skew)
    rows = T.capacity_rows()
    cal = [r for r in rows if r.part == "calibration"]
    held = [r for r in rows if r.part == "held-out"]
    assert len(cal) == 11 and len(held) == 21
    within = lambda rs: sum(abs(math.log(r.ratio)) <= math.log(1.25) for r in rs)          # noqa: E731
    in_step = lambda rs: sum(abs(math.log(r.ncu_bytes / r.in_step_bytes)) <= math.log(1.25) for r in rs)  # noqa: E731
    assert within(cal) == 11                            # the fit: every calibration run within 25 % (in step: 8)
    fp8 = [r for r in held if r.variant.startswith("fp8")]
    assert len(fp8) == 9
    assert within(fp8) >= 6 and in_step(fp8) == 4       # held out: 6 of 9 FP8 runs within 25 % (in step: 4)
    big = {r.label.split()[0]: r.ratio for r in fp8 if r.variant == "fp8_cooperative_tmastore"}
    # the 16384³ excess over the in-step estimate (1.65x) is mostly captured; 4096³ reads less than the estimate
    assert 1.1 < big["16384×16384×16384"] < 1.5 and 0.9 < big["8192×8192×8192"] < 1.2 and big["4096×4096×4096"] < 0.7
