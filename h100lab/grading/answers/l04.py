"""Exercise set 4 (chapter 4, "Tensor maps").

Every reference answer is computed by the model the chapter teaches (h100lab.tma, h100lab.memory),
never typed in. The parameters of each exercise are defined once here and imported by the solutions.
"""
from __future__ import annotations

import numpy as np

from ..registry import exercise

# ---- the exercises' data (shared with solutions/04-tensormap.md) ----------------------------------
#: 4.1: a K-major bf16 tile, 64 elements (128 B) per row, 64 rows, 128B swizzle, loaded at shared address 0
E1 = dict(dtype="BFLOAT16", rank=2, global_address=0, global_dim=[4096, 4096], global_strides=[8192],
          box_dim=[64, 64], element_strides=[1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_128B")
E1_ELEMENT = (13, 5)          # (column, row) = box index innermost first
#: 4.2: an NHWC fp16 activation tensor with C = 20 channels, rows padded to the next 16-byte multiple
E2_SHAPE_NHWC = (2, 7, 9, 20)
#: 4.3: five encodings; which does the sm_90 driver refuse?
E3_CANDIDATES = [
    dict(dtype="FLOAT32", rank=2, global_address=0, global_dim=[1000, 1000], global_strides=[4000],
         box_dim=[32, 32], element_strides=[1, 1], swizzle="128B"),
    dict(dtype="FLOAT32", rank=2, global_address=0, global_dim=[1000, 1000], global_strides=[4008],
         box_dim=[32, 32], element_strides=[1, 1], swizzle="128B"),
    dict(dtype="FLOAT16", rank=2, global_address=0, global_dim=[1000, 1000], global_strides=[2016],
         box_dim=[64, 32], element_strides=[1, 1], swizzle="64B"),
    dict(dtype="UINT8", rank=3, global_address=0, global_dim=[64, 64, 64], global_strides=[64, 4096],
         box_dim=[64, 16, 4], element_strides=[1, 4, 8], swizzle="64B"),
    dict(dtype="INT32", rank=2, global_address=32, global_dim=[64, 64], global_strides=[256], box_dim=[16, 8],
         element_strides=[1, 1], swizzle="NONE", oob_fill="NAN_REQUEST_ZERO_FMA"),
]
#: 4.4: a 6 × 10 fp16 tensor (rows padded to 32 B) whose element (r, c) holds 10·r + c; box {8, 4} at (8, -2)
#: (column 8 = 16 bytes: a box must start on a 16-byte granule of dimension 0, or the H200 faults)
E4_COORDS = (8, -2)
#: 4.5: element strides
E5 = dict(dtype="FLOAT32", rank=2, global_address=0, global_dim=[256, 256], global_strides=[1024],
          box_dim=[32, 20], element_strides=[1, 3])
#: 4.6: a narrow box under a swizzle
E6 = dict(dtype="BFLOAT16", rank=2, global_address=0, global_dim=[256, 256], global_strides=[512],
          box_dim=[16, 10], element_strides=[1, 1], swizzle="CU_TENSOR_MAP_SWIZZLE_64B")
#: 4.7: 32 rows of 128 B, read one 16-byte column by 32 lanes
E7_ROWS = 32
#: 4.8: a 16-row box of 48-byte rows, rows 4096 B apart, with L2_128B promotion
E8 = dict(dtype="UINT8", rank=2, global_address=1 << 20, global_dim=[4096, 64], global_strides=[4096],
          box_dim=[48, 16], element_strides=[1, 1], l2_promotion="L2_128B")


def e4_tensor() -> np.ndarray:
    """The tensor of exercise 4.4: 6 rows of 16 fp16 slots (10 used), element (r, c) = 10 r + c."""
    g = np.zeros((6, 16), np.uint16)
    g[:, :10] = 10 * np.arange(6)[:, None] + np.arange(10)[None, :]
    return g


def e4_map():
    from h100lab import tma

    return tma.encode_tiled("FLOAT16", 2, 0, [10, 6], [32], [8, 4], [1, 1],
                            oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA")


def column_wavefronts(swizzle: str, rows: int = E7_ROWS) -> int:
    """Wavefronts of 32 lanes reading 16 bytes each from chunk 0 of ``rows`` 128-byte rows."""
    from h100lab import tma
    from h100lab.memory.banks import wavefronts

    tm = tma.encode_tiled("BFLOAT16", 2, 0, [64, 64], [128], [64, rows], [1, 1], swizzle=swizzle)
    return int(wavefronts(tma.column_addresses(tm, 0, width=16), 16))


# ---- reference answers --------------------------------------------------------------------------
@exercise("4.1", points=2, hint="Pre-swizzle offset = row·128 + column·2; then XOR bits 7-9 into bits 4-6: "
          "h100lab.tma.smem_address(tensor_map, (column, row)).")
def _offset():
    from h100lab import tma

    return tma.smem_address(tma.encode_tiled(**E1), E1_ELEMENT)


@exercise("4.2", points=2, hint="globalStrides has rank - 1 byte strides, innermost dimension first; a C-row of "
          "40 B is padded to 48: tma.row_major_strides(globalDim, 2, pad_bytes).")
def _strides():
    from h100lab import tma

    n, h, w, c = E2_SHAPE_NHWC
    row = c * 2
    pad = -row % 16
    return list(tma.row_major_strides([c, w, h, n], 2, pad))


@exercise("4.3", points=2, unordered=True, hint="Check each rule: strides multiple of 16, inner box ≤ swizzle "
          "span, elementStrides ≤ 8, NaN fill only for floating types (tma.verdict).")
def _refused():
    from h100lab import tma

    return [i for i, c in enumerate(E3_CANDIDATES) if not tma.verdict(**c).ok]


@exercise("4.4", points=2, hint="Rows -2 and -1 and columns 10 to 15 lie outside the tensor and hold the OOB-NaN "
          "0x7FF7 = 32759: tma.load(map, tensor, coords).view(np.uint16).reshape(4, 8).")
def _oob_box():
    from h100lab import tma

    return tma.load(e4_map(), e4_tensor(), E4_COORDS).view(np.uint16).reshape(4, 8).tolist()


@exercise("4.5", points=1, hint="ceil(20 / 3) rows of 32 FP32 elements: tensor_map.tx_bytes.")
def _tx():
    from h100lab import tma

    return tma.encode_tiled(**E5).tx_bytes


@exercise("4.6", points=1, hint="Each 32-byte row occupies a full 64-byte swizzle span: tensor_map.smem_bytes.")
def _footprint():
    from h100lab import tma

    return tma.encode_tiled(**E6).smem_bytes


@exercise("4.7", points=2, hint="Quarter-warp phases of 8 lanes; without swizzle all 8 rows' chunk 0 sits in "
          "banks 0-3: column_wavefronts('NONE'), column_wavefronts('128B').")
def _wavefronts():
    return [column_wavefronts("CU_TENSOR_MAP_SWIZZLE_NONE"), column_wavefronts("CU_TENSOR_MAP_SWIZZLE_128B")]


@exercise("4.8", points=1, hint="Each 48-byte row is filled as one 128-byte block: "
          "L2Cache().read_segments(global_segments(map, (0, 0)), promotion=128).hbm_bytes.")
def _promotion():
    from h100lab import tma

    tm = tma.encode_tiled(**E8)
    return tma.L2Cache(1 << 20).read_segments(tma.global_segments(tm, [0, 0]), promotion=128).hbm_bytes
