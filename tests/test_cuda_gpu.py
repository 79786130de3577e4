"""h100lab.cuda on a real Hopper GPU. Every test is marked ``gpu``: tests/conftest.py skips them, with the
backend's reason, where no compute-capability-9.x GPU is usable. Run them with ``make test-gpu``."""
from __future__ import annotations

import numpy as np
import pytest

from h100lab import cuda

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(2024)


@pytest.fixture(scope="module")
def props():
    return cuda.device_properties()


def fn(kernel_file: str, name: str):
    return cuda.compile_kernel(kernel_file).function(name)


# ---- device and metadata -------------------------------------------------------------------------

def test_device_properties(props):
    assert props["major"] == 9 and isinstance(props["name"], str) and props["name"]
    for key in ("multiProcessorCount", "sharedMemPerMultiprocessor", "sharedMemPerBlockOptin", "regsPerMultiprocessor",
                "maxThreadsPerMultiProcessor", "maxBlocksPerMultiProcessor", "l2CacheSize", "clockRate",
                "memoryClockRate", "reservedSharedMemPerBlock", "warpSize", "totalGlobalMem"):
        assert isinstance(props[key], int) and props[key] > 0, key
    assert props["warpSize"] == 32 and props["maxThreadsDim"][0] == 1024


def test_specs_from_device_reads_the_backend(props):
    from h100lab import specs

    s = specs.from_device()
    assert s.sm_count == props["multiProcessorCount"]


def test_run_metadata_has_what_datasets_need():
    from h100lab.data import REQUIRED_META

    m = cuda.run_metadata("python -m pytest tests/test_cuda_gpu.py")
    assert set(REQUIRED_META) <= set(m)
    assert m["compute_capability"].startswith("9.") and m["command"].startswith("python -m pytest")
    assert m["cuda"].count(".") == 1 and m["driver"]


# ---- memory and launch -----------------------------------------------------------------------------

def test_round_trip_and_zeros():
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    d = cuda.to_device(x)
    assert d.shape == (3, 5) and d.nbytes == x.nbytes and d.ptr % 256 == 0
    np.testing.assert_array_equal(d.to_host(), x)
    assert not cuda.zeros(1000, np.uint8).to_host().any()
    with pytest.raises(ValueError, match="sizes must match"):
        d.copy_from_host(np.zeros(4, np.float32))


def test_out_of_memory_is_named():
    with pytest.raises(cuda.DriverError) as ei:
        cuda.empty(1 << 48, np.uint8)
    assert ei.value.result == "CUDA_ERROR_OUT_OF_MEMORY" and ei.value.call == "cuMemAlloc"


