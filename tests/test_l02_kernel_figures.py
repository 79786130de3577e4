"""Lesson 2's figures: the histogram comparison, the cluster-barrier cost, the swizzle's chunk maps."""
from __future__ import annotations


def test_histogram_and_sync_figures_draw():
    from h100lab.viz.dsmem import draw_cluster_sync, draw_histogram

    rows = [{"bins": b, "KiB of counts": b * 4 // 1024, "global atomics": 50.0, "shared, 1 CTA": 400.0 if b < 60000 else None,
             "cluster of 2": 150.0, "cluster of 4": 90.0, "cluster of 8": None, "cluster of 16": None}
            for b in (1024, 16384, 65536)]
    fig = draw_histogram(rows)
    assert len(fig.get_axes()[0].lines) >= 4
    srows = [{"cluster size": c, "release (ns)": 190.0, "relaxed (ns)": 50.0, "bar.sync, one CTA (ns)": 10.0}
             for c in (1, 2, 4)]
    fig = draw_cluster_sync(srows)
    assert len(fig.get_axes()[0].lines) == 3


def test_swizzle_chunk_maps():
    from h100lab.viz.dsmem import draw_swizzle_chunks

    fig = draw_swizzle_chunks(16)
    plain, swz = (ax.images[0].get_array() for ax in fig.get_axes()[:2])
    assert (plain[:, 0] == 0).all()                                     # plain: chunk 0 of every row in banks 0-3
    assert sorted(swz[:8, 0].tolist()) == list(range(8))                # swizzled: 8 rows, 8 chunk positions
    assert (swz[8:16, 0] == swz[:8, 0]).all()                           # ... repeating every 8 rows
