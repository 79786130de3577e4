"""Lesson 4 measurements: the driver's verdict on tensor-map encodings, and TMA shared-memory images.

``python -m h100lab.measure.l04 [--out DIR] [--quick]`` writes (``h100lab.data``):

* ``l04/encode_verdicts``: one record per ``cuTensorMapEncodeTiled`` parameter set of
  :func:`encode_cases` — every rule of hopper-spec-facts §5 on both sides of its boundary — with
  the driver's result name (``CUDA_SUCCESS`` / ``CUDA_ERROR_INVALID_VALUE``); pure driver calls;
* ``l04/tma_images``: one record per tensor copy of :func:`image_cases` (kernel
  ``l04_tma_image.cu``): a tensor whose elements hold their own index (or seeded random bytes) is
  loaded with ``cp.async.bulk.tensor`` into a sentinel-filled shared region and the region is
  dumped; also tensor stores and reductions (the global buffer after the store) and im2col loads.
  Images are stored zlib-compressed and base64-encoded (:func:`pack`). ``tx_status`` says whether
  the mbarrier saw exactly the model's byte count. A case the driver refuses to encode records
  ``encode_result``; a copy the hardware faults on records the driver's error as ``fault`` (and
  ``fault_alone``, the same case re-run by itself) — verdicts the model must reproduce.

The image cases run in child processes (:func:`measure_images`): a faulting TMA copy is a sticky
error that ends its CUDA context, so a fault must poison neither the other cases nor the next
lesson's measurements that run in this process.

Everything except the GPU calls (case lists, buffers, packing, the model's predictions) is plain
Python, tested without a GPU. Runs in well under two minutes on an H200.
"""
from __future__ import annotations

import argparse
import base64
import math
import sys
import zlib
from typing import Any, Sequence

import numpy as np

__all__ = ["encode_cases", "image_cases", "store_cases", "im2col_cases", "tensor_buffer", "pack", "unpack",
           "model_args", "model_image", "model_store", "region_bytes", "SENTINEL", "GSENTINEL", "REDUCE_OPS",
           "measure_encode", "measure_images", "run_case", "F32_SPECIAL", "DYNAMIC_SMEM", "main"]

SENTINEL = 0xA5      # shared-memory filler before a load: bytes still holding it were not written
GSENTINEL = 0xEE     # global-memory filler before a store
REDUCE_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")   # op codes 0..7 of tma_store_image
P = "CU_TENSOR_MAP_"


def _full(prefix: str, v: str) -> str:
    return v if v.startswith(P) else P + prefix + v


def pack(b: bytes | np.ndarray) -> str:
    """Bytes → zlib-compressed, base64 text (how images are kept in the datasets)."""
    raw = bytes(np.asarray(b, dtype=np.uint8).tobytes()) if isinstance(b, np.ndarray) else bytes(b)
    return base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


def unpack(s: str) -> np.ndarray:
    """The inverse of :func:`pack`: a ``numpy.uint8`` array."""
    return np.frombuffer(zlib.decompress(base64.b64decode(s)), dtype=np.uint8).copy()


# ------------------------------------------------------------------------------------------------
# encode verdicts

_BASE = dict(dtype="BFLOAT16", rank=2, address_offset=0, global_dim=[256, 128], global_strides=[512],
             box_dim=[64, 32], element_strides=[1, 1], interleave="NONE", swizzle="128B", l2_promotion="L2_128B",
             oob_fill="NONE")
_R3 = dict(rank=3, global_dim=[8, 64, 16], global_strides=[16, 1024], box_dim=[8, 16, 2], element_strides=[1, 1, 1])
_R3_32 = dict(rank=3, global_dim=[16, 64, 16], global_strides=[32, 2048], box_dim=[16, 16, 2],
              element_strides=[1, 1, 1], interleave="32B", swizzle="32B")


