"""Exceptions of the real-GPU backend.

Every CUDA driver call returns a ``CUresult`` (CUDA Driver API, "Error Handling"); every NVRTC call
an ``nvrtcResult`` (NVRTC User Guide, "Error Handling"). The backend checks each one and turns a
failure into one of these exceptions, carrying the result's *name* so that a reader can look it up.
"""
from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class SourceLine:
    """One diagnostic of a failed compile: the source line it points at and the compiler's message."""

    line: int          # 1-based line in the CUDA source (0 when the compiler named no line)
    text: str          # that line of the source ("" when unknown)
    message: str       # the compiler's message
    ptx_line: int = 0  # for ptxas errors (inline PTX): the line in the generated PTX
    ptx_text: str = ""

    def __str__(self) -> str:
        where = f"line {self.line}: {self.text.strip()}" if self.line else "(no source line)"
        ptx = f"\n      PTX line {self.ptx_line}: {self.ptx_text.strip()}" if self.ptx_line else ""
        return f"  {self.message}\n    {where}{ptx}"


class CompileError(CudaError):
    """NVRTC rejected a program. ``log`` is NVRTC's log; ``lines`` the diagnostics mapped to source lines.

    Front-end errors carry NVRTC's ``name(line)`` location; errors that ptxas reports for inline PTX
    name a line of the generated PTX, which is mapped back to the CUDA source through the ``.loc``
    directives that ``-lineinfo`` puts in the PTX (PTX ISA §11.3 "Debugging directives: .loc").
    """

    def __init__(self, name: str, result: str, log: str, lines: list[SourceLine]):
        self.name = name
        self.result = result
        self.log = log
        self.lines = lines
        body = "\n".join(str(s) for s in lines) if lines else log.strip()
        super().__init__(f"NVRTC could not compile {name} ({result}):\n{body}")


class LaunchConfigError(ValueError):
    """A launch, occupancy query or kernel argument list breaks a CUDA rule before the driver sees it."""
