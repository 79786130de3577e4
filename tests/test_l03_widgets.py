"""Lesson 3: the stepper's op language, the plots (h100lab.viz.timeline/mbarrier/pipeline) and the three
widgets, headless."""
from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from h100lab.sim import H200_ESTIMATES  # noqa: E402
from h100lab.sim.pipeline import PipelineConfig, simulate  # noqa: E402
from h100lab.sim.programs import run_program  # noqa: E402
from h100lab.sync.mbarrier import MBarrierError, parse_ops, run_ops  # noqa: E402


def test_parse_and_run_ops():
    assert parse_ops("arrive; expect_tx 64,\narrive 2") == [("arrive", 1), ("expect_tx", 64), ("arrive", 2)]
    steps = run_ops(2, "arrive.expect_tx 64; arrive; complete_tx 64; arrive.noComplete")
    assert [s.completed for s in steps] == [False, False, False, True, False]
    assert steps[-1].state.pending == 1 and steps[3].waits == (True, False)
    assert run_ops(1, [("arrive", 1)])[-1].phase_number == 1
    for bad, msg in [("jump", "unknown"), ("expect_tx", "byte count"), ("arrive x", "integer"),
                     ("arrive 1 2", "one operand"), ("arrive 3", "pending")]:
        with pytest.raises(MBarrierError, match=msg):
            run_ops(2, bad)


def _axis_labels(fig):
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes if ax.get_xlabel() or ax.get_ylabel()]


def test_plots_name_their_units():
    from h100lab.viz.mbarrier import steps_figure
    from h100lab.viz.pipeline import model_vs_measured_figure, utilization_figure
    from h100lab.viz.timeline import category, gantt

    run = simulate(PipelineConfig(stages=2, iters=4, tile_bytes=4096, compute_ns=100), H200_ESTIMATES)
    lab = run_program(["store_fence"])
    figs = [gantt(run.trace, t0=0, t1=3000, title="t"), gantt(lab.trace, hazards=lab.hazards),
            steps_figure(run_ops(2, "arrive; arrive"), title="s"),
            utilization_figure([1, 2], {"a": [0.3, 0.6]}), model_vs_measured_figure([100, 200], [110, 190], ["g", "h"])]
    for f in figs:
        for x, y in _axis_labels(f):
            assert "(" in x and "(" in y
    assert [t.get_text() for t in figs[0].axes[0].get_yticklabels()] == ["tma", "consumer", "producer"]
    assert category("cp.async.bulk.shared::cluster.global") == "copy" and category("bar.sync") == "wait"
    assert category("mbarrier.arrive") == "sync" and category("wgmma") == "tensor" and category("st.shared") == "lsu"


def test_stepper_widget():
    from h100lab.widgets.mbarrier import mbarrier_stepper

    ex = mbarrier_stepper(count=2, ops="")
    assert len(ex.result) == 1 and "phase 0" in ex.text.value
    ex.buttons[0].click()                      # arrive
    ex.buttons[0].click()
    assert ex.result[-1].phase_number == 1 and ex.static() is not None
    ex.buttons[4].click()                      # complete_tx 512 before any expect: tx = -512
    assert ex.result[-1].state.tx == -512
    ex.buttons[-1].click()                     # reset
    assert ex.controls["ops"].value == ""
    ex.controls["ops"].value = "arrive 3"
    assert ex.result is None and "pending" in ex.text.value and ex.figure is None


def test_pipeline_widget():
    from h100lab.widgets.pipeline import pipeline_explorer

    ex = pipeline_explorer(latency_ns=800, compute_ns=300, stages=1)
    one = ex.result["async"].utilization
    ex.controls["stages"].value = 4
    assert ex.result["async"].utilization > one and "buffer" in ex.text.value
    ex.controls["latency_ns"].value = 0
    assert ex.result["closed_form"].buffers_needed <= 2 and ex.static() is not None


def test_hazard_lab_widget():
    from h100lab.widgets.hazards import describe_lab, hazard_lab

    ex = hazard_lab()
    assert ex.result.hazards == [] and "nothing" in ex.text.value
    ex.controls["remove"].value = ("staged_wait", "store_fence")
    assert {h.kind for h in ex.result.hazards} == {"RAW"} and "RAW" in ex.text.value
    ex.controls["remove"].value = ("full_wait",)
    assert "more" in describe_lab(ex.result) and ex.static() is not None
