"""Lesson 6 widgets and figures (headless): fragment explorer, descriptor builder, swizzle / K-advance visualiser
(PTX ISA §9.7.15.5.1: fragments, the matrix descriptor and the gather it implies)."""
import numpy as np
import pytest

pytest.importorskip("ipywidgets")

from h100lab.tensorcore import accumulator_owner, descriptor as dsc
from h100lab.widgets import l06_wgmma as W


def test_fragment_explorer_marks_the_threads_registers():
    ex = W.fragment_explorer()
    r = ex.result
    assert r["values"] == r["registers"] == 32 and r["mine"].sum() == 32 and ex.static() is not None
    for (row, col), text in r["labels"].items():          # every label is the register accumulator_owner names
        assert accumulator_owner(row, col, 64) == (0, int(text), 0)
    assert (np.bincount(r["owner_warp"].ravel()) == 16 * 64).all()
    ex.controls["thread"].value = 37
    assert "warp 1, lane 5" in ex.text.value and ex.result["mine"][16:32].sum() == 32
    ex.controls["operand"].value = "D, .f16 accumulator"
    assert ex.result["registers"] == 16 and ex.result["values"] == 32
    ex.controls["operand"].value = "A in registers (RS), .e4m3"
    assert ex.result["cols"] == 32 and ex.result["values"] == 16 and ex.result["registers"] == 4
    ex.controls["n"].value = 256
    ex.controls["operand"].value = "D, .f32 accumulator"
    assert ex.result["registers"] == 128


def test_descriptor_builder_right_and_wrong_fields():
    ex = W.descriptor_builder()
    assert ex.result["right"].all() and ex.static() is not None
    assert ex.result["value"] == dsc.MatrixDescriptor(0, 16, 1024, 0, "128B").encode()
    ex.controls["kstep"].value = 3                            # K-advance: +96 B in the start address
    assert ex.result["right"].all() and ex.result["desc"].start == 96
    ex.controls["lbo"].value = 4096                           # swizzled K-major: LBO unused [model]
    assert ex.result["right"].all()
    ex.controls["sbo"].value = 512                            # wrong SBO: only the first 8 rows survive
    assert ex.result["right"][:8].all() and not ex.result["right"][8:].any()
    ex.controls["sbo"].value = 1024
    ex.controls["swizzle"].value = "none"                     # the swizzled image read linearly
    assert not ex.result["right"].all()
    ex.controls["swizzle"].value = "128B"
    ex.controls["base_offset"].value = 3
    assert not ex.result["right"].any()


def test_tile_image_is_the_swizzled_tile():
    img, tile = W.tile_image()
    h = img.view(np.uint16)
    r, c = 5, 13                                              # row 5, chunk 1 -> stored chunk 1 ^ 5 = 4
    assert h[(5 * 128 + (1 ^ 5) * 16 + (13 % 8) * 2) // 2] == tile[r, c]


def test_kstep_explorer():
    ex = W.kstep_explorer()
    r = ex.result
    assert r["hit"].sum() == 16 and (r["logical"][0] == np.arange(8)).all() and ex.static() is not None
    ex.controls["kstep"].value = 3
    assert ex.result["start_field"] == 6 and "[6, 7]" in ex.text.value
    ex.controls["swizzle"].value = "64B"
    assert ex.error and "next atom" in ex.error
    ex.controls["kstep"].value = 1
    assert not ex.error and ex.result["hit"].sum() == 16
    ex.controls["dtype"].value = "e4m3"
    assert ex.result["step_bytes"] == 32
