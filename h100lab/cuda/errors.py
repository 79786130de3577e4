"""Exceptions of the real-GPU backend.

Every CUDA driver call returns a ``CUresult`` (CUDA Driver API, "Error Handling"); every NVRTC call
an ``nvrtcResult`` (NVRTC User Guide, "Error Handling"). The backend checks each one and turns a
failure into one of these exceptions, carrying the result's *name* so that a reader can look it up.
"""
from __future__ import annotations

from .. import nvrtc as _nvrtc
from ..launchcfg import LaunchConfigError
from ..nvrtc import SourceLine

__all__ = ["CudaError", "CudaUnavailable", "DriverError", "CompileError", "SourceLine", "LaunchConfigError"]


class CudaError(RuntimeError):
    """Base class of every error raised by :mod:`h100lab.cuda`."""


class CudaUnavailable(CudaError):
    """No usable Hopper GPU (or no cuda-python / NVRTC); the message says which part is missing."""


class DriverError(CudaError):
    """A CUDA driver, runtime or NVRTC call returned something other than success.

    ``result`` is the driver's name for the code (``"CUDA_ERROR_INVALID_VALUE"``), ``code`` its number
    and ``call`` the API function that returned it (CUDA Driver API, ``cuGetErrorName``).
    """

    def __init__(self, call: str, result: str, code: int, detail: str = ""):
        self.call = call
        self.result = result
        self.code = code
        self.detail = detail
        msg = f"{call} returned {result} ({code})"
        super().__init__(msg + (f": {detail}" if detail else ""))


class CompileError(CudaError, _nvrtc.CompileError):
    """NVRTC rejected a program (:class:`h100lab.nvrtc.CompileError`, also a :class:`CudaError` here):
    ``log`` is NVRTC's log, ``lines`` the diagnostics mapped to source lines."""
