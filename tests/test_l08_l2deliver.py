"""traffic.lrc_bytes (issue 17): the L2 -> SM read bytes of a tile order, requests merged per GPC, fitted on the
8192^3 DRAM-counter runs and checked on the rest (a byte estimate; not in the time model)."""
import pytest

from h100lab import data
from h100lab.design import perf, traffic as T

pytestmark = pytest.mark.skipif(not data.available(T.L2_DATASET) or not data.available("l02/gpc_map"),
                                reason="DRAM-counter run or GPC map not committed")


def test_constants_and_ceiling():
    p_pp, p_co, beta = T.calibrated_lrc()
    assert 0 < p_co < p_pp <= 1 and 0 < beta < 2
    assert 8.0 < T.lrc_ceiling_tb_s() < 9.5


def test_byte_check_held_out():
    rows = T.lrc_rows()
    held = [r for r in rows if r.part == "held-out"]
    cal = [r for r in rows if r.part == "calibration"]
    assert len(cal) == 23 and len(held) == 29
    assert sum(abs(r.ratio - 1) <= 0.25 for r in held) >= 27
    rm = [r for r in held if r.label.startswith("4096×4096×4096 pingpong (persistent, 132 CTAs) group 1 raster M")]
    assert len(rm) == 1 and abs(rm[0].ratio - 1) < 0.05          # the ablation's row-major order


def test_parts_merge_never_exceeds_requests():
    f = perf.form("pingpong", schedule="persistent")
    parts = T.lrc_parts(f, 4096, 4096, 4096, 132, 1, 0)
    assert all(0 < m <= full for full, m in parts)
    # grouped orders put a B panel's sharers on neighbouring CTAs: more merged than row-major
    g8 = T.lrc_parts(f, 4096, 4096, 4096, 132, 8, 0)
    assert sum(m for _, m in g8) < sum(m for _, m in parts)


def test_constants_zero_is_requested():
    f = perf.form("cooperative", schedule="persistent")
    full = sum(a for a, _ in T.lrc_parts(f, 4096, 4096, 4096, 132))
    assert T.lrc_bytes(f, 4096, 4096, 4096, 132, constants=(0.0, 0.0, 0.0)) == pytest.approx(full)


def test_fit_needs_runs():
    with pytest.raises(ValueError):
        T.fit_lrc([])
