"""Lesson 5 figures and widgets (headless): multicast explorer, smem planner, timelines, bandwidth plot."""
import pytest

pytest.importorskip("ipywidgets")

from h100lab import tma
from h100lab.tma import pipeline as P
from h100lab.viz import l05_bulk as V
from h100lab.widgets import l05_bulk as W


def test_multicast_explorer():
    ex = W.multicast_explorer()
    mc, uc = ex.result["multicast"], ex.result["unicast"]
    assert mc.saving == pytest.approx(0.75) and uc.l2_request_bytes == 4 * mc.l2_request_bytes
    assert ex.static() is not None and "saving 75 %" in ex.text.value
    ex.controls["mask"].value = "0b1010"
    assert ex.result["multicast"].receivers == (1, 3)
    ex.controls["mask"].value = "0b100000"
    assert ex.error and "cluster has 4" in ex.error
    assert W.parse_mask("0xA") == 10 and W.parse_mask(3) == 3


def test_smem_planner():
    ex = W.smem_planner()
    p = ex.result["plan"]
    assert p.offset("A[0]") == 1024 and "fits" in ex.text.value and ex.static() is not None
    ex.controls["stages"].value = 8
    assert "does NOT fit" in ex.text.value
    ex.controls["base_alignment"].value = 16
    assert ex.result["plan"].slack == 1008


def test_plots():
    r = P.simulate_copy_stream(16384, 2, ctas=1, tiles_per_cta=4, trace=True)
    assert V.draw_timeline(r.trace, t_max=r.total_ns) is not None
    sim = [{"tile_bytes": 16384, "stages": s, "gbps": 100.0 * s} for s in (1, 2)]
    assert V.draw_copy_bandwidth(sim, [{"tile_bytes": 16384, "stages": 1, "gbps": 90.0}], reference=150.0) is not None
    assert V.draw_smem_plan(tma.plan_smem(2, [("A", 4096, "128B")], stages=2)) is not None
    assert {V.op_colour(o) for o in ("cp.async.bulk.x", "cp.async.bulk.global.y", "compute", "mbarrier.arrive",
                                     "mbarrier.try_wait.parity", "fence")} .__len__() == 6
