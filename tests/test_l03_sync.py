"""Lesson 3: proxies, named and cluster barriers, bulk async-groups, the trace format, the hazard checker."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from h100lab.sync.groups import BulkGroups, GroupError, pending_after
from h100lab.sync.hazards import Hazard, check, summarize
from h100lab.sync.named import BarrierError, ClusterBarrier, NamedBarriers
from h100lab.sync.proxy import ProxyMemory
from h100lab.sync.smem import SharedMemory
from h100lab.sync.trace import Record, as_dicts, busy_time, lanes, record


# ---- proxies (value model) ----------------------------------------------------------------------
def test_generic_write_invisible_to_async_until_fenced():
    pm = ProxyMemory(SharedMemory(256))
    pm.st("t0", 0, np.full(16, 7, np.uint8))
    assert pm.ld("t1", 0, 16).tolist() == [7] * 16          # generic readers see it
    assert pm.async_read(0, 16).tolist() == [0] * 16         # RAW: the TMA store would send stale bytes
    assert pm.unfenced("t0") == [(0, 16)] and not pm.consistent(0, 16)
    pm.fence_proxy_async("t1")                               # another thread's fence does not help
    assert pm.async_read(0, 16).tolist() == [0] * 16
    pm.fence_proxy_async("t0")
    assert pm.async_read(0, 16).tolist() == [7] * 16 and pm.consistent(0, 16)


def test_async_write_visible_after_completion_is_observed():
    pm = ProxyMemory(SharedMemory(256))
    h = pm.async_write(32, np.arange(16, dtype=np.uint8))
    assert pm.ld("c", 32, 16).tolist() == [0] * 16           # read before the wait: old bytes
    pm.observe(h)                                            # implicit proxy fence on completion
    assert pm.ld("c", 32, 16).tolist() == list(range(16))


def test_war_stale_line_wins():
    pm = ProxyMemory(SharedMemory(64))
    pm.st("t", 0, np.full(16, 1, np.uint8))                  # still in the writer's buffer
    h = pm.async_write(0, np.full(16, 2, np.uint8))
    pm.observe(h)
    assert pm.ld("t", 0, 16)[0] == 2
    pm.fence_proxy_async("t")                                # the old store drains late ...
    assert pm.async_read(0, 16)[0] == 1                      # ... and overwrites the newer value
    assert not pm.consistent(0, 16)


# ---- named and cluster barriers ------------------------------------------------------------------
def test_named_barrier_producer_consumer_mix():
    nb = NamedBarriers(128)
    assert nb.arrive(0, 64, "producer") == (0, False)
    assert nb.sync(0, 64, "consumer") == (0, True)          # completes generation 0
    assert nb.completed(0, 0) and not nb.completed(0, 1)
    assert nb.sync(1, None, "w0", threads=64) == (0, False)  # no count: all 128 threads
    assert nb.sync(1, None, "w1", threads=64) == (0, True)


@pytest.mark.parametrize("bid,b,msg", [(16, 64, "0 … 15"), (0, 48, "multiple of the warp size"),
                                       (0, 0, "multiple"), (0, 256, "exceeds")])
def test_named_barrier_operands(bid, b, msg):
    with pytest.raises(BarrierError, match=msg):
        NamedBarriers(128).arrive(bid, b, "w")


def test_named_barrier_misuse():
    nb = NamedBarriers(128)
    with pytest.raises(BarrierError, match="non-zero"):
        nb.arrive(0, None, "w")
    nb.arrive(2, 96, "a")
    with pytest.raises(BarrierError, match="same thread count"):
        nb.sync(2, 64, "b")
    with pytest.raises(BarrierError, match="twice"):
        nb.arrive(2, 96, "a")
    with pytest.raises(BarrierError, match="1 … 1024"):
        NamedBarriers(2048)


def test_cluster_barrier():
    cb = ClusterBarrier(2)
    assert cb.arrive("a") == (0, False)
    with pytest.raises(BarrierError, match="twice"):
        cb.arrive("a")
    with pytest.raises(BarrierError, match="without a preceding"):
        cb.wait_phase("b")
    assert cb.arrive("b") == (0, True) and cb.completed(0) and cb.wait_phase("b") == 0
    assert cb.arrive("a") == (1, False)                      # re-armed automatically
    with pytest.raises(BarrierError):
        ClusterBarrier(0)


# ---- bulk async-groups --------------------------------------------------------------------------
def test_groups_commit_and_wait():
    g = BulkGroups()
    g.issue("a"), g.issue("b")
    assert g.commit() == 0
    assert g.commit() == 1                                   # an empty group
    g.issue("c")
    assert g.commit() == 2 and g.group_of("c") == 2 and g.group_of("zz") == -1
    assert g.pending() == 2                                  # the empty group is trivially complete
    assert g.waits_for(1) == ["a", "b"] and not g.satisfied(1)
    g.complete("a", read_only=True), g.complete("b", read_only=True)
    assert g.satisfied(1, read=True) and not g.satisfied(1)
    assert g.covered_group(0) == 2 and g.covered_group(5) == -1
    with pytest.raises(GroupError):
        g.waits_for(-1)


@pytest.mark.parametrize("seq,expected", [
    (["cp", "cp", "commit", "cp", "commit"], 2),
    (["cp", "commit", "cp", "commit", "cp", "commit", "wait 1"], 1),
    (["cp", "commit", "commit", "wait 0", "cp"], 0),
    (["cp", "cp", "commit", "cp", "commit", ("wait", 2), "cp", "commit", "wait 1"], 1),
])
def test_pending_after(seq, expected):
    assert pending_after(seq) == expected


@given(st.lists(st.sampled_from(["cp", "commit", "wait 0", "wait 1", "wait 2"]), max_size=30))
def test_pending_after_never_exceeds_the_wait(seq):
    n = pending_after(seq)
    assert n <= sum(1 for x in seq if x == "commit")
    waits = [i for i, x in enumerate(seq) if x.startswith("wait")]
    if waits:
        last = waits[-1]
        assert n <= int(seq[last].split()[1]) + sum(1 for x in seq[last:] if x == "commit")


def test_pending_after_bad_items():
    with pytest.raises(GroupError):
        pending_after(["cp", "flush"])
    with pytest.raises(GroupError):
        pending_after(["wait"])


# ---- trace helpers ------------------------------------------------------------------------------
def test_trace_helpers():
    tr = [record(0, 10, "a", "compute"), record(5, 20, "a", "compute"), record(30, 40, "b", "ld.shared",
                                                                                  proxy="generic", access="r",
                                                                                  addr=64, size=16)]
    assert lanes(tr) == ["a", "b"]
    assert busy_time(tr, "a") == 20 and busy_time(tr, "a", t0=8, t1=12) == 4
    assert busy_time(tr, "b", ops=("compute",)) == 0
    assert as_dicts(tr)[2]["addr"] == 64 and tr[2].duration == 10
    assert "smem[0x0040, +16)" in str(tr[2])


# ---- the hazard checker on hand-written traces --------------------------------------------------------
def R(t0, t1, actor, op, **kw):
    return record(t0, t1, actor, op, **kw)


def handoff(arrive_sem="release", wait_sem="acquire", fence=False):
    """Thread p writes shared memory and arrives; thread c waits and reads (seed §17.2's flag example)."""
    tr = [R(0, 1, "p", "mbarrier.init", bar=0, label="flag"), R(1, 2, "p", "bar.sync", bar=0, phase=0),
          R(0, 2, "c", "bar.sync", bar=0, phase=0),
          R(2, 3, "p", "st.shared", proxy="generic", access="w", addr=64, size=4)]
    if fence:
        tr.append(R(3, 4, "p", "fence.acq_rel"))
    tr += [R(4, 5, "p", "mbarrier.arrive", bar=0, phase=0, sem=arrive_sem),
           R(2, 6, "c", "mbarrier.try_wait.parity", bar=0, phase=0, sem=wait_sem),
           R(6, 7, "c", "ld.shared", proxy="generic", access="r", addr=64, size=4)]
    return tr


def test_release_acquire_handoff_is_clean():
    assert check(handoff()) == []


def test_relaxed_arrive_is_a_hazard_and_named():
    hz = check(handoff(arrive_sem="relaxed"))
    assert len(hz) == 1 and hz[0].kind == "RAW" and "release/acquire" in hz[0].missing
    assert check(handoff(arrive_sem="relaxed", fence=True)) == []     # fence.acq_rel before it fixes it


def test_relaxed_wait_is_a_hazard():
    hz = check(handoff(wait_sem="relaxed"))
    assert [h.kind for h in hz] == ["RAW"] and "relaxed" in hz[0].missing


def test_missing_barrier_between_threads():
    tr = [R(0, 1, "a", "st.shared", proxy="generic", access="w", addr=0, size=8),
          R(5, 6, "b", "ld.shared", proxy="generic", access="r", addr=4, size=8)]
    hz = check(tr)
    assert len(hz) == 1 and hz[0].kind == "RAW" and "barrier between a and b" in hz[0].missing
    tr2 = [tr[0], R(1, 2, "a", "bar.sync", bar=1, phase=0), R(0, 2, "b", "bar.sync", bar=1, phase=0), tr[1]]
    assert check(tr2) == []
    tr3 = [tr[0], R(1, 2, "a", "bar.arrive", bar=1, phase=0), R(0, 2, "b", "bar.sync", bar=1, phase=0), tr[1]]
    assert check(tr3) == []                                   # arrive is a source, sync a target
    tr4 = [tr[0], R(1, 2, "a", "bar.sync", bar=1, phase=0), R(0, 2, "b", "bar.arrive", bar=1, phase=0), tr[1]]
    assert len(check(tr4)) == 1                              # an arrive never acquires


def tma_load(wait=True, fence_before_release=True):
    tr = [R(0, 1, "p", "mbarrier.init", bar=8, label="full"),
          R(1, 2, "p", "bar.sync", bar=0, phase=0), R(0, 2, "c", "bar.sync", bar=0, phase=0),
          R(2, 3, "p", "mbarrier.arrive.expect_tx", bar=8, phase=0),
          R(3, 600, "p", "cp.async.bulk.shared::cluster.global", proxy="async", access="w", addr=128, size=1024,
            bar=8, phase=0, lane="tma")]
    if wait:
        tr.append(R(3, 610, "c", "mbarrier.try_wait.parity", bar=8, phase=0))
    tr.append(R(610, 640, "c", "ld.shared", proxy="generic", access="r", addr=128, size=1024))
    return tr


def test_tma_load_needs_the_wait():
    assert check(tma_load()) == []
    hz = check(tma_load(wait=False))
    assert len(hz) == 1 and hz[0].kind == "RAW" and "try_wait.parity on full" in hz[0].missing
    assert "RAW on cta0 smem[0x0080" in str(hz[0]) and summarize(hz).count("\n") == 0
    assert summarize([]) == "no hazards"


def test_tma_store_needs_fence_barrier_and_read_wait():
    def prog(fence=True, sync=True, read_wait=True):
        tr = [R(0, 1, "c", "st.shared", proxy="generic", access="w", addr=0, size=256)]
        if fence:
            tr.append(R(1, 2, "c", "fence.proxy.async"))
        if sync:
            tr += [R(2, 3, "c", "bar.sync", bar=1, phase=0), R(0, 3, "s", "bar.sync", bar=1, phase=0)]
        tr += [R(3, 400, "s", "cp.async.bulk.global.shared::cta.bulk_group", proxy="async", access="r",
                 addr=0, size=256, group=0),
               R(4, 5, "s", "cp.async.bulk.commit_group", group=0)]
        if read_wait:
            tr.append(R(5, 300, "s", "cp.async.bulk.wait_group.read", group=0))
        tr += [R(300, 301, "s", "st.shared", proxy="generic", access="w", addr=0, size=256)]
        return tr

    assert check(prog()) == []
    assert "fence.proxy.async" in check(prog(fence=False))[0].missing
    assert "barrier" in check(prog(sync=False))[0].missing
    hz = check(prog(read_wait=False))
    assert hz[0].kind == "WAR" and "wait_group.read" in hz[0].missing


def test_proxy_fence_anywhere_on_the_path_counts():
    tr = [R(0, 1, "c", "st.shared", proxy="generic", access="w", addr=0, size=64),
          R(2, 3, "c", "bar.sync", bar=1, phase=0), R(0, 3, "s", "bar.sync", bar=1, phase=0),
          R(3, 4, "s", "fence.proxy.async"),
          R(4, 50, "s", "cp.async.bulk.global.shared::cta.bulk_group", proxy="async", access="r", addr=0,
            size=64, group=-1)]
    assert check(tr) == []


def test_init_visibility():
    tr = [R(0, 1, "p", "mbarrier.init", bar=0, label="b"), R(5, 6, "c", "mbarrier.arrive", bar=0, phase=0)]
    hz = check(tr)
    assert [h.kind for h in hz] == ["INIT"] and "__syncthreads" in hz[0].missing and "INIT:" in str(hz[0])


def test_duplicates_are_counted_once():
    tr = [R(0, 1, "a", "st.shared", proxy="generic", access="w", addr=0, size=8)]
    tr += [R(10 + i, 11 + i, "b", "ld.shared", proxy="generic", access="r", addr=0, size=8) for i in range(3)]
    hz = check(tr)
    assert len(hz) == 1 and hz[0].count == 3 and "(×3)" in str(hz[0])
    assert isinstance(hz[0], Hazard)


def test_record_defaults():
    r = Record(0.0, 1.0, "a", "compute")
    assert r.lane == "" and r.addr == -1 and r.where() == ""
    assert record(0, 1, "a", "x").lane == "a"
