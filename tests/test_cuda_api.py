"""h100lab.cuda without a GPU: lazy import, availability, argument checks, timing summary, tensor-map args."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from h100lab import cuda
from h100lab.cuda import device as dev
from h100lab.cuda import tensormap as tm

HAS_BINDINGS = cuda.compiler_unavailable_reason() is None
needs_bindings = pytest.mark.skipif(not HAS_BINDINGS, reason=f"cuda-python unusable: {cuda.compiler_unavailable_reason()}")


def _py(code: str, **env) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_does_not_import_cuda_python():
    assert _py("import sys, h100lab.cuda; print(sorted(m for m in sys.modules if m.split('.')[0] == 'cuda'))") == "[]"


def test_forced_unavailable_gives_reason_and_never_raises():
    out = _py("from h100lab import cuda; print(cuda.available()); print(cuda.unavailable_reason())", H100LAB_NO_GPU="1")
    assert out.splitlines() == ["False", "H100LAB_NO_GPU is set in the environment"]


def test_available_is_a_bool_consistent_with_the_reason():
    r = cuda.unavailable_reason()
    assert isinstance(cuda.available(), bool)
    assert cuda.available() == (r is None)
    assert r is None or (isinstance(r, str) and r)


@pytest.mark.skipif(cuda.available(), reason="a GPU is present")
def test_gpu_calls_raise_cuda_unavailable_with_the_reason():
    with pytest.raises(cuda.CudaUnavailable, match="no usable Hopper GPU"):
        cuda.empty(4, np.float32)
    with pytest.raises(cuda.CudaUnavailable):
        cuda.run_metadata("x")
    with pytest.raises(cuda.CudaUnavailable):
        cuda.device_properties()


# ---- launch geometry ---------------------------------------------------------------------------

@given(st.lists(st.integers(1, 1 << 16), min_size=1, max_size=3))
def test_normalize_dims_pads_with_ones(dims):
    x = dev.normalize_dims(tuple(dims), "grid")
    assert len(x) == 3 and x[:len(dims)] == tuple(dims) and all(v == 1 for v in x[len(dims):])
    assert dev.normalize_dims(dims[0], "grid") == (dims[0], 1, 1)


@pytest.mark.parametrize("bad", [(), (1, 1, 1, 1), (0,), (4, -1), 0])
def test_normalize_dims_rejects(bad):
    with pytest.raises(cuda.LaunchConfigError, match="grid"):
        dev.normalize_dims(bad, "grid")


@needs_bindings
def test_cluster_must_tile_the_grid():
    k = dev.Kernel(None, "k", None)
    with pytest.raises(cuda.LaunchConfigError, match="multiple of the cluster dimension"):
        dev._config(k, (6, 1, 1), 128, 0, (4, 1, 1))
    cfg = dev._config(k, (8, 2), (32, 4), 1024, (4, 2))
    assert (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ, cfg.blockDimX, cfg.blockDimY) == (8, 2, 1, 32, 4)
    assert cfg.numAttrs == 1 and cfg.sharedMemBytes == 1024
    c = cfg.attrs[0].value.clusterDim
    assert (c.x, c.y, c.z) == (4, 2, 1)


# ---- kernel arguments --------------------------------------------------------------------------

def _fake_kernel(params):
    k = dev.Kernel(None, "fake", None)
    k._params = params
    return k


def test_arguments_are_packed_as_their_bytes():
    tmap = tm.TensorMap(bytes(range(128)), {})
    k = _fake_kernel([(0, 4), (8, 8), (64, 128)])
    ptrs, bufs = dev._pack(k, [np.int32(-3), np.float64(2.5), tmap])
    assert len(ptrs) == 3
    assert bytes(bufs[0][1]) == np.int32(-3).tobytes()
    assert bytes(bufs[1][1]) == np.float64(2.5).tobytes()
    assert bytes(bufs[2][1]) == bytes(range(128))
    assert [int(p) for p in ptrs] == [b[1].ctypes.data for b in bufs]
    assert all(b[1].ctypes.data % 64 == 0 for b in bufs)


def test_argument_count_and_sizes_are_checked():
    k = _fake_kernel([(0, 8), (8, 4)])
    with pytest.raises(cuda.LaunchConfigError, match="takes 2 parameters, got 1"):
        dev._pack(k, [np.uint64(1)])
    with pytest.raises(cuda.LaunchConfigError, match="parameter 1 is 4 B"):
        dev._pack(k, [np.uint64(1), np.int64(2)])


@pytest.mark.parametrize("arg", [3, 2.0, True, "x", [1]])
def test_untyped_arguments_are_rejected(arg):
    with pytest.raises(cuda.LaunchConfigError):
        dev._pack(_fake_kernel(None), [arg])


# ---- timing --------------------------------------------------------------------------------------

@given(st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=50))
def test_timing_summary(samples):
    t = cuda.Timing.from_samples(samples)
    assert t.min_ms == min(samples) and t.min_ms <= t.median_ms <= max(samples)
    assert t.samples_ms == tuple(samples)


def test_timing_rejects_empty_and_negative():
    with pytest.raises(ValueError, match="repeats"):
        cuda.Timing.from_samples([])
    with pytest.raises(ValueError, match="non-negative"):
        cuda.Timing.from_samples([1.0, -0.5])
    assert cuda.Timing.from_samples([3.0, 1.0, 2.0, 10.0]).median_ms == 2.5


# ---- tensor maps -----------------------------------------------------------------------------------

def test_tensor_map_is_128_bytes_of_16_words():
    t = tm.TensorMap(bytes(8) + (1).to_bytes(8, "little") + bytes(112), {})
    assert t.words[:3] == (0, 1, 0) and len(t.words) == 16
    with pytest.raises(ValueError, match="128 bytes"):
        tm.TensorMap(bytes(64), {})


@needs_bindings
@pytest.mark.parametrize("param,name,full", [
    ("dtype", "BFLOAT16", "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"),
    ("dtype", "CU_TENSOR_MAP_DATA_TYPE_UINT8", "CU_TENSOR_MAP_DATA_TYPE_UINT8"),
    ("swizzle", "CU_TENSOR_MAP_SWIZZLE_128B", "CU_TENSOR_MAP_SWIZZLE_128B"),
    ("interleave", "NONE", "CU_TENSOR_MAP_INTERLEAVE_NONE"),
    ("interleave", "INTERLEAVE_NONE", "CU_TENSOR_MAP_INTERLEAVE_NONE"),
    ("swizzle", "SWIZZLE_64B", "CU_TENSOR_MAP_SWIZZLE_64B"),
    ("dtype", "DATA_TYPE_FLOAT16", "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"),
    ("oob_fill", "FLOAT_OOB_FILL_NONE", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"),
    ("l2_promotion", "L2_128B", "CU_TENSOR_MAP_L2_PROMOTION_L2_128B"),
    ("oob_fill", "NAN_REQUEST_ZERO_FMA", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"),
])
def test_enum_names_are_the_drivers(param, name, full):
    assert tm.enum_value(param, name).name == full
    assert tm.enum_value(param, tm.enum_value(param, name)).name == full


@needs_bindings
def test_unknown_enum_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="CU_TENSOR_MAP_SWIZZLE_64B"):
        tm.enum_value("swizzle", "SWIZZLE_96B")
    with pytest.raises(ValueError, match="not a CUtensorMapSwizzle"):
        tm.enum_value("swizzle", "INTERLEAVE_NONE")      # another parameter's enumerator
    with pytest.raises(ValueError, match="unknown tensor-map parameter"):
        tm.enum_value("color", "RED")


@needs_bindings
@pytest.mark.parametrize("kw,msg", [
    (dict(global_dim=[64]), "globalDim has 1 entries"),
    (dict(global_strides=[]), "globalStrides has 0 entries"),
    (dict(box_dim=[64, 8, 1]), "boxDim has 3 entries"),
    (dict(element_strides=[1]), "elementStrides has 1 entries"),
    (dict(box_dim=[64, 1 << 32]), r"boxDim\[1\] = 4294967296 does not fit"),
    (dict(global_dim=[-1, 8]), r"globalDim\[0\] = -1 does not fit"),
])
def test_encode_tiled_checks_the_call_before_the_driver(kw, msg):
    args = dict(dtype="UINT16", rank=2, global_address=0x10000, global_dim=[128, 64], global_strides=[256],
                box_dim=[64, 8], element_strides=[1, 1])
    with pytest.raises(ValueError, match=msg):
        cuda.encode_tiled(**{**args, **kw})


def test_driver_error_carries_the_result_name():
    e = cuda.DriverError("cuTensorMapEncodeTiled", "CUDA_ERROR_INVALID_VALUE", 1, "boxDim=[257]")
    assert e.result == "CUDA_ERROR_INVALID_VALUE" and e.code == 1
    assert str(e) == "cuTensorMapEncodeTiled returned CUDA_ERROR_INVALID_VALUE (1): boxDim=[257]"


@needs_bindings
def test_check_maps_every_result_to_its_name():
    from cuda.bindings import driver as d

    assert dev.check((d.CUresult.CUDA_SUCCESS, 7), "x") == 7
    assert dev.check((d.CUresult.CUDA_SUCCESS,), "x") is None
    assert dev.check((d.CUresult.CUDA_SUCCESS, 1, 2), "x") == (1, 2)
    for r in d.CUresult:
        if r == d.CUresult.CUDA_SUCCESS:
            continue
        with pytest.raises(cuda.DriverError) as ei:
            dev.check((r, None), "cuSomething")
        assert ei.value.result == r.name and ei.value.code == int(r) and ei.value.call == "cuSomething"


def test_driver_version_is_a_string():
    v = cuda.driver_version()
    assert isinstance(v, str) and v


def test_environment_report():
    import json

    from h100lab.cuda.__main__ import environment

    env = environment(compile_kernels=False)
    assert env["python"] and "gpu_unavailable_reason" in env
    assert (env["gpu_unavailable_reason"] is None) == cuda.available()
    out = _py("from h100lab.cuda.__main__ import main; main(['--json'])")
    rep = json.loads(out)
    if rep["compiler_unavailable_reason"] is None:
        assert set(rep["kernels"]) == set(cuda.list_kernels())
        assert all(v.startswith("ok") for v in rep["kernels"].values()), rep["kernels"]
