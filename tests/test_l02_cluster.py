"""Lesson 2: cluster shapes, special registers, GPC capacity (cudaOccupancyMaxActiveClusters), placement."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from h100lab.cluster import (CANDIDATE_GROUPING, CANDIDATE_RULE, H200_MEASURED, H200_MEASURED_BLOCKS_PER_SM, RULES,
                             ClusterError, all_special_registers, block_of, blocks_per_sm, candidate_groupings,
                             cluster_capacity, cluster_launch, cta_rank, derivation, gpc_grouping, gpcs_from_clusters,
                             identify, max_active_clusters, place_clusters, place_launch, rank_to_cluster_ctaid,
                             sm_ids, special_registers)
from h100lab.specs import H100_PCIE, H200_SXM

shapes = st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 2)).filter(lambda s: s[0] * s[1] * s[2] <= 16)


# ------------------------------------------------------------------------------------------ shapes

def test_portable_and_nonportable_limits():
    assert cluster_launch(16, 8).num_clusters == 2
    assert cluster_launch((32, 4), (4, 4), non_portable=True).cluster_size == 16
    with pytest.raises(ClusterError, match="over the portable limit of 8"):
        cluster_launch(32, 16)
    with pytest.raises(ClusterError, match="over the maximum of 16"):
        cluster_launch(64, 32, non_portable=True)


@pytest.mark.parametrize("grid,cluster,rule", [
    ((10,), (4,), "gridDim.x = 10 is not a multiple of clusterDim.x = 4"),
    ((8, 3), (2, 2), "gridDim.y = 3 is not a multiple of clusterDim.y = 2"),
    ((8,), (0,), ">= 1"),
    ((8, 1, 1, 1), (2,), "1 to 3 components"),
])
def test_bad_launches_name_the_rule(grid, cluster, rule):
    with pytest.raises(ClusterError, match=re.escape(rule)):
        cluster_launch(grid, cluster)


# -------------------------------------------------------------------------------- special registers

def test_sregs_of_the_h200_probe_shape():
    # grid 4x4x2, cluster 2x2x2 (the shape verified on an H200, hopper-spec-facts §12)
    r = special_registers((3, 1, 1), (4, 4, 2), (2, 2, 2))
    assert r.clusterid == (1, 0, 0) and r.nclusterid == (2, 2, 1)
    assert r.cluster_ctaid == (1, 1, 1) and r.cluster_ctarank == 7 and r.cluster_nctarank == 8
    assert r.is_explicit_cluster
    plain = special_registers(5, 8)
    assert plain.cluster_nctarank == 1 and not plain.is_explicit_cluster and plain.clusterid == (5, 0, 0)


@given(shapes, st.integers(1, 3), st.integers(1, 2), st.integers(1, 2))
def test_rank_and_ctaid_relations(shape, mx, my, mz):
    grid = (shape[0] * mx, shape[1] * my, shape[2] * mz)
    regs = all_special_registers(grid, shape, non_portable=True)
    seen = {}
    for r in regs:
        # %ctaid.d = %clusterid.d * %cluster_nctaid.d + %cluster_ctaid.d
        assert all(r.ctaid[d] == r.clusterid[d] * r.cluster_nctaid[d] + r.cluster_ctaid[d] for d in range(3))
        assert r.cluster_ctarank == cta_rank(r.cluster_ctaid, shape)
        assert rank_to_cluster_ctaid(r.cluster_ctarank, shape) == r.cluster_ctaid
        assert block_of(r.clusterid, r.cluster_ctarank, grid, shape, non_portable=True) == r.ctaid
        seen.setdefault(r.cluster_linear_id, set()).add(r.cluster_ctarank)
    # every cluster holds each rank exactly once
    assert all(s == set(range(shape[0] * shape[1] * shape[2])) for s in seen.values())


def test_rank_is_not_block_id():
    r = special_registers((5, 0), (8, 2), (2, 2))
    assert r.ctaid[0] == 5 and r.cluster_ctarank == 1
    with pytest.raises(ClusterError, match="outside the cluster"):
        rank_to_cluster_ctaid(4, (2, 2))


# ------------------------------------------------------------------------------------------ capacity

def test_reproduces_the_h200_measurement():
    for c, want in H200_MEASURED.items():
        got = max_active_clusters(c, 128, blocks=H200_MEASURED_BLOCKS_PER_SM, non_portable=c > 8)
        assert got == want, (c, got, want)


def test_derivation_rejects_pooled_and_keeps_withheld():
    rows = {r["rule"]: r for r in derivation()}
    assert rows["pooled"]["groupings"] == 0 and rows["pooled"]["predicted"][4] == 264
    assert rows["distinct-sms"]["groupings"] == 0
    assert rows["withheld-sm"]["groupings"] > 0
    assert CANDIDATE_GROUPING in candidate_groupings(H200_MEASURED, 8, CANDIDATE_RULE)
    assert sum(CANDIDATE_GROUPING) == H200_SXM.sm_count


def test_identify_narrows_with_more_data():
    recs = [{"cluster_size": c, "blocks_per_sm": 8, "clusters": v} for c, v in H200_MEASURED.items()]
    many = identify(recs, gpc_counts=(8,))
    assert all(rule == "withheld-sm" for rule, _ in many) and len(many) > 1
    # blocks/SM = 1 separates groupings: clusters of 16 fit only in GPCs with 18 SMs under the candidate rule
    g = (18, 18, 18, 18, 16, 16, 14, 14)
    extra = [{"cluster_size": c, "blocks_per_sm": b, "clusters": sum(CANDIDATE_RULE.clusters(n, b, c) for n in g)}
             for c in (3, 5, 6, 7, 8, 12, 16) for b in (1, 2, 3)]
    assert identify(recs + extra, gpc_counts=(8,)) == [("withheld-sm", g)]


def test_capacity_uses_the_occupancy_calculator():
    assert blocks_per_sm(128, 0) == 16           # warps limit: 64 / 4
    b = blocks_per_sm(256, 60000)
    assert b == 3                                 # hopper-spec-facts §1.3 worked example
    cap = cluster_capacity(2, 256, 60000)
    assert cap.blocks_per_sm == 3 and cap.clusters == sum((n * 3) // 2 for n in CANDIDATE_GROUPING)
    assert cap.assumed and cap.grouping == CANDIDATE_GROUPING


@given(st.integers(1, 16), st.integers(1, 32))
def test_capacity_accounts_for_every_slot(c, b):
    cap = cluster_capacity(c, 128, blocks=b, non_portable=True)
    assert cap.ctas + cap.idle_slots == cap.slots == H200_SXM.sm_count * b
    assert cap.clusters == sum(g.clusters for g in cap.per_gpc)
    # bigger clusters never fit more CTAs
    if c > 1:
        assert cap.ctas <= cluster_capacity(1, 128, blocks=b).ctas


def test_large_clusters_leave_sms_idle():
    small, big = cluster_capacity(2, 128, blocks=1), cluster_capacity(16, 128, blocks=1, non_portable=True)
    assert small.idle_sms == 0
    assert big.idle_sms == 132 - 32 and big.clusters == 2


def test_grouping_sources_and_errors():
    spec = H200_SXM.replace(gpc_sm_counts=(18, 18, 18, 18, 16, 16, 14, 14))
    assert gpc_grouping(spec) == ((18, 18, 18, 18, 16, 16, 14, 14), False)
    with pytest.raises(ClusterError, match="grouping is unknown"):
        gpc_grouping(H100_PCIE)
    with pytest.raises(ClusterError, match="has 130 SMs"):
        gpc_grouping(H200_SXM, (18, 18, 16, 16, 16, 16, 16, 14))
    with pytest.raises(ClusterError, match="portable limit of 8"):
        max_active_clusters(16, 128)
    with pytest.raises(ClusterError, match="maximum of 16"):
        max_active_clusters((4, 4, 2), 128, non_portable=True)
    with pytest.raises(ClusterError, match="unknown GPC rule"):
        cluster_capacity(2, 128, rule="nope")


# ----------------------------------------------------------------------------------------- placement

def test_sm_ids_cover_every_sm_once():
    ids = sm_ids(CANDIDATE_GROUPING)
    flat = sorted(s for g in ids for s in g)
    assert flat == list(range(132))
    assert ids[0][:4] == [0, 1, 16, 17]
    assert [len(g) for g in ids] == list(CANDIDATE_GROUPING)


@given(st.integers(1, 16), st.integers(1, 8))
def test_placement_fills_exactly_the_capacity(c, b):
    cap = cluster_capacity(c, 128, blocks=b, non_portable=True)
    p = place_clusters(cap.clusters + 3, c, b)
    assert len(p.ctas) == cap.ctas and len(p.waiting) == 3
    load = p.sm_load
    assert max(load.values()) <= b
    assert len(p.idle_sms) == cap.idle_sms
    gpc_of = {s: g for g, sms in enumerate(p.sm_ids) for s in sms}
    for k in range(cap.clusters):
        sms = p.cluster_sms(k)
        assert len({gpc_of[s] for s in sms}) == 1                 # one GPC per cluster
        if c <= len(p.usable[gpc_of[sms[0]]]):
            assert len(set(sms)) == c                              # spread over distinct SMs when possible


def test_placement_recovers_the_grouping():
    p = place_clusters(10_000, 8, 1)
    groups = gpcs_from_clusters([p.cluster_sms(k) for k in {c.cluster for c in p.ctas}])
    assert all(set(g) <= set(sms) for g in groups for sms in p.sm_ids if set(g) & set(sms))


def test_place_launch_attaches_block_ids():
    p = place_launch((8, 2), (2, 2), 4)
    blocks = {c.block for c in p.ctas}
    assert len(blocks) == 16
    first = sorted((c for c in p.ctas if c.cluster == 0), key=lambda c: c.rank)
    assert [c.block for c in first] == [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]
    with pytest.raises(ClusterError, match="not a multiple"):
        place_launch((7, 2), (2, 2), 4)


def test_gpcs_from_clusters_union_find():
    assert gpcs_from_clusters([[0, 1], [1, 5], [7, 8], [2]]) == [[0, 1, 5], [7, 8], [2]]
