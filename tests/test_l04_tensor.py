"""h100lab.tma.tensor: the shared-memory image of a tensor copy, stores, reductions, im2col."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from h100lab import tma
from h100lab.memory.swizzle import swizzle_address
from h100lab.tma.tensor import _load_elementwise

SENT = 0xA5


def index_tensor(rows, cols, dtype=np.uint16):
    return np.arange(rows * cols, dtype=dtype).reshape(rows, cols)


def tmap2d(rows, cols, box, dtype="BFLOAT16", swizzle="128B", es=(1, 1), oob="NONE", size=2):
    return tma.encode_tiled(dtype, 2, 0, [cols, rows], [cols * size], list(box), list(es), swizzle=swizzle,
                            oob_fill=oob)


def test_sw128_image_of_an_index_tensor():
    g = index_tensor(64, 128)
    tm = tmap2d(64, 128, (64, 8))
    img = tma.load(tm, g, [0, 0]).view("<u2")
    for r in range(8):
        for c in range(64):
            a = tma.smem_address(tm, (c, r))
            assert a == swizzle_address(128 * r + 2 * c, "128B")
            assert img[a // 2] == g[r, c]
    # row 1 is its chunk pairs swapped: elements 8..15 first
    assert list(img[64:72]) == list(range(128 + 8, 128 + 16))


def test_oob_fill_zero_and_nan_for_negative_and_far_corners():
    g = index_tensor(16, 16) + 1
    tm = tmap2d(16, 16, (16, 4), dtype="FLOAT16", swizzle="NONE")
    img = tma.load(tm, g, [-8, -2]).view("<u2").reshape(4, 16)
    assert (img[:2] == 0).all() and (img[2:, :8] == 0).all()
    assert list(img[2, 8:]) == list(range(1, 9))
    tmn = tmap2d(16, 16, (16, 4), dtype="FLOAT16", swizzle="NONE", oob="NAN_REQUEST_ZERO_FMA")
    imn = tma.load(tmn, g, [-8, -2]).view("<u2").reshape(4, 16)
    assert (imn[:2] == tma.OOB_NAN).all() and np.isnan(imn[:2].view(np.float16)).all()
    assert (tma.load(tmn, g, [100, 100]).view("<u2") == tma.OOB_NAN).all()    # fully outside: all fill
    assert tmn.tx_bytes == 16 * 4 * 2                                          # the same byte count
    f32 = tma.encode_tiled("FLOAT32", 1, 0, [8], [], [8], [1], oob_fill="NAN_REQUEST_ZERO_FMA")
    w = tma.load(f32, np.zeros(8, np.float32), [4]).view("<u4")
    assert list(w[4:]) == [0x7FF77FF7] * 4 and np.isnan(w[4:].view(np.float32)).all()
    bf = tma.encode_tiled("BFLOAT16", 1, 0, [8], [], [8], [1], oob_fill="NAN_REQUEST_ZERO_FMA")
    assert np.isnan(tma.load(bf, np.zeros(8, np.uint16), [-8]).view(ml_dtypes.bfloat16).astype(np.float32)).all()


def test_element_strides_take_every_other_row():
    g = index_tensor(16, 64)
    tm = tmap2d(16, 64, (64, 8), dtype="FLOAT16", swizzle="NONE", es=(1, 2))
    img = tma.load(tm, g, [0, 0]).view("<u2").reshape(4, 64)
    assert np.array_equal(img, g[[0, 2, 4, 6]])


def test_destination_alignment_and_absolute_swizzle():
    g = index_tensor(64, 64)
    tm = tmap2d(64, 64, (64, 8))
    for off in (16, 32, 64, 96):
        with pytest.raises(tma.TmaFault) as e:
            tma.load(tm, g, [0, 0], dst=1024 + off)
        assert e.value.error == "CUDA_ERROR_MISALIGNED_ADDRESS" and "128-byte" in str(e.value)
    smem = np.zeros(4096, np.uint8)
    img = tma.load(tm, g, [0, 0], smem=smem, dst=1024 + 384).view("<u2")
    # the pattern follows the absolute address: line 0 of the tile is line 3 of its 1024-byte block
    assert list(img[24:32]) == list(range(8))
    with pytest.raises(tma.TmaFault, match="ILLEGAL_ADDRESS"):
        tma.load(tm, g, [0, 0], smem=np.zeros(1024, np.uint8), dst=128)


def test_padding_bytes_are_left_untouched():
    g = index_tensor(16, 32)
    tm = tmap2d(16, 32, (32, 4))      # 64-B rows, 128-B span
    smem = np.full(1024, SENT, np.uint8)
    img = tma.load(tm, g, [0, 0], smem=smem, dst=0)
    assert (img == SENT).sum() == 4 * 64 and tm.smem_bytes == 512
    assert (smem[512:] == SENT).all()


@settings(max_examples=60)
@given(rank=st.integers(1, 4), size=st.sampled_from([1, 2, 4, 8]), mode=st.sampled_from(["NONE", "32B", "64B", "128B"]),
       seed=st.integers(0, 2 ** 31), nan=st.booleans())
def test_fast_path_equals_element_by_element(rank, size, mode, seed, nan):
    rng = np.random.default_rng(seed)
    dt = {1: "UINT8", 2: "FLOAT16", 4: "FLOAT32", 8: "FLOAT64"}[size]
    dims = [int(rng.integers(1, 24)) for _ in range(rank)]
    s = -(-dims[0] * size // 16) * 16 + 16 * int(rng.integers(0, 2))
    st_ = []
    for d in dims[1:]:
        st_.append(s)
        s *= d
    span = {"NONE": 256, "32B": 32, "64B": 64, "128B": 128}[mode]
    box = [int(rng.integers(1, span // 16 + 1)) * 16 // size] + [int(rng.integers(1, 6)) for _ in range(rank - 1)]
    if box[0] > 256:
        box[0] = 256
    es = [int(rng.integers(1, 4)) for _ in range(rank)]
    tm = tma.encode_tiled(dt, rank, 0, dims, st_, box, es, swizzle=mode,
                          oob_fill="NAN_REQUEST_ZERO_FMA" if nan and size > 1 else "NONE")
    g = rng.integers(0, 256, size=tm.global_bytes, dtype=np.uint8)
    coords = [int(rng.integers(-6, d + 3)) for d in dims]
    dst = 128 * int(rng.integers(0, 12))
    a = tma.load(tm, g, coords, smem=np.full(dst + tm.smem_bytes, SENT, np.uint8), dst=dst).copy()
    b = np.full(tm.smem_bytes, SENT, np.uint8)
    _load_elementwise(tm, g, tuple(coords), b, dst)
    assert np.array_equal(a, b)


def test_box_map_and_segments():
    g = index_tensor(10, 40)
    tm = tma.encode_tiled("FLOAT16", 2, 4096, [40, 10], [80], [16, 4], [1, 1], swizzle="32B")
    bm = tma.box_map(tm, [32, 8], dst=0)
    assert bm.shape == (4, 16) and bm.in_bounds.sum() == 8 * 2
    assert np.array_equal(bm.coords[0][0], np.arange(32, 48)) and np.array_equal(bm.coords[1][:, 0], [8, 9, 10, 11])
    segs = tma.global_segments(tm, [32, 8])
    assert segs == [(4096 + 8 * 80 + 64, 16), (4096 + 9 * 80 + 64, 16)]
    tm_es = tma.encode_tiled("FLOAT16", 2, 0, [40, 10], [80], [16, 4], [1, 2], interleave="NONE")
    assert len(tma.global_segments(tm_es, [0, 0])) == 2
    with pytest.raises(ValueError, match="outside the box"):
        tma.smem_address(tm, (16, 0))


def test_coordinate_and_gmem_errors():
    tm = tmap2d(8, 64, (64, 8))
    g = index_tensor(8, 64)
    with pytest.raises(ValueError, match="rank 2"):
        tma.load(tm, g, [0])
    with pytest.raises(ValueError, match=".s32"):
        tma.load(tm, g, [0, 1 << 31])
    with pytest.raises(ValueError, match="reach past"):
        tma.load(tm, g[:4], [0, 0])
    with pytest.raises(ValueError, match="C-contiguous"):
        tma.load(tm, index_tensor(8, 128)[:, ::2], [0, 0])
    with pytest.raises(ValueError, match="uint8"):
        tma.load(tm, g, [0, 0], smem=np.zeros(4096, np.uint16))


def test_store_round_trip_clips_out_of_bounds():
    g = index_tensor(20, 24)
    tm = tmap2d(20, 24, (16, 8), dtype="FLOAT16", swizzle="32B")
    smem = np.zeros(4096, np.uint8)
    tma.load(tm, g, [16, 16], smem=smem, dst=256)
    out = np.full_like(g, 7)
    n = tma.store(tm, smem, [16, 16], out, src=256)
    assert n == 8 * 4 * 2
    assert np.array_equal(out[16:, 16:], g[16:, 16:]) and (out[:16] == 7).all() and (out[:, :16] == 7).all()
    with pytest.raises(ValueError, match="negative"):
        tma.store(tm, smem, [-1, 0], out, src=256)
    with pytest.raises(tma.TmaFault):
        tma.store(tm, smem, [0, 0], out, src=200)


def test_reductions_follow_ptx():
    u = tma.encode_tiled("UINT32", 1, 0, [8], [], [8], [1])
    g = np.array([0, 1, 5, 9, 0xFFFFFFFF, 3, 3, 0], np.uint32)
    smem = np.zeros(256, np.uint8)
    smem[:32].view(np.uint32)[:] = [1, 1, 5, 5, 1, 2, 4, 0]
    a = g.copy(); tma.reduce(u, smem, [0], a, "add")
    assert list(a) == [1, 2, 10, 14, 0, 5, 7, 0]               # wraps around
    a = g.copy(); tma.reduce(u, smem, [0], a, "inc")
    assert list(a) == [1, 0, 0, 0, 0, 0, 4, 0]                 # (old >= v) ? 0 : old + 1
    a = g.copy(); tma.reduce(u, smem, [0], a, "dec")
    assert list(a) == [1, 0, 4, 5, 1, 2, 2, 0]                 # (old == 0 || old > v) ? v : old - 1
    a = g.copy(); tma.reduce(u, smem, [0], a, "xor")
    assert list(a) == list(g ^ smem[:32].view(np.uint32))
    bf = tma.encode_tiled("BFLOAT16", 1, 0, [8], [], [8], [1])
    gb = np.array([1, -2, np.nan, 4, 0, 0, 0, 0], ml_dtypes.bfloat16)
    smem[:16].view(ml_dtypes.bfloat16)[:] = np.array([0, 3, 1, np.nan, 0, 0, 0, 0], ml_dtypes.bfloat16)
    tma.reduce(bf, smem, [0], gb, "max")
    assert list(gb.astype(np.float32)[:4]) == [1, 3, 1, 4]     # NaN loses to a number
    f = tma.encode_tiled("FLOAT32", 1, 0, [4], [], [4], [1])
    gf = np.array([1e-40, 1.0, -1e-39, 2.0], np.float32)
    smem[:16].view(np.float32)[:] = [0, 1, -0.0, 1e-40]
    tma.reduce(f, smem, [0], gf, "add")
    assert list(gf) == [0.0, 2.0, 0.0, 2.0] and np.signbit(gf[2])
    for op, dt in [("add", "UINT8"), ("add", "INT64"), ("inc", "INT32"), ("and", "FLOAT32"), ("min", "FLOAT32")]:
        bad = tma.encode_tiled(dt, 1, 0, [16], [], [16], [1])
        with pytest.raises(ValueError, match="PTX §9.7.9.27.1.3"):
            tma.reduce(bad, smem, [0], np.zeros(16 * bad.elem_size, np.uint8), op)
    with pytest.raises(ValueError, match="unknown reduction"):
        tma.reduce(u, smem, [0], g.copy(), "mul")
    assert tma.tensor.reduce_type("and", "CU_TENSOR_MAP_DATA_TYPE_INT64") == "b64"


def test_interleaved_nc8hwc8_load():
    # NC/8HWC8 fp16, C = 16 (2 slices), H = W = 4, N = 1: memory [C/8][H][W][8]
    c8, w, h, cs = 8, 4, 4, 2
    g = np.arange(cs * h * w * c8, dtype=np.uint16)
    tm = tma.encode_tiled("FLOAT16", 4, 0, [c8, w, h, cs], [16, 16 * w, 16 * w * h], [8, 2, 2, 2], [1, 1, 1, 1],
                          interleave="16B", swizzle="NONE")
    assert tm.row_pitch == 16 and tm.rows == 8
    img = tma.load(tm, g, [0, 1, 1, 0]).view("<u2").reshape(2, 2, 2, 8)
    ref = g.reshape(cs, h, w, c8)[0:2, 1:3, 1:3, :]
    assert np.array_equal(img, ref)
    tm2 = tma.encode_tiled("FLOAT16", 3, 0, [8, 4, 4], [16, 64], [8, 4, 1], [2, 1, 1], interleave="16B")
    assert tm2.box_elements[0] == 4      # dimension 0 is strided in an interleaved layout
    row = tma.load(tm2, g[:128], [0, 0, 0]).view("<u2")[:8]
    assert list(row[:4]) == [0, 2, 4, 6]


def test_im2col_column_of_a_3x3_convolution():
    # NHWC fp16, C = 8, W = H = 4, N = 1; pad 1 → box lower corner -1, upper corner -1 (8 - 2 = 4 outputs wide)
    C, W, H, N = 8, 4, 4, 1
    g = np.arange(N * H * W * C, dtype=np.uint16).reshape(N, H, W, C)
    tm = tma.encode_im2col("FLOAT16", 4, 0, [C, W, H, N], [C * 2, C * 2 * W, C * 2 * W * H], [-1, -1], [-1, -1],
                           C, 16, [1, 1, 1, 1])
    pix = tma.im2col_pixels(tm, [0, -1, -1, 0], [1, 1])
    assert [tuple(p) for p in pix[:5]] == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0), (0, 1, 0)]
    img = tma.load_im2col(tm, g, [0, -1, -1, 0], [0, 0]).view("<u2").reshape(16, C)
    assert (img[0] == 0).all()                        # pixel (-1, -1): padding
    assert np.array_equal(img[5], g[0, 0, 0])         # base (0, 0) + offset (0, 0)
    strided = tma.encode_im2col("FLOAT16", 4, 0, [C, W, H, N], [C * 2, C * 2 * W, C * 2 * W * H], [0, 0], [0, 0],
                                C, 6, [1, 2, 2, 1])
    p = tma.im2col_pixels(strided, [0, 0, 0, 0], [0, 0])
    assert [tuple(x) for x in p] == [(0, 0, 0), (2, 0, 0), (0, 2, 0), (2, 2, 0), (0, 0, 1), (2, 0, 1)]
    with pytest.raises(ValueError, match="8-bit"):
        tma.im2col_pixels(tm, [0, 0, 0, 0], [256, 0])
    with pytest.raises(ValueError, match="2 im2col offsets"):
        tma.im2col_pixels(tm, [0, 0, 0, 0], [0])
    with pytest.raises(ValueError, match="encode_im2col"):
        tma.im2col_pixels(tmap2d(8, 64, (64, 8)), [0, 0], [0])
    with pytest.raises(ValueError, match="load_im2col"):
        tma.load(tm, g, [0, 0, 0, 0])


def test_256x256_bf16_tile_is_fast():
    import time
    g = index_tensor(256, 256)
    tm = tmap2d(256, 256, (64, 256))
    t = time.perf_counter()
    for k in range(4):
        tma.load(tm, g, [64 * k, 0])
    assert time.perf_counter() - t < 0.05
