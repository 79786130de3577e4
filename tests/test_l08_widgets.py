"""Lesson 8 widgets, headless: each explorer's result follows its controls and agrees with h100lab.design
(ring timeline and parity answers, consumer schedules, tile calculator, tile order and L2 estimate)."""
import pytest

from h100lab.design import registers, ring, schedule, tiles
from h100lab.widgets import l08_design as W

pytest.importorskip("ipywidgets")


def test_pipeline_right_rule_never_misreads_and_wrong_rules_do():
    ex = W.pipeline_explorer()
    r = ex.result
    assert r["first_bad"] is None and set(r["verdicts"]) <= {"ok", "wait"}
    assert r["timeline"] == ring.timeline(4, 12, 600.0, 160.0)
    ex.controls["rule"].value = "always 0 (never flips)"
    assert "aba" in ex.result["verdicts"]
    ex.controls["rule"].value = "slot & 1 (wrong)"
    assert "skipped" in ex.result["verdicts"]
    assert ex.static() is not None


def test_pipeline_stages_raise_utilisation_up_to_littles_law():
    u = [W.pipeline_result(stages=s, load=600, mma=160)["timeline"].utilization for s in range(1, 7)]
    assert u == sorted(u) and u[4] == u[5]          # S >= 1 + 600/160 -> no further gain


def test_consumer_schedules():
    r = W.consumers_result(tiles=3, mainloop=100, epilogue=40)
    assert r["cooperative"]["total"] == 3 * (200 + 40)
    assert r["pingpong"]["busy"] > r["cooperative"]["busy"]
    z = W.consumers_result(tiles=2, mainloop=100, epilogue=0)
    assert z["cooperative"]["busy"] == z["pingpong"]["busy"] == 1.0
    iv = W.consumer_schedule("pingpong", 2, 100, 40)
    mma = sorted((s, e) for _, k, s, e in iv if k == "mma")
    assert all(a[1] <= b[0] for a, b in zip(mma, mma[1:]))     # one mainloop at a time on the tensor core
    with pytest.raises(ValueError):
        W.consumer_schedule("both", 1, 1, 1)


def test_calculator_follows_the_model():
    ex = W.calculator_explorer()
    assert ex.result["tile"] == tiles.evaluate(128, 256, 64, 4, 2)
    assert ex.result["split"] == registers.best_split(1, 2, producer_regs=40)
    ex.controls["stages"].value = 6
    assert not ex.result["tile"].fits and "shared memory" in ex.result["tile"].reason
    assert ex.static() is not None


def test_order_heatmap_and_l2():
    ex = W.order_explorer()
    r = ex.result
    order = schedule.static_order(16, 16, 8, "m")
    assert all(r["position"][m, n] == t for t, (m, n) in enumerate(order))
    assert r["l2"] == schedule.l2_reuse(order, 132, 128, 256, 8192)
    ex.controls["group"].value = 1
    assert ex.result["position"][0, 1] == 1           # group 1 along M: row-major, N fastest
    assert ex.static() is not None
