"""The timing sweep's backend on the PTX emulator: :class:`EmuBackend` has the methods of
:class:`h100lab.measure.timing_sweep.CudaBackend`, implemented on :mod:`h100lab.emu`, so the sweep's own
:class:`~h100lab.measure.timing_sweep.Runner` drives the real kernels (``l03_stream.cu``, ``l03_tma_latency.cu``,
``l03_sync_cost.cu``, ``l05_read_stream.cu``, ``l05_tma_copy.cu``, ``l05_copy_tune.cu``, ``l01_cvt_probe.cu``)
with its own launch configurations, offsets and checks, with no GPU::

    from h100lab.measure import timing_sweep as ts
    from h100lab.measure.emu_backend import EmuBackend
    r = ts.Runner(EmuBackend(), quick=True, buf_bytes=1 << 20, repeats=1)
    recs = r.step_stream()          # every record's ``ok``: checksums / copies checked, as on the GPU

It runs the *functional* part of the sweep: the bytes the kernels move and the checks the steps make
(checksums against :func:`~h100lab.measure.timing_sweep.expected_stream_sums`, ``verify_copy``'s bad words, the
kernels' error bits, the conversion bits). **Nothing it returns is a time.** The emulator's clock is
deterministic: ``%clock64`` counts the warp-instructions the launch has issued so far and ``%globaltimer``
converts that count at 1980 MHz (:mod:`h100lab.emu.launch`), so the kernels' cycle stamps are instruction
counts. :meth:`EmuBackend.timed` returns an *emulated duration* per call in milliseconds, made up by a stated
rule from what the call did (:meth:`EmuBackend.emulated_ms`), so that the steps' arithmetic (medians, GB/s,
ratios, the choice of the "best" configuration) runs; those numbers say nothing about an H100 or H200.

The pretend device is small so runs stay fast: ``sms`` SMs (default 2) with the H200's per-SM and per-block
shared memory (the sweep's configurations, up to the 193 KiB tensor-copy ring, need them), no L2 or DRAM
distinction (a "cold" and a "warm" load are the same functional copy). Not runnable here: ``gemms`` (cuBLAS
through PyTorch needs a GPU; it returns an error the step records) and ``encode_raw`` (the C driver call; it
returns the lesson-4 model's verdict instead, :func:`h100lab.tma.verdict`).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .timing_sweep import SMEM_OPTIN, SMEM_PER_SM

__all__ = ["EmuBackend", "ISSUE_PER_SM", "COPY_BYTES_PER_CYCLE_PER_SM"]

#: warp-instructions one SM is taken to issue per cycle in :meth:`EmuBackend.emulated_ms` (4 schedulers)
ISSUE_PER_SM = 4
#: bytes one SM is taken to move per cycle for copies in :meth:`EmuBackend.emulated_ms` (TMA, memcpy)
COPY_BYTES_PER_CYCLE_PER_SM = 32


class EmuBackend:
    """:class:`~h100lab.measure.timing_sweep.CudaBackend`'s calls on the PTX emulator (a pretend device of ``sms``
    SMs, the H200's shared memory per SM and per block unless ``smem_per_sm`` / ``optin`` say otherwise).
    ``launches`` keeps (kernel name, grid, block, :class:`~h100lab.emu.launch.LaunchStats`) of every launch, for
    tests; ``launch_options`` go to every :func:`h100lab.emu.launch` (e.g. ``seed``, or ``resident=8`` so the
    emulator keeps 8 CTAs resident and fuses their warps: faster, same results); ``reset`` starts a fresh emulated
    device (:func:`h100lab.emu.reset`)."""

    def __init__(self, sms: int = 2, *, smem_per_sm: int = SMEM_PER_SM, optin: int = SMEM_OPTIN,
                 launch_options: dict[str, Any] | None = None, reset: bool = False):
        from .. import emu

        if reset:
            emu.reset()
        self.emu = emu
        self.sms = int(sms)
        self.smem_per_sm = int(smem_per_sm)
        self.optin = int(optin)
        self.launch_options = dict(launch_options or {})
        self.launches: list[tuple[str, Any, Any, Any]] = []
        self._progs: dict = {}
        self._work = [0, 0]            # warp-instructions and copied bytes since the last reset (timed)

    # device and compilation
    def properties(self) -> dict[str, Any]:
        return {"name": f"PTX emulator ({self.sms} SMs)", "multiProcessorCount": self.sms,
                "sharedMemPerMultiprocessor": self.smem_per_sm, "sharedMemPerBlockOptin": self.optin,
                "clockRate": 1_980_000, "emulated": True}

    def metadata(self, command: str) -> dict[str, Any]:
        from .. import __version__

        return {"gpu": f"PTX emulator ({self.sms} SMs)", "compute_capability": "9.0", "driver": "none",
                "cuda": "none (h100lab.emu)", "date": "n/a", "command": command, "h100lab": __version__,
                "emulated": True}

    def function(self, kernel: str, name: str, options: Sequence[str] = ()):
        key = (kernel, tuple(options))
        if key not in self._progs:
            from ..cuda.errors import CompileError
            from ..nvrtc import CompileError as NvrtcCompileError

            try:
                self._progs[key] = self.emu.compile_kernel(kernel, options=tuple(options))
            except NvrtcCompileError as exc:
                if isinstance(exc, CompileError):
                    raise
                # the step catches h100lab.cuda's CompileError (a subclass), as CudaBackend raises it
                raise CompileError(exc.name, exc.result, exc.log, exc.lines) from exc
        return self._progs[key].function(name)

    # memory
    def alloc(self, nbytes: int):
        return self.emu.empty(int(nbytes), np.uint8)

    def zeros(self, n: int, dtype):
        return self.emu.zeros(int(n), dtype)

    def to_device(self, a: np.ndarray):
        return self.emu.to_device(a)

    def to_host(self, arr) -> np.ndarray:
        return arr.to_host()

    def memset32(self, arr, value: int, words: int | None = None) -> None:
        n = arr.nbytes // 4 if words is None else int(words)
        if n * 4 > arr.nbytes:
            raise ValueError(f"memset of {n} words past the end of a {arr.nbytes}-byte allocation")
        self.emu.device().memory.view(arr.ptr, 4 * n).view(np.uint32)[:] = np.uint32(int(value) & 0xFFFFFFFF)

    @staticmethod
    def ptr(arr, offset: int = 0) -> np.uint64:
        """A pointer parameter: the allocation's address plus ``offset`` bytes."""
        return np.uint64(arr.ptr + int(offset))

    # kernels
    def launch(self, kernel, grid, block, *args, shared_mem: int = 0, cluster=None) -> None:
        st = self.emu.launch(kernel, grid, block, *args, shared_mem=shared_mem, cluster=cluster,
                             **self.launch_options)
        self.launches.append((kernel.name, grid, block, st))
        self._work[0] += st.instructions
        self._work[1] += st.tma_bytes

    def sync(self) -> None:
        self.emu.synchronize()

    def emulated_ms(self, instructions: int, copied_bytes: int) -> float:
        """The made-up duration :meth:`timed` reports, in ms — **not a measurement**: ``instructions /
        (ISSUE_PER_SM · sms) + copied_bytes / (COPY_BYTES_PER_CYCLE_PER_SM · sms)`` cycles (at least one) at
        the emulator's 1980 MHz clock. It grows with the work a call did, so the sweep's medians, bandwidths
        and rankings are defined and deterministic; it is no model of an H100 or H200."""
        from ..emu.launch import CLOCK_HZ

        cycles = instructions / (ISSUE_PER_SM * self.sms) + copied_bytes / (COPY_BYTES_PER_CYCLE_PER_SM * self.sms)
        return max(cycles, 1.0) / CLOCK_HZ * 1e3

    def timed(self, calls: Sequence[Callable[[], None]]) -> list[float]:
        """Run ``calls`` in order; the emulated duration of each (:meth:`emulated_ms`, not a time)."""
        out = []
        for fn in calls:
            self._work = [0, 0]
            fn()
            out.append(self.emulated_ms(*self._work))
        return out

    def memcpy_dtod(self, dst, src, nbytes: int) -> None:
        """``cuMemcpyDtoDAsync`` on the emulated memory (a byte copy)."""
        mem = self.emu.device().memory
        n = int(nbytes)
        mem.view(dst.ptr, n)[:] = mem.view(src.ptr, n)
        self._work[1] += 2 * n

    def encode_tiled(self, *args, **kw):
        return self.emu.encode_tiled(*args, **kw)

    def encode_raw(self, c: dict[str, Any], address: int) -> str:
        """The lesson-4 model's verdict on the enum integers (:func:`h100lab.tma.verdict`) — what the emulator's
        ``encode_tiled`` enforces; on the GPU this is the C driver's answer."""
        from .. import tma

        v = tma.verdict(c["dtype"], c["rank"], address, c["global_dim"], c["global_strides"], c["box_dim"],
                        c["element_strides"], c["interleave"], c["swizzle"], c["l2_promotion"], c["oob_fill"])
        return v.result

    def gemms(self, jobs: Sequence[tuple[str, int]], repeats: int = 10, timeout_s: float = 240.0) -> dict[str, Any]:
        """Not runnable on the emulator: the cuBLAS GEMMs run through PyTorch on a GPU. Returns the error the
        step records (one ``gemm`` record with ``correct = False``)."""
        return {"jobs": [], "error": "not runnable on the emulator: cuBLAS GEMMs through PyTorch need a GPU",
                "env": {}}
