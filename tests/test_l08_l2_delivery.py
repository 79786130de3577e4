"""traffic.l2_delivery_rows: the DRAM-counter run's L2 -> SM read sectors (issue 17's ablation and 128-column
misses; a diagnosis, nothing fitted)."""
import pytest

from h100lab import data
from h100lab.design import traffic

pytestmark = pytest.mark.skipif(not data.available(traffic.L2_DATASET), reason="l08/gemm_l2_traffic not committed")


def _row(rows, variant, shape, group, raster):
    return next(r for r in rows if r.variant == variant and r.shape == shape and r.group == group
                and r.raster == raster and "132 CTAs" in r.label and "persistent" in r.label)


def test_row_major_pingpong_4096_reads_every_tile_at_the_ceiling():
    rows = traffic.l2_delivery_rows()
    top = max(r.tex_tb_s for r in rows)
    slow = _row(rows, "pingpong", (4096,) * 3, 1, 0)
    same = _row(rows, "pingpong", (4096,) * 3, 16, 1)          # the same order at 16 tile columns
    fast = _row(rows, "pingpong", (4096,) * 3, 8, 0)
    assert slow.tex_per_request > 0.9 and fast.tex_per_request < 0.6
    assert abs(same.tex_per_request - slow.tex_per_request) < 0.05
    assert slow.tex_tb_s > 0.95 * top and fast.tex_tb_s < 0.7 * top
    # its duration is its sectors at that rate
    assert slow.duration_ms == pytest.approx(slow.tex_bytes / (slow.tex_tb_s * 1e12) * 1e3)
    assert slow.duration_ms / fast.duration_ms > 1.25


def test_n128_near_the_ceiling_at_full_waves_not_in_the_partial_wave():
    rows = traffic.l2_delivery_rows()
    top = max(r.tex_tb_s for r in rows)
    full = _row(rows, "cooperative_n128", (8192,) * 3, 8, 0)
    part = _row(rows, "cooperative_n128", (1280, 3840, 8192), 8, 0)
    assert full.tex_tb_s > 0.9 * top
    assert part.tex_tb_s < 0.7 * top


def test_empty_without_dataset():
    assert traffic.l2_delivery_rows("l08/no_such_dataset") == []
