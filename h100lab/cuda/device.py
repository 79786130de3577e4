"""The GPU side of the backend: context, memory, kernel loading and launch, timing, driver queries.

Everything goes through cuda-python's low-level bindings (``cuda.bindings.driver``; the runtime only for
``cudaGetDeviceProperties``) and every returned ``CUresult`` is checked (:func:`check`). The primary
context of device 0 is used (CUDA Driver API §"Primary Context Management"), which is the context the
CUDA runtime and other libraries share. cuda-python is imported inside functions only.
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import statistics
import warnings
import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from ..launchcfg import normalize_dims  # noqa: F401  (re-exported: part of this module's API)
from .errors import CudaUnavailable, DriverError, LaunchConfigError

__all__ = [
    "available", "unavailable_reason", "check", "DeviceArray", "to_device", "empty", "zeros", "Kernel",
    "load_function", "launch", "synchronize", "Timing", "time_kernel", "device_properties",
    "occupancy_max_active_blocks", "occupancy_max_active_clusters", "max_potential_cluster_size",
    "run_metadata", "driver_version", "normalize_dims",
]


def _d():
    from cuda.bindings import driver

    return driver


def check(ret: Any, call: str) -> Any:
    """Check the ``CUresult`` that a cuda-python driver call returned (first tuple element) and return the
    other values (one value unwrapped, several as a tuple, none as ``None``). A failure raises
    :class:`DriverError` carrying the driver's name for the code (CUDA Driver API §"Error Handling",
    ``cuGetErrorName``; the names are the ``CUresult`` enumerators)."""
    d = _d()
    err, *rest = ret if isinstance(ret, tuple) else (ret,)
    if isinstance(err, d.CUresult):
        if err != d.CUresult.CUDA_SUCCESS:
            raise DriverError(call, err.name, int(err))
    else:  # a runtime call (cudaError_t)
        from cuda.bindings import runtime

        if err != runtime.cudaError_t.cudaSuccess:
            raise DriverError(call, err.name, int(err))
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


# --------------------------------------------------------------------------------------------------
# Is there a usable Hopper GPU?


@lru_cache(maxsize=1)
def _probe() -> str | None:
    if os.environ.get("H100LAB_NO_GPU"):
        return "H100LAB_NO_GPU is set in the environment"
    try:
        d = _d()
    except Exception as exc:
        return f"cuda-python (cuda.bindings) is not importable ({type(exc).__name__}: {exc})"
    try:
        (err,) = d.cuInit(0)
    except Exception as exc:  # libcuda.so not found: no NVIDIA driver on this machine
        return f"no NVIDIA driver here ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    if err != d.CUresult.CUDA_SUCCESS:
        return f"cuInit failed with {err.name}: no usable NVIDIA GPU"
    try:
        n = check(d.cuDeviceGetCount(), "cuDeviceGetCount")
        if n < 1:
            return "the NVIDIA driver sees no CUDA device"
        dev = check(d.cuDeviceGet(0), "cuDeviceGet")
        major = check(d.cuDeviceGetAttribute(
            d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
        minor = check(d.cuDeviceGetAttribute(
            d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
        name = check(d.cuDeviceGetName(256, dev), "cuDeviceGetName").split(b"\0")[0].decode()
        if major != 9:
            return (f"device 0 is {name} (compute capability {major}.{minor}); the book's kernels need "
                    "Hopper, compute capability 9.x")
        _context()
    except Exception as exc:
        return f"the GPU is not usable: {exc}"
    from .compiler import compiler_unavailable_reason

    return compiler_unavailable_reason()


def unavailable_reason() -> str | None:
    """Why the real-GPU backend cannot run here, or ``None`` when a compute-capability-9.x GPU is usable
    (driver loads, ``cuInit`` succeeds, device 0 is CC 9.x, its primary context can be made current, and
    NVRTC loads). Never raises. ``H100LAB_NO_GPU=1`` forces "unavailable"."""
    try:
        return _probe()
    except Exception as exc:  # pragma: no cover - _probe already catches; belt and braces
        return f"{type(exc).__name__}: {exc}"


def available() -> bool:
    """True when a Hopper GPU (compute capability 9.x) is present and usable; see :func:`unavailable_reason`."""
    return unavailable_reason() is None


def _require() -> None:
    r = unavailable_reason()
    if r is not None:
        raise CudaUnavailable(f"no usable Hopper GPU: {r}")


_CTX: dict[str, Any] = {}


def _context():
    """Retain device 0's primary context once and make it current in the calling thread."""
    d = _d()
    if "ctx" not in _CTX:
        check(d.cuInit(0), "cuInit")
        dev = check(d.cuDeviceGet(0), "cuDeviceGet")
        _CTX["dev"] = dev
        _CTX["ctx"] = check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(d.cuCtxSetCurrent(_CTX["ctx"]), "cuCtxSetCurrent")
    return _CTX["ctx"]


