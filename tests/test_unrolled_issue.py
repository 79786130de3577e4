"""The measurement kernel's issue loop (h100lab.sim.latency.issue_schedule): l03_tma_latency.cu's tma_issue loop is
unrolled by four (its PTX and SASS), so rounds of 1-2 copies and of 4-32 copies run different code, and the clock read
after the last copy of an unrolled round waits for the loop test (LatencyKernel.loop_exit_ns)."""
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab import data
from h100lab.sim.latency import CLEAN_KERNEL, OLD_KERNEL, CopyLatency, LatencyKernel, issue_schedule, round_trip

M = CopyLatency(issue_first_ns=25.0, issue_next_ns=37.0, queue_copies=8, first_byte_ns=130.0, dram_extra_ns=200.0)
K = LatencyKernel(cold_setup_ns=15.0, issue_setup_ns=73.0, loop_entry_ns=21.0, issue_next_ns=22.0, unroll=4,
                  unrolled_setup_ns=64.0, loop_exit_ns=27.0)


def test_a_plain_loop_is_the_schedule_it_always_was():
    """No kernel: the model's own issue costs; a plain loop (unroll 0): set-up, the loop's entry before the second
    copy, then one trip per copy, the clock read right after the last copy."""
    assert issue_schedule(M, 3) == (25.0, [37.0, 37.0], 0.0)
    k = LatencyKernel(issue_setup_ns=10.0, loop_entry_ns=5.0, issue_next_ns=30.0)
    assert issue_schedule(M, 4, k) == (35.0, [35.0, 30.0, 30.0], 0.0)
    assert issue_schedule(M, 1, CLEAN_KERNEL) == (25.0, [], 0.0)
    with pytest.raises(ValueError, match="at least one copy"):
        issue_schedule(M, 0, k)


def test_the_two_paths_of_a_loop_unrolled_by_four():
    first, gaps, lag = issue_schedule(M, 2, K)            # the remainder code alone
    assert (first, gaps, lag) == (25.0 + 73.0, [21.0 + 22.0], 0.0)
    first, gaps, lag = issue_schedule(M, 8, K)            # two trips of the unrolled body
    assert first == 25.0 + 64.0 and lag == 27.0
    assert gaps == [22.0, 22.0, 22.0, 22.0 + 27.0, 22.0, 22.0, 22.0]
    first, gaps, lag = issue_schedule(M, 6, K)            # one trip, then two copies through the remainder code
    assert gaps == [22.0, 22.0, 22.0, 22.0 + 21.0 + 27.0, 22.0 + 21.0] and lag == 0.0


@settings(max_examples=60, deadline=None)
@given(count=st.integers(4, 40), nbytes=st.sampled_from([16, 256, 1024]))
def test_an_unrolled_round_lands_loop_exit_sooner_after_its_stamp(count, nbytes):
    """The copy is on its way while the loop test runs: a warm round of whole trips, not held up by the fill or the
    unit's queue, wakes its thread fill + first byte after the last copy, which is loop_exit before the stamp."""
    rt = round_trip(M, nbytes, count, kernel=K)
    first, gaps, lag = issue_schedule(M, count, K)
    last = first + sum(gaps)
    assert rt["issue"] == pytest.approx(last + lag)
    if count % 4 == 0 and count <= M.queue_copies:
        assert rt["total"] - rt["issue"] == pytest.approx(nbytes / M.fill_bytes_per_ns + M.first_byte_ns - K.loop_exit_ns)


def test_fresh_lands_a_cold_round_on_its_own_schedule():
    """Copies after the last one that opens a DRAM request land like warm ones: the cold round lands at the later of
    the whole round warm and the fresh copy cold, on the round's own (unrolled) schedule."""
    warm = round_trip(M, 16, 8, kernel=K)["total"]
    cold = round_trip(M, 16, 8, cold=True, kernel=K)["total"]
    shared = round_trip(M, 16, 8, cold=True, kernel=K, fresh=1)["total"]
    first, gaps, _ = issue_schedule(M, 8, K)
    own = first + gaps[0] + 16 / M.fill_bytes_per_ns + M.first_byte_ns + M.dram_extra_ns + M.dram_ramp_ns * 16 / M.dram_ramp_bytes
    assert shared == pytest.approx(max(warm, own)) and warm < shared < cold
    assert round_trip(M, 16, 8, cold=True, kernel=K, fresh=7)["total"] == cold


def _entry(ptx: str, name: str) -> str:
    body = ptx[ptx.index(f".entry {name}("):]
    return body[:body.index("\n}")]


def test_the_old_kernels_issue_loop_is_unrolled_by_four():
    """OLD_KERNEL.unroll is the compiler's: tma_issue's PTX holds the unrolled body's four cp.async.bulk and the
    remainder's three (the SASS, nvdisasm of the sm_90a cubin, holds the same seven UBLKCP); l03_copy_latency.cu's
    loop (#pragma unroll 1) has its first copy and one in the loop."""
    from h100lab import cuda, nvrtc

    if cuda.compiler_unavailable_reason() is not None:
        pytest.skip(f"NVRTC: {cuda.compiler_unavailable_reason()}")
    issue = _entry(nvrtc.compile_kernel("l03_tma_latency").ptx, "tma_issue")
    assert len(re.findall(r"cp\.async\.bulk\.shared", issue)) == 2 * OLD_KERNEL.unroll - 1 == 7
    clean = _entry(nvrtc.compile_kernel("l03_copy_latency").ptx, "copy_latency")
    assert len(re.findall(r"cp\.async\.bulk\.shared", clean)) == 2 and CLEAN_KERNEL.unroll == 0


needs_old = pytest.mark.skipif(not all(data.available(n) for n in ("l03/stream_sweep", "l03/tma_latency")),
                               reason="the timing datasets are not committed")


@needs_old
def test_the_fitted_unrolled_path_on_the_committed_run():
    """Fitted on the 256 B and 4 KiB rounds only: the unrolled path reaches its first copy sooner than the remainder
    path (fewer instructions, no taken branch in the SASS), the loop test costs something, and the held-out whole
    rounds of l03_tma_latency.cu are within ±10 % but one (16 B × 2 cold, whose median sits inside its samples'
    p10-p90 and moves 3 % run to run)."""
    from h100lab.validation import timing as vt

    tf = vt.fit()
    k = tf.latency.kernel
    assert k.unroll == 4 and k.unrolled_setup_ns < k.issue_setup_ns and 5.0 < k.loop_exit_ns < 60.0
    rows = [(r, vt.predict_latency(r, tf)["total_ns"] / r["total_ns"] - 1) for r in tf.held_out["latency"]
            if r["kind"] == "issue"]
    bad = [(r["bytes"], r["count"], r["cold"]) for r, e in rows if abs(e) > 0.10]
    assert len(rows) == 32 and bad == [(16, 2, True)]
    four_warm = [e for r, e in rows if r["count"] == 4 and not r["cold"]]
    assert all(abs(e) < 0.06 for e in four_warm)
