"""Lesson 4 measurements: the driver's verdict on tensor-map encodings, and TMA shared-memory images.

``python -m h100lab.measure.l04 [--out DIR] [--quick]`` writes (``h100lab.data``):

* ``l04/encode_verdicts``: one record per ``cuTensorMapEncodeTiled`` parameter set of
  :func:`encode_cases` — every rule of hopper-spec-facts §5 on both sides of its boundary — with
  the driver's result name (``CUDA_SUCCESS`` / ``CUDA_ERROR_INVALID_VALUE``); pure driver calls;
* ``l04/tma_images``: one record per tensor copy of :func:`image_cases` (kernel
  ``l04_tma_image.cu``): a tensor whose elements hold their own index (or seeded random bytes) is
  loaded with ``cp.async.bulk.tensor`` into a sentinel-filled shared region and the region is
  dumped; also tensor stores and reductions (the global buffer after the store) and im2col loads.
  Images are stored zlib-compressed and base64-encoded (:func:`pack`).

Everything except the GPU calls (case lists, buffers, packing, the model's predictions) is plain
Python, tested without a GPU. Runs in well under two minutes on an H200.
"""
from __future__ import annotations

import argparse
import base64
import sys
import zlib
from typing import Any, Sequence

import numpy as np

__all__ = ["encode_cases", "image_cases", "store_cases", "im2col_cases", "tensor_buffer", "pack", "unpack",
           "model_args", "model_image", "model_store", "region_bytes", "SENTINEL", "GSENTINEL", "REDUCE_OPS",
           "measure_encode", "measure_images", "main"]

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
        ("il16_inner8", "no 16-byte inner rule with interleave",
         dict(_R3, interleave="16B", swizzle="NONE", box_dim=[4, 16, 2])),
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
                global_dim=c["global_dim"], global_strides=c["global_strides"], box_dim=c["box_dim"],
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
    # interleaved layouts (NC/8HWC8 with 16-B slices; NC/16HWC16 with 32-B slices)
    cs += [
        _img("il16_full", "FLOAT16", [8, 6, 5, 4], [8, 4, 2, 2], [0, 1, 2, 1], interleave="16B"),
        _img("il16_sw128", "FLOAT16", [8, 16, 8, 2], [8, 16, 4, 2], [0, 0, 1, 0], interleave="16B", swizzle="128B"),
        _img("il16_edge", "FLOAT16", [8, 6, 5, 4], [8, 4, 4, 2], [0, 4, -2, 3], interleave="16B"),
        _img("il32_sw32", "FLOAT32", [8, 6, 5, 4], [8, 4, 2, 2], [0, 1, 1, 1], interleave="32B", swizzle="32B"),
        _img("il16_half_slice", "FLOAT16", [8, 6, 5], [4, 4, 2], [0, 1, 1], interleave="16B"),
        _img("il16_es0_2", "FLOAT16", [8, 6, 5], [8, 4, 2], [0, 1, 1], interleave="16B", es=[2, 1, 1]),
    ]
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
    ]
    red = [("add", "UINT32"), ("add", "INT32"), ("add", "UINT64"), ("add", "FLOAT32"), ("add", "FLOAT16"),
           ("add", "BFLOAT16"), ("min", "INT32"), ("min", "FLOAT16"), ("max", "UINT64"), ("max", "INT64"),
           ("max", "BFLOAT16"), ("inc", "UINT32"), ("dec", "UINT32"), ("and", "UINT32"), ("or", "INT64"),
           ("xor", "UINT64")]
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
    ]


