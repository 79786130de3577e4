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
    assert (tma.load(tmn, g, [104, 100]).view("<u2") == tma.OOB_NAN).all()    # fully outside: all fill
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
    coords[0] -= coords[0] % (16 // size)          # dimension 0 starts on a 16-byte granule (else the TMA faults)
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


def test_interleaved_maps_step_in_whole_slices_and_skip_dimension_rank_minus_2():
    # measured on an H200 (data/l04/tma_images, cases ilq_*/ilx_*): dimension 0 of an interleaved map counts
    # 16-byte slices lying contiguously in memory; dimension rank-2 is not traversed
    dims = [8, 40, 30, 5]                                   # fp16, one 16-byte slice per position of dimension 1
    g = np.arange(int(np.prod(dims)), dtype=np.uint16)
    st_ = [16, 16 * 40, 16 * 40 * 30]
    tm = tma.encode_tiled("FLOAT16", 4, 0, dims, st_, [8, 2, 3, 2], [1, 1, 1, 1], interleave="16B")
    assert tm.unit_bytes == 16 and tm.box_elements == (8, 2, 1, 2) and tm.tx_bytes == 8 * 2 * 2 * 16
    img = tma.load(tm, g, [0, 3, 4, 1]).view("<u2").reshape(2, 2, 64)
    for cg in range(2):
        for w in range(2):
            first = (3 + w) * 8 + 4 * 320 + (1 + cg) * 9600          # element index of the row's first slice
            assert np.array_equal(img[cg, w], g[first:first + 64])   # 8 slices = 64 fp16 values, contiguous
    # the coordinate of the untraversed dimension is still bounds-checked; a slice past the tensor's end is filled
    assert (tma.load(tm, g, [0, 3, -1, 1]) == 0).all()
    edge = tma.load(tm, g, [0, 38, 29, 4]).view("<u2").reshape(2, 2, 8, 8)
    assert (edge[0, 0, :2] != 0).any() and (edge[0, 0, 2:] == 0).all()    # slices 2.. run past the last byte
    # element stride along dimension 0 steps whole slices; the coordinate is in slices (never misaligned)
    es = tma.encode_tiled("FLOAT16", 4, 0, dims, st_, [8, 1, 1, 1], [2, 1, 1, 1], interleave="16B")
    row = tma.load(es, g, [1, 3, 4, 1]).view("<u2").reshape(4, 8)
    first = 3 * 8 + 4 * 320 + 9600
    assert [int(r[0]) for r in row] == [first + 8 * k for k in (1, 3, 5, 7)]
    # 32-byte interleave: slices of 32 bytes
    f32 = tma.encode_tiled("FLOAT32", 3, 0, [8, 40, 30], [32, 32 * 40], [8, 1, 2], [1, 1, 1], interleave="32B",
                           swizzle="32B")
    assert f32.unit_bytes == 32 and f32.row_bytes == 256 and f32.rows == 2


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


def test_tensor_copies_fault_on_a_start_off_the_16_byte_granule():
    # measured on an H200: tensorCoords[0] * elementSize must be a multiple of 16 for loads, stores, reductions
    # and im2col loads, inside or outside the tensor, else CUDA_ERROR_ILLEGAL_INSTRUCTION
    g = index_tensor(40, 256)
    tm = tmap2d(40, 256, (64, 16))
    for x in (3, 5, 261, -70, 300):
        with pytest.raises(tma.TmaFault, match="16-byte granule") as e:
            tma.load(tm, g, [x, -20])
        assert e.value.error == "CUDA_ERROR_ILLEGAL_INSTRUCTION"
    for x in (-8, 0, 8, 264):                                # multiples of 8 bf16 = 16 bytes: fine
        tma.load(tm, g, [x, -20])
    smem = np.zeros(8192, np.uint8)
    with pytest.raises(tma.TmaFault):
        tma.store(tm, smem, [4, 0], g.copy())
    with pytest.raises(tma.TmaFault):
        tma.reduce(tmap2d(40, 256, (64, 16), dtype="FLOAT16"), smem, [4, 0], g.copy(), "add")
    im = tma.encode_im2col("FLOAT16", 4, 0, [24, 4, 4, 1], [48, 192, 768], [0, 0], [0, 0], 16, 8, [1, 1, 1, 1])
    with pytest.raises(tma.TmaFault):
        tma.load_im2col(im, np.zeros(24 * 16, np.uint16), [4, 0, 0, 0], [0, 0])
    tma.load_im2col(im, np.zeros(24 * 16, np.uint16), [8, 0, 0, 0], [0, 0])


@settings(max_examples=200)
@given(w=st.integers(0, 2 ** 32 - 1))
def test_tf32_round_is_round_to_nearest_even_with_one_nan(w):
    r = int(tma.tf32_round(np.array([w], np.uint32))[0])
    f = np.array([w], np.uint32).view(np.float32)[0]
    if np.isnan(f):
        assert r == tma.TF32_NAN
        return
    assert r & 0x1FFF == 0 and (r >> 31) == (w >> 31)
    lo, hi = w & ~0x1FFF, (w & ~0x1FFF) + 0x2000        # the two TF32 neighbours (magnitudes, same sign)
    dist_lo, dist_hi = w - lo, hi - w
    want = lo if dist_lo < dist_hi or (dist_lo == dist_hi and not (lo >> 13) & 1) else hi
    assert r == want


def test_tf32_loads_round_and_stores_do_not():
    # measured on an H200 (cases bits_TFLOAT32*_special, st_tf32_special, edge_nan_tf32)
    words = np.array([0x3F801000, 0x3F803000, 0x007FFFFF, 0x00001000, 0x7F7FF000, 0xFFC00001, 0x7F800001,
                      0x80400000] + [0] * 24, np.uint32)
    want = [0x3F800000, 0x3F804000, 0x00800000, 0x00000000, 0x7F800000, 0x7FFFE000, 0x7FFFE000, 0x80400000]
    for dt in ("TFLOAT32", "TFLOAT32_FTZ"):
        tm = tma.encode_tiled(dt, 1, 0, [32], [], [32], [1])
        assert list(tma.load(tm, words, [0]).view("<u4")[:8]) == want
        smem = np.zeros(256, np.uint8)
        smem[:128].view("<u4")[:] = words
        out = np.zeros(32, np.uint32)
        tma.store(tm, smem, [0], out)
        assert np.array_equal(out, words)                      # a store moves the bits unchanged
    nan = tma.encode_tiled("TFLOAT32", 1, 0, [8], [], [16], [1], oob_fill="NAN_REQUEST_ZERO_FMA")
    assert list(tma.load(nan, words[:8], [0]).view("<u4")[8:]) == [0x7FF77FF7] * 8   # fill: not converted
    f32 = tma.encode_tiled("FLOAT32_FTZ", 1, 0, [32], [], [32], [1])
    assert np.array_equal(tma.load(f32, words, [0]).view("<u4"), words)   # FLOAT32(_FTZ): no change


def test_stores_and_reductions_write_the_whole_last_granule():
    # measured on an H200 (st_rank1, st_gran_u8, st_gran_f32, red_gran_add_u32): a row ending inside a 16-byte
    # granule is written to the granule's end; a load fills those elements per oobFill instead
    u8 = tma.encode_tiled("UINT8", 2, 0, [100, 8], [112], [48, 4], [1, 1])
    g = np.zeros(112 * 8, np.uint8)
    smem = np.full(256, 9, np.uint8)
    n = tma.store(u8, smem, [64, 2], g)
    rows = g.reshape(8, 112)
    assert n == 48 * 4 and (rows[2:6, 64:112] == 9).all() and (rows[2:6, :64] == 0).all() and (rows[:2] == 0).all()
    ld = tma.load(u8, np.arange(112 * 8, dtype=np.uint8), [64, 2]).reshape(4, 48)
    assert (ld[:, 36:] == 0).all() and (ld[:, :36] != 0).any()
    u32 = tma.encode_tiled("UINT32", 2, 0, [61, 4], [256], [16, 4], [1, 1])
    acc = np.ones(64 * 4, np.uint32)
    src = np.zeros(256, np.uint8)
    src.view("<u4")[:] = 2
    tma.reduce(u32, src, [48, 0], acc, "add")
    assert (acc.reshape(4, 64)[:, 48:] == 3).all() and (acc.reshape(4, 64)[:, :48] == 1).all()
    bm = tma.box_map(u8, [64, 2])
    m, off = tma.write_mask(bm)
    assert m.sum() == 48 * 4 and bm.in_bounds.sum() == 36 * 4
    with pytest.raises(ValueError, match="granule"):
        tma.store(tma.encode_tiled("UINT8", 1, 0, [100], [], [48], [1]), smem, [64], np.zeros(100, np.uint8))


def test_bitwise_tensor_reductions_fault_on_int64_maps():
    # measured on an H200: .and/.or/.xor fault on INT64 maps, work on UINT64 / INT32 / UINT32
    smem = np.zeros(512, np.uint8)
    i64 = tma.encode_tiled("INT64", 1, 0, [8], [], [8], [1])
    for op in ("and", "or", "xor"):
        with pytest.raises(tma.TmaFault) as e:
            tma.reduce(i64, smem, [0], np.zeros(8, np.int64), op)
        assert e.value.error == "CUDA_ERROR_ILLEGAL_INSTRUCTION"
        for dt, npt in (("UINT64", np.uint64), ("INT32", np.int32), ("UINT32", np.uint32)):
            tm = tma.encode_tiled(dt, 1, 0, [8], [], [8], [1])
            tma.reduce(tm, smem, [0], np.zeros(8, npt), op)
    tma.reduce(i64, smem, [0], np.zeros(8, np.int64), "max")