def _ready():
    _require()
    _context()
    return _d()


# --------------------------------------------------------------------------------------------------
# Memory


class DeviceArray:
    """A C-contiguous array in GPU global memory (``cuMemAlloc``), freed when garbage-collected.

    ``ptr`` is the device address (an int, 256-byte aligned: CUDA Driver API ``cuMemAlloc`` "suitably
    aligned for any kind of variable"), ``nbytes`` its size, ``shape``/``dtype`` how :meth:`to_host` reads it.
    """

    def __init__(self, shape: Sequence[int] | int, dtype: Any):
        d = _ready()
        self.shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
        if any(s < 0 for s in self.shape):
            raise ValueError(f"shape {self.shape}: array extents are non-negative")
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.ptr = int(check(d.cuMemAlloc(max(self.nbytes, 1)), "cuMemAlloc"))
        self._finalizer = weakref.finalize(self, _free, self.ptr)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def to_host(self) -> np.ndarray:
        """Copy to a new NumPy array (``cuMemcpyDtoH``, synchronous: it also reports earlier kernel faults)."""
        d = _ready()
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            check(d.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return out

    def copy_from_host(self, arr: np.ndarray) -> None:
        """Overwrite with ``arr`` (same number of bytes; ``cuMemcpyHtoD``)."""
        d = _ready()
        a = np.ascontiguousarray(arr)
        if a.nbytes != self.nbytes:
            raise ValueError(f"host array is {a.nbytes} B, device array {self.nbytes} B: sizes must match")
        if a.nbytes:
            check(d.cuMemcpyHtoD(self.ptr, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")

    def free(self) -> None:
        """Free the memory now (``cuMemFree``); later use is an error."""
        self._finalizer()

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype})"


def _free(ptr: int) -> None:
    try:
        d = _d()
        (err,) = d.cuMemFree(ptr)
        if err not in (d.CUresult.CUDA_SUCCESS, d.CUresult.CUDA_ERROR_DEINITIALIZED):
            warnings.warn(f"cuMemFree returned {err.name}", RuntimeWarning, stacklevel=2)
    except Exception:  # interpreter shutdown: modules already torn down
        pass


def to_device(arr: np.ndarray) -> DeviceArray:
    """A device copy of a NumPy array (made C-contiguous first)."""
    a = np.ascontiguousarray(arr)
    out = DeviceArray(a.shape, a.dtype)
    out.copy_from_host(a)
    return out


def empty(shape: Sequence[int] | int, dtype: Any) -> DeviceArray:
    """Uninitialised device memory of ``shape`` and ``dtype``."""
    return DeviceArray(shape, dtype)


def zeros(shape: Sequence[int] | int, dtype: Any) -> DeviceArray:
    """Zero-filled device memory (``cuMemsetD8``)."""
    out = DeviceArray(shape, dtype)
    if out.nbytes:
        check(_d().cuMemsetD8(out.ptr, 0, out.nbytes), "cuMemsetD8")
    return out


# --------------------------------------------------------------------------------------------------
# Kernels

_FUNC_ATTRS = {
    "max_threads_per_block": "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
    "shared_size_bytes": "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES",
    "const_size_bytes": "CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES",
    "local_size_bytes": "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
    "num_regs": "CU_FUNC_ATTRIBUTE_NUM_REGS",
    "ptx_version": "CU_FUNC_ATTRIBUTE_PTX_VERSION",
    "binary_version": "CU_FUNC_ATTRIBUTE_BINARY_VERSION",
    "cache_mode_ca": "CU_FUNC_ATTRIBUTE_CACHE_MODE_CA",
    "max_dynamic_shared_size_bytes": "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
    "preferred_shared_memory_carveout": "CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT",
}
# Added with clusters (CUDA 11.8+); a driver that does not report one for a function says
# CUDA_ERROR_INVALID_VALUE, and the attribute is then left out of the dict.
_FUNC_ATTRS_CLUSTER = {
    "cluster_size_must_be_set": "CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET",
    "required_cluster_width": "CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH",
    "required_cluster_height": "CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT",
    "required_cluster_depth": "CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH",
    "non_portable_cluster_size_allowed": "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED",
    "cluster_scheduling_policy_preference": "CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE",
}


class Kernel:
    """A loaded ``__global__`` function (a ``CUfunction``) of a :class:`~h100lab.cuda.compiler.Program`."""

    def __init__(self, program: Any, name: str, function: Any):
        self.program = program
        self.name = name
        self.function = function
        self._params: list[tuple[int, int]] | None = None

    def __repr__(self) -> str:
        return f"Kernel({self.name!r} from {self.program.name}, {self.program.arch})"

    def _attr(self, enum_name: str) -> int:
        d = _ready()
        return int(check(d.cuFuncGetAttribute(getattr(d.CUfunction_attribute, enum_name), self.function),
                         f"cuFuncGetAttribute({enum_name})"))

    def attributes(self) -> dict[str, int]:
        """The function's attributes (``cuFuncGetAttribute``, CUDA Driver API; the same values as the
        runtime's ``cudaFuncAttributes``): ``num_regs``, ``shared_size_bytes`` (static shared memory),
        ``const_size_bytes``, ``local_size_bytes``, ``max_threads_per_block``,
        ``max_dynamic_shared_size_bytes``, ``ptx_version``, ``binary_version``, ... and the cluster ones."""
        d = _ready()
        out = {k: self._attr(v) for k, v in _FUNC_ATTRS.items()}
        for k, v in _FUNC_ATTRS_CLUSTER.items():
            if not hasattr(d.CUfunction_attribute, v):
                continue
            err, val = d.cuFuncGetAttribute(getattr(d.CUfunction_attribute, v), self.function)
            if err == d.CUresult.CUDA_SUCCESS:
                out[k] = int(val)
            elif err != d.CUresult.CUDA_ERROR_INVALID_VALUE:
                raise DriverError(f"cuFuncGetAttribute({v})", err.name, int(err))
        return out

    def _set(self, enum_name: str, value: int) -> None:
        d = _ready()
        check(d.cuFuncSetAttribute(self.function, getattr(d.CUfunction_attribute, enum_name), int(value)),
              f"cuFuncSetAttribute({enum_name}, {value})")

    def set_max_dynamic_shared_memory(self, nbytes: int) -> None:
        """Opt in to ``nbytes`` of dynamic shared memory per block (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``).

        Above 48 KiB a kernel must opt in (CUDA C++ Programming Guide §"Shared Memory", compute capability
        9.0: up to 227 KiB per block); static plus dynamic shared memory must fit ``sharedMemPerBlockOptin``,
        which the driver checks (``CUDA_ERROR_INVALID_VALUE`` otherwise)."""
        if int(nbytes) < 0:
            raise ValueError(f"dynamic shared memory {nbytes} B: a size is non-negative")
        self._set("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", nbytes)

    def set_preferred_carveout(self, percent: int) -> None:
        """Prefer ``percent`` % of the unified L1/shared storage as shared memory
        (``CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT``; a hint, -1 = no preference; CUDA C++
        Programming Guide §"Shared Memory", compute capability 9.0)."""
        if not (-1 <= int(percent) <= 100):
            raise ValueError(f"carveout {percent}: a percentage from 0 to 100, or -1 for the default")
        self._set("CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT", percent)

    def allow_non_portable_cluster_size(self, allow: bool = True) -> None:
        """Allow clusters above the portable 8 blocks (``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED``;
        CUDA C++ Programming Guide §"Thread Block Clusters": 8 is portable, H100 supports 16 on opt-in)."""
        self._set("CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1 if allow else 0)

    def params(self) -> list[tuple[int, int]] | None:
        """(offset, size) in bytes of each kernel parameter (``cuFuncGetParamInfo``, CUDA 12.4+), or None
        when this driver lacks the call."""
        if self._params is None:
            d = _ready()
            if not hasattr(d, "cuFuncGetParamInfo"):
                return None
            out = []
            while True:
                try:
                    err, off, size = d.cuFuncGetParamInfo(self.function, len(out))
                except RuntimeError:  # the driver does not export the call
                    return None
                if err == d.CUresult.CUDA_ERROR_INVALID_VALUE:  # past the last parameter
                    break
                if err != d.CUresult.CUDA_SUCCESS:
                    raise DriverError("cuFuncGetParamInfo", err.name, int(err))
                out.append((int(off), int(size)))
            self._params = out
        return self._params


def load_function(program: Any, kernel_name: str) -> Kernel:
    """Load ``program``'s cubin into the current context once (``cuModuleLoadData``) and return the
    ``extern "C"`` kernel ``kernel_name`` (``cuModuleGetFunction``)."""
    if not program.cubin:
        raise ValueError(f"{program.name} was compiled for {program.arch}, which gives PTX only; "
                         "compile for a real architecture (sm_90a) to load it")
    entries = program.entry_points()
    if kernel_name not in entries:
        raise ValueError(f"{program.name} has no kernel {kernel_name!r} (its extern \"C\" __global__ "
                         f"functions are {entries})")
    d = _ready()
    if program._module is None:
        program._module = check(d.cuModuleLoadData(program.cubin), "cuModuleLoadData")
    fn = check(d.cuModuleGetFunction(program._module, kernel_name.encode()), "cuModuleGetFunction")
    return Kernel(program, kernel_name, fn)


def _config(kernel: Kernel, grid, block, shared_mem: int, cluster, stream=None):
    d = _d()
    g = normalize_dims(grid, "grid")
    b = normalize_dims(block, "block")
    if shared_mem < 0:
        raise LaunchConfigError(f"shared_mem {shared_mem}: dynamic shared memory is non-negative")
    cfg = d.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = g
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = b
    cfg.sharedMemBytes = int(shared_mem)
    cfg.hStream = stream if stream is not None else d.CUstream(0)
    if cluster is not None:
        c = normalize_dims(cluster, "cluster")
        for axis, gi, ci in zip("xyz", g, c):
            if gi % ci:
                raise LaunchConfigError(
                    f"grid {g} is not a whole number of clusters {c} along {axis}: the grid dimension "
                    "counts blocks and must be a multiple of the cluster dimension (CUDA C++ Programming "
                    "Guide §\"Thread Block Clusters\")")
        attr = d.CUlaunchAttribute()
        attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = c
        cfg.attrs = [attr]
        cfg.numAttrs = 1
    else:
        cfg.numAttrs = 0
    return cfg


def _arg_bytes(arg: Any) -> bytes:
    from .tensormap import TensorMap

    if isinstance(arg, DeviceArray):
        return np.uint64(arg.ptr).tobytes()
    if isinstance(arg, TensorMap):
        return arg.data
    if isinstance(arg, np.generic):
        return arg.tobytes()
    if isinstance(arg, (bool, int, float)):
        raise LaunchConfigError(
            f"kernel argument {arg!r}: give its C type explicitly, e.g. np.int32({arg!r}) or np.float32(...), "
            "so that its width matches the kernel's parameter")
    raise LaunchConfigError(f"kernel argument of type {type(arg).__name__}: pass a DeviceArray, a NumPy "
                            "scalar (np.int32(3)) or a TensorMap")


def _pack(kernel: Kernel, args: Sequence[Any]):
    blobs = [_arg_bytes(a) for a in args]
    params = kernel.params()
    if params is not None:
        if len(params) != len(blobs):
            raise LaunchConfigError(f"kernel {kernel.name} takes {len(params)} parameters, got {len(blobs)}")
        for i, ((_, size), blob) in enumerate(zip(params, blobs)):
            if size != len(blob):
                raise LaunchConfigError(f"kernel {kernel.name} parameter {i} is {size} B, argument "
                                        f"{type(args[i]).__name__} is {len(blob)} B")
    # one 64-byte-aligned buffer per argument, and the void* array pointing at them
    bufs = []
    for blob in blobs:
        raw = np.zeros(len(blob) + 64, np.uint8)
        off = (-raw.ctypes.data) % 64
        view = raw[off:off + len(blob)]
        view[:] = np.frombuffer(blob, np.uint8)
        bufs.append((raw, view))
    ptrs = np.array([v.ctypes.data for _, v in bufs] or [0], np.uint64)
    return ptrs, bufs


def _launch(kernel: Kernel, cfg, args: Sequence[Any]) -> None:
    d = _d()
    dyn = cfg.sharedMemBytes
    if dyn > 48 * 1024:
        limit = kernel._attr("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES")
        if dyn > limit:
            raise LaunchConfigError(
                f"{dyn} B of dynamic shared memory exceeds kernel {kernel.name}'s limit of {limit} B: above "
                "48 KiB a kernel opts in first, kernel.set_max_dynamic_shared_memory(nbytes) "
                "(cudaFuncAttributeMaxDynamicSharedMemorySize; CUDA C++ Programming Guide §\"Shared Memory\")")
    ptrs, bufs = _pack(kernel, args)
    check(d.cuLaunchKernelEx(cfg, kernel.function, int(ptrs.ctypes.data) if args else 0, 0),
          f"cuLaunchKernelEx({kernel.name})")
    del bufs  # the driver copied the parameters at launch


def launch(kernel: Kernel, grid, block, *args: Any, shared_mem: int = 0, cluster=None) -> None:
    """Launch ``kernel`` on the default stream (``cuLaunchKernelEx``; cluster shape through the launch
    attribute ``CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION``, CUDA Driver API §"Execution Control").

    ``grid``, ``block``, ``cluster``: int or 1–3-tuple; ``args``: :class:`DeviceArray` (passed as its
    pointer), NumPy scalars (their bytes), :class:`~h100lab.cuda.tensormap.TensorMap` (128 bytes by value,
    for a ``const __grid_constant__ CUtensorMap`` parameter). Argument count and sizes are checked against
    the kernel's parameters (``cuFuncGetParamInfo``). Asynchronous: faults show at :func:`synchronize` or
    the next copy."""
    _ready()
    _launch(kernel, _config(kernel, grid, block, shared_mem, cluster), args)


def synchronize() -> None:
    """Wait for all work on the GPU (``cuCtxSynchronize``); raises the first fault of an earlier kernel."""
    d = _ready()
    check(d.cuCtxSynchronize(), "cuCtxSynchronize")


@dataclass(frozen=True)
class Timing:
    """Kernel times from CUDA events (``cuEventElapsedTime``, milliseconds, resolution about 0.5 µs per
    CUDA Driver API §"Event Management")."""

    median_ms: float
    min_ms: float
    samples_ms: tuple[float, ...]

    @classmethod
    def from_samples(cls, samples_ms: Sequence[float]) -> "Timing":
        """Summarise samples: median and minimum."""
        s = tuple(float(x) for x in samples_ms)
        if not s:
            raise ValueError("no timing samples: repeats must be at least 1")
        if any(x < 0 or x != x for x in s):
            raise ValueError(f"timing samples {s}: elapsed times are non-negative numbers")
        return cls(statistics.median(s), min(s), s)


def time_kernel(kernel: Kernel, grid, block, *args: Any, shared_mem: int = 0, cluster=None,
                warmup: int = 3, repeats: int = 20) -> Timing:
    """Time ``repeats`` launches of ``kernel`` after ``warmup`` untimed ones, each between two CUDA events
    recorded on the same stream (``cuEventRecord`` / ``cuEventElapsedTime``); returns median and minimum.
    Measures GPU time only, not launch overhead (CUDA C++ Best Practices Guide §"Using CUDA GPU Timers")."""
    if warmup < 0 or repeats < 1:
        raise ValueError(f"warmup={warmup}, repeats={repeats}: warm-ups are >= 0 and repeats >= 1")
    d = _ready()
    cfg = _config(kernel, grid, block, shared_mem, cluster)
    for _ in range(warmup):
        _launch(kernel, cfg, args)
    events = []
    try:
        for _ in range(2 * repeats):
            events.append(check(d.cuEventCreate(d.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate"))
        for i in range(repeats):
            check(d.cuEventRecord(events[2 * i], cfg.hStream), "cuEventRecord")
            _launch(kernel, cfg, args)
            check(d.cuEventRecord(events[2 * i + 1], cfg.hStream), "cuEventRecord")
        check(d.cuEventSynchronize(events[-1]), "cuEventSynchronize")
        samples = [check(d.cuEventElapsedTime(events[2 * i], events[2 * i + 1]), "cuEventElapsedTime")
                   for i in range(repeats)]
    finally:
        for e in events:
            check(d.cuEventDestroy(e), "cuEventDestroy")
    return Timing.from_samples(samples)


# --------------------------------------------------------------------------------------------------
# Driver queries


def _plain(v: Any) -> Any:
    if isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, bytes):
        return v.hex()
    if hasattr(v, "bytes"):  # cudaUUID_t
        b = v.bytes
        return (b if isinstance(b, bytes) else bytes(int(x) & 0xFF for x in b)).hex()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    try:
        return int(v)
    except (TypeError, ValueError):
        return str(v)


def device_properties(device: int = 0) -> dict[str, Any]:
    """``cudaGetDeviceProperties`` as a dict keyed by the ``cudaDeviceProp`` field names (``name``, ``major``,
    ``minor``, ``multiProcessorCount``, ``sharedMemPerMultiprocessor``, ``regsPerMultiprocessor``, ...; CUDA
    Runtime API §"cudaDeviceProp"). CUDA 13 removed ``clockRate`` and ``memoryClockRate`` from the struct;
    they are added back (kHz) from ``cuDeviceGetAttribute`` (``CU_DEVICE_ATTRIBUTE_CLOCK_RATE``,
    ``..._MEMORY_CLOCK_RATE``)."""
    d = _ready()
    from cuda.bindings import runtime

    prop = check(runtime.cudaGetDeviceProperties(int(device)), "cudaGetDeviceProperties")
    out: dict[str, Any] = {}
    for k in dir(prop):
        if k.startswith("_") or k == "getPtr":
            continue
        try:
            v = getattr(prop, k)
        except Exception:  # a field this binding cannot convert: left out
            continue
        if callable(v):
            continue
        out[k] = v.split(b"\0")[0].decode() if k == "name" and isinstance(v, bytes) else _plain(v)
    dev = check(d.cuDeviceGet(int(device)), "cuDeviceGet")
    for key, enum_name in (("clockRate", "CU_DEVICE_ATTRIBUTE_CLOCK_RATE"),
                           ("memoryClockRate", "CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE"),
                           ("clusterLaunch", "CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH")):
        if key not in out and hasattr(d.CUdevice_attribute, enum_name):
            out[key] = int(check(d.cuDeviceGetAttribute(getattr(d.CUdevice_attribute, enum_name), dev),
                                 f"cuDeviceGetAttribute({enum_name})"))
    return out


def occupancy_max_active_blocks(kernel: Kernel, block_size: int, dynamic_smem: int = 0) -> int:
    """Blocks of ``kernel`` that fit on one SM at once (``cuOccupancyMaxActiveBlocksPerMultiprocessor``, the
    driver twin of ``cudaOccupancyMaxActiveBlocksPerMultiprocessor``; CUDA Driver API §"Occupancy")."""
    d = _ready()
    if int(block_size) < 1 or int(dynamic_smem) < 0:
        raise LaunchConfigError(f"block_size={block_size}, dynamic_smem={dynamic_smem}: a block has >= 1 "
                                "thread and shared memory is non-negative")
    return int(check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(kernel.function, int(block_size),
                                                                     int(dynamic_smem)),
                     "cuOccupancyMaxActiveBlocksPerMultiprocessor"))


def occupancy_max_active_clusters(kernel: Kernel, grid, block, cluster, dynamic_smem: int = 0) -> int:
    """Clusters of shape ``cluster`` that can be resident on the whole GPU at once
    (``cuOccupancyMaxActiveClusters``, twin of ``cudaOccupancyMaxActiveClusters``; CUDA C++ Programming
    Guide §"Thread Block Clusters"). Includes GPC granularity, which no per-SM formula shows."""
    d = _ready()
    cfg = _config(kernel, grid, block, dynamic_smem, cluster)
    return int(check(d.cuOccupancyMaxActiveClusters(kernel.function, cfg), "cuOccupancyMaxActiveClusters"))


def max_potential_cluster_size(kernel: Kernel, grid, block, dynamic_smem: int = 0) -> int:
    """The largest cluster size ``kernel`` can launch with (``cuOccupancyMaxPotentialClusterSize``): 8 by
    default on H100/H200, 16 after :meth:`Kernel.allow_non_portable_cluster_size`."""
    d = _ready()
    cfg = _config(kernel, grid, block, dynamic_smem, None)
    return int(check(d.cuOccupancyMaxPotentialClusterSize(kernel.function, cfg),
                     "cuOccupancyMaxPotentialClusterSize"))


def driver_version() -> str:
    """The NVIDIA display driver's version string (e.g. ``"580.159.04"``) from NVML, else from
    ``/proc/driver/nvidia/version``; ``"unknown"`` when neither answers."""
    try:
        from cuda.bindings import nvml

        nvml.init_v2()
        try:
            v = nvml.system_get_driver_version()
        finally:
            nvml.shutdown()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        pass
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        pass
    try:
        import re

        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module(?: for \w+)?\s+(\d+\.\d+(?:\.\d+)?)", f.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    return "unknown"


def run_metadata(command: str) -> dict[str, Any]:
    """Metadata for a dataset (``h100lab.data.REQUIRED_META`` and more): GPU name, compute capability,
    driver version, CUDA version the driver supports (``cuDriverGetVersion``), NVRTC and cuda-bindings
    versions, SM count, UTC date, and the exact ``command`` that made the data."""
    d = _ready()
    from cuda.bindings import __version__ as bindings_version

    from .. import __version__ as h100lab_version
    from .compiler import nvrtc_version

    props = device_properties(0)
    v = int(check(d.cuDriverGetVersion(), "cuDriverGetVersion"))
    return {
        "gpu": props["name"],
        "compute_capability": f"{props['major']}.{props['minor']}",
        "sm_count": props["multiProcessorCount"],
        "driver": driver_version(),
        "cuda": f"{v // 1000}.{(v % 1000) // 10}",
        "nvrtc": nvrtc_version(),
        "cuda_bindings": bindings_version,
        "python": platform.python_version(),
        "h100lab": h100lab_version,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
        "command": command,
    }