def encode_cases() -> list[dict[str, Any]]:
    """The encode matrix: ``{id, rule, **parameters}`` (enum names in full, ``address_offset`` from a
    256-byte aligned allocation). Every rule of ``cuTensorMapEncodeTiled`` [DRV; hopper-spec-facts §5]
    appears on both sides of its boundary, plus the cases where the sm_90 driver is looser than the
    documentation and the sm_90-only restrictions (sub-byte types, Blackwell swizzles)."""
    rows: list[tuple[str, str, dict]] = [
        ("base", "a valid 2-D BF16 map, 128B swizzle", {}),
        # rank
        ("rank0", "tensorRank 1..5", dict(rank=0, global_dim=[], global_strides=[], box_dim=[], element_strides=[])),
        ("rank1", "tensorRank 1..5", dict(rank=1, global_dim=[256], global_strides=[], box_dim=[64], element_strides=[1])),
        ("rank1_null_strides", "globalStrides must not be NULL, even for rank 1",
         dict(rank=1, global_dim=[256], global_strides=[], box_dim=[64], element_strides=[1], global_strides_null=True)),
        ("rank1_none_null_strides", "globalStrides must not be NULL, even for rank 1",
         dict(rank=1, global_dim=[256], global_strides=[], box_dim=[8], element_strides=[1], swizzle="NONE",
              global_strides_null=True)),
        ("rank5", "tensorRank 1..5", dict(rank=5, global_dim=[64, 4, 4, 4, 4], global_strides=[128, 512, 2048, 8192],
                                          box_dim=[64, 2, 2, 2, 2], element_strides=[1] * 5)),
        ("rank6", "tensorRank 1..5", dict(rank=6, global_dim=[64, 4, 4, 4, 4, 4],
                                          global_strides=[128, 512, 2048, 8192, 32768], box_dim=[64, 2, 2, 2, 2, 2],
                                          element_strides=[1] * 6)),
        ("il16_rank2", "interleave needs tensorRank >= 3", dict(interleave="16B", swizzle="NONE")),
        ("il16_rank3", "interleave needs tensorRank >= 3", dict(_R3, interleave="16B", swizzle="NONE")),
        # address
        ("addr8", "globalAddress 16-byte aligned", dict(address_offset=8)),
        ("addr16", "globalAddress 16-byte aligned", dict(address_offset=16)),
        ("addr16_none", "globalAddress 16-byte aligned", dict(address_offset=16, swizzle="NONE")),
        ("addr48_128B", "128-B global alignment with swizzle is only a recommendation", dict(address_offset=48)),
        ("il32_addr16", "globalAddress 32-byte aligned with INTERLEAVE_32B", dict(_R3_32, address_offset=16)),
        ("il32_addr32", "globalAddress 32-byte aligned with INTERLEAVE_32B", dict(_R3_32, address_offset=32)),
        # globalDim
        ("dim0_0", "globalDim 1..2^32", dict(global_dim=[0, 128])),
        ("dim1_0", "globalDim 1..2^32", dict(global_dim=[256, 0])),
        ("dim0_1", "globalDim 1..2^32", dict(global_dim=[1, 128])),
        ("dim0_2p32", "globalDim 1..2^32", dict(global_dim=[1 << 32, 1], global_strides=[1 << 33])),
        ("dim0_2p32p1", "globalDim 1..2^32", dict(global_dim=[(1 << 32) + 1, 1], global_strides=[1 << 34])),
        ("dim1_2p32", "globalDim 1..2^32", dict(global_dim=[256, 1 << 32])),
        # globalStrides
        ("stride136", "globalStrides multiple of 16", dict(global_strides=[136])),
        ("stride520", "globalStrides multiple of 16", dict(global_strides=[520])),
        ("stride528", "globalStrides multiple of 16", dict(global_strides=[528])),
        ("stride16", "stride includes the previous dimension (documented, not enforced)", dict(global_strides=[16])),
        ("stride0", "globalStrides multiple of 16", dict(global_strides=[0])),
        ("stride2p40", "globalStrides < 2^40", dict(global_strides=[1 << 40])),
        ("stride2p40m16", "globalStrides < 2^40", dict(global_strides=[(1 << 40) - 16])),
        ("stride1_small", "stride includes the previous dimension (documented, not enforced)",
         dict(rank=3, global_dim=[256, 16, 4], global_strides=[512, 1024], box_dim=[64, 8, 2],
              element_strides=[1, 1, 1])),
        ("il32_stride48", "globalStrides multiple of 32 with INTERLEAVE_32B", dict(_R3_32, global_strides=[48, 3072])),
        ("il32_stride64", "globalStrides multiple of 32 with INTERLEAVE_32B", dict(_R3_32, global_strides=[64, 4096])),
        ("il16_stride48", "globalStrides multiple of 16 with INTERLEAVE_16B",
         dict(_R3, interleave="16B", swizzle="NONE", global_strides=[48, 3072])),
        # boxDim
        ("box1_0", "boxDim 1..256", dict(box_dim=[64, 0])),
        ("box1_1", "boxDim 1..256", dict(box_dim=[64, 1])),
        ("box1_256", "boxDim 1..256", dict(box_dim=[64, 256])),
        ("box1_257", "boxDim 1..256", dict(box_dim=[64, 257])),
        ("box0_0", "boxDim 1..256", dict(box_dim=[0, 32])),
        ("box0_256_none", "boxDim 1..256; inner bytes multiple of 16",
         dict(box_dim=[256, 8], swizzle="NONE")),
        ("box0_257_u8", "boxDim 1..256", dict(dtype="UINT8", box_dim=[257, 8], swizzle="NONE", global_dim=[512, 128])),
        ("inner24", "inner box bytes multiple of 16", dict(box_dim=[12, 8], swizzle="NONE")),
        ("inner16", "inner box bytes multiple of 16", dict(box_dim=[8, 8], swizzle="NONE")),
        ("inner8_u8", "inner box bytes multiple of 16", dict(dtype="UINT8", box_dim=[8, 8], swizzle="NONE")),
        ("inner48", "inner box bytes multiple of 16", dict(box_dim=[24, 8], swizzle="NONE")),
        ("box_gt_tensor", "a box larger than the tensor is allowed", dict(global_dim=[16, 4], global_strides=[32],
                                                                         box_dim=[64, 32])),
        # swizzle span
        ("sw128_128", "inner box <= swizzle span", dict(box_dim=[64, 8])),
        ("sw128_256", "inner box <= swizzle span", dict(box_dim=[128, 8])),
        ("sw64_64", "inner box <= swizzle span", dict(box_dim=[32, 8], swizzle="64B")),
        ("sw64_128", "inner box <= swizzle span", dict(box_dim=[64, 8], swizzle="64B")),
        ("sw32_32", "inner box <= swizzle span", dict(box_dim=[16, 8], swizzle="32B")),
        ("sw32_48", "inner box <= swizzle span", dict(box_dim=[24, 8], swizzle="32B")),
        ("sw128_32", "a row narrower than the span is allowed", dict(box_dim=[16, 8])),
        ("sw128_f64_128", "inner box <= swizzle span", dict(dtype="FLOAT64", box_dim=[16, 8])),
        ("sw128_f64_136", "inner box <= swizzle span", dict(dtype="FLOAT64", box_dim=[17, 8])),
        # elementStrides
        ("es1_0", "elementStrides 1..8", dict(element_strides=[1, 0])),
        ("es1_8", "elementStrides 1..8", dict(element_strides=[1, 8])),
        ("es1_9", "elementStrides 1..8", dict(element_strides=[1, 9])),
        ("es0_0", "elementStrides 1..8 (dimension 0's is ignored but checked?)", dict(element_strides=[0, 1])),
        ("es0_2", "elementStrides 1..8 (dimension 0's is ignored)", dict(element_strides=[2, 1])),
        ("es0_9", "elementStrides 1..8 (dimension 0's is ignored but checked?)", dict(element_strides=[9, 1])),
        # interleave and swizzle
        ("il32_sw32", "INTERLEAVE_32B requires SWIZZLE_32B", dict(_R3_32)),
        ("il32_sw128", "INTERLEAVE_32B requires SWIZZLE_32B (documented)", dict(_R3_32, swizzle="128B")),
        ("il32_sw64", "INTERLEAVE_32B requires SWIZZLE_32B (documented)", dict(_R3_32, swizzle="64B")),
        ("il32_none", "INTERLEAVE_32B requires SWIZZLE_32B (documented)", dict(_R3_32, swizzle="NONE")),
        ("il16_sw128", "other interleaves take any swizzle", dict(_R3, interleave="16B", swizzle="128B")),
        ("il16_inner8", "inner box bytes multiple of 16, also with interleave",
         dict(_R3, interleave="16B", swizzle="NONE", box_dim=[4, 16, 2])),
        ("il16_inner24", "inner box bytes multiple of 16, also with interleave",
         dict(_R3, interleave="16B", swizzle="NONE", box_dim=[12, 16, 2])),
        ("il16_inner48", "inner box bytes multiple of 16, also with interleave",
         dict(_R3, interleave="16B", swizzle="NONE", box_dim=[24, 16, 2])),
        ("il32_inner16", "inner box bytes multiple of 16, also with interleave",
         dict(_R3_32, box_dim=[8, 16, 2])),
        ("il32_inner8", "inner box bytes multiple of 16, also with interleave",
         dict(_R3_32, box_dim=[4, 16, 2])),
        ("il16_inner512_sw128", "no inner <= span rule with interleave",
         dict(_R3, interleave="16B", swizzle="128B", box_dim=[256, 16, 2])),
        ("il16_inner32_sw32", "no inner <= span rule with interleave",
         dict(_R3, interleave="16B", swizzle="32B", global_dim=[16, 64, 16], global_strides=[32, 2048],
              box_dim=[16, 16, 2])),
        ("il16_es0_2", "elementStrides[0] counts with interleave",
         dict(_R3, interleave="16B", swizzle="NONE", element_strides=[2, 1, 1])),
        ("atom32", "SWIZZLE_128B_ATOM_* are not on sm_90", dict(swizzle="128B_ATOM_32B")),
        ("atom32flip", "SWIZZLE_128B_ATOM_* are not on sm_90", dict(swizzle="128B_ATOM_32B_FLIP_8B")),
        ("atom64", "SWIZZLE_128B_ATOM_* are not on sm_90", dict(swizzle="128B_ATOM_64B")),
        # data types and OOB fill
        ("u4_align8", "packed sub-byte types are not on sm_90", dict(dtype="16U4_ALIGN8B", box_dim=[128, 8])),
        ("u4_align16", "packed sub-byte types are not on sm_90", dict(dtype="16U4_ALIGN16B", box_dim=[128, 8])),
        ("u6_align16", "packed sub-byte types are not on sm_90", dict(dtype="16U6_ALIGN16B", box_dim=[128, 8])),
    ]
    for dt, size, fl in (("UINT8", 1, False), ("UINT16", 2, False), ("UINT32", 4, False), ("INT32", 4, False),
                         ("UINT64", 8, False), ("INT64", 8, False), ("FLOAT16", 2, True), ("FLOAT32", 4, True),
                         ("FLOAT64", 8, True), ("BFLOAT16", 2, True), ("FLOAT32_FTZ", 4, True),
                         ("TFLOAT32", 4, True), ("TFLOAT32_FTZ", 4, True)):
        box = [128 // size, 8]
        rows.append((f"type_{dt}", "every sm_90 data type", dict(dtype=dt, box_dim=box, global_dim=[512 // size, 128])))
        rows.append((f"nan_{dt}", "OOB NaN fill only with floating-point types",
                     dict(dtype=dt, box_dim=box, global_dim=[512 // size, 128], oob_fill="NAN_REQUEST_ZERO_FMA")))
    for p in ("NONE", "L2_64B", "L2_256B"):
        rows.append((f"l2_{p}", "every L2 promotion", dict(l2_promotion=p)))
    out = []
    for cid, rule, ch in rows:
        c = dict(_BASE)
        c.update(ch)
        c["dtype"] = _full("DATA_TYPE_", c["dtype"])
        c["interleave"] = _full("INTERLEAVE_", c["interleave"])
        c["swizzle"] = _full("SWIZZLE_", c["swizzle"])
        c["l2_promotion"] = _full("L2_PROMOTION_", c["l2_promotion"])
        c["oob_fill"] = _full("FLOAT_OOB_FILL_", c["oob_fill"])
        out.append({"id": cid, "rule": rule, **c})
    ids = [c["id"] for c in out]
    assert len(ids) == len(set(ids)), "encode case ids must be unique"
    return out


def model_args(c: dict[str, Any], base_address: int = 1 << 20) -> dict[str, Any]:
    """The :func:`h100lab.tma.encode_tiled` keyword arguments of a case or record."""
    return dict(dtype=c["dtype"], rank=c["rank"], global_address=base_address + c.get("address_offset", 0),
                global_dim=c["global_dim"],
                global_strides=None if c.get("global_strides_null") else c["global_strides"], box_dim=c["box_dim"],
                element_strides=c["element_strides"], interleave=c["interleave"], swizzle=c["swizzle"],
                l2_promotion=c["l2_promotion"], oob_fill=c["oob_fill"])


# ------------------------------------------------------------------------------------------------
# images

def _dense_strides(dims: Sequence[int], size: int, pad: int = 0) -> list[int]:
    s, out = dims[0] * size + pad, []
    for d in dims[1:]:
        out.append(s)
        s *= d
    return out


def _img(cid, dtype, dims, box, coords, *, swizzle="NONE", es=None, dst=0, oob="NONE", interleave="NONE", pad=0,
         pattern="index", seed=0, kind="load", op=None, strides=None) -> dict[str, Any]:
    from ..tma.enums import data_type

    size = data_type(dtype).size
    rank = len(dims)
    c = dict(id=cid, kind=kind, dtype=_full("DATA_TYPE_", dtype), rank=rank, address_offset=0, global_dim=list(dims),
             global_strides=list(strides) if strides is not None else _dense_strides(dims, size, pad),
             box_dim=list(box), element_strides=list(es or [1] * rank), interleave=_full("INTERLEAVE_", interleave),
             swizzle=_full("SWIZZLE_", swizzle), l2_promotion=P + "L2_PROMOTION_NONE",
             oob_fill=_full("FLOAT_OOB_FILL_", oob), coords=list(coords), dst_offset=dst, pattern=pattern, seed=seed)
    if op is not None:
        c["op"] = op
    return c


def image_cases() -> list[dict[str, Any]]:
    """Tensor loads (``kind = "load"``): every swizzle × several dtypes and boxes, rows narrower than
    the span, edges on every side (negative and past-the-end corners, boxes entirely outside, zero and
    NaN fill), destinations at 128/384/640 bytes past a 1024-byte boundary, element strides, ranks 1–5,
    unaligned starting coordinates, padded rows, boxes larger than the tensor, the FTZ/TF32 types with
    random bits, and interleaved layouts."""
    cs: list[dict[str, Any]] = []
    for dt, size in (("UINT8", 1), ("BFLOAT16", 2), ("FLOAT32", 4), ("FLOAT64", 8)):
        w = 512 // size
        for sw, span in (("NONE", 64), ("32B", 32), ("64B", 64), ("128B", 128)):
            b0 = span // size
            cs.append(_img(f"sweep_{dt}_{sw}_origin", dt, [w, 40], [b0, 16], [0, 0], swizzle=sw))
            cs.append(_img(f"sweep_{dt}_{sw}_inner", dt, [w, 40], [b0, 16], [b0, 3], swizzle=sw))
    for dt, size in (("UINT16", 2), ("FLOAT32", 4)):
        for sw, inner in (("64B", 32), ("128B", 32), ("128B", 64)):
            cs.append(_img(f"narrow_{dt}_{sw}_{inner}", dt, [256 // size, 24], [inner // size, 12], [0, 2], swizzle=sw))
    w, h = 256, 40
    for oob in ("NONE", "NAN_REQUEST_ZERO_FMA"):
        tag = "zero" if oob == "NONE" else "nan"
        for name, co in (("neg_corner", [-8, -4]), ("end_corner", [w - 16, h - 8]), ("left_out", [-64, 0]),
                         ("far_out", [0, 100]), ("mixed", [w + 5, -20]), ("neg_x", [-40, 10])):
            cs.append(_img(f"edge_{tag}_{name}", "BFLOAT16", [w, h], [64, 16], co, swizzle="128B", oob=oob))
        cs.append(_img(f"edge_{tag}_f32", "FLOAT32", [60, 30], [32, 8], [44, 26], swizzle="128B", oob=oob))
        cs.append(_img(f"edge_{tag}_f16_none", "FLOAT16", [104, 9], [24, 4], [88, -2], oob=oob))
        cs.append(_img(f"edge_{tag}_f64", "FLOAT64", [20, 7], [8, 4], [-3, 5], swizzle="64B", oob=oob))
    # boxes entirely outside the tensor, past the far end of dimension 0 and/or before the start of
    # dimension 1: edge_*_mixed faulted on an H200; these neighbours tell which rule the hardware applies
    for name, co, sw in (("x261_y-20_none", [261, -20], "NONE"), ("x264_y-20", [264, -20], "128B"),
                         ("x256_y-20", [256, -20], "128B"), ("x261_y4", [261, 4], "128B"),
                         ("x261_y50", [261, 50], "128B"), ("x5_y-20", [5, -20], "128B"),
                         ("x-70_y-20", [-70, -20], "128B"), ("x300_y-1", [300, -1], "128B")):
        cs.append(_img(f"oob_{name}", "BFLOAT16", [w, h], [64, 16], co, swizzle=sw))
    for sw, span in (("32B", 32), ("64B", 64), ("128B", 128)):
        for dst in (128, 384, 640):
            cs.append(_img(f"dst{dst}_{sw}", "BFLOAT16", [256, 32], [span // 2, 16], [16, 4], swizzle=sw, dst=dst))
    cs.append(_img("dst128_none", "FLOAT32", [64, 32], [16, 8], [0, 0], dst=128))
    cs += [
        _img("es_1_2", "FLOAT16", [64, 32], [64, 8], [0, 0], es=[1, 2]),
        _img("es_1_3_edge", "FLOAT16", [64, 32], [64, 8], [0, 28], es=[1, 3], swizzle="128B"),
        _img("es_2_1_ignored", "FLOAT16", [64, 32], [64, 8], [0, 0], es=[2, 1]),
        _img("es_rank3", "UINT32", [32, 16, 12], [16, 8, 6], [0, 1, 2], es=[1, 2, 3], swizzle="64B"),
        _img("rank1", "FLOAT32", [200], [32], [180]),
        _img("rank1_neg", "UINT8", [300], [64], [-20], swizzle="64B"),
        _img("rank3", "BFLOAT16", [64, 10, 6], [32, 4, 3], [16, 8, 4], swizzle="64B"),
        _img("rank4", "FLOAT32", [16, 6, 5, 4], [8, 3, 2, 2], [12, -1, 4, 3], swizzle="32B"),
        _img("rank5", "UINT16", [16, 4, 3, 3, 3], [8, 2, 2, 2, 2], [8, 3, -1, 2, 1]),
        _img("rank5_sw128", "FLOAT16", [64, 3, 3, 2, 2], [64, 2, 2, 2, 2], [0, 2, 2, 1, 1], swizzle="128B",
             oob="NAN_REQUEST_ZERO_FMA"),
        _img("unaligned_x3", "BFLOAT16", [256, 16], [64, 8], [3, 1], swizzle="128B"),
        _img("unaligned_x1_u8", "UINT8", [256, 16], [32, 8], [1, 2], swizzle="32B"),
        _img("padded_rows", "FLOAT32", [20, 12], [16, 8], [8, 2], pad=48),
        _img("padded_rows_sw", "BFLOAT16", [40, 12], [32, 8], [0, 6], pad=16, swizzle="64B"),
        _img("box_gt_tensor", "FLOAT16", [16, 4], [64, 16], [0, 0], swizzle="128B"),
        _img("overlapping_rows", "UINT32", [64, 16], [16, 8], [0, 0], strides=[32]),
    ]
    for dt in ("FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ", "FLOAT32"):
        cs.append(_img(f"bits_{dt}_index", dt, [64, 16], [32, 8], [0, 0], swizzle="128B"))
        cs.append(_img(f"bits_{dt}_random", dt, [64, 16], [32, 8], [0, 0], swizzle="128B", pattern="random", seed=7))
    cs.append(_img("bits_f16_random", "FLOAT16", [64, 16], [64, 8], [0, 0], swizzle="128B", pattern="random", seed=8))
    for dt in ("FLOAT32", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"):
        cs.append(_img(f"bits_{dt}_special", dt, [64, 16], [32, 8], [0, 0], swizzle="128B", pattern="special", seed=9))
    cs.append(_img("edge_nan_tf32", "TFLOAT32", [60, 30], [32, 8], [44, 26], swizzle="128B",
                   oob="NAN_REQUEST_ZERO_FMA", pattern="special", seed=10))
    # the starting coordinate of dimension 0, in bytes, against 16-byte granules
    cs += [
        _img("unaligned_x8_u8", "UINT8", [256, 16], [32, 8], [8, 2], swizzle="32B"),
        _img("aligned_x16_u8", "UINT8", [256, 16], [32, 8], [16, 2], swizzle="32B"),
        _img("aligned_f64_x-2", "FLOAT64", [20, 7], [8, 4], [-2, 5], swizzle="64B"),
        _img("rank1_neg16", "UINT8", [300], [64], [-16], swizzle="64B"),
    ]
    # interleaved layouts (NC/8HWC8 with 16-B slices; NC/16HWC16 with 32-B slices)
    cs += [
        _img("il16_full", "FLOAT16", [8, 6, 5, 4], [8, 4, 2, 2], [0, 1, 2, 1], interleave="16B"),
        _img("il16_sw128", "FLOAT16", [8, 16, 8, 2], [8, 16, 4, 2], [0, 0, 1, 0], interleave="16B", swizzle="128B"),
        _img("il16_edge", "FLOAT16", [8, 6, 5, 4], [8, 4, 4, 2], [0, 4, -2, 3], interleave="16B"),
        _img("il32_sw32", "FLOAT32", [8, 6, 5, 4], [8, 4, 2, 2], [0, 1, 1, 1], interleave="32B", swizzle="32B"),
        _img("il16_es0_2", "FLOAT16", [8, 6, 5], [8, 4, 2], [0, 1, 1], interleave="16B", es=[2, 1, 1]),
        _img("il32_half_slice", "FLOAT16", [16, 6, 5], [8, 4, 2], [0, 1, 1], interleave="32B", swizzle="32B"),
    ]
    # interleaved layouts with distinct extents per dimension and a large dump (the footprint is the question)
    d4, d3, d5 = [8, 20, 12, 6], [8, 20, 12], [8, 10, 6, 4, 3]
    cs += [
        _img("ilx_r3", "FLOAT16", d3, [8, 3, 2], [0, 2, 3], interleave="16B"),
        _img("ilx_r4", "FLOAT16", d4, [8, 3, 2, 2], [0, 2, 3, 1], interleave="16B"),
        _img("ilx_r4_b16", "FLOAT16", d4, [16, 3, 2, 2], [0, 2, 3, 1], interleave="16B"),
        _img("ilx_r4_b24", "FLOAT16", d4, [24, 3, 2, 2], [0, 2, 3, 1], interleave="16B"),
        _img("ilx_r4_es0_2", "FLOAT16", d4, [8, 3, 2, 2], [0, 2, 3, 1], interleave="16B", es=[2, 1, 1, 1]),
        _img("ilx_r4_es1_2", "FLOAT16", d4, [8, 4, 2, 2], [0, 2, 3, 1], interleave="16B", es=[1, 2, 1, 1]),
        _img("ilx_r5", "FLOAT16", d5, [8, 3, 2, 2, 2], [0, 1, 2, 1, 1], interleave="16B"),
        _img("ilx_r4_edge", "FLOAT16", d4, [8, 3, 2, 2], [0, 18, 11, 5], interleave="16B"),
        _img("ilx_r4_sw64", "FLOAT16", d4, [8, 3, 2, 2], [0, 2, 3, 1], interleave="16B", swizzle="64B"),
        _img("ilx_r4_dim0_16", "FLOAT16", [16, 20, 12, 6], [8, 3, 2, 2], [0, 2, 3, 1], interleave="16B"),
        _img("ilx_r4_c0_8", "FLOAT16", [16, 20, 12, 6], [8, 3, 2, 2], [8, 2, 3, 1], interleave="16B"),
        _img("ilx32_r4", "FLOAT32", d4, [8, 3, 2, 2], [0, 2, 3, 1], interleave="32B", swizzle="32B"),
        _img("ilx32_r4_u8", "UINT8", [32, 20, 12, 6], [32, 3, 2, 2], [0, 2, 3, 1], interleave="32B", swizzle="32B"),
    ]
    # one box parameter at a time (FLOAT16, 16-byte slices; extents large enough that nothing is out of bounds)
    q4, q5, q3 = [8, 40, 30, 5], [8, 12, 10, 6, 4], [8, 40, 30]
    cs += [
        _img("ilq_r4_1111", "FLOAT16", q4, [8, 1, 1, 1], [0, 3, 4, 1], interleave="16B"),
        _img("ilq_r4_2111", "FLOAT16", q4, [16, 1, 1, 1], [0, 3, 4, 1], interleave="16B"),
        _img("ilq_r4_1211", "FLOAT16", q4, [8, 2, 1, 1], [0, 3, 4, 1], interleave="16B"),
        _img("ilq_r4_1121", "FLOAT16", q4, [8, 1, 2, 1], [0, 3, 4, 1], interleave="16B"),
        _img("ilq_r4_1112", "FLOAT16", q4, [8, 1, 1, 2], [0, 3, 4, 1], interleave="16B"),
        _img("ilq_r4_1131", "FLOAT16", q4, [8, 1, 3, 1], [0, 3, 4, 1], interleave="16B"),
        _img("ilq_r4_es0", "FLOAT16", q4, [8, 1, 1, 1], [0, 3, 4, 1], interleave="16B", es=[2, 1, 1, 1]),
        _img("ilq_r4_es0_4", "FLOAT16", q4, [8, 1, 1, 1], [0, 3, 4, 1], interleave="16B", es=[4, 1, 1, 1]),
        _img("ilq_r4_es2", "FLOAT16", q4, [8, 1, 3, 1], [0, 3, 4, 1], interleave="16B", es=[1, 1, 2, 1]),
        _img("ilq_r4_w5", "FLOAT16", [8, 5, 30, 5], [8, 1, 1, 1], [0, 0, 4, 1], interleave="16B"),
        _img("ilq_r4_w5_c3", "FLOAT16", [8, 5, 30, 5], [8, 1, 1, 1], [0, 3, 4, 1], interleave="16B"),
        _img("ilq_r4_wneg", "FLOAT16", q4, [8, 1, 1, 1], [0, -3, 4, 1], interleave="16B"),
        _img("ilq_r4_hneg", "FLOAT16", q4, [8, 1, 2, 1], [0, 3, -1, 1], interleave="16B"),
        _img("ilq_r4_c1", "FLOAT16", [16, 40, 30, 5], [8, 1, 1, 1], [1, 3, 4, 1], interleave="16B"),
        _img("ilq_r3_111", "FLOAT16", q3, [8, 1, 1], [0, 3, 4], interleave="16B"),
        _img("ilq_r3_121", "FLOAT16", q3, [8, 2, 1], [0, 3, 4], interleave="16B"),
        _img("ilq_r3_112", "FLOAT16", q3, [8, 1, 2], [0, 3, 4], interleave="16B"),
        _img("ilq_r5_11111", "FLOAT16", q5, [8, 1, 1, 1, 1], [0, 2, 3, 1, 1], interleave="16B"),
        _img("ilq_r5_11121", "FLOAT16", q5, [8, 1, 1, 2, 1], [0, 2, 3, 1, 1], interleave="16B"),
        _img("ilq_r5_11112", "FLOAT16", q5, [8, 1, 1, 1, 2], [0, 2, 3, 1, 1], interleave="16B"),
        _img("ilq_r4_f32_il32", "FLOAT32", q4, [8, 1, 1, 1], [0, 3, 4, 1], interleave="32B", swizzle="32B"),
        _img("ilq_r4_u8_il16", "UINT8", [16, 40, 30, 5], [16, 1, 1, 1], [0, 3, 4, 1], interleave="16B"),
    ]
    # dimension 0 ending inside a 16-byte granule: are the granule's bytes past the end loaded?
    cs += [
        _img("gran_u8_r1", "UINT8", [100], [48], [64]),
        _img("gran_u8_r2", "UINT8", [100, 8], [48, 4], [64, 2], strides=[112]),
        _img("gran_f32", "FLOAT32", [61, 4], [16, 4], [48, 0], strides=[256]),
        _img("gran_f32_nan", "FLOAT32", [61, 4], [16, 4], [48, 0], strides=[256], oob="NAN_REQUEST_ZERO_FMA"),
        _img("gran_u8_start96", "UINT8", [100, 8], [48, 4], [96, 2], strides=[112]),
    ]
    for c in cs:
        if c["id"].startswith(("ilx", "ilq")):
            c["dump"] = 16384
    ids = [c["id"] for c in cs]
    assert len(ids) == len(set(ids))
    return cs


def store_cases() -> list[dict[str, Any]]:
    """Tensor stores (``kind = "store"``) and reductions (``kind = "reduce"``, 2-D), each from a shared
    image of seeded random bytes into a global buffer filled with :data:`GSENTINEL` (stores) or with
    seeded random elements (reductions). Coordinates are non-negative (a store's corner may not be
    negative) and some boxes hang off the far edges."""
    cs = [
        _img("st_none", "FLOAT32", [64, 16], [16, 8], [16, 4], kind="store", pattern="random", seed=1),
        _img("st_sw32", "BFLOAT16", [64, 16], [16, 8], [8, 2], swizzle="32B", kind="store", pattern="random", seed=2),
        _img("st_sw64", "BFLOAT16", [64, 16], [32, 8], [32, 8], swizzle="64B", kind="store", pattern="random", seed=3),
        _img("st_sw128", "BFLOAT16", [128, 16], [64, 8], [64, 4], swizzle="128B", kind="store", pattern="random",
             seed=4),
        _img("st_edge", "FLOAT16", [56, 11], [32, 8], [32, 6], swizzle="64B", kind="store", pattern="random", seed=5),
        _img("st_narrow_sw128", "UINT16", [64, 12], [16, 8], [0, 0], swizzle="128B", kind="store", pattern="random",
             seed=6),
        _img("st_es", "UINT32", [32, 16], [16, 8], [0, 0], es=[1, 2], kind="store", pattern="random", seed=7),
        _img("st_rank1", "UINT8", [100], [48], [64], kind="store", pattern="random", seed=8),
        _img("st_rank3", "FLOAT32", [16, 8, 6], [8, 4, 4], [8, 6, 4], swizzle="32B", kind="store", pattern="random",
             seed=9),
        _img("st_rank5", "UINT16", [16, 3, 3, 3, 3], [8, 2, 2, 2, 2], [8, 2, 2, 2, 2], kind="store", pattern="random",
             seed=10),
        _img("st_dst384", "BFLOAT16", [64, 16], [64, 8], [0, 0], swizzle="128B", dst=384, kind="store",
             pattern="random", seed=11),
        _img("st_unaligned_x", "FLOAT16", [64, 16], [16, 8], [4, 2], kind="store", pattern="random", seed=12),
        _img("st_gran_u8", "UINT8", [100, 8], [48, 4], [64, 2], strides=[112], kind="store", pattern="random",
             seed=14),
        _img("st_gran_f32", "FLOAT32", [61, 4], [16, 4], [48, 0], strides=[256], kind="store", pattern="random",
             seed=15),
        _img("red_gran_add_u32", "UINT32", [61, 4], [16, 4], [48, 0], strides=[256], kind="reduce", op="add",
             pattern="random", seed=16),
        _img("st_tf32_special", "TFLOAT32", [64, 16], [32, 8], [0, 0], swizzle="128B", kind="store",
             pattern="special", seed=13),
    ]
    red = [("add", "UINT32"), ("add", "INT32"), ("add", "UINT64"), ("add", "FLOAT32"), ("add", "FLOAT16"),
           ("add", "BFLOAT16"), ("min", "INT32"), ("min", "FLOAT16"), ("max", "UINT64"), ("max", "INT64"),
           ("max", "BFLOAT16"), ("inc", "UINT32"), ("dec", "UINT32"), ("and", "UINT32"), ("or", "INT64"),
           ("xor", "UINT64"), ("and", "INT32"), ("and", "INT64"), ("and", "UINT64"), ("or", "INT32"),
           ("or", "UINT32"), ("or", "UINT64"), ("xor", "INT32"), ("xor", "UINT32"), ("xor", "INT64"),
           ("min", "INT64"), ("min", "UINT64"), ("max", "UINT32")]
    for i, (op, dt) in enumerate(red):
        from ..tma.enums import data_type

        size = data_type(dt).size
        pattern = "values" if "FLOAT" in dt else "random"
        cs.append(_img(f"red_{op}_{dt}", dt, [128 // size, 10], [64 // size, 8], [32 // size, 4],
                       swizzle="64B" if i % 2 else "NONE", kind="reduce", op=op, pattern=pattern, seed=100 + i))
    ids = [c["id"] for c in cs]
    assert len(ids) == len(set(ids))
    return cs


def im2col_cases() -> list[dict[str, Any]]:
    """im2col loads (``kind = "im2col"``): NWC / NHWC / NDHWC tensors, padding corners, traversal strides,
    im2col offsets, pixels running past the batch, channel windows off the end."""
    def case(cid, dims, lo, hi, cpp, ppc, coords, offs, es=None, swizzle="NONE", oob="NONE", dt="FLOAT16"):
        c = _img(cid, dt, dims, [cpp] + [1] * (len(dims) - 1), coords, swizzle=swizzle, es=es, oob=oob,
                 kind="im2col")
        c.update(pixel_box_lower_corner=list(lo), pixel_box_upper_corner=list(hi), channels_per_pixel=cpp,
                 pixels_per_column=ppc, offsets=list(offs))
        return c

    return [
        case("nhwc_pad1", [16, 6, 6, 2], [-1, -1], [-1, -1], 16, 32, [0, -1, -1, 0], [0, 0]),
        case("nhwc_pad1_off11", [16, 6, 6, 2], [-1, -1], [-1, -1], 16, 32, [0, -1, -1, 0], [1, 1]),
        case("nhwc_off22_end", [16, 6, 6, 2], [-1, -1], [-1, -1], 16, 48, [0, 2, 3, 1], [2, 2], oob="NAN_REQUEST_ZERO_FMA"),
        case("nhwc_stride2", [32, 8, 8, 1], [0, 0], [-1, -1], 32, 16, [0, 0, 0, 0], [1, 0], es=[1, 2, 2, 1],
             swizzle="64B"),
        case("nhwc_sw128_c64", [64, 5, 5, 2], [-1, -1], [0, 0], 64, 24, [0, -1, 2, 0], [0, 1], swizzle="128B"),
        case("nhwc_channels_off_end", [24, 4, 4, 1], [0, 0], [0, 0], 16, 8, [16, 0, 0, 0], [0, 0]),
        case("nhwc_asym_corners", [16, 6, 5, 2], [-1, 0], [0, -2], 16, 40, [0, -1, 0, 0], [0, 1]),
        case("nwc", [8, 20, 3], [-2], [-2], 8, 40, [0, -2, 0], [3]),
        case("ndhwc", [8, 4, 4, 3, 2], [-1, -1, -1], [-1, -1, -1], 8, 40, [0, -1, -1, -1, 0], [1, 2, 1], dt="FLOAT32"),
        case("nhwc_c0_unaligned", [24, 4, 4, 1], [0, 0], [0, 0], 16, 8, [4, 0, 0, 0], [0, 0]),
    ]


def region_bytes(c: dict[str, Any], smem_bytes: int) -> int:
    """Shared bytes a case dumps: from the 1024-aligned base to 1024 bytes past the image, a multiple of 16
    (a copy that wrote past the model's footprint would show in that tail)."""
    return max(-(-(c.get("dst_offset", 0) + smem_bytes + 1024) // 16) * 16, c.get("dump", 0))


def _map_for(c: dict[str, Any], address: int = 0):
    from .. import tma

    args = model_args(c, base_address=address)
    if c["kind"] == "im2col":
        return tma.encode_im2col(args["dtype"], args["rank"], args["global_address"], args["global_dim"],
                                 args["global_strides"], c["pixel_box_lower_corner"], c["pixel_box_upper_corner"],
                                 c["channels_per_pixel"], c["pixels_per_column"], args["element_strides"],
                                 args["interleave"], args["swizzle"], args["l2_promotion"], args["oob_fill"])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tma.encode_tiled(**args)


def _pattern_bytes(tm, pattern: str, seed: int, nbytes: int) -> np.ndarray:
    if pattern == "random":
        return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)
    size = tm.elem_size
    if pattern == "values":   # finite floats in [-8, 8): reductions then compare values, not NaN payloads
        from ..tma.enums import numpy_dtype

        v = np.random.default_rng(seed).uniform(-8, 8, nbytes // size)
        return v.astype(numpy_dtype(tm.dtype)).view(np.uint8).copy()
    if pattern == "special":  # the FP32 bit patterns a TF32 conversion treats specially, then random words
        w = np.random.default_rng(seed).integers(0, 1 << 32, nbytes // 4, dtype=np.uint64).astype("<u4")
        sp = np.array(F32_SPECIAL, dtype="<u4")[: w.size]
        w[: sp.size] = sp
        return w.view(np.uint8).copy()
    return np.arange(nbytes // size, dtype=np.uint64).astype(f"<u{size}").view(np.uint8).copy()


#: FP32 words whose conversion to TF32 tells the rounding, subnormal, overflow and NaN rules apart:
#: ties to even (down/up), just off a tie, negatives, subnormals (tiny, tie, rounding up into the
#: normals, already TF32-exact), the largest finite values (one rounds to infinity), infinities,
#: quiet/signalling NaNs of both signs (one whose payload lies only in the dropped bits), zeros
F32_SPECIAL = (0x3F801000, 0x3F803000, 0x3F800FFF, 0x3F801001, 0xBF801000, 0xBF803000, 0xBF800FFF, 0xBF801001,
               0x00000001, 0x00001000, 0x00003000, 0x00001FFF, 0x007FFFFF, 0x00400000, 0x80400000, 0x807FF000,
               0x7F7FF000, 0x7F7FEFFF, 0x7F7FE000, 0xFF7FF000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
               0x7FA00000, 0xFFC00000, 0xFF800001, 0x7FFFFFFF, 0x7F801FFF, 0x7F802000, 0x00000000, 0x80000000,
               0x3F800000, 0x40490FDB, 0x00800000, 0x00801000, 0x00803000, 0x33800000, 0x3F7FF000, 0x3F7FFFFF)


def tensor_buffer(c: dict[str, Any]) -> np.ndarray:
    """The global bytes of a case: each element slot holds its own index (``pattern = "index"``, as an
    unsigned integer of the element size, so floats hold small bit patterns), seeded random bytes
    (``"random"``) or seeded finite float values in [-8, 8) (``"values"``)."""
    tm = _map_for(c)
    return _pattern_bytes(tm, c.get("pattern", "index"), c.get("seed", 0), -(-tm.global_bytes // 16) * 16)


def source_image(c: dict[str, Any]) -> np.ndarray:
    """The shared region a store/reduce case starts from (``region_bytes`` long, the case's pattern)."""
    tm = _map_for(c)
    return _pattern_bytes(tm, c.get("pattern", "random"), c.get("seed", 0) + 10_000, region_bytes(c, tm.smem_bytes))


def model_image(c: dict[str, Any]) -> np.ndarray:
    """What the model says the dumped shared region of a load / im2col case holds."""
    from .. import tma

    tm = _map_for(c)
    region = np.full(region_bytes(c, tm.smem_bytes), SENTINEL, np.uint8)
    g = tensor_buffer(c)
    if c["kind"] == "im2col":
        tma.load_im2col(tm, g, c["coords"], c["offsets"], smem=region, dst=c["dst_offset"])
    else:
        tma.load(tm, g, c["coords"], smem=region, dst=c["dst_offset"])
    return region


def initial_global(c: dict[str, Any]) -> np.ndarray:
    """The global buffer before a store (all :data:`GSENTINEL`) or a reduction (seeded random bytes)."""
    g = tensor_buffer(c)
    if c["kind"] == "store":
        g[:] = GSENTINEL
    return g


def model_store(c: dict[str, Any]) -> np.ndarray:
    """What the model says the global buffer holds after a store / reduce case."""
    from .. import tma

    tm = _map_for(c)
    g = initial_global(c)
    smem = source_image(c)
    if c["kind"] == "store":
        tma.store(tm, smem, c["coords"], g, src=c["dst_offset"])
    else:
        tma.reduce(tm, smem, c["coords"], g, c["op"], src=c["dst_offset"])
    return g


# ------------------------------------------------------------------------------------------------
# GPU parts

def measure_encode(cases: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run every case through the real ``cuTensorMapEncodeTiled`` (``h100lab.cuda.encode_tiled``)."""
    from .. import cuda

    buf = cuda.empty(1 << 16, np.uint8)
    out = []
    for c in cases:
        r = dict(c)
        r["address"] = buf.ptr + c["address_offset"]
        try:
            _tiled_on_device(c, r["address"])
            r["result"] = "CUDA_SUCCESS"
        except cuda.DriverError as exc:
            r["result"] = exc.result
        except Exception as exc:    # the Python bindings lack the enumerator, or cannot pass these arrays
            r["result"] = "not_callable"
            r["why"] = f"{type(exc).__name__}: {exc}"
        out.append(r)
    return out


def _encode_im2col_on_device(c: dict[str, Any], address: int):
    """``cuTensorMapEncodeIm2col`` through cuda.bindings (h100lab.cuda has the tiled encoder only)."""
    from ..cuda import TensorMap, device
    from ..cuda.tensormap import enum_value

    d = device._ready()
    enums = [enum_value(k, c[k]) for k in ("dtype", "interleave", "swizzle", "l2_promotion", "oob_fill")]
    err, tmap = d.cuTensorMapEncodeIm2col(
        enums[0], c["rank"], address, [d.cuuint64_t(v) for v in c["global_dim"]],
        [d.cuuint64_t(v) for v in c["global_strides"]], c["pixel_box_lower_corner"], c["pixel_box_upper_corner"],
        c["channels_per_pixel"], c["pixels_per_column"], [d.cuuint32_t(v) for v in c["element_strides"]],
        enums[1], enums[2], enums[3], enums[4])
    if err != d.CUresult.CUDA_SUCCESS:
        raise _Im2colRefused(err.name)
    data = b"".join(int(w).to_bytes(8, "little") for w in tmap.opaque)
    return TensorMap(data, dict(c))


def _tiled_on_device(c: dict[str, Any], address: int):
    """``cuTensorMapEncodeTiled`` through cuda.bindings, with ``globalStrides`` always a real array.

    cuda.bindings passes an empty list as a NULL pointer, and the driver refuses a NULL
    ``globalStrides`` even for rank 1, where it reads no entry (measured on an H200): so a rank-1 map
    gets a one-entry array (never read) unless the case asks for the NULL pointer
    (``global_strides_null``). Raises :class:`h100lab.cuda.DriverError` with the driver's verdict."""
    from ..cuda import DriverError, TensorMap, device
    from ..cuda.tensormap import enum_value

    d = device._ready()
    e = {k: enum_value(k, c[k]) for k in ("dtype", "interleave", "swizzle", "l2_promotion", "oob_fill")}
    strides = list(c["global_strides"])
    if not strides and not c.get("global_strides_null"):
        strides = [c["global_dim"][0] * _dsize(c["dtype"])]
    err, tmap = d.cuTensorMapEncodeTiled(
        e["dtype"], c["rank"], address, [d.cuuint64_t(v) for v in c["global_dim"]],
        [d.cuuint64_t(v) for v in strides], [d.cuuint32_t(v) for v in c["box_dim"]],
        [d.cuuint32_t(v) for v in c["element_strides"]], e["interleave"], e["swizzle"], e["l2_promotion"],
        e["oob_fill"])
    if err != d.CUresult.CUDA_SUCCESS:
        raise DriverError("cuTensorMapEncodeTiled", err.name, int(err))
    return TensorMap(b"".join(int(w).to_bytes(8, "little") for w in tmap.opaque), dict(c))


def _dsize(dtype: str) -> int:
    from ..tma.enums import data_type

    return max(1, data_type(dtype).size)


def _case_region(c: dict[str, Any]) -> tuple[int, int, int]:
    """(region, smem_bytes, tx_bytes) of a case from the model's map; a map the model refuses gets a
    generous region from the raw box (the driver's verdict is then the record's result)."""
    from .. import tma

    try:
        tm = _map_for(c)
    except tma.TensorMapError:
        n = math.prod(c.get("box_dim") or [1]) * 8 * 32
        return region_bytes(c, n), -1, -1
    return region_bytes(c, tm.smem_bytes), tm.smem_bytes, tm.tx_bytes


class _Kernels:
    """The three kernels of ``l04_tma_image.cu`` loaded in this process; ``program`` is a compiled
    :class:`h100lab.cuda.compiler.Program` (a child process gets its parent's, without recompiling)."""

    def __init__(self, program=None):
        from .. import cuda

        prog = program if program is not None else cuda.compile_kernel("l04_tma_image")
        self.load, self.im2col, self.store = (prog.function(n) for n in
                                              ("tma_load_image", "tma_load_im2col_image", "tma_store_image"))
        for k in (self.load, self.im2col, self.store):
            k.set_max_dynamic_shared_memory(DYNAMIC_SMEM)


DYNAMIC_SMEM = 64 * 1024   # dynamic shared memory of every launch: regions are at most a few KB, the rest is slack


def run_case(c: dict[str, Any], kernels: "_Kernels") -> dict[str, Any]:
    """Run one load / im2col / store / reduce case in this process and return its record.

    A fault of the copy surfaces as :class:`h100lab.cuda.DriverError` from the synchronisation and
    is left to the caller: the context is then unusable (:func:`measure_images` runs cases in child
    processes for that reason). The launch gives :data:`DYNAMIC_SMEM` bytes, far more than the
    dumped region, so a copy that writes past the model's footprint shows in the dump instead of
    faulting."""
    from .. import cuda

    region, smem_bytes, tx_bytes = _case_region(c)
    rec = dict(c)
    rec.update(region=region, smem_bytes=smem_bytes, tx_bytes=tx_bytes, sentinel=SENTINEL)
    glob = _global_before(c, region)
    g = cuda.to_device(glob)
    co = list(c["coords"]) + [0] * (5 - len(c["coords"]))
    i32 = np.int32
    try:
        m = _encode_im2col_on_device(c, g.ptr) if c["kind"] == "im2col" else _tiled_on_device(c, g.ptr)
    except (cuda.DriverError, _Im2colRefused) as exc:   # the driver refuses the map: that is the verdict
        rec.update(completed=False, encode_result=getattr(exc, "result", str(exc)))
        return rec
    if tx_bytes < 0:   # the model refuses the map, the driver accepts it: nothing to size the copy by
        rec.update(completed=False, encode_result="CUDA_SUCCESS")
        return rec
    if c["kind"] in ("load", "im2col"):
        out_d = cuda.empty(region, np.uint8)
        st = cuda.zeros(1, np.int32)
        if c["kind"] == "load":
            cuda.launch(kernels.load, 1, 128, m, i32(c["rank"]), *[i32(v) for v in co], i32(c["dst_offset"]),
                        i32(tx_bytes), i32(region), np.uint8(SENTINEL), out_d, st, shared_mem=DYNAMIC_SMEM)
        else:
            offs = list(c["offsets"]) + [0] * (3 - len(c["offsets"]))
            cuda.launch(kernels.im2col, 1, 128, m, i32(c["rank"]), *[i32(v) for v in co], *[i32(v) for v in offs],
                        i32(c["dst_offset"]), i32(tx_bytes), i32(region), np.uint8(SENTINEL), out_d, st,
                        shared_mem=DYNAMIC_SMEM)
        cuda.synchronize()
        rec["tx_status"] = int(st.to_host()[0])
        rec["completed"] = rec["tx_status"] == 1
        rec["image"] = pack(out_d.to_host())
    else:
        src = cuda.to_device(_source_or_empty(c, region))
        op = -1 if c["kind"] == "store" else REDUCE_OPS.index(c["op"])
        cuda.launch(kernels.store, 1, 128, m, i32(c["rank"]), *[i32(v) for v in co], i32(c["dst_offset"]),
                    i32(region), i32(op), src, shared_mem=DYNAMIC_SMEM)
        cuda.synchronize()
        rec["completed"] = True
        rec["global_after"] = pack(g.to_host())
    return rec


def _global_before(c: dict[str, Any], region: int) -> np.ndarray:
    try:
        return initial_global(c) if c["kind"] in ("store", "reduce") else tensor_buffer(c)
    except Exception:   # the model refuses the map: any 16-byte-padded buffer of the tensor's extent
        size = 8
        n = size + sum((d - 1) * s for d, s in zip(c["global_dim"], [size] + list(c["global_strides"])))
        return np.zeros(-(-n // 16) * 16 + 16, np.uint8)


def _source_or_empty(c: dict[str, Any], region: int) -> np.ndarray:
    try:
        return source_image(c)
    except Exception:
        return np.zeros(region, np.uint8)


class _Im2colRefused(RuntimeError):
    def __init__(self, result: str):
        super().__init__(f"cuTensorMapEncodeIm2col returned {result}")
        self.result = result


def _worker(folder: str) -> int:
    """Child-process entry (``python -m h100lab.measure.l04 --worker DIR``): run ``DIR/cases.json`` in
    order with the cubin ``DIR/kernel.cubin``, appending to ``DIR/out.jsonl`` a ``start`` line before
    each case and a ``record`` line after it; a copy that faults writes a ``fault`` line naming the
    driver's error and ends the process (exit 3): the context is lost (a sticky error)."""
    import json
    from pathlib import Path

    from .. import cuda

    d = Path(folder)
    cases = json.loads((d / "cases.json").read_text())
    program = None
    if (d / "kernel.cubin").is_file():
        from ..cuda.compiler import Program

        program = Program("l04_tma_image.cu", "sm_90a", (), (d / "kernel.ptx").read_text(),
                          (d / "kernel.cubin").read_bytes(), "")
    with open(d / "out.jsonl", "a") as out:
        def emit(obj):
            out.write(json.dumps(obj) + "\n")
            out.flush()

        kernels = _Kernels(program)
        for c in cases:
            emit({"start": c["id"]})
            try:
                rec = run_case(c, kernels)
            except cuda.DriverError as exc:
                emit({"fault": c["id"], "error": exc.result, "call": exc.call})
                return 3
            emit({"record": rec})
    return 0


def _run_child(folder, cases: Sequence[dict[str, Any]], program, timeout: float):
    """Run ``cases`` in one child process; returns (records, fault or None, stderr tail)."""
    import json
    import os
    import subprocess
    from pathlib import Path

    d = Path(folder)
    (d / "cases.json").write_text(json.dumps(list(cases)))
    (d / "out.jsonl").write_text("")
    if program is not None:
        (d / "kernel.cubin").write_bytes(program.cubin)
        (d / "kernel.ptx").write_text(program.ptx)
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    try:
        proc = subprocess.run([sys.executable, "-m", "h100lab.measure.l04", "--worker", str(d)], env=env,
                              capture_output=True, text=True, timeout=timeout)
        rc, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, err = "timeout", (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else \
            (exc.stderr or "")
    records, fault, started = [], None, None
    for line in (d / "out.jsonl").read_text().splitlines():
        obj = json.loads(line)
        if "start" in obj:
            started = obj["start"]
        elif "record" in obj:
            records.append(obj["record"])
            started = None
        elif "fault" in obj:
            fault = {"id": obj["fault"], "error": obj["error"], "call": obj["call"]}
            started = None
    if fault is None and started is not None:   # died or hung inside a case without a driver error
        fault = {"id": started, "error": "process timed out" if rc == "timeout" else f"process exited with {rc}",
                 "call": ""}
    return records, fault, err[-2000:]


def measure_images(cases: Sequence[dict[str, Any]], progress: bool = True, isolate: bool = True,
                   timeout: float = 120.0) -> list[dict[str, Any]]:
    """Run load / im2col / store / reduce cases on the GPU; one record per case, in case order.

    With ``isolate`` (the default) the cases run in child processes: a copy the hardware faults on
    kills its CUDA context (a sticky error), so the child records the fault and exits, and a fresh
    child carries on with the next case. A faulting case is run once more on its own, so that its
    record holds the fault it raises by itself (``fault``; ``fault_alone``). This process never
    launches a copy, so a fault can poison neither the other cases nor later measurements.
    ``isolate=False`` runs the cases in this process (a fault then raises)."""
    import tempfile

    from .. import cuda

    if not isolate:
        kernels = _Kernels()
        return [run_case(c, kernels) for c in cases]
    program = cuda.compile_kernel("l04_tma_image")
    by_id = {c["id"]: c for c in cases}
    done: dict[str, dict[str, Any]] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(cases), desc="l04 TMA images", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="h100lab-l04-") as tmp:
        todo = list(cases)
        while todo:
            recs, fault, err = _run_child(tmp, todo, program, timeout)
            for r in recs:
                done[r["id"]] = r
            if fault is None and len(recs) < len(todo):
                raise RuntimeError(f"the l04 worker process stopped after {len(recs)} of {len(todo)} cases "
                                   f"without a fault record:\n{err}")
            if fault is not None:
                c = by_id[fault["id"]]
                _, again, _ = _run_child(tmp, [c], program, timeout)
                region, smem_bytes, tx_bytes = _case_region(c)
                done[c["id"]] = dict(c, region=region, smem_bytes=smem_bytes, tx_bytes=tx_bytes, sentinel=SENTINEL,
                                     completed=False, fault=fault["error"], fault_call=fault["call"],
                                     fault_alone=again["error"] if again and again["id"] == c["id"] else None)
                if progress:
                    print(f"   {c['id']}: the copy faulted ({fault['error']}; alone: "
                          f"{done[c['id']]['fault_alone']})", file=sys.stderr)
            n = len(recs) + (fault is not None)
            if bar is not None:
                bar.update(n)
            todo = todo[n:]
    if bar is not None:
        bar.close()
    return [done[c["id"]] for c in cases]


def _report(name: str, records: list[dict[str, Any]]) -> None:
    from ..validation import l04 as v

    res = v.run_on(name, records)
    print(f"   {name}: {res.cases} cases, {res.mismatches} mismatches {res.examples[:2] if res.mismatches else ''}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m h100lab.measure.l04", description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="data folder to write into (default: the repository's data/)")
    ap.add_argument("--quick", action="store_true", help="a third of the image cases")
    ap.add_argument("--only", help="comma-separated image case ids: run just these (no encode matrix, no dataset "
                                   "written unless --out is given)")
    ap.add_argument("--in-process", action="store_true",
                    help="run the image cases in this process (a faulting copy then ends the run; for debugging "
                         "tools such as compute-sanitizer)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    import os

    if args.worker:
        return _worker(args.worker)

    from .. import cuda, data

    if args.out:
        os.environ["H100LAB_DATA"] = args.out
    all_cases = image_cases() + store_cases() + im2col_cases()
    if args.only:
        ids = args.only.split(",")
        unknown = sorted(set(ids) - {c["id"] for c in all_cases})
        if unknown:
            ap.error(f"unknown case ids {unknown}")
        recs = measure_images([c for c in all_cases if c["id"] in ids], progress=False, isolate=not args.in_process)
        for r in recs:
            print(r["id"], {k: r.get(k) for k in ("completed", "fault", "fault_alone", "encode_result")})
        _report("l04/tma_images", recs)
        return 0
    cmd = "python -m h100lab.measure.l04" + (" --quick" if args.quick else "")
    meta = cuda.run_metadata(cmd)
    enc = measure_encode(encode_cases())
    data.write("l04/encode_verdicts", enc, meta)
    _report("l04/encode_verdicts", enc)
    cases = all_cases
    if args.quick:
        cases = cases[::3]
    imgs = measure_images(cases)
    data.write("l04/tma_images", imgs, meta)
    _report("l04/tma_images", imgs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
