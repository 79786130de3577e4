"""Lesson 1 figures and widgets: they draw, label their axes with units, and follow their controls."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from h100lab.memory.banks import bank_access, lane_addresses  # noqa: E402
from h100lab.occupancy import occupancy, waves  # noqa: E402
from h100lab.viz import banks as vb  # noqa: E402
from h100lab.viz import occupancy as vo  # noqa: E402
from h100lab.viz import roofline as vr  # noqa: E402


def _labelled(fig):
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            assert "(" in ax.get_ylabel()
        elif ax.get_xlabel() or ax.get_ylabel():
            assert "(" in ax.get_xlabel() and "(" in ax.get_ylabel(), (ax.get_xlabel(), ax.get_ylabel())
    return True


@pytest.mark.parametrize("make", [
    lambda: vo.draw_occupancy(occupancy(256, 65, 20000)),
    lambda: vo.draw_occupancy(occupancy(1024, 65)),            # 0 blocks still draws
    lambda: vo.draw_register_steps(mark=65),
    lambda: vo.draw_waves(waves(300, 2)),
    lambda: vb.draw_bank_access(lane_addresses(8), bank_access(lane_addresses(8))),
    lambda: vb.draw_bank_access([None] * 16 + lane_addresses(16, 16)[:16], bank_access([None] * 16 + lane_addresses(16, 16)[:16], 16)),
    lambda: vr.draw_rooflines(points=[("GEMV", 1.0)]),
    lambda: vr.draw_hierarchy(),
    lambda: vr.draw_chip(),
])
def test_figures(make):
    fig = make()
    assert fig.axes and _labelled(fig)


def test_occupancy_figure_counts_patches():
    o = occupancy(256, 65)
    fig = vo.draw_occupancy(o)
    # register panel: one slab per resident warp plus 4 outlines
    assert len(fig.axes[0].patches) == o.active_warps + 4
    assert "limited by registers" in fig._suptitle.get_text()


def test_occupancy_widget():
    from h100lab.widgets.occupancy import occupancy_explorer

    ex = occupancy_explorer()
    assert ex.result.active_blocks == occupancy(256, 64).active_blocks and ex.static() is ex.figure
    ex.controls["regs"].value = 65
    assert ex.result.active_blocks == 3 and "registers" in ex.text.value
    ex.controls["smem_kb"].value = 120
    assert ex.result.active_blocks == 1 and ex.result.limiting == ("shared_memory",)
    ex.controls["device"].value = "H100 PCIe"
    assert ex.result.spec.sm_count == 114


def test_bank_widget():
    from h100lab.widgets.banks import bank_explorer, bank_pattern

    ex = bank_explorer(stride=32)
    assert int(ex.result["access"]) == 32
    ex.controls["pad_words"].value = 1
    assert int(ex.result["access"]) == 1
    ex.controls["width"].value = 16
    ex.controls["pad_words"].value = 0
    ex.controls["stride"].value = 1
    assert int(ex.result["access"]) == 4 and ex.figure is not None
    assert bank_pattern(1, 4, 1)[:2] == [0, 4] and bank_pattern(32, 4, 1)[1] == 132
    with pytest.raises(ValueError):
        bank_pattern(-1)


def test_roofline_widget():
    from h100lab.widgets.roofline import roofline_explorer

    ex = roofline_explorer()
    rows = {r["device"]: r for r in ex.result["rows"]}
    assert rows["H200 SXM"]["ridge"] < rows["H100 SXM5"]["ridge"]
    ex.controls["intensity"].value = 1000.0
    assert all(r["bound"] == "compute" for r in ex.result["rows"])
    ex.controls["dtype"].value = "fp64"
    ex.controls["sparse"].value = True
    assert ex.result is None and "no 2:4" in ex.error and ex.figure is None


def test_bank_latency_figure():
    recs = [{"width": w, "model_wavefronts": f, "cycles_per_load": 30.0 + f} for w in (4, 8) for f in (1, 2, 4)]
    fig = vb.draw_bank_latency(recs)
    assert _labelled(fig) and len(fig.axes[0].lines) == 2
