"""h100lab.tma.encode_tiled / encode_im2col: the sm_90 driver's verdicts and the documented rules."""
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

from h100lab import tma
from h100lab.tma import DocumentationWarning, TensorMapError

BASE = dict(dtype="CU_TENSOR_MAP_DATA_TYPE_UINT16", rank=2, global_address=1 << 20, global_dim=[64, 64],
            global_strides=[128], box_dim=[64, 8], element_strides=[1, 1], interleave="CU_TENSOR_MAP_INTERLEAVE_NONE",
            swizzle="CU_TENSOR_MAP_SWIZZLE_128B", l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_L2_128B",
            oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")


def v(**changes):
    return tma.verdict(**(BASE | changes)).result == "CUDA_SUCCESS"


# The encode cases measured on an H200 (driver 580.x), hopper-spec-facts §5: 1 = refused, 0 = accepted.
H200_CASES = [
    (dict(global_address=(1 << 20) + 8), 1),
    (dict(global_address=(1 << 20) + 16, swizzle="CU_TENSOR_MAP_SWIZZLE_NONE"), 0),
    (dict(global_address=(1 << 20) + 16), 0),
    (dict(global_strides=[136]), 1),
    (dict(global_strides=[16]), 0),
    (dict(global_strides=[1 << 40]), 1),
    (dict(global_strides=[(1 << 40) - 16]), 0),
    (dict(global_dim=[0, 64]), 1),
    (dict(global_dim=[1 << 32, 64], global_strides=[1 << 33]), 0),
    (dict(global_dim=[(1 << 32) + 1, 64], global_strides=[1 << 34]), 1),
    (dict(box_dim=[64, 0]), 1),
    (dict(box_dim=[64, 256]), 0),
    (dict(box_dim=[64, 257]), 1),
    (dict(box_dim=[256, 8], swizzle="CU_TENSOR_MAP_SWIZZLE_NONE", global_dim=[256, 64], global_strides=[512]), 0),
    (dict(box_dim=[128, 8], global_dim=[256, 64], global_strides=[512]), 1),
    (dict(box_dim=[64, 8], swizzle="CU_TENSOR_MAP_SWIZZLE_64B"), 1),
    (dict(box_dim=[12, 8], swizzle="CU_TENSOR_MAP_SWIZZLE_NONE"), 1),
    (dict(element_strides=[1, 0]), 1),
    (dict(element_strides=[1, 8]), 0),
    (dict(element_strides=[1, 9]), 1),
    (dict(rank=0, global_dim=[], global_strides=[], box_dim=[], element_strides=[]), 1),
    (dict(rank=6, global_dim=[64] * 6, global_strides=[128] * 5, box_dim=[8] * 6, element_strides=[1] * 6), 1),
    (dict(interleave="CU_TENSOR_MAP_INTERLEAVE_16B"), 1),
    (dict(rank=3, global_dim=[64, 64, 4], global_strides=[128, 8192], box_dim=[16, 8, 1], element_strides=[1, 1, 1],
          interleave="CU_TENSOR_MAP_INTERLEAVE_32B"), 0),
    (dict(oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"), 1),
    (dict(swizzle="CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B"), 1),
]


@pytest.mark.parametrize("changes,refused", H200_CASES)
def test_h200_measured_verdicts(changes, refused):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DocumentationWarning)
        assert v(**changes) is (not refused)


def test_base_is_accepted_and_sized():
    tm = tma.encode_tiled(**BASE)
    assert tm.row_bytes == 128 and tm.row_pitch == 128 and tm.rows == 8
    assert tm.smem_bytes == tm.tx_bytes == 1024
    assert tm.strides == (2, 128) and tm.global_bytes == 2 + 63 * 2 + 63 * 128
    assert "UINT16 rank-2" in tm.describe()


def test_error_names_result_and_rule():
    with pytest.raises(TensorMapError) as e:
        tma.encode_tiled(**(BASE | dict(box_dim=[128, 8], global_dim=[256, 64], global_strides=[512])))
    assert e.value.result == "CUDA_ERROR_INVALID_VALUE"
    assert "256 B, over the 128 B swizzle span" in str(e.value)
    assert e.value.rule in str(e.value)
    ver = tma.verdict(**(BASE | dict(global_address=(1 << 20) + 8)))
    assert not ver.ok and "16-byte aligned" in ver.rule


def test_driver_looser_than_docs_warns():
    with pytest.warns(DocumentationWarning, match="includes the previous dimension"):
        tm = tma.encode_tiled(**(BASE | dict(global_strides=[16])))
    assert tm.doc_warnings
    rank3 = dict(rank=3, global_dim=[64, 64, 4], global_strides=[128, 8192], box_dim=[16, 8, 1],
                 element_strides=[1, 1, 1], interleave="CU_TENSOR_MAP_INTERLEAVE_32B")
    with pytest.warns(DocumentationWarning, match="swizzle must be CU_TENSOR_MAP_SWIZZLE_32B"):
        tma.encode_tiled(**(BASE | rank3))
    with pytest.warns(DocumentationWarning, match=r"globalStrides\[1\]"):
        tma.encode_tiled(**(BASE | rank3 | dict(interleave="CU_TENSOR_MAP_INTERLEAVE_NONE", global_strides=[128, 256])))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tma.encode_tiled(**BASE)   # no warning for a documented-valid map
    assert tma.verdict(**(BASE | dict(global_strides=[16]))).doc_warnings


@pytest.mark.parametrize("changes,frag", [
    (dict(interleave="CU_TENSOR_MAP_INTERLEAVE_32B", rank=3, global_dim=[16, 8, 8], global_strides=[32, 256],
          box_dim=[16, 8, 1], element_strides=[1, 1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_32B",
          global_address=(1 << 20) + 16), "32-byte aligned"),
    (dict(interleave="CU_TENSOR_MAP_INTERLEAVE_32B", rank=3, global_dim=[16, 8, 8], global_strides=[48, 384],
          box_dim=[16, 8, 1], element_strides=[1, 1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_32B"), "multiple of 32"),
    (dict(dtype="CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B"), "sub-byte"),
    (dict(dtype="CU_TENSOR_MAP_DATA_TYPE_INT32", oob_fill="NAN_REQUEST_ZERO_FMA", box_dim=[32, 8],
          swizzle="CU_TENSOR_MAP_SWIZZLE_128B"), "floating-point"),
    (dict(element_strides=[0, 1]), "elementStrides[0]"),
    (dict(box_dim=[32, 8], swizzle="CU_TENSOR_MAP_SWIZZLE_32B"), "32 B swizzle span"),
])
def test_documented_rules(changes, frag):
    ver = tma.verdict(**(BASE | changes))
    assert not ver.ok and frag in ver.rule


def test_all_sm90_types_and_promotions_accepted():
    for name, dt in tma.DATA_TYPES.items():
        if not dt.sm90:
            continue
        box0 = 128 // dt.size
        assert tma.verdict(**(BASE | dict(dtype=name, box_dim=[box0, 8]))).ok, name
        assert tma.verdict(**(BASE | dict(dtype=name, box_dim=[box0, 8], oob_fill="NAN_REQUEST_ZERO_FMA"))).ok \
            is dt.is_float
    for p in ("NONE", "L2_64B", "L2_128B", "L2_256B"):
        assert v(l2_promotion=p)


def test_python_level_mistakes_are_value_errors():
    with pytest.raises(ValueError, match="2 entries"):
        tma.verdict(**(BASE | dict(box_dim=[64])))
    with pytest.raises(ValueError, match="not one of"):
        tma.verdict(**(BASE | dict(swizzle="CU_TENSOR_MAP_SWIZZLE_96B")))
    with pytest.raises(ValueError, match="unsigned"):
        tma.verdict(**(BASE | dict(global_dim=[-1, 64])))
    with pytest.raises(ValueError, match="integers"):
        tma.verdict(**(BASE | dict(box_dim=None)))
    assert tma.verdict(**(BASE | dict(swizzle=3))).ok  # enum values work too


def test_element_strides_shrink_the_box():
    # es {1, 2} with box {64, 8}: rows 0, 2, 4, 6 delivered densely, 512 B (hopper-spec-facts §5, f16)
    tm = tma.encode_tiled(**(BASE | dict(dtype="FLOAT16", element_strides=[1, 2])))
    assert tm.box_elements == (64, 4) and tm.tx_bytes == 512
    tm = tma.encode_tiled(**(BASE | dict(element_strides=[2, 3])))  # es[0] ignored without interleave
    assert tm.box_elements == (64, 3)


def test_swizzled_rows_are_padded_to_the_span():
    tm = tma.encode_tiled(**(BASE | dict(box_dim=[32, 16])))   # 64 B rows under SWIZZLE_128B
    assert tm.row_bytes == 64 and tm.row_pitch == 128 and tm.smem_bytes == 2048 and tm.tx_bytes == 1024
    tm = tma.encode_tiled(**(BASE | dict(box_dim=[24, 16], swizzle="NONE")))
    assert tm.row_pitch == 48


@given(dims=st.lists(st.integers(1, 50), min_size=1, max_size=5), size=st.sampled_from([1, 2, 4, 8]),
       pad=st.sampled_from([0, 16, 32]))
def test_row_major_strides_match_numpy(dims, size, pad):
    s = tma.row_major_strides(dims, size, pad)
    assert len(s) == len(dims) - 1
    if pad == 0:
        a = np.zeros(tuple(reversed(dims)), dtype=f"u{size}")
        assert s == tuple(reversed(a.strides))[1:]
    if s:
        assert s[0] == dims[0] * size + pad


def test_row_major_strides_rejects_nonsense():
    with pytest.raises(ValueError):
        tma.row_major_strides([0, 3], 2)
    with pytest.raises(ValueError):
        tma.row_major_strides([4, 3], 0)


@given(box0=st.integers(1, 256), size=st.sampled_from([1, 2, 4, 8]), mode=st.sampled_from(["NONE", "32B", "64B", "128B"]))
def test_accepted_maps_respect_the_box_rules(box0, size, mode):
    dt = {1: "UINT8", 2: "FLOAT16", 4: "FLOAT32", 8: "FLOAT64"}[size]
    ver = tma.verdict(dt, 2, 0, [4096, 16], [4096 * 8], [box0, 4], [1, 1], swizzle=mode)
    inner = box0 * size
    span = {"NONE": 1 << 30, "32B": 32, "64B": 64, "128B": 128}[mode]
    assert ver.ok == (inner % 16 == 0 and inner <= span)


IM2COL = dict(dtype="FLOAT16", rank=4, global_address=0, global_dim=[64, 8, 8, 2], global_strides=[128, 1024, 8192],
              pixel_box_lower_corner=[-1, -1], pixel_box_upper_corner=[-1, -1], channels_per_pixel=64,
              pixels_per_column=32, element_strides=[1, 1, 1, 1], swizzle="128B")


def test_im2col_encode_rules():
    tm = tma.encode_im2col(**IM2COL)
    assert tm.mode == "im2col" and tm.box_elements == (64, 32) and tm.tx_bytes == 64 * 32 * 2
    for changes, frag in [(dict(rank=2, global_dim=[64, 8], global_strides=[128], pixel_box_lower_corner=[],
                                pixel_box_upper_corner=[], element_strides=[1, 1]), "3, 4 or 5"),
                          (dict(pixel_box_lower_corner=[-129, 0]), "[-128, 127]"),
                          (dict(channels_per_pixel=257), "channelsPerPixel"),
                          (dict(pixels_per_column=1025), "pixelsPerColumn"),
                          (dict(channels_per_pixel=128), "swizzle span"),
                          (dict(channels_per_pixel=4, swizzle="NONE"), "multiple of 16"),
                          (dict(pixel_box_lower_corner=[0, 8], pixel_box_upper_corner=[0, -1]), "non-zero area")]:
        ver = tma.verdict_im2col(**(IM2COL | changes))
        assert not ver.ok and frag in ver.rule, (changes, ver)
    with pytest.raises(TensorMapError):
        tma.encode_im2col(**(IM2COL | dict(pixels_per_column=0)))


def test_null_global_strides_are_refused_even_for_rank_1():
    # measured on an H200 (encode cases rank1_null_strides): cuda.bindings passes [] as NULL and the driver refuses
    r1 = dict(dtype="BFLOAT16", rank=1, global_address=1 << 20, global_dim=[256], box_dim=[64], element_strides=[1])
    assert tma.verdict(**r1, global_strides=[], swizzle="128B").ok
    v0 = tma.verdict(**r1, global_strides=None, swizzle="128B")
    assert not v0.ok and "NULL" in v0.rule
    with pytest.raises(TensorMapError, match="globalStrides is NULL"):
        tma.encode_tiled(**r1, global_strides=None)


@pytest.mark.parametrize("inner_el,ok", [(2, False), (4, False), (8, True), (12, False), (16, True), (24, True),
                                         (256, True)])
@pytest.mark.parametrize("il", ["16B", "32B"])
def test_interleaved_box_inner_extent_is_a_multiple_of_16_bytes(inner_el, ok, il):
    # measured on an H200 (probe of 80 cases; encode cases il16_inner8/24/48, il32_inner8/16): the 16-byte rule holds
    # for every interleave, and no span rule applies (512 B under SWIZZLE_128B is accepted)
    dims, st_ = ([8, 64, 16], [16, 1024]) if il == "16B" else ([16, 64, 16], [32, 2048])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DocumentationWarning)
        for sw in ("NONE", "32B", "128B"):
            vv = tma.verdict("BFLOAT16", 3, 1 << 20, dims, st_, [inner_el, 16, 2], [1, 1, 1], interleave=il, swizzle=sw)
            assert vv.ok is ok, (sw, vv.rule)
            if not ok:
                assert "multiple of 16" in vv.rule and "every interleave" in vv.rule


@pytest.mark.parametrize("param,value", [("dtype", 16), ("swizzle", 7), ("l2_promotion", 4), ("oob_fill", 2),
                                         ("interleave", 3), ("dtype", -1), ("swizzle", 1 << 20)])
def test_enum_integers_without_an_enumerator_are_refused_like_the_driver(param, value):
    # C passes any int as an enum; cuTensorMapEncodeTiled answers CUDA_ERROR_INVALID_VALUE for one it has no
    # name for (issue: a plain ValueError before)
    with pytest.raises(tma.TensorMapError) as e:
        tma.encode_tiled(**(BASE | {param: value}))
    assert e.value.result == "CUDA_ERROR_INVALID_VALUE" and str(value) in e.value.rule
    ver = tma.verdict(**(BASE | {param: value}))
    assert not ver.ok and ver.result == "CUDA_ERROR_INVALID_VALUE"
    im = dict(IM2COL, **{param: value})
    assert tma.verdict_im2col(**im).result == "CUDA_ERROR_INVALID_VALUE"


def test_enum_integers_with_an_enumerator_and_unknown_names():
    assert tma.verdict(**(BASE | dict(dtype=1, swizzle=3, l2_promotion=3, oob_fill=0, interleave=0))).ok
    # known values the sm_90 driver refuses keep their own rule
    assert "sub-byte" in tma.verdict(**(BASE | dict(dtype=13))).rule
    assert "not supported on compute capability 9.0" in tma.verdict(**(BASE | dict(swizzle=4))).rule
    # a name that is not an enumerator cannot be passed to C at all: a Python error, not the driver's verdict
    with pytest.raises(ValueError) as e:
        tma.encode_tiled(**(BASE | dict(swizzle="SWIZZLE_7")))
    assert not isinstance(e.value, tma.TensorMapError)
    with pytest.raises(ValueError, match="32-bit"):
        tma.verdict(**(BASE | dict(swizzle=1 << 40)))
