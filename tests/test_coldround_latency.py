"""Step ``coldround`` of the timing sweep (l03/tma_latency_cold): cold rounds on lines never read before in the run."""
import io

import pytest

from h100lab import data
from h100lab.measure import timing_sweep as ts

LINE = 128


def _lines(c, stride):
    """The 128-byte lines sample by sample of a plan entry (its sources), and the touched words' lines."""
    src, touch = [], []
    for i in range(c["iters"]):
        s = c["base"] + i * stride + c["align"]
        e = s + c["count"] * c["bytes"]
        src.append(set(range(s // LINE, (e - 1) // LINE + 1)))
        touch.append((c["base"] + i * stride + stride // 2) // LINE)
    return src, touch


@pytest.mark.parametrize("quick", [False, True])
def test_fresh_entries_never_read_a_line_twice_and_the_reread_pass_reuses_pass_0(quick):
    plan, stride, span = ts.coldround_plan(quick)
    cases = ts.coldround_cases(quick)
    assert len(plan) == (ts.COLD_PASSES + 1) * len(cases)
    seen: set = set()
    first = {}
    for c in plan:
        src, touch = _lines(c, stride)
        assert c["count"] * c["bytes"] + c["align"] <= stride // 2          # the touched word is no copied line
        assert not set(touch) & set().union(*src)
        assert c["base"] % stride == 0 and c["base"] + c["iters"] * stride <= span
        key = (c["bytes"], c["count"], c["align"])
        if c["fresh"]:
            assert not set().union(*src) & seen, f"pass {c['pass']} {key} re-reads a line"
            if c["pass"] == 0:
                first[key] = c["base"]
        else:
            assert c["pass"] == 1 and c["base"] == first[key]
        seen |= set().union(*src)
    assert [c["pass"] for c in plan] == sorted(c["pass"] for c in plan)


def test_the_cases_are_latency2s_rounds_plus_single_anchors():
    rounds = {(c["bytes"], c["count"], c["align"]) for c in ts.latency2_cases() if c["count"] > 1}
    cs = ts.coldround_cases()
    assert {(c["bytes"], c["count"], c["align"]) for c in cs if c["count"] > 1} == rounds
    assert {c["bytes"] for c in cs if c["count"] == 1} == {b for b, *_ in rounds}
    assert all(c["touch"] == 1 and c["iters"] == 64 for c in cs)
    assert ts.coldround_plan()[2] <= 24 << 30        # the buffer it allocates on a 141 GB H200


def test_step_on_the_fake_gpu_keeps_every_sample(tmp_path, monkeypatch):
    import test_timing_sweep as tts            # tests/ is on sys.path (pytest's prepend import mode)

    if tts._compiler_reason() is not None:
        pytest.skip(f"NVRTC: {tts._compiler_reason()}")
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    r = ts.Runner(tts.FakeGpu(), quick=True, log=io.StringIO(), buf_bytes=8 << 20)
    assert ts.run(r, ("coldround",), tts.META) == {"coldround": "written"}
    recs = data.load("l03/tma_latency_cold").records
    plan, stride, _ = ts.coldround_plan(True)
    assert len(recs) == len(plan)
    for rec, c in zip(recs, plan):
        assert (rec["pass"], rec["fresh"], rec["bytes"], rec["count"]) == (c["pass"], c["fresh"], c["bytes"], c["count"])
        assert len(rec["cold_total_samples"]) == c["iters"] == rec["cold_total_cycles"]["n"]
        assert rec["cold_total_ns"] > rec["warm_total_ns"] > 0 and rec["ok"] and rec["block_bytes"] == stride
        assert "base" not in rec
        assert rec["l2_flush_bytes"] == ts.COLD_FLUSH_QUICK_BYTES      # the clean-out is on by default


@pytest.mark.parametrize("flush", [True, False])
def test_step_cleans_the_l2_between_its_memset_and_pass_0(flush):
    """Issue 13: step coldround reads (never writes) a separate buffer of >= 4x the 60 MiB L2 after zeroing its
    own buffer and before pass 0's first copy (``flush``, default on); ``flush=False`` is the step as
    l03/tma_latency_cold ran it."""
    import test_timing_sweep as tts

    if tts._compiler_reason() is not None:
        pytest.skip(f"NVRTC: {tts._compiler_reason()}")
    assert ts.COLD_FLUSH_BYTES >= 4 * (60 << 20)
    gpu = tts.FakeGpu()
    r = ts.Runner(gpu, quick=True, log=io.StringIO(), buf_bytes=8 << 20)
    r.clock_ghz()
    gpu.launches.clear()
    recs = r.step_coldround(flush=flush)
    names = [x[0] for x in gpu.launches]
    if flush:
        assert names[0] == "read_v4_plain_u8" and names.count("read_v4_plain_u8") == 1
        assert set(names[1:]) == {"copy_latency"}
        assert all(rec["l2_flush_bytes"] == ts.COLD_FLUSH_QUICK_BYTES for rec in recs)
    else:
        assert set(names) == {"copy_latency"} and all(rec["l2_flush_bytes"] == 0 for rec in recs)
    assert len(recs) == len(ts.coldround_plan(True)[0]) and all(rec["ok"] for rec in recs)


# ------------------------------------------------------------------------------------------------
# the model: lines the run read before (h100lab.sim.latency.l2_kept / kept_median, validation.micro.reuse_of …)

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from h100lab.sim.latency import CopyLatency, kept_median, l2_kept, l2_kept2
from h100lab.validation import micro

MIB = 1 << 20
KEEP = CopyLatency(l2_keep_bytes=20.0 * MIB, l2_keep_width_bytes=5.0 * MIB, cold_spread_ns=80.0)


@settings(max_examples=100, deadline=None)
@given(a=st.floats(0, 200 * MIB), b=st.floats(0, 200 * MIB))
def test_what_the_l2_keeps_falls_with_the_distance(a, b):
    lo, hi = sorted((a, b))
    assert 0.0 <= l2_kept(KEEP, hi) <= l2_kept(KEEP, lo) <= 1.0
    assert l2_kept(KEEP, 20.0 * MIB) == pytest.approx(0.5)
    assert l2_kept(KEEP, math.inf) == 0.0 and l2_kept(CopyLatency(), 0.0) == 0.0      # never read / turned off


def test_l2_kept_rejects_a_negative_distance():
    with pytest.raises(ValueError, match="≥ 0"):
        l2_kept(KEEP, -1.0)


@settings(max_examples=100, deadline=None)
@given(ds=st.lists(st.one_of(st.floats(0, 100 * MIB), st.just(math.inf)), min_size=1, max_size=40),
       cold=st.floats(300, 2000), gap=st.floats(0, 600))
def test_the_median_of_kept_and_cold_samples_lies_between_warm_and_cold(ds, cold, gap):
    warm = cold - gap
    med = kept_median(KEEP, cold, warm, ds)
    assert warm - 1e-9 <= med <= cold + 1e-9
    k = sum(l2_kept(KEEP, d) for d in ds) / len(ds)
    if k >= 0.5:
        assert med == warm
    closer = kept_median(KEEP, cold, warm, [d / 2 for d in ds])        # read more recently: never slower
    assert closer <= med + 1e-9


def test_kept_median_without_reuse_is_the_cold_time():
    assert kept_median(KEEP, 500.0, 300.0, None) == 500.0 == kept_median(KEEP, 500.0, 300.0, [])
    assert kept_median(KEEP, 500.0, 300.0, [math.inf] * 8) == 500.0
    assert kept_median(CopyLatency(), 500.0, 300.0, [0.0] * 8) == 500.0


KEEP2 = CopyLatency(l2_keep_bytes=20.0 * MIB, l2_keep_width_bytes=3.0 * MIB, cold_spread_ns=120.0,
                    l2_keep2_bytes=33.0 * MIB, l2_keep2_width_bytes=8.0 * MIB, kept2_ns=120.0, kept2_spread_ns=30.0)


@settings(max_examples=150, deadline=None)
@given(ds=st.lists(st.one_of(st.floats(0, 100 * MIB), st.just(math.inf)), min_size=1, max_size=40),
       cold=st.floats(300, 2000), gap=st.floats(0, 600), f=st.floats(0.5, 1.0))
def test_the_median_with_a_second_level_lies_between_warm_and_cold_and_falls_with_reuse(ds, cold, gap, f):
    warm = cold - gap
    med = kept_median(KEEP2, cold, warm, ds)
    assert warm - 1e-9 <= med <= cold + 1e-9
    assert med <= kept_median(KEEP2.with_values(l2_keep2_bytes=0.0), cold, warm, ds) + 1e-6   # a second level: never slower
    assert kept_median(KEEP2, cold, warm, [d * f for d in ds]) <= med + 1e-6        # read more recently: never slower
    for d in ds:
        assert l2_kept(KEEP2, d) <= l2_kept2(KEEP2, d) <= 1.0


def test_the_second_level_off_is_the_two_kind_mixture():
    one = CopyLatency(l2_keep_bytes=20.0 * MIB, l2_keep_width_bytes=3.0 * MIB, cold_spread_ns=120.0)
    for ds in ([25.0 * MIB] * 8, [18.0 * MIB] * 4 + [40.0 * MIB] * 4, [math.inf] * 3):
        assert kept_median(one, 700.0, 400.0, ds) == kept_median(one.with_values(kept2_ns=50.0), 700.0, 400.0, ds)
        assert l2_kept2(one, ds[0]) == l2_kept(one, ds[0])


def test_second_level_samples_pull_the_median_to_their_time():
    # every sample at the second level, none warm: the median is the second level's own (warm + kept2_ns)
    ds = [30.0 * MIB] * 32
    m = KEEP2.with_values(l2_keep_bytes=1.0, l2_keep2_bytes=1000.0 * MIB, l2_keep2_width_bytes=1.0 * MIB)
    assert kept_median(m, 700.0, 400.0, ds) == pytest.approx(520.0, abs=0.01)
    # never above the cold samples' own range: a second level slower than DRAM lands with the cold samples
    slow = m.with_values(kept2_ns=900.0)
    assert 700.0 - 120.0 - 1e-6 <= kept_median(slow, 700.0, 400.0, ds) <= 700.0 + 1e-6
    with pytest.raises(ValueError, match="≥ 0"):
        l2_kept2(KEEP2, -1.0)


def test_reuse_distances_count_the_new_lines_read_in_between():
    plan = [dict(bytes=256, count=1, align=0, touch=0, iters=1, base=0, stride=1 << 16),
            dict(bytes=1024, count=2, align=0, touch=0, iters=1, base=1 << 16, stride=1 << 16),
            dict(bytes=512, count=1, align=0, touch=0, iters=1, base=0, stride=1 << 16)]
    d = ts.reuse_distances(plan)
    assert d[0] == [math.inf] and d[1] == [math.inf]
    assert d[2] == [math.inf]                       # lines 2-3 of block 0 were never read
    plan[2]["bytes"] = 256
    # lines 0-1 were read before the 16 new lines of the second entry; line 0 also before line 1
    assert ts.reuse_distances(plan)[2] == [16 * 128.0 + 128.0]


def test_the_replayed_cursor_of_the_committed_latency2_run():
    """latency2's plan replays the committed run's cases; its later rounds re-read lines (the cursor wrapped)."""
    plan = ts.latency2_plan()
    assert [(c["bytes"], c["count"], c["align"], c["touch"]) for c in plan] == \
        [(c["bytes"], c["count"], c["align"], c["touch"]) for c in ts.latency2_cases()]
    byk = {(c["bytes"], c["count"], c["align"]): c for c in plan if c["count"] > 1}
    d = micro.reuse_of(dict(byk[(1024, 32, 16)]))
    assert len(d) == 32 and all(math.isfinite(x) and x < 8 * MIB for x in d)
    assert all(math.isinf(x) for x in micro.reuse_of(dict(byk[(4096, 8, 0)])))
    assert all(math.isinf(x) for x in micro.reuse_of(dict(bytes=16, count=1, align=0, touch=0, iters=64)))
    assert micro.reuse_of(dict(bytes=16, count=3, align=0, touch=1, iters=32)) is None       # not a case it ran


def test_the_coldround_plan_replays_fresh_and_reread():
    plan, stride, _ = ts.coldround_plan()
    for c in plan[:: 7]:
        d = micro.reuse_of(c)
        assert len(d) == c["iters"]
        assert all(math.isinf(x) for x in d) == c["fresh"]


def _synthetic_cold(m, seed=0):
    """Records of l03/tma_latency_cold whose re-read samples are kept with the probability m gives."""
    rng = np.random.default_rng(seed)
    plan, stride, _ = ts.coldround_plan()
    recs = []
    for c in plan:
        warm, cold = 400.0, 700.0
        d = micro.reuse_of(c)
        xs = [warm if rng.random() < l2_kept(m, x) else cold + rng.uniform(-m.cold_spread_ns, m.cold_spread_ns)
              for x in d]
        g = 2.0
        cyc = np.array(xs) * g
        recs.append(dict({k: v for k, v in c.items() if k != "base"}, clock_ghz=g,
                         cold_total_samples=[int(x) for x in cyc], cold_total_ns=float(np.median(xs)),
                         cold_total_cycles=dict(median=float(np.median(cyc)), p10=float(np.percentile(cyc, 10)),
                                                p90=float(np.percentile(cyc, 90)), min=float(cyc.min()), n=len(xs)),
                         warm_total_cycles=dict(median=warm * g, p10=warm * g, p90=warm * g, min=warm * g, n=3),
                         warm_total_ns=warm))
    return recs


def test_fit_l2_keep_recovers_a_known_retention():
    true = CopyLatency(l2_keep_bytes=30.0 * MIB, l2_keep_width_bytes=6.0 * MIB, cold_spread_ns=80.0)
    vals, notes = micro.fit_l2_keep(_synthetic_cold(true))
    assert vals["l2_keep_bytes"] == pytest.approx(true.l2_keep_bytes, rel=0.1)
    assert vals["l2_keep_width_bytes"] == pytest.approx(true.l2_keep_width_bytes, rel=0.35)
    assert vals["cold_spread_ns"] == pytest.approx(80.0, rel=0.15) and "MiB" in notes[0]
    with pytest.raises(ValueError, match="re-read"):
        micro.fit_l2_keep([r for r in _synthetic_cold(true) if r["fresh"]])
    rows = micro.cold_passes(_synthetic_cold(true))
    assert len(rows) == len(ts.coldround_cases()) and all(len(r["medians"]) == ts.COLD_PASSES for r in rows)


# ------------------------------------------------------------------------------------------------
# the committed runs: what the replay and the repeats show

needs_cold = pytest.mark.skipif(not (data.available("l03/tma_latency_cold") and
                                     data.available("l03/tma_latency_clean")), reason="datasets not committed")


@needs_cold
def test_most_held_out_cold_rounds_of_the_clean_run_reread_lines():
    cal, held = micro.SPLITS["latency_clean"].apply(data.load("l03/tma_latency_clean").records)
    rounds = [r for r in held if r["count"] > 1]
    assert sum(micro.rereads(r) for r in rounds) == 22 and len(rounds) == 26
    by = {(r["bytes"], r["count"], r["align"]): r for r in cal}
    assert micro.rereads(by[(4096, 2, 0)]) and not micro.rereads(by[(4096, 8, 0)])


@needs_cold
def test_the_history_repeats_and_fresh_lines_reproduce():
    """latency2 run again with the same cursor gives the same re-read medians; coldround's fresh passes agree run to
    run within 7.5 %, and only a few cases move more than 10 % between passes."""
    a = data.load("l03/tma_latency_clean").records
    b = data.load("l03/tma_latency_clean_repeat").records
    same = [abs(y["cold_total_ns"] / x["cold_total_ns"] - 1) <= 0.10 for x, y in zip(a, b) if x["count"] > 1]
    assert sum(same) >= 42 and len(same) == 46
    c1, c2 = data.load("l03/tma_latency_cold").records, data.load("l03/tma_latency_cold_repeat").records
    assert all(abs(y["cold_total_ns"] / x["cold_total_ns"] - 1) < 0.08 for x, y in zip(c1, c2) if x["fresh"])
    assert sum(r["spread"] > 0.10 for r in micro.cold_passes(c1)) <= 6


@needs_cold
def test_the_first_fresh_pass_is_slower_for_copies_of_4_kib_and_more():
    """In both committed runs the first fresh pass (right after the step zeroed its buffer) lands copies of ≥ 4 KiB
    later than passes 2 and 3 do (half the cases by more than 5 %), copies under 4 KiB not (none or one case)."""
    for name in ("l03/tma_latency_cold", "l03/tma_latency_cold_repeat"):
        rows = micro.cold_passes(data.load(name).records)
        assert all(r["passes"] == [0, 2, 3] for r in rows)
        big = [r["first"] for r in rows if r["bytes"] >= 4096]
        small = [r["first"] for r in rows if r["bytes"] < 4096]
        assert len(big) == 20 and sum(x > 0.05 for x in big) >= 10 and np.median(big) > 0.04
        assert sum(x > 0.05 for x in small) <= 1 and abs(np.median(small)) < 0.01


@pytest.mark.skipif(not data.available("l03/tma_latency_cold_passes"), reason="l03/tma_latency_cold_passes not committed")
def test_the_first_pass_excess_follows_the_memset_not_the_place_nor_the_warm_up():
    """l03/tma_latency_cold_passes: the step four times in one process. Runs 1 and 2 (the GPU busy just before) still
    land the first pass's ≥ 4 KiB copies later; run 3 (first pass on the buffer's last third, third pass on its first
    third) too, and its third pass is not slow: the excess follows the time since the step's memset."""
    rows = {r["run"]: r for r in micro.pass_excess(data.load("l03/tma_latency_cold_passes").records)}
    assert sorted(rows) == [0, 1, 2, 3] and [rows[k]["swapped"] for k in range(4)] == [False, False, False, True]
    for r in rows.values():
        assert r["n"] == 20 and r["median"][0] > 0.03 and r["over"][0] >= 8
        assert r["median"][2] < 0 and r["median"][3] < 0 and r["over"][2] == r["over"][3] == 0
    small = micro.pass_excess(data.load("l03/tma_latency_cold").records, min_bytes=16)
    assert small[0]["median"][0] < rows[0]["median"][0]


COLD2 = ("l03/tma_latency_cold2", "l03/tma_latency_cold2_noflush", "l03/tma_latency_cold2_repeat")


@pytest.mark.skipif(not all(data.available(n) for n in COLD2), reason="l03/tma_latency_cold2 runs not committed")
def test_the_l2_clean_out_removes_the_first_pass_excess():
    """Device request coldflush: the step three times in one process, with the L2 clean-out (runs 0 and 2) and
    without it (run 1, between them). The flushed runs' first pass is not slower for copies >= 4 KiB (median within
    ±1 %, at most 3 of 20 cases > 5 %); the control's is (+6.2 %, 15 of 20): the memset's dirty L2 lines."""
    rows = {n: micro.pass_excess(data.load(n).records)[0] for n in COLD2}
    for n in COLD2:
        recs = data.load(n).records
        flushed = data.load(n).meta["flush"]
        assert all(r["l2_flush_bytes"] == (ts.COLD_FLUSH_BYTES if flushed else 0) and r["ok"] for r in recs)
        assert flushed == (n != "l03/tma_latency_cold2_noflush")
    ctl = rows["l03/tma_latency_cold2_noflush"]
    assert ctl["n"] == 20 and ctl["median"][0] > 0.05 and ctl["over"][0] >= 12
    for n in ("l03/tma_latency_cold2", "l03/tma_latency_cold2_repeat"):
        r = rows[n]
        assert r["n"] == 20 and abs(r["median"][0]) < 0.01 and r["over"][0] <= 3
    assert sum(r["spread"] > 0.10 for r in micro.cold_passes(data.load("l03/tma_latency_cold2").records)) == 0


def test_the_old_kernels_cold_rounds_share_dram_requests_too():
    m = CopyLatency(dram_extra_ns=200.0)
    shared = micro.predict_latency(dict(kind="issue", bytes=16, count=8, cold=True), m,
                                   align={("issue", 16, 8, True): 112})["total_ns"]
    from h100lab.sim.latency import OLD_KERNEL, round_trip

    unshared = round_trip(m, 16, 8, cold=True, tlb=False, aligned=False, kernel=OLD_KERNEL)["total"]
    warm = round_trip(m, 16, 8, aligned=False, kernel=OLD_KERNEL)["total"]
    assert micro.fresh_copy(16, 8, 112) == 5 and warm < shared < unshared


@needs_cold
def test_the_retention_fitted_on_the_committed_reread_pass():
    cal, _ = micro.SPLITS["latency_cold"].apply(data.load("l03/tma_latency_cold").records)
    vals, notes = micro.fit_l2_keep(cal)
    assert 10 * MIB < vals["l2_keep_bytes"] < 40 * MIB and vals["l2_keep_width_bytes"] < 10 * MIB
    assert 50 < vals["cold_spread_ns"] < 250
    # the second level (re-read copies >= 4 KiB below every fresh sample but 1 %): further than the first, ~half the
    # DRAM part over warm
    assert vals["l2_keep_bytes"] < vals["l2_keep2_bytes"] < 60 * MIB
    assert 60 < vals["kept2_ns"] < 180 and 0 < vals["kept2_spread_ns"] < vals["kept2_ns"]
    assert "second level" in notes[1]


@needs_cold
def test_the_reread_pass_shows_a_second_level():
    """l03/tma_latency_cold's re-read samples of copies >= 4 KiB that miss the warm time by > 75 ns: those read
    18-32 MiB before land mostly below every fresh sample of those sizes but 1 %; those read > 55 MiB before do not."""
    cal, _ = micro.SPLITS["latency_cold"].apply(data.load("l03/tma_latency_cold").records)
    pts, mid, cut = micro.reread_levels(cal)
    near = [k for d, k in pts if 18 * MIB <= d <= 32 * MIB]
    far = [k for d, k in pts if d > 55 * MIB]
    assert sum(near) > 0.6 * len(near) and sum(far) < 0.05 * len(far)
    assert 75 <= min(mid) and max(mid) < cut


# ------------------------------------------------------------------------------------------------
# device request cold13: step latency2 with the L2 clean-out, step issuecold (l03_tma_latency.cu's 16-byte cold rounds)

@pytest.mark.parametrize("flush", [True, False])
def test_latency2_cleans_the_l2_after_the_fill(flush):
    """step latency2(flush=True) zeroes a clean-out buffer, fills the source (again, when an earlier step already
    did), then reads the clean-out buffer before its first copy; off (the default) it is the step as
    l03/tma_latency_clean ran it. Every record says how many bytes were read; flushed runs keep every cold sample."""
    import test_timing_sweep as tts

    if tts._compiler_reason() is not None:
        pytest.skip(f"NVRTC: {tts._compiler_reason()}")
    gpu = tts.FakeGpu()
    r = ts.Runner(gpu, quick=True, log=io.StringIO(), buf_bytes=8 << 20)
    r.clock_ghz()
    r.buffers()                    # an earlier step filled the source: the clean-out fills it again
    gpu.launches.clear()
    recs = r.step_latency2(flush=flush)
    names = [x[0] for x in gpu.launches]
    if flush:
        assert names[:2] == ["fill_index", "read_v4_plain_u8"] and set(names[2:]) == {"copy_latency"}
        assert all(rec["l2_flush_bytes"] == ts.COLD_FLUSH_QUICK_BYTES for rec in recs)
        assert all(len(rec["cold_total_samples"]) == rec["iters"] for rec in recs)
    else:
        assert set(names) == {"copy_latency"} and all(rec["l2_flush_bytes"] == 0 for rec in recs)
    assert len(recs) == len(ts.latency2_cases(True)) and all(rec["ok"] for rec in recs)


def test_issuecold_keeps_every_sample_at_its_offset():
    """step issuecold: each shape cold then warm, in two passes (the second reversed), every sample kept; a cold
    case's first source lies its shape's offset past a 128-byte line, the warm case reads it again."""
    import test_timing_sweep as tts

    if tts._compiler_reason() is not None:
        pytest.skip(f"NVRTC: {tts._compiler_reason()}")
    gpu = tts.FakeGpu()
    r = ts.Runner(gpu, quick=True, log=io.StringIO(), buf_bytes=8 << 20)
    recs = r.step_issuecold()
    cases = ts.issuecold_cases(True)
    assert len(recs) == len(cases) and all(rec["ok"] for rec in recs)
    assert [(c["bytes"], c["count"], c["offset"]) for c in cases if c["pass"] == 1] == \
        [(c["bytes"], c["count"], c["offset"]) for c in cases if c["pass"] == 0][::-1]
    for rec in recs:
        assert rec["first"] % 128 == rec["offset"] and rec["l2_flush_bytes"] == ts.COLD_FLUSH_QUICK_BYTES
        assert len(rec["total_samples"]) == rec["iters"] - (0 if rec["cold"] else 1) == rec["total_cycles"]["n"]
    for cold, warm in zip(recs[::2], recs[1::2]):
        assert cold["cold"] and not warm["cold"] and cold["first"] == warm["first"]
    assert len(ts.issuecold_cases()) == 4 * len(ts.ISSUECOLD_SHAPES)
    assert sum(c["iters"] * ts.COLD_STRIDE for c in ts.issuecold_cases() if c["cold"]) < ts.BUF_BYTES
