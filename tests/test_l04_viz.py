"""Lesson 4 figures and widgets (headless): swizzle explorer, descriptor builder, plots."""
import pytest

pytest.importorskip("ipywidgets")

from h100lab import tma
from h100lab.viz import l04_tma as V
from h100lab.widgets import l04_tma as W


def test_swizzle_explorer_reacts_and_counts_wavefronts():
    ex = W.swizzle_explorer()
    reads = {r["name"]: r["wavefronts"] for r in ex.result["reads"]}
    assert reads["128B, 16 B"] == 4 and reads["NONE, 16 B"] == 32        # conflict-free vs 8-way per quarter
    assert ex.static() is ex.figure and ex.figure is not None
    ex.controls["swizzle"].value = "NONE"
    assert [r["name"] for r in ex.result["reads"]] == ["NONE, 16 B", "NONE, 4 B"]
    ex.controls["swizzle"].value = "32B"
    assert ex.error and "32 B swizzle span" in ex.error and ex.figure is None   # 128-B rows under SWIZZLE_32B
    ex.controls["inner_bytes"].value = 32
    assert ex.error is None and ex.result["map"].row_pitch == 32
    assert "footprint" in W.describe_swizzle(ex.result)


def test_descriptor_builder_shows_the_verdict():
    d = W.descriptor_builder()
    assert d.result["verdict"].ok and "CUDA_SUCCESS" in d.text.value
    d.controls["box_dim"].value = "128, 32"
    assert not d.result["verdict"].ok and "over the 128 B swizzle span" in d.text.value
    d.controls["box_dim"].value = "64, 32"
    d.controls["global_strides"].value = "16"
    assert d.result["verdict"].ok and "documentation" in d.text.value
    d.controls["global_dim"].value = "256, x"
    assert d.error and d.figure is None
    assert W.parse_ints("2**32, 0x10, 3") == [1 << 32, 16, 3] and W.parse_ints([1, 2]) == [1, 2]
    r = W.descriptor_result(global_dim="256", global_strides="", box_dim="64", element_strides="1")
    assert r["map"].rank == 1 and W.draw_descriptor(r) is not None


def test_plots():
    tm = tma.encode_tiled("FLOAT32", 2, 0, [64, 64], [256], [16, 8], [1, 1], swizzle="64B")
    assert V.draw_smem_image(tm, 384) is not None
    assert V.draw_box_in_tensor(tm, [-4, 60]) is not None
    assert V.draw_verdict(tma.verdict("UINT8", 1, 8, [16], [], [16], [1])) is not None
    assert V.draw_column_wavefronts([{"name": "a", "wavefronts": 4, "ideal": 4}]) is not None
    assert V.draw_promotion([{"row_bytes": 48, "promotion": 32, "hbm_bytes": 64, "requested": 48},
                             {"row_bytes": 48, "promotion": 256, "hbm_bytes": 256, "requested": 48}]) is not None
    assert V.draw_agreement([("images", 10, 0), ("verdicts", 5, 1)]) is not None
    assert V.bank_cmap().N == 32
