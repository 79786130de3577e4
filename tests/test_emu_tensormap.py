"""tensormap.replace and fence.proxy.tensormap::generic on the emulator (h100lab/emu/lower_tensormap.py):
the edited fields reach the TMA, the PTX encodings of each field, and a copy through an edited map without
the release/acquire fences stops with ProxyFenceError naming the missing fence."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from h100lab import emu, tma
from h100lab.emu.errors import ExecutionError, ProxyFenceError
from h100lab.emu.lower_tensormap import PTX_ELEMTYPES, replace_field

if not emu.available():  # pragma: no cover - NVRTC is a dependency
    pytest.skip(f"NVRTC unavailable: {emu.unavailable_reason()}", allow_module_level=True)

SRC = (Path(__file__).resolve().parent.parent / "h100lab/cuda/kernels/l04_tensormap_replace.cu").read_text()


def _launch(source, rows=(8, 5, 3, 8)):
    emu.reset()
    k = emu.compile(source, name="l04_tensormap_replace.cu").function("tma_batched_rows")
    b = len(rows)
    hosts = [(100 * i + np.arange(16 * 32)).astype(np.float32).reshape(16, 32) for i in range(b)]
    mats = [emu.to_device(h) for h in hosts]
    m = emu.encode_tiled("FLOAT32", 2, mats[0], [32, 16], [128], [32, 8], [1, 1])
    slots = emu.zeros((b, 128), np.uint8)
    tiles = emu.zeros((b, 8, 32), np.float32)
    st = emu.launch(k, b, 64, m, slots, emu.to_device(np.array([a.ptr for a in mats], np.uint64)),
                    emu.to_device(np.array(rows, np.int32)), tiles)
    return hosts, tiles.to_host(), st


def test_edited_address_and_row_count_reach_the_tma():
    rows = (8, 5, 3, 8)
    hosts, out, st = _launch(SRC, rows)
    for i, r in enumerate(rows):
        want = tma.load(tma.encode_tiled("FLOAT32", 2, 0, [32, r], [128], [32, 8], [1, 1]), hosts[i], [0, 0])
        np.testing.assert_array_equal(out[i], want.view(np.float32).reshape(8, 32))
    assert st.tma_bytes == len(rows) * 1024 and st.copies == len(rows)


@pytest.mark.parametrize("drop, missing", [
    ('        asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(mine) : "memory");\n',
     "acquire"),
    ('        asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");\n', "release")])
def test_a_copy_through_an_unfenced_edit_is_reported(drop, missing):
    assert drop in SRC
    with pytest.raises(ProxyFenceError) as ei:
        _launch(SRC.replace(drop, ""))
    assert "tensormap proxy" in str(ei.value) and missing in str(ei.value)
    assert "l04_tensormap_replace.cu" in str(ei.value)


def test_an_edit_that_breaks_a_driver_rule_is_named_when_the_map_is_used():
    bad = SRC.replace('"r"(rows[blockIdx.x])', '"r"(0)')        # globalDim[1] = 0
    with pytest.raises(ExecutionError) as ei:
        _launch(bad)
    assert "globalDim" in str(ei.value) and "tensormap.replace" in str(ei.value)


def test_replace_field_encodings():
    p = dict(dtype="CU_TENSOR_MAP_DATA_TYPE_FLOAT32", rank=2, global_address=0, global_dim=[32, 16],
             global_strides=[128], box_dim=[32, 8], element_strides=[1, 1], interleave="CU_TENSOR_MAP_INTERLEAVE_NONE",
             swizzle="CU_TENSOR_MAP_SWIZZLE_NONE", l2_promotion="CU_TENSOR_MAP_L2_PROMOTION_NONE",
             oob_fill="CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
    assert replace_field(p, "rank", 2)["rank"] == 3
    assert replace_field(p, "elemtype", 10)["dtype"].endswith("BFLOAT16")
    assert replace_field(p, "elemtype", 9)["dtype"].endswith("FLOAT64")     # PTX order, not CUtensorMapDataType's
    assert PTX_ELEMTYPES.index("FLOAT32_FTZ") == 8
    assert replace_field(p, "swizzle_mode", 3)["swizzle"].endswith("128B")
    assert replace_field(p, "fill_mode", 1)["oob_fill"].endswith("NAN_REQUEST_ZERO_FMA")
    assert replace_field(p, "global_stride", 256, 0)["global_strides"] == [256]
    assert replace_field(p, "box_dim", 4, 1)["box_dim"] == [32, 4]
    assert replace_field(p, "interleave_layout", 1)["interleave"].endswith("16B")
    assert p["rank"] == 2                                                   # the input is not changed
    for field, value, ord_ in [("rank", 5, None), ("elemtype", 13, None), ("swizzle_mode", 4, None),
                               ("swizzle_atomicity", 1, None), ("box_dim", 4, None), ("nope", 0, None)]:
        with pytest.raises(ValueError):
            replace_field(p, field, value, ord_)


def test_replace_in_shared_memory_then_copy_out():
    src = r'''
#include <h100lab/tensormap.cuh>
extern "C" __global__ void k(const __grid_constant__ CUtensorMap map, CUtensorMap* out, float* tile_out) {
    __shared__ alignas(128) CUtensorMap sm;
    __shared__ alignas(128) float tile[8 * 8];
    __shared__ alignas(8) unsigned long long bar;
    if (threadIdx.x == 0) {
        sm = map;
        const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(&sm));
        asm volatile("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], 1, 4;" :: "r"(s) : "memory");
        *out = sm;
        asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
        asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(out) : "memory");
        const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
        const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(tile));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 128;" :: "r"(b) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {0, 0}], [%2];" :: "r"(d), "l"(out), "r"(b) : "memory");
        asm volatile("{\n\t.reg .pred p;\nW:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n\t@!p bra W;\n\t}"
                     :: "r"(b) : "memory");
        for (int i = 0; i < 32; ++i) tile_out[i] = tile[i];
    }
}'''
    emu.reset()
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    g = emu.to_device(x)
    m = emu.encode_tiled("FLOAT32", 2, g, [8, 8], [32], [8, 8], [1, 1])
    out, t = emu.zeros(128, np.uint8), emu.zeros(32, np.float32)
    st = emu.launch(emu.compile(src).function("k"), 1, 32, m, out, t)
    assert st.tma_bytes == 128                                              # 8 x 4 fp32: the edited box
    np.testing.assert_array_equal(t.to_host(), x[:4].reshape(-1))
