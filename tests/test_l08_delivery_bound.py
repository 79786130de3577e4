"""The delivery bound of a ping-pong wave out of step as a whole (issue 17): h100lab.design.traffic.lonely_bytes and
fit_lonely_share, h100lab.design.perf.delivery_waves and the ``delivery`` bound of perf.predict — the lonely share's
invariants, its threshold read off the L2 -> SM counters (and what it classifies on the held-out delivery run), the
bound where it binds and nowhere else, and the model with it off as it was."""
from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from h100lab import data
from h100lab.data import Dataset
from h100lab.design import perf, schedule, traffic

needs_counters = pytest.mark.skipif(not (data.available(traffic.L2_DATASET) and data.available(traffic.DELIVERY_DATASET)),
                                    reason="the L2 counter runs are not committed")

waves = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), min_size=1, max_size=60)


@given(wave=waves, window=st.integers(1, 80), a=st.integers(1, 64), b=st.integers(1, 256))
def test_lonely_bytes_lies_between_nothing_and_every_request(wave, window, a, b):
    x = traffic.lonely_bytes(wave, window, a, b)
    assert 0 <= x <= len(wave) * (a + b)
    assert traffic.lonely_bytes(wave, 1, a, b) == len(wave) * (a + b)      # every CTA its own window: all alone
    # a window as wide as the wave: alone only the panels with one sharer in the whole wave
    rows = [m for m, _ in wave]
    cols = [n for _, n in wave]
    alone = sum(a * (rows.count(m) == 1) + b * (cols.count(n) == 1) for m, n in wave)
    assert traffic.lonely_bytes(wave, len(wave), a, b) == alone


def test_lonely_bytes_on_a_hand_counted_wave():
    # tiles (m, n) on CTAs 0..3, windows of 2 CTAs: {0, 1}, {2, 3}
    wave = [(0, 0), (0, 1), (1, 0), (2, 0)]
    # window {0,1}: A row 0 shared (not alone), B cols 0 and 1 alone; window {2,3}: rows 1 and 2 alone, col 0 shared
    assert traffic.lonely_bytes(wave, 2, 10, 100) == 100 + 100 + 10 + 10
    with pytest.raises(ValueError, match="window"):
        traffic.lonely_bytes(wave, 0, 10, 100)


def test_sharers_16_apart_are_half_alone_in_windows_of_20():
    # the row-major ping-pong at 4096³: 16 tile columns, B sharers 16 CTAs apart — in windows of 20 CTAs 12 of 20
    # B reads are alone, the A rows (16 consecutive CTAs) almost never
    f = perf.form("pingpong")
    w = perf.delivery_waves(f, 4096, 4096, 4096, 132, 1, 0, 20)
    assert 0.45 < w[0].lonely < 0.55
    g = perf.delivery_waves(f, 4096, 4096, 4096, 132, 8, 0, 20)
    assert g[0].lonely < 0.05                                             # grouped: B sharers next to each other
    assert all(x.working_set == pytest.approx(38.3e6, rel=0.01) for x in w[:-1])     # a wave's A and B over K: 38 MB


@needs_counters
def test_the_threshold_is_read_off_the_counters_and_classifies_the_held_out_run():
    t = traffic.fit_lonely_share()
    rows = traffic.lonely_rows(traffic.L2_DATASET)
    merged = [r["lonely"] for r in rows if r["delivered"] < traffic.MERGED_BELOW]
    unmerged = [r["lonely"] for r in rows if r["delivered"] > traffic.UNMERGED_ABOVE]
    assert len(rows) == len(merged) + len(unmerged) == 29                   # none in between
    assert max(merged) < t < min(x for x in unmerged if x > max(merged))
    assert t == pytest.approx((max(merged) + min(x for x in unmerged if x > max(merged))) / 2)
    wrong = [r for r in rows if (r["lonely"] > t) != (r["delivered"] > traffic.UNMERGED_ABOVE)]
    assert [r["label"] for r in wrong] == ["8192×8192×8192 pingpong (persistent, 132 CTAs) group 8 raster N"]
    held = traffic.lonely_rows(traffic.DELIVERY_DATASET)
    assert len(held) == 12 and {r["schedule"] for r in held} == {"persistent", "pairs"}
    assert all((r["lonely"] > t) == (r["delivered"] > traffic.UNMERGED_ABOVE) for r in held)


