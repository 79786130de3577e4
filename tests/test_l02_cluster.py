"""Lesson 2: cluster shapes, special registers, GPC capacity (cudaOccupancyMaxActiveClusters), placement."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from h100lab.cluster import (H200_CGA, H200_MEASURED, H200_MEASURED_BLOCKS_PER_SM, H200_RULE, RULES, CgaLayout,
                             ClusterError, all_special_registers, block_of, blocks_per_sm, candidate_layouts,
                             cga_layout, cluster_capacity, cluster_launch, cta_rank, derivation, gpcs_from_clusters,
                             identify, layout_from_domains, max_active_clusters, place_clusters, place_launch,
                             rank_to_cluster_ctaid, special_registers)
from h100lab.specs import H100_PCIE, H100_SXM, H200_SXM

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


def test_h200_layout_and_rule():
    assert H200_CGA.domains == (18, 18, 16, 16, 16, 16, 16, 8, 2, 2, 2, 2) and H200_CGA.sm_count == 132
    assert len(H200_CGA.vgpc_sms) == H200_SXM.physical_gpc_count
    assert H200_CGA.fits_gpcs(H200_SXM.gpc_sm_counts)
    assert H200_CGA.fits_gpcs((18, 18, 18, 16, 16, 16, 16, 14))           # the singletons spread over two GPCs
    assert not H200_CGA.fits_gpcs((18,) * 7 + (6,))                       # a GPC below its skyline of 8 SMs
    assert H200_RULE.name == "distinct-sms-cap8" and H200_RULE.max_ctas_per_sm == 8
    # a singleton TPC takes clusters of 1 and 2 only; the 8-SM virtual GPC no cluster over 8
    assert [H200_RULE.clusters(2, 8, c) for c in (1, 2, 3)] == [16, 8, 0]
    assert H200_RULE.clusters(8, 8, 9) == 0 and H200_RULE.clusters(18, 32, 1) == 18 * 8


def test_sm_ids_are_the_h200_numbering():
    ids = H200_CGA.sm_ids()
    assert sorted(s for g in ids for s in g) == list(range(132))
    assert ids[7][:4] == [0, 1, 16, 17]               # the 8-SM virtual GPC has the lowest id: SMs 0, 1 first
    assert ids[0][:2] == [12, 13] and ids[0][-2:] == [120, 121]
    assert ids[8:] == [[124, 125], [126, 127], [128, 129], [130, 131]]   # singletons last
    assert [len(g) for g in ids] == list(H200_CGA.domains)


@given(st.lists(st.integers(1, 9), min_size=1, max_size=8), st.integers(0, 6))
def test_sm_ids_cover_every_sm_once(tpcs, singles):
    lay = CgaLayout(tuple(2 * t for t in tpcs), singles)
    ids = lay.sm_ids()
    assert sorted(s for g in ids for s in g) == list(range(lay.sm_count))
    assert layout_from_domains([len(g) for g in ids]).sm_count == lay.sm_count


def test_layout_errors():
    with pytest.raises(ValueError, match="whole TPCs"):
        CgaLayout((18, 17))
    with pytest.raises(ValueError, match=">= 0"):
        CgaLayout((18,), -1)
    with pytest.raises(ValueError, match="at least one SM"):
        layout_from_domains([4, 0])
    assert layout_from_domains([2, 2]).vgpc_sms == (2, 2)


def test_identify_finds_one_rule_and_layout():
    recs = [{"cluster_size": c, "blocks_per_sm": 8, "clusters": v} for c, v in H200_MEASURED.items()]
    found = identify(recs)
    assert {rule for rule, _ in found} == {"withheld-sm", "withheld-sm-cap8", "distinct-sms", "distinct-sms-cap8"}
    assert len(found) > 4 and ("distinct-sms-cap8", H200_CGA) in found     # five numbers leave several answers
    # more CTAs per SM than 8 separate the cap; 1 CTA/SM and odd sizes the layout
    extra = [{"cluster_size": c, "blocks_per_sm": b, "clusters": max_active_clusters(c, 128, blocks=b, non_portable=True)}
             for c in (1, 3, 5, 9, 12, 16) for b in (1, 3, 16)]
    assert identify(recs + extra) == [("distinct-sms-cap8", H200_CGA)]
    assert identify(recs + extra + [{"cluster_size": 1, "blocks_per_sm": None, "clusters": 0}]) == \
        [("distinct-sms-cap8", H200_CGA)]                               # records without an answer are skipped
    with pytest.raises(ValueError, match="at least one measured record"):
        identify([])


def test_derivation_rejects_pooled_and_withheld():
    rows = {r["rule"]: r for r in derivation()}
    assert rows["pooled"]["layouts"] == 0 and rows["pooled"]["predicted"][4] == 264
    assert rows["distinct-sms-cap8"]["layouts"] == 1 and rows["distinct-sms-cap8"]["example"] == H200_CGA
    assert rows["withheld-sm"]["predicted"] != dict(H200_MEASURED)
    assert len(candidate_layouts(singletons=(0,))) < len(candidate_layouts())


def test_capacity_uses_the_occupancy_calculator():
    assert blocks_per_sm(128, 0) == 16           # warps limit: 64 / 4
    b = blocks_per_sm(256, 60000)
    assert b == 3                                 # hopper-spec-facts §1.3 worked example
    cap = cluster_capacity(2, 256, 60000)
    assert cap.blocks_per_sm == 3 and cap.clusters == sum((n * 3) // 2 for n in H200_CGA.domains)
    assert not cap.assumed and cap.layout == H200_CGA
    assert cluster_capacity(1, 128).clusters == 132 * 8      # 16 CTAs/SM by occupancy, 8 counted for clusters


@given(st.integers(1, 16), st.integers(1, 32))
def test_capacity_accounts_for_every_slot(c, b):
    cap = cluster_capacity(c, 128, blocks=b, non_portable=True)
    assert cap.ctas + cap.idle_slots == cap.slots == H200_SXM.sm_count * b
    assert cap.clusters == sum(g.clusters for g in cap.per_domain)
    assert all(g.clusters == 0 for g in cap.per_domain if g.singleton and c > 2)
    # bigger clusters never fit more CTAs
    if c > 1:
        assert cap.ctas <= cluster_capacity(1, 128, blocks=b).ctas


def test_large_clusters_leave_sms_idle():
    small, big = cluster_capacity(2, 128, blocks=1), cluster_capacity(16, 128, blocks=1, non_portable=True)
    assert small.idle_sms == 0 and small.clusters == 66
    assert big.clusters == 7 and big.idle_sms == 132 - 7 * 16          # the H200's full wave left 20 SMs idle


def test_layout_sources_and_errors():
    assert cga_layout(H200_SXM) == (H200_CGA, False)
    assert cga_layout(H100_SXM) == (H200_CGA, True)                     # same 132-SM GH100 configuration, assumed
    lay, assumed = cga_layout(H100_PCIE.replace(gpc_sm_counts=(16,) * 6 + (18,)))
    assert assumed and lay.domains == (18,) + (16,) * 6
    assert cga_layout(H200_SXM, (18, 18, 16, 16, 16, 16, 16, 16))[0].singleton_tpcs == 0
    with pytest.raises(ClusterError, match="cluster domains are unknown"):
        cga_layout(H100_PCIE)
    with pytest.raises(ClusterError, match="has 130 SMs"):
        cga_layout(H200_SXM, (18, 18, 16, 16, 16, 16, 16, 14))
    with pytest.raises(ClusterError, match="bad grouping"):
        cga_layout(H200_SXM, (18, 0))
    with pytest.raises(ClusterError, match="portable limit of 8"):
        max_active_clusters(16, 128)
    with pytest.raises(ClusterError, match="maximum of 16"):
        max_active_clusters((4, 4, 2), 128, non_portable=True)
    with pytest.raises(ClusterError, match="unknown GPC rule"):
        cluster_capacity(2, 128, rule="nope")
    assert cluster_capacity(4, 128, blocks=8, rule="pooled").clusters == 264


# ----------------------------------------------------------------------------------------- placement

@given(st.integers(1, 16), st.integers(1, 16))
def test_placement_fills_exactly_the_capacity(c, b):
    cap = cluster_capacity(c, 128, blocks=b, non_portable=True)
    p = place_clusters(cap.clusters + 3, c, b)
    assert len(p.ctas) == cap.ctas and len(p.waiting) == 3
    load = p.sm_load
    assert max(load.values()) <= min(b, 8)
    assert len(p.idle_sms) == cap.idle_sms
    dom_of = {s: g for g, sms in enumerate(p.sm_ids) for s in sms}
    for k in range(cap.clusters):
        sms = p.cluster_sms(k)
        assert len({dom_of[s] for s in sms}) == 1                 # one domain per cluster
        assert len(set(sms)) == c                                 # each CTA on its own SM


def test_placement_recovers_the_domains():
    p = place_clusters(10_000, 8, 1)
    groups = gpcs_from_clusters([p.cluster_sms(k) for k in {c.cluster for c in p.ctas}])
    assert all(set(g) <= set(sms) for g in groups for sms in p.sm_ids if set(g) & set(sms))
    assert not any(set(g) & {124, 125, 126, 127, 128, 129, 130, 131} for g in groups)   # singletons never host 8
    two = place_clusters(66, 2, 1)
    assert gpcs_from_clusters([two.cluster_sms(k) for k in range(66)])[-1] in ([124, 125], [126, 127],
                                                                               [128, 129], [130, 131])


def test_place_launch_attaches_block_ids():
    p = place_launch((8, 2), (2, 2), 4)
    blocks = {c.block for c in p.ctas}
    assert len(blocks) == 16
    first = sorted((c for c in p.ctas if c.cluster == 0), key=lambda c: c.rank)
    assert [c.block for c in first] == [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]
    with pytest.raises(ClusterError, match="not a multiple"):
        place_launch((7, 2), (2, 2), 4)
    with pytest.raises(ClusterError, match="unknown GPC rule"):
        place_clusters(1, 2, 1, rule="nope")


def test_gpcs_from_clusters_union_find():
    assert gpcs_from_clusters([[0, 1], [1, 5], [7, 8], [2]]) == [[0, 1, 5], [7, 8], [2]]
