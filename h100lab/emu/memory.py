"""The emulated GPU's memories: device (global) memory made of allocations, and the generic address map.

Global memory is a set of allocations, each a ``np.uint8`` array at a device address, 256-byte aligned
like ``cuMemAlloc`` ("suitably aligned for any kind of variable", CUDA Driver API; 256 B in practice). An
access must lie inside one allocation: anything else is the ``CUDA_ERROR_ILLEGAL_ADDRESS`` a real GPU
raises. Reads and writes are vectorised over the lanes of a warp.

The class also offers the interface of :class:`h100lab.tma.bulk.GlobalMemory` (``read``, ``write``,
``view``, ``_off``) so the lesson-4/5 TMA model moves bytes in it unchanged.

Generic addresses (PTX §6.4.1.1 "Generic Addressing") use the windows of
:class:`h100lab.memory.spaces.AddressMap`: global allocations are generic addresses themselves (UVA),
``.shared`` is ``SHARED_BASE + ((rank << 24) | offset)`` ([HW] the H200's encoding, lesson 2), ``.local``,
``.param`` and ``.const`` each have their own window.
"""
from __future__ import annotations

import bisect
import threading

import numpy as np

from ..memory.spaces import AddressMap
from .errors import MemoryFault

__all__ = ["DeviceMemory", "Allocation", "GLOBAL_BASE", "SHARED_BASE", "LOCAL_BASE", "PARAM_BASE", "CONST_BASE",
           "WINDOW"]

GLOBAL_BASE = AddressMap.GLOBAL_BASE
SHARED_BASE = AddressMap.SHARED_BASE
LOCAL_BASE = AddressMap.LOCAL_BASE
PARAM_BASE = AddressMap.PARAM_BASE
CONST_BASE = AddressMap.CONST_BASE
WINDOW = 1 << 32          #: size of the shared/local/param/const windows in the generic space (model)


