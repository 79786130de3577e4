"""Lesson 2 plots and widgets, headless: controls change the model's answer; errors are shown, not raised."""
from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from h100lab.cluster import cluster_capacity, place_clusters, ring_exchange  # noqa: E402
from h100lab.memory.spaces import tile_banks  # noqa: E402
from h100lab.ptx import statement  # noqa: E402
from h100lab.cluster import H200_CGA  # noqa: E402
from h100lab.viz.cluster import capacity_plot, domain_map, gpc_map, idle_plot, ring_diagram, wave_map  # noqa: E402
from h100lab.viz.ptx import bank_heatmap, operand_numbering, packed_register  # noqa: E402
from h100lab.widgets.cluster import placement_explorer, placement_result, ring_explorer, ring_result  # noqa: E402
from h100lab.widgets.ptx import asm_explorer, asm_result, packing_explorer, packing_result  # noqa: E402


def _labels(fig):
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes if ax.axison and ax.get_xlabel()]


def test_plots_name_their_units():
    figs = [gpc_map(place_clusters(20, 8, 1)), bank_heatmap(tile_banks(64, 64, 2)),
            packed_register([1.0, 2.0], ".bf16x2"),
            capacity_plot([1, 2, 4], [10, 5, 2], [10, 10, 8], 10, {1: 10}),
            idle_plot([2, 4, 16], [0, 12, 20], {16: 20}),
            domain_map(H200_CGA.sm_ids(), [H200_CGA.is_singleton(i) for i in range(12)], show_ids=True)]
    for f in figs:
        for x, y in _labels(f):
            assert "(" in x and "(" in y
    ring_diagram(ring_exchange(4))
    operand_numbering(statement("add.s32"))


def test_domain_plots_show_singletons_and_idle_sms():
    p = place_clusters(7, 16, 1)
    fig = gpc_map(p)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks[0] == "vGPC\n18 SMs" and ticks[-1].startswith("TPC") and len(ticks) == 12
    assert "20 idle SMs" in fig.axes[0].get_title()
    recs = [{"smid": c.sm, "clusterid": [c.cluster, 0, 0], "cluster_size": 16, "blocks_per_sm": 1} for c in p.ctas]
    assert "20 idle SMs" in wave_map(recs, H200_CGA).axes[0].get_title()


def test_placement_widget_follows_its_controls():
    ex = placement_explorer(cluster_size=2, blocks_per_sm=1)
    assert ex.result["capacity"].clusters == cluster_capacity(2, 128, blocks=1).clusters
    assert ex.static() is ex.figure is not None
    ex.controls["cluster_size"].value = 16
    assert ex.result["capacity"].cluster_size == 16 and ex.result["capacity"].idle_sms > 0
    assert "idle SMs" in ex.text.value
    assert len(placement_result(4, 2)["placement"].ctas) == cluster_capacity(4, 128, blocks=2).ctas


def test_ring_widget_steps_and_reports_the_race():
    ex = ring_explorer(cluster_size=4)
    assert ex.result["trace"].ok and ex.result["step"] == len(ex.result["trace"].events) - 1
    ex.controls["step"].value = 0
    assert ex.result["step"] == 0 and "starts" in ex.text.value
    ex.controls["sync_start"].value = False
    assert not ex.result["trace"].ok and "PeerNotRunning" in ex.text.value
    assert ring_result(3, "pull", True, False, "greedy", 999)["trace"].error_type == "PeerNotRunning"


def test_asm_widget_shows_a_mismatch_as_an_error():
    ex = asm_explorer("add.s32")
    assert ex.error is None and "add.s32 %0, %1, %2;" in ex.text.value
    ex.controls["input_type"].value = "float"
    assert ex.error and "Arguments mismatch" in ex.error and ex.figure is None
    ex.controls["input_type"].value = "bool"
    assert "predicate cannot be an operand" in ex.error
    r = asm_result("mov.u32 %cluster_ctarank", compile_ptx=False)
    assert "%%cluster_ctarank" in r["statement"].text and r["ptx"] is None


def test_packing_widget():
    ex = packing_explorer(".bf16x2", 1.0, -2.5)
    assert ex.result["bits"] == 0xC0203F80
    ex.controls["type_name"].value = ".e4m3x2"
    assert ex.result["bits"] == packing_result(".e4m3x2", 1.0, -2.5)["bits"] and ex.result["bits"] < 1 << 16