@needs_counters
def test_the_threshold_moves_with_planted_counters():
    ds = data.load(traffic.L2_DATASET)
    recs = copy.deepcopy(ds.records)
    key = "lts__t_sectors_srcunit_tex_op_read.sum"
    w = perf.calibrated().reuse_window
    lonely = lambda r: traffic.lonely_share_of(r["variant"], r.get("schedule", "persistent"), r["M"], r["N"],  # noqa
                                               r["K"], r["group"], r["raster"], w)
    low = high = 0.0
    for r in recs:          # every ping-pong run with sharers 16 CTAs apart now delivers half its bytes: merged
        if r.get("kind") == "l2" and r.get("variant", "").startswith("pingpong") and key in r.get("metrics", {}):
            if lonely(r) < 0.7:
                r["metrics"][key] *= 0.45
                low = max(low, lonely(r))
            else:
                high = lonely(r)
    planted = Dataset(ds.name, ds.meta, recs)
    before = traffic.fit_lonely_share(window=w)
    orig = data.load
    try:
        data.load = lambda name, *a, **k: planted if name == traffic.L2_DATASET else orig(name, *a, **k)
        # the threshold follows the counters up: between the planted runs and the row-major ones at 8192³
        assert before < 0.5 < low < traffic.fit_lonely_share(window=w) < high
    finally:
        data.load = orig


@needs_counters
def test_the_model_has_the_bound_with_its_constants_from_the_counters():
    for p in (perf.calibrated(), perf.calibrated(form_clock=False)):
        assert p.delivery_floor_tb_s == traffic.lrc_ceiling_tb_s()
        # the threshold with the window the constants fit before the bound, which the bound leaves as it was
        assert p.lonely_share == traffic.fit_lonely_share(window=p.reuse_window)
    assert perf.calibrated().lonely_share == traffic.fit_lonely_share()


@needs_counters
def test_the_bound_binds_the_row_major_ping_pong_that_fits_in_l2_and_nothing_grouped():
    p = perf.calibrated()
    off = replace(p, delivery_floor_tb_s=0.0)
    for sched in ("persistent", "pairs"):
        f = perf.form("pingpong", schedule=sched)
        on = perf.predict(f, 4096, 4096, 4096, group=1, raster=0, params=p)
        was = perf.predict(f, 4096, 4096, 4096, group=1, raster=0, params=off)
        assert on.bound == "delivery" and was.bound == "hbm" and on.time_ms < was.time_ms
        # every out-of-step wave takes at least its requested k-slices at the ceiling
        for wv, (lonely, _, _, req, _) in zip(on.waves, perf.delivery_waves(f, 4096, 4096, 4096, 132, 1, 0,
                                                                        p.reuse_window)):
            if lonely > p.lonely_share:
                assert wv.period_ns >= req / (p.delivery_floor_tb_s * 1e3) * (1 - 1e-12)
        g = perf.predict(f, 4096, 4096, 4096, group=8, raster=0, params=p)
        assert "delivery" not in g.waves[0].bounds
        assert g.time_ms == perf.predict(f, 4096, 4096, 4096, group=8, raster=0, params=off).time_ms
    # the cooperative forms are in step: never the bound
    for v in ("cooperative", "cooperative_n128"):
        a = perf.predict(v, 4096, 4096, 4096, group=1, raster=0, params=p)
        assert "delivery" not in a.waves[0].bounds
        assert a.time_ms == perf.predict(v, 4096, 4096, 4096, group=1, raster=0, params=off).time_ms
    # a wave whose working set is over the L2 keeps the window's DRAM reads (8192 x 8192 x 4096: 70 MB)
    f = perf.form("pingpong")
    assert all(x.working_set > 62914560 for x in perf.delivery_waves(f, 8192, 8192, 4096, 132, 1, 0, p.reuse_window)[:-1])
    assert perf.predict(f, 8192, 8192, 4096, group=1, raster=0, params=p).bound == "hbm"


def test_static_and_persistent_orders_agree_where_the_lonely_share_reads_them():
    # delivery_waves reads the persistent order for persistent forms and the static order otherwise: the same tiles
    f = perf.form("pingpong")
    assert list(perf._persistent_order(f, 64, 16, 1, "m")) == list(schedule.static_order(64, 16, 1, "m"))
