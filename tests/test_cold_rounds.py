"""Cold rounds of back-to-back copies from consecutive bytes (h100lab.validation.micro.fresh_copy,
predict_latency_clean): 64-byte DRAM requests already on their way are shared; the checks against the samples'
spread."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab import data
from h100lab.sim.latency import CopyLatency, LINE, round_trip
from h100lab.validation import micro

M = CopyLatency(issue_first_ns=25.0, issue_next_ns=37.0, queue_copies=8, first_byte_ns=130.0, dram_extra_ns=200.0,
                tlb_miss_ns=13.0, fill_bytes_per_ns=208.0, fill_misaligned_bytes_per_ns=83.0, dram_ramp_ns=86.0,
                dram_ramp_bytes=6000.0)


def _brute_fresh(nbytes, count, offset, granule=micro.DRAM_ATOM):
    seen, last = set(), 0
    for j in range(count):
        lines = set(range((offset + j * nbytes) // granule, (offset + (j + 1) * nbytes - 1) // granule + 1))
        if lines - seen:
            last = j
        seen |= lines
    return last


@settings(max_examples=200, deadline=None)
@given(nbytes=st.sampled_from([16, 32, 48, 64, 96, 128, 256, 1008, 4096]), count=st.integers(1, 40),
       offset=st.integers(0, 127).map(lambda x: x // 16 * 16))
def test_fresh_copy_is_the_last_copy_that_opens_a_dram_request(nbytes, count, offset):
    assert micro.fresh_copy(nbytes, count, offset) == _brute_fresh(nbytes, count, offset)
    assert micro.fresh_copy(nbytes, count, offset, LINE) == _brute_fresh(nbytes, count, offset, LINE)


def test_fresh_copy_examples_and_bad_input():
    assert micro.DRAM_ATOM == 64
    assert micro.fresh_copy(16, 32, 0) == 28 and micro.fresh_copy(16, 32, 16) == 31
    assert micro.fresh_copy(16, 4, 0) == 0 and micro.fresh_copy(16, 4, 16) == 3 and micro.fresh_copy(16, 8, 0) == 4
    assert micro.fresh_copy(16, 32, 0, LINE) == 24 and micro.fresh_copy(256, 32, 16) == 31
    with pytest.raises(ValueError, match="at least one copy"):
        micro.fresh_copy(0, 2, 0)


@settings(max_examples=80, deadline=None)
@given(nbytes=st.sampled_from([16, 64, 256, 1024, 4096, 16384]), count=st.integers(1, 32),
       align=st.sampled_from([0, 16]))
def test_a_cold_round_lands_between_its_warm_time_and_the_unshared_model(nbytes, count, align):
    """Sharing lines never makes a cold round land before its warm time nor after the model without sharing; rounds
    whose every copy opens a line (copies of a line or more, or single copies) are unchanged."""
    r = dict(bytes=nbytes, count=count, align=align, touch=1)
    p = micro.predict_latency_clean(r, M)
    unshared = round_trip(M, nbytes, count, cold=True, tlb=True, aligned=align == 0)["total"]
    assert p["warm_total_ns"] - 1e-9 <= p["cold_total_ns"] <= unshared + 1e-9
    if micro.fresh_copy(nbytes, count, align) == count - 1:
        assert p["cold_total_ns"] == pytest.approx(unshared)


def test_sixteen_byte_rounds_from_a_line_start_hide_the_dram_trip():
    """32 copies of 16 bytes from a line start: the last four read the 64-byte request copy 28 made, three issues
    earlier, so the round lands within half the DRAM part of its warm time (l03/tma_latency_cold: ~90 ns); 16 bytes
    further the last copy opens a request of its own and pays it in full (~200 ns)."""
    a = micro.predict_latency_clean(dict(bytes=16, count=32, align=0, touch=1), M)
    b = micro.predict_latency_clean(dict(bytes=16, count=32, align=16, touch=1), M)
    assert a["cold_total_ns"] - a["warm_total_ns"] < 0.5 * M.dram_extra_ns
    assert b["cold_total_ns"] - b["warm_total_ns"] == pytest.approx(M.dram_extra_ns + M.dram_ramp_ns * 16 / 6000, rel=1e-6)


def test_cold_round_spread_reads_the_sample_band():
    rec = dict(bytes=16, count=4, align=0, touch=1, clock_ghz=2.0, cold_total_ns=300.0,
               cold_total_cycles=dict(median=600.0, p10=560.0, p90=900.0, min=550.0, n=32))
    (row,) = micro.cold_round_spread([rec, dict(rec, count=1)], M)
    assert (row["p10"], row["p90"], row["median"]) == (280.0, 450.0, 300.0)
    assert row["inside"] == (280.0 <= row["predicted"] <= 450.0)


@pytest.mark.skipif(not data.available("l03/tma_latency_clean"), reason="l03/tma_latency_clean is not committed")
def test_cold_round_checks_are_registered_for_lesson_3():
    from h100lab.validation import _CHECKS
    titles = {t: ds for t, ds, *_ in micro.COLD_CHECKS}
    got = [c for c in _CHECKS if c.title in titles]
    assert len(got) == len(titles) and all(c.dataset == titles[c.title] and c.lesson == 3 for c in got)
    assert {ds for ds in titles.values()} == {"l03/tma_latency_clean", "l03/tma_latency_cold", "l03/tma_latency_cold2"}
    # cold-round latency (the goal) is checked on truly cold rounds after the step's L2 clean-out (issue 13: the run
    # without it, l03/tma_latency_cold, is reported, not the goal's), and says when it is not met; the first sweep's
    # "cold" rounds are checked as what they are, a mixture of L2 hits and DRAM trips, at their own floors
    goal = [(t, floor) for t, ds, part, how, floor in micro.COLD_CHECKS if "goal" in t]
    assert goal and all(ds == "l03/tma_latency_cold2" for t, ds, *_ in micro.COLD_CHECKS if "goal" in t)
    assert all("reported" in t and "clean-out" in t for t, ds, *_ in micro.COLD_CHECKS if ds == "l03/tma_latency_cold")
    assert all("not met" in t for t, floor in goal if floor < 1)
    mixed = [t for t, ds, *_ in micro.COLD_CHECKS if ds == "l03/tma_latency_clean"]
    assert mixed and all("mixture" in t and "not of cold-round latency" in t and "goal" not in t for t in mixed)
    from h100lab.validation import timing as vt
    old = [t for t, _, ds, *_ in vt.ACHIEVED_CHECKS if ds == "l03/tma_latency_clean"]
    assert old and all("mix L2 hits and DRAM trips" in t and "goal" not in t for t in old)


def test_a_dirty_l2_delays_cold_rounds_by_the_lines_they_bring_in_up_to_a_cap():
    """sim.latency.dirty_extra: with the L2 holding a fill's dirty lines (``dirty``) a cold round lands
    dirty_ns_per_kib per KiB of the 128-byte lines its sources span later, at most dirty_cap_ns (issue 13: the
    write-backs of the victims it evicts; l03/tma_latency_clean_noflush against its flushed runs); a warm round and a
    clean L2 do not; cap 0 turns it off."""
    from h100lab.sim.latency import dirty_extra, round_trip

    m = M.with_values(dirty_ns_per_kib=2.0, dirty_cap_ns=30.0)
    for nbytes, count, aligned, want in ((4096, 1, True, 8.0), (1024, 4, True, 8.0), (1024, 2, True, 4.0),
                                         (16, 1, True, 0.25), (16, 1, False, 0.5), (1008, 1, True, 2.0),
                                         (65536, 1, True, 30.0), (4096, 32, False, 30.0)):
        assert dirty_extra(m, nbytes, count, aligned) == pytest.approx(want)
        d = (round_trip(m, nbytes, count, cold=True, dirty=True, aligned=aligned)["total"]
             - round_trip(m, nbytes, count, cold=True, aligned=aligned)["total"])
        assert d == pytest.approx(want)
        assert round_trip(m, nbytes, count, dirty=True) == round_trip(m, nbytes, count)
    assert dirty_extra(M, 1 << 20) == 0.0 and dirty_extra(m.with_values(dirty_cap_ns=0.0), 1 << 20) == 0.0
    with pytest.raises(ValueError, match="at least one byte"):
        dirty_extra(m, 0)


@settings(max_examples=100, deadline=None)
@given(a=st.integers(1, 1 << 18), b=st.integers(1, 1 << 18), count=st.integers(1, 32), aligned=st.booleans())
def test_dirty_extra_grows_with_the_round_and_stays_under_its_cap(a, b, count, aligned):
    from h100lab.sim.latency import dirty_extra

    m = M.with_values(dirty_ns_per_kib=3.3, dirty_cap_ns=41.0)
    lo, hi = sorted((a, b))
    assert 0.0 <= dirty_extra(m, lo, count, aligned) <= dirty_extra(m, hi, count, aligned) <= 41.0


def test_dirty_l2_is_the_records_history():
    """micro.dirty_l2: no clean-out and the step's first ~72 MiB of new lines (coldround pass 0, every latency and
    latency2 record); a clean-out, or a later pass, is clean."""
    assert micro.dirty_l2({"kind": "bulk", "bytes": 4096})
    assert micro.dirty_l2({"bytes": 4096, "count": 1, "pass": 0}) and micro.dirty_l2({"pass": 0, "l2_flush_bytes": 0})
    assert not micro.dirty_l2({"pass": 2}) and not micro.dirty_l2({"pass": 0, "l2_flush_bytes": 256 << 20})


@pytest.mark.skipif(not all(data.available(n) for n in ("l03/stream_sweep", "l03/tma_latency_cold",
                                                        "l03/tma_latency_cold2")), reason="datasets not committed")
def test_the_flushed_cold_rounds_meet_the_goal_with_the_dirty_l2_term():
    """Issue 13: fitted with the dirty-L2 term (the calibration's cold records of >= 4 KiB were measured right after a
    fill), every held-out cold round of l03/tma_latency_cold2 (nothing of it fitted) is within ±10 % of its median —
    76/78 before, the 16 KiB × 4 rounds 10 % slow — and the unflushed l03/tma_latency_cold too (74/78 before); the
    write-back term grows with the round up to its cap (fitted ~3.3 ns per KiB up to ~41 ns)."""
    from h100lab.validation import timing as vt

    tf, _ = vt._fitted(vt.DATASETS["stream"])
    m = tf.latency.model
    assert 0.5 < m.dirty_ns_per_kib < 20.0 and 10.0 < m.dirty_cap_ns < 150.0
    for name in ("l03/tma_latency_cold2", "l03/tma_latency_cold"):
        held = micro.SPLITS["latency_cold"].apply(data.load(name).records)[1]
        rows = micro.cold_round_spread([r for r in held if r.get("fresh", True)], m, tf.latency.clean_kernel)
        assert len(rows) == 78 and all(abs(r["error"]) <= 0.10 for r in rows), name


def test_only_the_16_byte_x2_cold_round_starts_on_its_warm_neighbours_request():
    """Step latency's cursor replayed: the 16 B × 2 cold round's first sample reads only the 64-byte request the
    16 B × 1 warm round had just read (an L2 hit); no other cold round of the step does."""
    rows = micro.first_sample_rereads()
    hits = [(r["bytes"], r["count"]) for r in rows if r["hit"]]
    assert hits == [(16, 2)] and all(r["covered"] <= r["atoms"] for r in rows)


def test_cold_modes_reads_two_modes_and_pairs():
    g = 2.0
    fast, slow = [700] * 2, [900] * 2
    r = dict(bytes=16, count=1, offset=0, cold=True, clock_ghz=g, total_samples=fast + slow + fast + slow)
    w = dict(bytes=16, count=1, offset=0, cold=False, total_ns=200.0)
    (x,) = micro.cold_modes([r, w])
    assert x["fast"] == 0.5 and x["pair_agree"] == 1.0 and x["fast_ns"] == 350 and x["slow_ns"] == 450
    assert x["median_ns"] == 400 and x["one_hit_ns"] == 350      # one more fast sample: the median leaves the gap


def test_dirty_trio_and_issue_cold_rows_on_synthetic_records():
    rec = lambda ns, b=16384: dict(bytes=b, count=1, align=0, touch=0, iters=64, cold_total_ns=ns)
    rows = micro.dirty_trio([rec(500.0), rec(300.0, 1024)], [rec(530.0), rec(300.0, 1024)],
                            [rec(510.0), rec(302.0, 1024)], M.with_values(dirty_ns_per_kib=1.0, dirty_cap_ns=12.0))
    assert [(r["bytes"], r["excess"], r["noise"], r["term"]) for r in rows] == [(16384, 25.0, 10.0, 12.0),
                                                                                 (1024, -1.0, 2.0, 1.0)]
    ic = dict(bytes=16, count=2, offset=16, cold=True, iters=64, l2_flush_bytes=1 << 28, issue_ns_per_copy=70.0,
              total_ns=420.0, **{"pass": 0})
    out = micro.issue_cold_rows([ic], M)
    assert {r["metric"] for r in out} == {"issue_ns_per_copy", "total_ns"}
    p = micro.predict_issue_cold(ic, M)
    assert p == micro.predict_latency(dict(ic, kind="issue"), M, micro.OLD_KERNEL, {("issue", 16, 2, True): 16})


@pytest.mark.skipif(not data.available("l03/tma_issue_cold"), reason="l03/tma_issue_cold is not committed")
def test_issue_cold_and_trio_checks_are_registered_and_pass():
    from h100lab import validation

    titles = {t for t, *_ in micro.ISSUE_COLD_CHECKS} | {t for t, *_ in micro.TRIO_CHECKS}
    checks = [c for c in validation.all_checks() if c.title in titles]
    assert len(checks) == len(titles) == 5
    for c in checks:
        r = c.run(data.load(c.dataset))
        assert r.ok, (c.title, r.note)
    x2 = [x for x in micro.cold_modes(data.load("l03/tma_issue_cold").records) if x["case"] == "16 B × 2 +16"]
    assert len(x2) == 2 and all(0.25 < x["fast"] < 0.5 and x["slow_ns"] - x["fast_ns"] > 60 for x in x2)
