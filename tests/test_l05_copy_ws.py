"""l05_copy_ws.cu (warp-specialised TMA copy: a loader and a storer thread share the ring) and l03_copy_latency.cu
(single-copy latency with every address outside the timed window) on the PTX emulator."""
import numpy as np
import pytest

from h100lab import nvrtc

needs_nvrtc = pytest.mark.skipif(nvrtc.unavailable_reason() is not None, reason=f"{nvrtc.unavailable_reason()}")
TIMEOUT = np.int64(2_000_000_000)


@needs_nvrtc
@pytest.mark.parametrize("tile,stages,lag,flags,grid", [(2048, 2, 0, 0, 3), (1024, 4, 2, 5, 2), (4096, 3, 1, 3, 4),
                                                         (1024, 3, 2, 4, 5), (8192, 1, 0, 0, 2), (4096, 2, 1, 0, 40)])
def test_copy_ws_copies_every_byte(tile, stages, lag, flags, grid):
    from h100lab import emu
    k = emu.compile_kernel("l05_copy_ws").function("copy_ws")
    n = 64 * 1024
    src = emu.to_device(np.arange(n // 4, dtype=np.uint32))
    dst = emu.to_device(np.full(n // 4, 0xFFFFFFFF, np.uint32))
    err = emu.zeros(1, np.uint32)
    st = emu.launch(k, grid, 64, src, dst, np.int64(n), np.int32(tile), np.int32(stages), np.int32(lag),
                    np.int32(flags), TIMEOUT, err, shared_mem=1024 + stages * (-(-tile // 1024) * 1024))
    assert int(err.to_host()[0]) == 0
    assert np.array_equal(dst.to_host(), np.arange(n // 4, dtype=np.uint32))
    assert st.tma_bytes == 2 * n


@needs_nvrtc
def test_copy_ws_refuses_a_lag_without_a_free_buffer():
    from h100lab import emu
    k = emu.compile_kernel("l05_copy_ws").function("copy_ws")
    src = emu.to_device(np.arange(1024, dtype=np.uint32))
    dst = emu.zeros(1024, np.uint32)
    err = emu.zeros(1, np.uint32)
    emu.launch(k, 1, 64, src, dst, np.int64(4096), np.int32(1024), np.int32(2), np.int32(2), np.int32(0), TIMEOUT,
               err, shared_mem=1024 + 2048)
    assert int(err.to_host()[0]) == 2 and not dst.to_host().any()


@needs_nvrtc
@pytest.mark.parametrize("box,stages,lag,flags,grid", [((64, 16), 3, 1, 0, 3), ((32, 8), 2, 0, 4, 5),
                                                       ((64, 8), 4, 3, 0, 2), ((64, 24), 3, 2, 0, 4)])
def test_tensor_copy_ws_copies_every_element(box, stages, lag, flags, grid):
    from h100lab import emu
    k = emu.compile_kernel("l05_copy_ws").function("tensor_copy_ws")
    cols, rows = 256, 64
    src = emu.to_device(np.arange(cols * rows, dtype=np.uint32))
    dst = emu.to_device(np.full(cols * rows, 0xFFFFFFFF, np.uint32))
    bx, by = box
    tin = emu.encode_tiled("FLOAT32", 2, src, [cols, rows], [cols * 4], [bx, by], [1, 1], "NONE", "NONE", "L2_256B",
                           "NONE")
    tout = emu.encode_tiled("FLOAT32", 2, dst, [cols, rows], [cols * 4], [bx, by], [1, 1], "NONE", "NONE", "L2_256B",
                            "NONE")
    err = emu.zeros(1, np.uint32)
    tile = bx * by * 4
    tiles_x = cols // bx                              # a last partial row of boxes (64 % 24): loaded with zeros
    emu.launch(k, grid, 64, tin, tout, np.int32(bx), np.int32(by), np.int32(tiles_x), np.int32(tiles_x * -(-rows // by)),
               np.int32(tile), np.int32(stages), np.int32(lag), np.int32(flags), TIMEOUT, err,
               shared_mem=1024 + stages * (-(-tile // 1024) * 1024))
    assert int(err.to_host()[0]) == 0
    assert np.array_equal(dst.to_host(), np.arange(cols * rows, dtype=np.uint32))


@needs_nvrtc
@pytest.mark.parametrize("count,flags", [(1, 0), (1, 1), (4, 1)])
def test_copy_latency_kernel_lands_each_round(count, flags):
    """copy_latency: a cold and `warm` warm rounds per iteration, each first issue inside its issue window inside
    its total; the last round's bytes are the source at the last offset; the touch (flags bit 0) raises no error."""
    from h100lab import emu
    k = emu.compile_kernel("l03_copy_latency").function("copy_latency")
    words = 1 << 16                                  # 256 KiB
    src = emu.to_device(np.arange(words, dtype=np.uint32))
    offs = np.array([0, 4096 + 16, 65536 + 128, 131072, 135168, 196608], dtype=np.int64)
    out = emu.zeros(3 * 3 * 3, np.uint64)
    err = emu.zeros(1, np.uint32)
    emu.launch(k, 1, 32, src, emu.to_device(offs), np.int32(256), np.int32(count), np.int32(3), np.int32(2),
               np.int32(flags), TIMEOUT, out, err, shared_mem=256 * count + 1024)
    o = out.to_host().reshape(3, 3, 3)
    assert int(err.to_host()[0]) == 0
    assert (o[..., 0] > 0).all() and (o[..., 0] <= o[..., 1]).all() and (o[..., 1] < o[..., 2]).all()
