"""h100lab.emu: run the book's CUDA C++ kernels with no GPU.

NVRTC compiles the CUDA C++ (with inline PTX) to PTX on the CPU; the emulator parses the PTX once, lowers each
instruction to a Python closure over NumPy lanes, and executes it on the machine model the book already has —
shared memory as bytes (:class:`h100lab.sync.smem.SharedMemory`), mbarriers in those bytes
(:mod:`h100lab.sync.mbarrier`), named and cluster barriers (:mod:`h100lab.sync.named`), the TMA model moving
tiles (:mod:`h100lab.tma`), clusters and DSMEM with the H200's shared-address encoding.

The calls mirror :mod:`h100lab.cuda`, so a chapter cell runs on either (:func:`h100lab.backend`)::

    from h100lab import emu
    k = emu.compile_kernel("smoke_vector_add").function("vector_add")
    a, b, c = emu.to_device(x), emu.to_device(y), emu.empty(x.shape, x.dtype)
    stats = emu.launch(k, (n + 255) // 256, 256, a, b, c, np.int32(n))
    c.to_host(); print(stats.summary())

Modules: :mod:`.ptx` (parser), :mod:`.alu` (arithmetic semantics), :mod:`.lower` / :mod:`.lower_mem` /
:mod:`.lower_sync` / :mod:`.lower_async` (instruction families), :mod:`.state` (warps, CTAs, clusters),
:mod:`.launch` (scheduler, copy engine, counters, deadlock reports), :mod:`.api` (this interface).
"""
from __future__ import annotations

from .api import (DeviceArray, Emulator, Kernel, Program, TensorMap, available, compile, compile_kernel, device,
                  device_properties, empty, encode_tiled, from_ptx, launch, limits, reset, synchronize, to_device,
                  unavailable_reason, zeros)
from .errors import (BudgetExceeded, DeadlockError, EmuError, ExecutionError, MemoryFault, ProxyFenceError,
                     RaceError, UnsupportedInstruction)
from .launch import LaunchStats

__all__ = [
    "compile", "compile_kernel", "from_ptx", "Program", "Kernel", "DeviceArray", "to_device", "empty", "zeros",
    "launch", "synchronize", "TensorMap", "encode_tiled", "LaunchStats", "Emulator", "device", "reset",
    "available", "unavailable_reason", "limits", "device_properties",
    "EmuError", "ExecutionError", "MemoryFault", "DeadlockError", "RaceError", "ProxyFenceError", "BudgetExceeded",
    "UnsupportedInstruction",
]