def region_bytes(c: dict[str, Any], smem_bytes: int) -> int:
    """Shared bytes a case dumps: from the 1024-aligned base to 256 bytes past the image, a multiple of 16."""
    return -(-(c.get("dst_offset", 0) + smem_bytes + 256) // 16) * 16


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
    return np.arange(nbytes // size, dtype=np.uint64).astype(f"<u{size}").view(np.uint8).copy()


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
            cuda.encode_tiled(c["dtype"], c["rank"], r["address"], c["global_dim"], c["global_strides"], c["box_dim"],
                              c["element_strides"], c["interleave"], c["swizzle"], c["l2_promotion"], c["oob_fill"])
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
        raise RuntimeError(f"cuTensorMapEncodeIm2col refused case {c['id']}: {err.name}")
    data = b"".join(int(w).to_bytes(8, "little") for w in tmap.opaque)
    return TensorMap(data, dict(c))


def measure_images(cases: Sequence[dict[str, Any]], progress: bool = True) -> list[dict[str, Any]]:
    """Run load / im2col / store / reduce cases on the GPU; one record per case with the dumped bytes."""
    from .. import cuda

    prog = cuda.compile_kernel("l04_tma_image")
    k_load = prog.function("tma_load_image")
    k_im2col = prog.function("tma_load_im2col_image")
    k_store = prog.function("tma_store_image")
    for k in (k_load, k_im2col, k_store):
        k.set_max_dynamic_shared_memory(200 * 1024)
    it = cases
    if progress:
        from tqdm import tqdm

        it = tqdm(cases, desc="l04 TMA images", file=sys.stderr)
    out = []
    i32 = np.int32
    for c in it:
        tm = _map_for(c)
        region = region_bytes(c, tm.smem_bytes)
        g = cuda.to_device(initial_global(c) if c["kind"] in ("store", "reduce") else tensor_buffer(c))
        co = list(c["coords"]) + [0] * (5 - len(c["coords"]))
        rec = dict(c)
        rec.update(region=region, smem_bytes=tm.smem_bytes, tx_bytes=tm.tx_bytes, sentinel=SENTINEL)
        try:
            if c["kind"] == "im2col":
                m = _encode_im2col_on_device(c, g.ptr)
            else:
                m = cuda.encode_tiled(c["dtype"], c["rank"], g.ptr, c["global_dim"], c["global_strides"],
                                      c["box_dim"], c["element_strides"], c["interleave"], c["swizzle"],
                                      c["l2_promotion"], c["oob_fill"])
        except (cuda.DriverError, RuntimeError) as exc:   # the model accepted this map; the driver did not
            rec.update(completed=False, encode_result=getattr(exc, "result", str(exc)))
            out.append(rec)
            continue
        if c["kind"] in ("load", "im2col"):
            out_d = cuda.empty(region, np.uint8)
            st = cuda.zeros(1, np.int32)
            if c["kind"] == "load":
                cuda.launch(k_load, 1, 128, m, i32(c["rank"]), *[i32(v) for v in co], i32(c["dst_offset"]),
                            i32(tm.tx_bytes), i32(region), np.uint8(SENTINEL), out_d, st, shared_mem=region + 1024)
            else:
                offs = list(c["offsets"]) + [0] * (3 - len(c["offsets"]))
                cuda.launch(k_im2col, 1, 128, m, i32(c["rank"]), *[i32(v) for v in co], *[i32(v) for v in offs],
                            i32(c["dst_offset"]), i32(tm.tx_bytes), i32(region), np.uint8(SENTINEL), out_d, st,
                            shared_mem=region + 1024)
            cuda.synchronize()
            rec["completed"] = bool(st.to_host()[0] == 1)
            rec["image"] = pack(out_d.to_host())
        else:
            src = cuda.to_device(source_image(c))
            op = -1 if c["kind"] == "store" else REDUCE_OPS.index(c["op"])
            cuda.launch(k_store, 1, 128, m, i32(c["rank"]), *[i32(v) for v in co], i32(c["dst_offset"]), i32(region),
                        i32(op), src, shared_mem=region + 1024)
            cuda.synchronize()
            rec["completed"] = True
            rec["global_after"] = pack(g.to_host())
        out.append(rec)
    return out


def _report(name: str, records: list[dict[str, Any]]) -> None:
    from ..validation import l04 as v

    res = v.run_on(name, records)
    print(f"   {name}: {res.cases} cases, {res.mismatches} mismatches {res.examples[:2] if res.mismatches else ''}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m h100lab.measure.l04", description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="data folder to write into (default: the repository's data/)")
    ap.add_argument("--quick", action="store_true", help="a third of the image cases")
    args = ap.parse_args(argv)
    import os

    from .. import cuda, data

    if args.out:
        os.environ["H100LAB_DATA"] = args.out
    cmd = "python -m h100lab.measure.l04" + (" --quick" if args.quick else "")
    meta = cuda.run_metadata(cmd)
    enc = measure_encode(encode_cases())
    data.write("l04/encode_verdicts", enc, meta)
    _report("l04/encode_verdicts", enc)
    cases = image_cases() + store_cases() + im2col_cases()
    if args.quick:
        cases = cases[::3]
    imgs = measure_images(cases)
    data.write("l04/tma_images", imgs, meta)
    _report("l04/tma_images", imgs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
