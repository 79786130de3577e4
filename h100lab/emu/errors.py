"""Exceptions of the emulator: each names the broken PTX/CUDA rule, the PTX instruction and, when the
PTX carries ``.loc`` lines (NVRTC's ``-lineinfo``, which :func:`h100lab.emu.compile` always passes), the
CUDA source line that produced it."""
from __future__ import annotations

__all__ = ["EmuError", "ExecutionError", "MemoryFault", "DeadlockError", "RaceError", "ProxyFenceError",
           "BudgetExceeded", "UnsupportedInstruction", "relocated"]


class EmuError(RuntimeError):
    """Base class. ``rule`` is the broken rule, ``where`` the location text (kernel, CTA, warp, lanes, PTX
    instruction, CUDA source line), ``cuda_error`` the CUresult a real GPU would report, if any."""

    cuda_error: str | None = None

    def __init__(self, rule: str, where: str = "", *, cuda_error: str | None = None):
        self.rule = rule
        self.where = where
        if cuda_error is not None:
            self.cuda_error = cuda_error
        msg = rule if not where else f"{rule}\n{where}"
        if self.cuda_error:
            msg += f"\n(on a GPU: {self.cuda_error})"
        super().__init__(msg)


class ExecutionError(EmuError):
    """An instruction whose behaviour PTX leaves undefined, or an operand that breaks a PTX rule."""


class MemoryFault(ExecutionError):
    """An out-of-bounds or misaligned access: a real GPU reports ``CUDA_ERROR_ILLEGAL_ADDRESS`` or
    ``CUDA_ERROR_MISALIGNED_ADDRESS`` and the context is lost."""

    cuda_error = "CUDA_ERROR_ILLEGAL_ADDRESS"


class UnsupportedInstruction(ExecutionError):
    """PTX the emulator does not execute (yet); the message names the instruction."""


class DeadlockError(EmuError):
    """Every warp that has not exited waits for something no other warp or copy can provide. ``report``
    lists each waiting warp with its instruction, source line and the state of what it waits on."""

    def __init__(self, rule: str, where: str = "", report: list | None = None):
        self.report = list(report or [])
        super().__init__(rule, where)


class RaceError(EmuError):
    """Two warps accessed the same shared-memory bytes, at least one writing, with nothing ordering them
    (``racecheck=True``); PTX §8 "Memory Consistency Model": a data race makes the result undefined."""


class ProxyFenceError(EmuError):
    """Bytes written through the generic proxy were read by the async proxy (a bulk/tensor copy) with no
    ``fence.proxy.async`` between them, or an asynchronous write raced a generic access (PTX §8.6
    "Proxies", §9.7.13.17 ``fence.proxy.async``)."""


class BudgetExceeded(EmuError):
    """The launch executed more warp-instructions than its budget (a kernel that loops forever)."""


def relocated(exc: EmuError, where: str) -> EmuError:
    """``exc`` again, with ``where`` (the PTX instruction and CUDA line that performed the access) appended to
    its location; the rule and the CUDA error name are kept."""
    return type(exc)(exc.rule, f"{exc.where}\n{where}", cuda_error=exc.cuda_error)