def test_vector_add():
    n = 100_003
    a, b = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.empty(n, np.float32)
    k = fn("smoke_vector_add", "vector_add")
    cuda.launch(k, (n + 255) // 256, 256, da, db, dc, np.int32(n))
    cuda.synchronize()
    np.testing.assert_array_equal(dc.to_host(), a + b)


def test_arguments_are_checked_against_the_kernel():
    k = fn("smoke_vector_add", "vector_add")
    d = cuda.empty(4, np.float32)
    assert k.params() == [(0, 8), (8, 8), (16, 8), (24, 4)]
    with pytest.raises(cuda.LaunchConfigError, match="takes 4 parameters, got 3"):
        cuda.launch(k, 1, 32, d, d, d)
    with pytest.raises(cuda.LaunchConfigError, match="parameter 3 is 4 B"):
        cuda.launch(k, 1, 32, d, d, d, np.int64(4))
    with pytest.raises(ValueError, match="no kernel 'nope'"):
        cuda.compile_kernel("smoke_vector_add").function("nope")


def test_too_many_threads_is_the_drivers_verdict():
    k = fn("smoke_vector_add", "vector_add")
    d = cuda.empty(4, np.float32)
    with pytest.raises(cuda.DriverError) as ei:
        cuda.launch(k, 1, 2048, d, d, d, np.int32(4))
    assert ei.value.result == "CUDA_ERROR_INVALID_VALUE"


def test_attributes():
    a = fn("smoke_vector_add", "vector_add").attributes()
    assert a["num_regs"] > 0 and a["max_threads_per_block"] == 1024 and a["binary_version"] == 90
    assert a["shared_size_bytes"] == 0 and a["local_size_bytes"] == 0
    assert fn("smoke_cluster_ring", "cluster_ring").attributes()["shared_size_bytes"] == 4


# ---- special registers and clusters ----------------------------------------------------------------

def _ids(grid, block, cluster):
    k = fn("smoke_ids", "read_ids")
    nblocks = int(np.prod(grid))
    out = cuda.zeros(12 * nblocks, np.uint32)
    cuda.launch(k, grid, block, out, cluster=cluster)
    return out.to_host().reshape(nblocks, 12)


def test_special_registers_without_cluster(props):
    r = _ids((8,), 64, None)
    smid, nsmid = r[:, 0], r[:, 1]
    assert (smid < nsmid).all() and (nsmid >= props["multiProcessorCount"]).all()
    np.testing.assert_array_equal(r[:, 2], np.arange(8))
    assert (r[:, 10] == 1).all() and (r[:, 9] == 0).all() and (r[:, 11] == 0).all()


@pytest.mark.parametrize("grid,cluster", [((16, 1, 1), (4, 1, 1)), ((4, 4, 2), (2, 2, 2))])
def test_cluster_registers(grid, cluster):
    r = _ids(grid, 32, cluster)
    gx, gy, _ = grid
    cx, cy, cz = cluster
    b = np.arange(len(r))
    ctaid = np.stack([b % gx, (b // gx) % gy, b // (gx * gy)], axis=1)
    np.testing.assert_array_equal(r[:, 2:5], ctaid)
    cl = r[:, 6:9]
    np.testing.assert_array_equal(cl, ctaid % np.array(cluster))
    np.testing.assert_array_equal(r[:, 5], ctaid[:, 0] // cx)       # clusterid.x
    np.testing.assert_array_equal(r[:, 9], cl[:, 0] + cx * (cl[:, 1] + cy * cl[:, 2]))  # rank
    assert (r[:, 10] == cx * cy * cz).all() and (r[:, 11] == 1).all()


def test_cluster_ring_reads_the_neighbours_shared_memory():
    k = fn("smoke_cluster_ring", "cluster_ring")
    out = cuda.zeros(32, np.uint32)
    cuda.launch(k, 32, 128, out, cluster=4)
    b = np.arange(32)
    rank = b % 4
    nb = b - rank + (rank + 1) % 4
    np.testing.assert_array_equal(out.to_host(), 1000 * nb + (rank + 1) % 4)


def test_cluster_shape_must_tile_the_grid():
    k = fn("smoke_cluster_ring", "cluster_ring")
    with pytest.raises(cuda.LaunchConfigError, match="multiple of the cluster"):
        cuda.launch(k, 10, 32, cuda.zeros(10, np.uint32), cluster=4)


def test_cluster_of_16_needs_the_non_portable_opt_in():
    prog = cuda.compile(cuda.kernel_source("smoke_cluster_ring"), name="ring16.cu")  # own module: own attributes
    k = prog.function("cluster_ring")
    out = cuda.zeros(32, np.uint32)
    with pytest.raises(cuda.DriverError) as ei:
        cuda.launch(k, 32, 32, out, cluster=16)
        cuda.synchronize()
    assert ei.value.result == "CUDA_ERROR_INVALID_CLUSTER_SIZE"   # H200, driver 580.159.04
    k.allow_non_portable_cluster_size(True)
    assert k.attributes()["non_portable_cluster_size_allowed"] == 1
    cuda.launch(k, 32, 32, out, cluster=16)
    b = np.arange(32)
    rank = b % 16
    np.testing.assert_array_equal(out.to_host(), 1000 * (b - rank + (rank + 1) % 16) + (rank + 1) % 16)


# ---- dynamic shared memory ---------------------------------------------------------------------------

def test_dynamic_shared_memory_opt_in(props):
    prog = cuda.compile(cuda.kernel_source("smoke_dynamic_smem"), name="dyn.cu")
    k = prog.function("reverse_through_smem")
    nbytes = props["sharedMemPerBlockOptin"]
    n = nbytes // 4
    x = RNG.integers(0, 2**32, n, dtype=np.uint32)
    din, dout = cuda.to_device(x), cuda.zeros(n, np.uint32)
    with pytest.raises(cuda.LaunchConfigError, match="set_max_dynamic_shared_memory"):
        cuda.launch(k, 1, 256, din, dout, np.int32(n), shared_mem=nbytes)
    with pytest.raises(cuda.DriverError) as ei:
        k.set_max_dynamic_shared_memory(nbytes + 1024)
    assert ei.value.result == "CUDA_ERROR_INVALID_VALUE"
    k.set_max_dynamic_shared_memory(nbytes)
    assert k.attributes()["max_dynamic_shared_size_bytes"] == nbytes
    cuda.launch(k, 1, 256, din, dout, np.int32(n), shared_mem=nbytes)
    np.testing.assert_array_equal(dout.to_host(), x[::-1])


# ---- timing ---------------------------------------------------------------------------------------

def test_time_kernel():
    n = 1 << 22
    a = cuda.zeros(n, np.float32)
    k = fn("smoke_vector_add", "vector_add")
    t = cuda.time_kernel(k, n // 256, 256, a, a, a, np.int32(n), warmup=2, repeats=7)
    assert len(t.samples_ms) == 7 and all(s > 0 for s in t.samples_ms)
    assert t.min_ms <= t.median_ms < 100.0


# ---- occupancy ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("block", [32, 96, 256, 1024])
@pytest.mark.parametrize("dyn", [0, 20_000, 100_000])
def test_occupancy_driver_equals_the_model(block, dyn):
    from h100lab.occupancy import occupancy
    from h100lab.specs import H200_SXM

    prog = cuda.compile(cuda.kernel_source("smoke_dynamic_smem"), name=f"occ{dyn}.cu")
    k = prog.function("reverse_through_smem")
    if dyn > 48 * 1024:
        k.set_max_dynamic_shared_memory(dyn)
    a = k.attributes()
    got = cuda.occupancy_max_active_blocks(k, block, dyn)
    model = occupancy(block, a["num_regs"], dyn, H200_SXM, static_smem=a["shared_size_bytes"],
                      max_dynamic_smem=a["max_dynamic_shared_size_bytes"])
    assert got == model.active_blocks


def test_cluster_occupancy(props):
    k = fn("smoke_cluster_ring", "cluster_ring")
    per_sm = cuda.occupancy_max_active_blocks(k, 128)
    sms = props["multiProcessorCount"]
    counts = {c: cuda.occupancy_max_active_clusters(k, 64 * c, 128, c) for c in (1, 2, 4, 8)}
    for c, n in counts.items():
        assert 0 < n * c <= sms * per_sm
    assert counts[8] * 8 <= counts[4] * 4 <= counts[2] * 2 <= counts[1]


def test_max_potential_cluster_size():
    prog = cuda.compile(cuda.kernel_source("smoke_cluster_ring"), name="potential.cu")
    k = prog.function("cluster_ring")
    assert cuda.max_potential_cluster_size(k, 128, 128) == 8
    k.allow_non_portable_cluster_size(True)
    assert cuda.max_potential_cluster_size(k, 128, 128) == 16


# ---- tensor maps -----------------------------------------------------------------------------------------

def _tma(x: np.ndarray, box, swizzle, x0, y0):
    rows, cols = x.shape
    g = cuda.to_device(x)
    tmap = cuda.encode_tiled("CU_TENSOR_MAP_DATA_TYPE_UINT16", 2, g, [cols, rows], [cols * 2], list(box), [1, 1],
                             "CU_TENSOR_MAP_INTERLEAVE_NONE", swizzle, "CU_TENSOR_MAP_L2_PROMOTION_NONE",
                             "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
    nbytes = box[0] * box[1] * 2
    out = cuda.zeros(nbytes, np.uint8)
    cuda.launch(fn("smoke_tma_load", "tma_load_2d"), 1, 128, tmap, np.int32(x0), np.int32(y0), out, np.int32(nbytes))
    return tmap, out.to_host().view(np.uint16).reshape(box[1], box[0]), g


def test_encode_tiled_and_tma_load_without_swizzle():
    x = np.arange(64 * 128, dtype=np.uint16).reshape(64, 128)
    tmap, tile, g = _tma(x, (64, 8), "CU_TENSOR_MAP_SWIZZLE_NONE", 32, 16)
    assert len(tmap.data) == 128 and any(tmap.words)
    assert tmap.args["global_address"] == g.ptr and tmap.args["swizzle"] == "CU_TENSOR_MAP_SWIZZLE_NONE"
    np.testing.assert_array_equal(tile, x[16:24, 32:96])


def test_tma_load_with_128b_swizzle_moves_16_byte_chunks():
    x = np.arange(64 * 128, dtype=np.uint16).reshape(64, 128)
    _, tile, _ = _tma(x, (64, 8), "CU_TENSOR_MAP_SWIZZLE_128B", 0, 8)
    want = x[8:16, 0:64].reshape(8, 8, 8)                 # row, 16-byte chunk, element
    got = tile.reshape(8, 8, 8)
    for r in range(8):
        for c in range(8):
            np.testing.assert_array_equal(got[r, c ^ r], want[r, c])


def test_encode_tiled_invalid_is_the_drivers_verdict():
    g = cuda.empty((64, 512), np.uint16)
    with pytest.raises(cuda.DriverError) as ei:
        cuda.encode_tiled("UINT16", 2, g, [512, 64], [1024], [257, 8], [1, 1], "INTERLEAVE_NONE", "SWIZZLE_NONE",
                          "L2_PROMOTION_NONE", "FLOAT_OOB_FILL_NONE")
    assert ei.value.result == "CUDA_ERROR_INVALID_VALUE" and ei.value.call == "cuTensorMapEncodeTiled"
    with pytest.raises(cuda.DriverError) as ei:                        # inner box 256 B > 128 B swizzle span
        cuda.encode_tiled("UINT16", 2, g, [512, 64], [1024], [128, 8], [1, 1], "INTERLEAVE_NONE", "SWIZZLE_128B",
                          "L2_PROMOTION_NONE", "FLOAT_OOB_FILL_NONE")
    assert ei.value.result == "CUDA_ERROR_INVALID_VALUE"
