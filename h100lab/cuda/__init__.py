"""Real-GPU backend: compile the book's kernels with NVRTC, run them on a Hopper GPU, query the driver.

Built on cuda-python's low-level bindings (``cuda.bindings.driver``, ``.nvrtc``; the runtime only for
``cudaGetDeviceProperties``). Importing this package imports no ``cuda.*`` module; compiling needs
cuda-python and NVRTC but no GPU; everything else needs a GPU of compute capability 9.x
(:func:`available`, :func:`unavailable_reason`).

Kernels live in ``h100lab/cuda/kernels/<name>.cu`` (``lNN_*`` for lesson NN, ``smoke_*`` for the
backend's own tests), each ``extern "C" __global__``, each starting with a comment saying which lesson
uses it and what it proves. ``#include <h100lab/tensormap.cuh>`` gives the ``CUtensorMap`` type.

    prog = compile_kernel("smoke_vector_add")           # PTX + cubin for sm_90a, no GPU needed
    k = prog.function("vector_add")                     # needs the GPU from here on
    a, b = to_device(x), to_device(y); c = empty(x.shape, x.dtype)
    launch(k, grid=(n + 255) // 256, block=256, a, b, c, np.int32(n))
    c.to_host()
"""
from __future__ import annotations

from .compiler import (Program, KernelInfo, compile, compile_kernel, compiler_unavailable_reason,
                       include_dirs, kernel_info, kernel_source, list_kernels, nvrtc_version)
from .device import (DeviceArray, Kernel, Timing, available, device_properties, driver_version, empty,
                     launch, max_potential_cluster_size, occupancy_max_active_blocks,
                     occupancy_max_active_clusters, run_metadata, synchronize, time_kernel, to_device,
                     unavailable_reason, zeros)
from .errors import CompileError, CudaError, CudaUnavailable, DriverError, LaunchConfigError, SourceLine
from .tensormap import TensorMap, encode_tiled

__all__ = [
    "available", "unavailable_reason", "compiler_unavailable_reason",
    "kernel_source", "kernel_info", "list_kernels", "compile", "compile_kernel", "include_dirs", "nvrtc_version",
    "Program", "KernelInfo", "Kernel",
    "DeviceArray", "to_device", "empty", "zeros",
    "launch", "synchronize", "Timing", "time_kernel",
    "device_properties", "occupancy_max_active_blocks", "occupancy_max_active_clusters",
    "max_potential_cluster_size", "TensorMap", "encode_tiled", "run_metadata", "driver_version",
    "CudaError", "CudaUnavailable", "DriverError", "CompileError", "SourceLine", "LaunchConfigError",
]