class Allocation:
    """One ``cuMemAlloc``: ``nbytes`` bytes (``data``, zero-initialised, padded to 16) at ``base``."""

    __slots__ = ("base", "nbytes", "data", "end", "name")

    def __init__(self, base: int, nbytes: int, name: str = ""):
        self.base = base
        self.nbytes = nbytes
        self.end = base + nbytes
        self.data = np.zeros(-(-max(nbytes, 1) // 16) * 16, np.uint8)
        self.name = name


class DeviceMemory:
    """The emulated device's global memory."""

    def __init__(self, base: int = GLOBAL_BASE):
        self._next = base
        self._bases: list[int] = []
        self._allocs: list[Allocation] = []
        self.base = base
        self._lock = threading.Lock()   # the grader checks two notebooks' kernels at once, in threads

    # -- allocation -----------------------------------------------------------------------------
    def alloc(self, nbytes: int, name: str = "") -> Allocation:
        """A new zeroed allocation of ``nbytes`` (256-byte aligned; a 256-byte gap separates allocations so
        that running off the end faults instead of reaching a neighbour)."""
        if nbytes < 0:
            raise ValueError(f"allocation of {nbytes} B: sizes are non-negative")
        with self._lock:
            a = Allocation(self._next, int(nbytes), name)
            self._next += -(-max(int(nbytes), 1) // 256) * 256 + 256
            self._bases.append(a.base)
            self._allocs.append(a)
        return a

    def free(self, a: Allocation) -> None:
        """``cuMemFree``: later accesses fault."""
        with self._lock:
            i = bisect.bisect_left(self._bases, a.base)
            if i < len(self._bases) and self._allocs[i] is a:
                del self._bases[i], self._allocs[i]

    def find(self, addr: int, nbytes: int = 1) -> Allocation | None:
        """The allocation holding ``[addr, addr + nbytes)``, or None."""
        i = bisect.bisect_right(self._bases, addr) - 1
        if i < 0:
            return None
        a = self._allocs[i]
        return a if addr + nbytes <= a.end else None

    def fault(self, addr: int, nbytes: int, what: str) -> MemoryFault:
        near = self.find(addr, 1)
        hint = ""
        if near is None:
            i = bisect.bisect_right(self._bases, addr) - 1
            if i >= 0:
                a = self._allocs[i]
                hint = (f"; the nearest allocation below is [0x{a.base:x}, 0x{a.end:x}) ({a.nbytes} B), so the "
                        f"access is {addr - a.end} B past its end")
        return MemoryFault(f"{what} of {nbytes} B at 0x{addr:x} is outside every allocation{hint} "
                           "(PTX §5.1.4: a global access must address allocated memory)")

    # -- vectorised lane accesses ------------------------------------------------------------------
    def _alloc_for(self, addrs: np.ndarray, nbytes: int, what: str) -> tuple[Allocation, np.ndarray]:
        lo = int(addrs.min())
        hi = int(addrs.max())
        a = self.find(lo, 1)
        if a is None or hi + nbytes > a.end:
            bad = lo if a is None else hi
            if a is not None and self.find(hi, nbytes) is not None:
                raise MemoryFault(f"{what}: one warp access spans two allocations (lanes at 0x{lo:x} and 0x{hi:x}); "
                                  "the emulator requires a warp's lanes to stay in one allocation")
            raise self.fault(bad, nbytes, what)
        return a, addrs - np.uint64(a.base)

    def load(self, addrs: np.ndarray, nbytes: int, what: str = "ld.global") -> np.ndarray:
        """Bytes ``[addr, addr+nbytes)`` for each lane address (uint64 array) → array (lanes, nbytes) uint8,
        or a (lanes,) array of the unsigned type of that width when nbytes is 1/2/4/8."""
        a, off = self._alloc_for(addrs, nbytes, what)
        return _gather(a.data, off, nbytes)

    def store(self, addrs: np.ndarray, values: np.ndarray, nbytes: int, what: str = "st.global") -> None:
        """Write ``values`` (lanes,) of width ``nbytes`` (or (lanes, nbytes) uint8) at each lane address.
        Lanes write in lane order, so the highest lane wins when two write the same bytes (the emulator's
        deterministic choice; PTX leaves the winner unspecified)."""
        a, off = self._alloc_for(addrs, nbytes, what)
        _scatter(a.data, off, values, nbytes)

    # -- bulk interface of h100lab.tma.bulk.GlobalMemory -------------------------------------------
    def _off(self, addr: int, n: int) -> int:
        a = self.find(int(addr), max(int(n), 1))
        if a is None:
            raise self.fault(int(addr), int(n), "bulk access")
        return int(addr) - a.base

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        a = self.find(int(addr), max(int(nbytes), 1))
        if a is None:
            raise self.fault(int(addr), int(nbytes), "read")
        o = int(addr) - a.base
        return a.data[o:o + nbytes].copy()

    def write(self, addr: int, data) -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        a = self.find(int(addr), max(raw.size, 1))
        if a is None:
            raise self.fault(int(addr), raw.size, "write")
        o = int(addr) - a.base
        a.data[o:o + raw.size] = raw

    def view(self, addr: int, nbytes: int | None = None) -> np.ndarray:
        """The bytes from ``addr`` to the end of its allocation (or ``nbytes`` of them), writable."""
        a = self.find(int(addr), 1)
        if a is None:
            raise self.fault(int(addr), 1, "tensor base")
        o = int(addr) - a.base
        n = a.nbytes - o if nbytes is None else nbytes
        if o + n > a.nbytes:
            raise self.fault(int(addr), n, "view")
        return a.data[o:o + n]


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _gather(buf: np.ndarray, off: np.ndarray, nbytes: int) -> np.ndarray:
    """Per-lane loads of ``nbytes`` from ``buf`` at offsets ``off`` (uint64). Aligned 1/2/4/8-byte loads
    use a typed view of the buffer; anything else gathers bytes."""
    if nbytes in _UINT and not (off % nbytes).any():
        return buf.view(_UINT[nbytes])[(off // nbytes).astype(np.intp)]
    idx = off.astype(np.intp)[:, None] + np.arange(nbytes)
    out = buf[idx]
    return out.view(_UINT[nbytes]).reshape(-1) if nbytes in _UINT else out


def _scatter(buf: np.ndarray, off: np.ndarray, values: np.ndarray, nbytes: int) -> None:
    if nbytes in _UINT and values.ndim == 1 and not (off % nbytes).any():
        buf.view(_UINT[nbytes])[(off // nbytes).astype(np.intp)] = values.astype(_UINT[nbytes], copy=False)
        return
    v = values if values.ndim == 2 else np.ascontiguousarray(values.astype(_UINT[nbytes], copy=False)).view(
        np.uint8).reshape(-1, nbytes)
    idx = off.astype(np.intp)[:, None] + np.arange(nbytes)
    buf[idx] = v
