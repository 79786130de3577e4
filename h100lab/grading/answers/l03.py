"""Exercise set 3 (chapter 3, "Asynchrony and barriers"): parity waits, mbarrier states, missing
fences, bulk async-groups, buffers and utilisation of a pipeline.

Every reference answer is computed by the model the chapter teaches (h100lab.sync, h100lab.sim),
never typed in.
"""
from __future__ import annotations

from ..registry import exercise

#: the operation sequence of exercises 3.2 and 3.3
SEQUENCE_3_2 = "arrive; arrive.expect_tx 2048; complete_tx 1024; arrive; complete_tx 1024; arrive_drop; arrive"


def epilogue_trace():
    """Exercise 3.4's trace: a consumer writes a staging tile, both warps meet at bar.sync 1, the storer
    sends the tile with a TMA store."""
    from h100lab.sync.trace import record

    return [record(0, 10, "consumer", "st.shared", proxy="generic", access="w", addr=0, size=2048),
            record(10, 18, "consumer", "bar.sync", bar=1, phase=0),
            record(0, 18, "storer", "bar.sync", bar=1, phase=0),
            record(18, 800, "storer", "cp.async.bulk.global.shared::cta.bulk_group", proxy="async", access="r",
                   addr=0, size=2048, lane="tma")]


@exercise("3.1", points=1, hint="Iteration k uses buffer k % S in round k // S; the consumer waits for that "
          "round's phase of full (parity round & 1), the producer for the previous round's release of empty.")
def _parity():
    from h100lab.sim.pipeline import parity_for_iteration

    return (7 % 3, parity_for_iteration(7, 3), parity_for_iteration(7, 3, "producer"))


@exercise("3.2", points=2, hint="A phase completes when pending arrivals and tx-count are both 0; arrive_drop "
          "lowers the expected count for the phases after it too.")
def _state():
    from h100lab.sync.mbarrier import run_ops

    last = run_ops(3, SEQUENCE_3_2)[-1]
    return (last.phase_number, last.state.pending, last.state.expected, last.state.tx)


@exercise("3.3", points=1, hint="try_wait.parity(p) is true exactly when (current phase & 1) != p.")
def _waits():
    from h100lab.sync.mbarrier import run_ops

    return run_ops(3, SEQUENCE_3_2)[-1].waits


@exercise("3.4", points=1, hint="Which proxy writes the tile, and which one reads it?")
def _missing_fence():
    from h100lab.sync.hazards import check

    return check(epilogue_trace())[0].fix


@exercise("3.5", points=2, hint="A WAR whose earlier access is the TMA store's read of the staging buffer: "
          "who must wait for that read to finish before the buffer is handed back?")
def _removed_step():
    from h100lab.sim.programs import STEPS, run_program

    for step in STEPS:
        hz = run_program([step]).hazards
        if [h.kind for h in hz] == ["WAR"] and hz[0].first.op.endswith("bulk_group"):
            return step
    raise AssertionError("no step matches")


@exercise("3.6", points=1, hint="Count committed groups; a wait N leaves at most N of them pending, and an "
          "empty group is complete at once.")
def _groups():
    from h100lab.sync.groups import pending_after

    return pending_after(["cp", "cp", "commit", "cp", "commit", "commit", "cp", "commit", "wait 2", "cp",
                          "cp", "commit"])


@exercise("3.7", points=1, hint="While the consumer works on one buffer the others must cover the round trip "
          "compute + latency + transfer.")
def _buffers():
    from h100lab.sim.pipeline import buffers_to_hide

    return buffers_to_hide(1200, 350, 100)


@exercise("3.8", points=2, rtol=1e-6, hint="analytic(cfg, H200_ESTIMATES): the period is the largest of the "
          "consumer's busy time, the transfer time and the round trip divided by the buffers.")
def _utilization():
    from h100lab.sim import H200_ESTIMATES
    from h100lab.sim.pipeline import PipelineConfig, analytic

    return analytic(PipelineConfig(stages=2, tile_bytes=16384, compute_ns=500), H200_ESTIMATES).utilization
