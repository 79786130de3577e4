"""h100lab.design.schedule.l2_reuse with an L2 capacity: the rules of slice_loads and panel_loads, the launch
rounds, the fixed point, and the properties the estimate must keep (hypothesis): DRAM bytes between the distinct
panels and no reuse at all, monotone in the L2 size, the CTAs' spread and the rounds' lag, unlimited capacity (or
lockstep, the default) = the distinct panels of the estimate without capacity."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from h100lab.design import schedule
from h100lab.specs import H200_SXM

orders = st.builds(lambda tm, tn, g, r: schedule.static_order(tm, tn, g, r),
                   st.integers(1, 24), st.integers(1, 24), st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from("mn"))
tiles = st.sampled_from([(64, 256), (128, 256), (128, 128)])
ks = st.sampled_from([256, 1024, 4096, 8192])
l2s = st.floats(2.0 ** 16, 2.0 ** 28)
spreads = st.floats(0.0, 1.0)
lags = st.floats(0.0, 2.0)


def _distinct_bytes(e, bm, bn, K, eb=2):
    return sum(a * bm + b * bn for a, b in e.distinct) * K * eb


@given(st.integers(1, 40), st.floats(0.0, 2.0))
def test_slice_loads_between_one_and_users(users, reach):
    n = schedule.slice_loads(users, reach)
    assert 1.0 <= n <= users
    if users == 1 or reach >= 1:
        assert n == 1.0
    elif (users - 1) * (1 - reach) ** users > 1e-12:
        assert n > 1.0


@given(st.integers(2, 40), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_slice_loads_falls_as_the_slice_stays_longer(users, r1, r2):
    lo, hi = sorted((r1, r2))
    assert schedule.slice_loads(users, hi) <= schedule.slice_loads(users, lo)


def test_slice_loads_matches_the_spacings_of_uniform_points():
    # every gap of 4 uniform points in a unit window exceeds 0.1 with probability 0.9^4; a Monte-Carlo check of
    # the rule (seeded): 1 + the count of consecutive gaps longer than the reach
    import numpy as np
    rng = np.random.default_rng(7)
    pts = np.sort(rng.random((200_000, 4)), axis=1)
    mc = 1 + (np.diff(pts, axis=1) > 0.1).sum(axis=1).mean()
    assert schedule.slice_loads(4, 0.1) == pytest.approx(1 + 3 * 0.9 ** 4)
    assert mc == pytest.approx(schedule.slice_loads(4, 0.1), rel=5e-3)
    assert schedule.slice_loads(4, 0.0) == 4 and schedule.slice_loads(1, 0.0) == 1


@settings(max_examples=60, deadline=None)
@given(orders, st.integers(1, 40), tiles, ks, l2s, spreads, lags, st.sampled_from([1, 2, 16]))
def test_dram_between_distinct_panels_and_no_reuse(order, ctas, tile, K, l2, spread, lag, rc):
    bm, bn = tile
    e = schedule.l2_reuse(order, ctas, bm, bn, K, l2_bytes=l2, spread=spread, lag=lag, round_ctas=rc)
    distinct = _distinct_bytes(e, bm, bn, K)
    assert distinct * (1 - 1e-12) <= e.dram <= e.requested * (1 + 1e-12)
    assert 0 <= e.hit_rate < 1 and len(e.per_wave) == len(e.distinct) == -(-len(order) // ctas)
    for (a, b), (da, db), w in zip(e.per_wave, e.distinct, range(0, len(order), ctas)):
        n = len(order[w:w + ctas])
        assert da - 1e-9 <= a <= n + 1e-9 and db - 1e-9 <= b <= n + 1e-9


@settings(max_examples=60, deadline=None)
@given(orders, st.integers(1, 40), tiles, ks, l2s, l2s, spreads, lags)
def test_more_l2_never_more_dram(order, ctas, tile, K, l2a, l2b, spread, lag):
    small, big = sorted((l2a, l2b))
    a = schedule.l2_reuse(order, ctas, *tile, K, l2_bytes=small, spread=spread, lag=lag)
    b = schedule.l2_reuse(order, ctas, *tile, K, l2_bytes=big, spread=spread, lag=lag)
    assert b.dram <= a.dram * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(orders, st.integers(1, 40), tiles, ks, l2s, spreads, lags, lags)
def test_more_lag_never_less_dram(order, ctas, tile, K, l2, spread, g1, g2):
    lo, hi = sorted((g1, g2))
    a = schedule.l2_reuse(order, ctas, *tile, K, l2_bytes=l2, spread=spread, lag=lo, round_ctas=2)
    b = schedule.l2_reuse(order, ctas, *tile, K, l2_bytes=l2, spread=spread, lag=hi, round_ctas=2)
    assert a.dram <= b.dram * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(orders, st.integers(1, 40), tiles, ks, l2s, spreads, spreads)
def test_wider_spread_never_less_dram(order, ctas, tile, K, l2, s1, s2):
    lo, hi = sorted((s1, s2))
    a = schedule.l2_reuse(order, ctas, *tile, K, l2_bytes=l2, spread=lo, lag=0.05, round_ctas=4)
    b = schedule.l2_reuse(order, ctas, *tile, K, l2_bytes=l2, spread=hi, lag=0.05, round_ctas=4)
    assert a.dram <= b.dram * (1 + 1e-9)


def _distinct_only(order, ctas, bm, bn, K, eb=2):
    # the estimate before capacity: every distinct panel of a wave once (written out independently)
    out = []
    for w in range(0, len(order), ctas):
        wave = order[w:w + ctas]
        out.append((len({t[0] for t in wave}), len({t[1] for t in wave})))
    return out


@settings(max_examples=60, deadline=None)
@given(orders, st.integers(1, 40), tiles, ks, spreads, lags)
def test_unlimited_l2_or_lockstep_reads_each_distinct_panel_once(order, ctas, tile, K, spread, lag):
    bm, bn = tile
    for e in (schedule.l2_reuse(order, ctas, bm, bn, K, l2_bytes=math.inf, spread=spread, lag=lag),
              schedule.l2_reuse(order, ctas, bm, bn, K, l2_bytes=1.0),
              schedule.l2_reuse(order, ctas, bm, bn, K)):
        assert e.per_wave == e.distinct == _distinct_only(order, ctas, bm, bn, K)
        assert e.per_wave == e.distinct and all(isinstance(x, int) for w in e.per_wave for x in w)
        assert e.dram == _distinct_bytes(e, bm, bn, K)


@settings(max_examples=40, deadline=None)
@given(orders, st.integers(1, 40), tiles, ks)
def test_a_tiny_l2_with_full_spread_reads_almost_every_tile(order, ctas, tile, K):
    # C → 0: every gap is longer than the reach, so every tile reads its own panels (no reuse at all)
    for kw in (dict(spread=1.0), dict(lag=1.0, round_ctas=1)):
        e = schedule.l2_reuse(order, ctas, *tile, K, l2_bytes=1e-6, **kw)
        assert e.dram == pytest.approx(e.requested, rel=1e-6)


def test_the_default_l2_is_the_h200s_and_two_halves():
    order = schedule.static_order(128, 32, 1)
    e = schedule.l2_reuse(order, 132, 64, 256, 8192, spread=0.5)
    assert e.capacity == H200_SXM.l2_bytes / 2 and e.spread == 0.5
    same = schedule.l2_reuse(order, 132, 64, 256, 8192, l2_bytes=H200_SXM.l2_bytes, partitions=2, spread=0.5)
    assert same == e
    one = schedule.l2_reuse(order, 132, 64, 256, 8192, partitions=1, spread=0.5)
    assert one.dram <= e.dram


def test_the_signature_of_today_still_works():
    # perf.py's call: positional (order, ctas, bm, bn, K, elem_bytes); per_wave as (A, B) panel reads
    e = schedule.l2_reuse(schedule.static_order(64, 32, 8), 132, 128, 256, 8192, 2)
    assert len(e.per_wave) == 16 and len(e.per_wave[0]) == 2
    assert e.requested == 2048 * (128 + 256) * 8192 * 2


@pytest.mark.parametrize("kw", [dict(l2_bytes=0), dict(l2_bytes=-1.0), dict(spread=-0.1), dict(spread=1.5),
                                dict(partitions=0), dict(lag=-0.5), dict(round_ctas=0)])
def test_bad_input_names_the_rule(kw):
    with pytest.raises(schedule.ScheduleError):
        schedule.l2_reuse(schedule.static_order(4, 4, 1), 4, 128, 256, 1024, **kw)


def test_row_major_loses_more_reuse_than_grouped_when_spread():
    # 8192³ ping-pong tiles: row-major waves share each B panel among 4 tiles, grouped ones among 8
    row = schedule.l2_reuse(schedule.static_order(128, 32, 1), 132, 64, 256, 8192, spread=0.5)
    grp = schedule.l2_reuse(schedule.static_order(128, 32, 8), 132, 64, 256, 8192, spread=0.5)
    assert row.hit_rate < grp.hit_rate - 0.2


def test_launch_rounds_follow_the_placement():
    assert [schedule.launch_round(c) for c in (0, 15, 16, 31, 32, 131)] == [0, 0, 1, 1, 2, 8]
    assert schedule.launch_round(5, 2) == 2
    with pytest.raises(schedule.ScheduleError):
        schedule.launch_round(-1)


@given(st.lists(st.integers(0, 9), min_size=1, max_size=30), st.floats(0.0, 1.0), st.floats(0.01, 1.0))
def test_panel_loads_lag_zero_is_one_cluster_and_spread_zero_counts_clusters(rounds, reach, spread):
    assert schedule.panel_loads(rounds, reach, spread, 0.0) == pytest.approx(
        schedule.slice_loads(len(rounds), reach / spread))
    rs = sorted(rounds)
    clusters = 1 + sum(b - a > reach / 0.25 for a, b in zip(rs, rs[1:]))
    assert schedule.panel_loads(rounds, reach, 0.0, 0.25) == clusters


def test_rows_sharing_b_rounds_apart_lose_it_with_enough_lag():
    # 8192³ ping-pong tiles on 132 CTAs: row-major puts each B panel's 4 tiles 32 CTAs (2 rounds) apart, grouped
    # by 8 along M puts them on neighbouring CTAs (one round)
    row = schedule.static_order(128, 32, 1)
    grp = schedule.static_order(128, 32, 8)
    reach = H200_SXM.l2_bytes / 2 / (133 * 2 ** 20)      # C / D of a row-major wave (5 A + 32 B panels)
    lag = reach                                          # one round apart: still a hit; two: a miss
    r = schedule.l2_reuse(row, 132, 64, 256, 8192, lag=lag)
    g = schedule.l2_reuse(grp, 132, 64, 256, 8192, lag=lag)
    # row-major: the first wave's 132 tiles each read their own B panel (4 or 5 per column, 2 rounds apart)
    assert r.per_wave[0][1] == 132 and g.per_wave[0] == g.distinct[0]


# ---------------------------------------------------------------- against the H200 (data/l08/gemm_orders)

def _orders():
    from h100lab import data
    if not data.available("l08/gemm_orders"):
        pytest.skip("data/l08/gemm_orders is not committed")
    return data.load("l08/gemm_orders")


def _b_stride(tm, tn, group, raster, ctas=132):
    """The smallest CTA distance between two tiles of the first wave that share a B panel (0: none share)."""
    wave = schedule.static_order(tm, tn, group, raster)[:ctas]
    by = {}
    for c, (m, n) in enumerate(wave):
        by.setdefault(n, []).append(c)
    gaps = [b - a for cs in by.values() for a, b in zip(cs, cs[1:])]
    return min(gaps) if gaps else 0


def test_the_orders_dataset_has_its_metadata_and_every_run():
    ds = _orders()
    for k in ("gpu", "driver", "cuda", "date", "command"):
        assert ds.meta[k]
    assert ds.meta["complete"] and all(r["ok"] for r in ds.records)
    assert sum(r["variant"] != "cublas" for r in ds.records) == 156


def test_pingpong_order_cost_follows_the_cta_distance_of_b_sharers_not_the_panel_count():
    ds = _orders()
    for K in (4096, 8192, 16384):
        runs = {(r["group"], r["raster"]): r["median_ms"] for r in ds.records
                if r.get("variant") == "pingpong" and r.get("schedule") == "persistent" and r["M"] == 8192
                and r["K"] == K and r["grid"] == 132}
        fastest = min(runs.values())
        for (g, r), ms in runs.items():
            stride = _b_stride(128, 32, g, "mn"[r])
            if stride <= 2:                   # B sharers on neighbouring CTAs: near the fastest order
                assert ms < 1.2 * fastest, (K, g, r, ms, fastest)
            if stride >= 16:                  # 16 or 32 CTAs apart: at least 1.4x the fastest
                assert ms > 1.4 * fastest, (K, g, r, ms, fastest)
        # grouped by 2 along M and row-major touch all 32 B panels per wave (and 5 or 6 A panels): the lockstep
        # estimate puts them within 3 % of each other; only the CTA distances of their B sharers differ
        e1 = schedule.l2_reuse(schedule.static_order(128, 32, 1), 132, 64, 256, K)
        e2 = schedule.l2_reuse(schedule.static_order(128, 32, 2), 132, 64, 256, K)
        assert e1.per_wave[0][1] == e2.per_wave[0][1] == 32 and abs(e1.dram / e2.dram - 1) < 0.03
        assert runs[(1, 0)] > 1.4 * runs[(2, 0)]
        assert _b_stride(128, 32, 1, "m") == 32 and _b_stride(128, 32, 2, "m") == 1


# ---------------------------------------------------------------- the launch skew (data/l08/gemm_skew)

def _skew():
    from h100lab import data
    if not data.available("l08/gemm_skew"):
        pytest.skip("data/l08/gemm_skew is not committed")
    return data.load("l08/gemm_skew")


def test_the_ctas_of_a_persistent_launch_start_together():
    # CTA grid / 2 starts within a thousandth of the run of CTA 0, on every grid from 2 to 132 CTAs: no launch lag
    # between rounds of CTAs that could hold a panel's sharers apart
    ds = _skew()
    assert ds.meta["complete"] and len(ds.records) >= 10 and all(r["ok"] for r in ds.records)
    for r in ds.records:
        run_ns = r["ctas"][0]["end_ns"]
        assert abs(r["start_skew_ns"]) <= 1e-3 * run_ns, r
    assert {r["grid"] for r in ds.records} >= {2, 16, 32, 64, 132}
    # a plain launch of two CTAs puts them on two TPCs (SMs 2t and 2t + 1 form TPC t), unlike clusters of two
    (two,) = [r for r in ds.records if r["grid"] == 2]
    assert len({c["smid"] // 2 for c in two["ctas"]}) == 2


def test_row_major_ctas_stay_in_step():
    # 8192³, 132 CTAs, row-major: CTA 66 starts each of its tiles within 1 % of a tile of CTA 0 (the grouped order
    # drifts more) — the row-major wave does not come apart
    ds = _skew()
    rec = {(r["K"], r["group"]): r for r in ds.records if r["grid"] == 132}
    rm, grouped = rec[(8192, 1)], rec[(8192, 8)]
    tile_ns = rm["ctas"][0]["end_ns"] / len(rm["tile_drift_ns"])
    assert max(map(abs, rm["tile_drift_ns"])) < 0.01 * tile_ns
    assert max(map(abs, grouped["tile_drift_ns"])) > max(map(abs, rm["tile_drift_ns"]))
