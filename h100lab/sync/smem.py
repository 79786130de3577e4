"""A CTA's shared memory as plain bytes, with the opaque objects (mbarriers) that live in it.

The bytes are a ``bytearray`` (fast 8-byte loads/stores through :mod:`struct`) exposed to NumPy as
``.array`` (a writable ``np.uint8`` view of the same memory). Opaque objects such as an mbarrier are
*views* at an address: their state is the 8 bytes there, and the memory keeps a registry of which
addresses currently hold a valid object, because PTX makes validity a property of history
(initialised and not yet invalidated), not of the bit pattern [PTX §9.7.13.15.10, §9.7.13.15.9].

Rules enforced here (each raises :class:`SharedMemoryError`, a ``ValueError``):

* every access lies inside the CTA's window ``[0, size)`` [PTX §5.1.7 shared state space];
* a plain (non-mbarrier) read or write that overlaps a valid mbarrier is undefined behaviour
  [PTX §9.7.13.15 — "any non-mbarrier access on memory holding a valid mbarrier"], so it raises.
"""
from __future__ import annotations

import struct

import numpy as np

__all__ = ["SharedMemory", "SharedMemoryError", "SMEM_MAX_PER_BLOCK"]

#: Largest dynamic shared memory one CTA may opt into on sm_90: 227 KB [CPG §20.8.3].
SMEM_MAX_PER_BLOCK = 232_448

_U64 = struct.Struct("<Q")


class SharedMemoryError(ValueError):
    """An access that breaks a rule of the shared state space."""


class SharedMemory:
    """The ``.shared::cta`` window of one CTA: ``size`` bytes, zero-initialised.

    ``cta_rank`` is the CTA's ``%cluster_ctarank``; operations that PTX restricts to the executing
    CTA's own barrier (init, inval, waits) compare it with the caller's rank.
    """

    __slots__ = ("size", "cta_rank", "bytes", "array", "_objects")

    def __init__(self, size: int = SMEM_MAX_PER_BLOCK, *, cta_rank: int = 0, limit: int = SMEM_MAX_PER_BLOCK):
        # ``limit``: the emulator's CTA window also holds the 1 KB the system reserves per block (CPG §20.8.3),
        # so it passes SMEM_MAX_PER_BLOCK + 1024 and keeps addresses equal to the hardware's offsets.
        if not 0 < size <= limit:
            raise SharedMemoryError(
                f"shared memory of {size} B: a CTA may use 1 … {limit} B on sm_90 (CPG §20.8.3)")
        self.size = int(size)
        self.cta_rank = int(cta_rank)
        self.bytes = bytearray(self.size)
        self.array = np.frombuffer(self.bytes, dtype=np.uint8)
        self._objects: dict[int, str] = {}

    def __repr__(self) -> str:
        live = ", ".join(f"{k}@0x{a:05x}" for a, k in sorted(self._objects.items()))
        return f"SharedMemory({self.size} B, cta {self.cta_rank}{'; ' + live if live else ''})"

    # -- bounds and object registry -------------------------------------------------------------
    def check_range(self, addr: int, size: int) -> None:
        """Raise unless ``[addr, addr+size)`` lies inside the window (PTX §5.1.7)."""
        if size < 0 or addr < 0 or addr + size > self.size:
            raise SharedMemoryError(
                f"shared-memory access [{addr:#x}, {addr + size:#x}) is outside the CTA's window "
                f"[0, {self.size:#x}) (PTX §5.1.7: the address must lie in the .shared::cta window)")

    def live_object(self, addr: int) -> str | None:
        """The kind of valid opaque object at ``addr`` (``"mbarrier"``) or ``None``."""
        return self._objects.get(addr)

    def live_objects(self) -> dict[int, str]:
        """A copy of the registry: address → object kind, for every valid object."""
        return dict(self._objects)

    def _register(self, addr: int, kind: str) -> None:
        self._objects[addr] = kind

    def _unregister(self, addr: int) -> None:
        self._objects.pop(addr, None)

    def _check_no_object(self, addr: int, size: int, what: str) -> None:
        for a, kind in self._objects.items():
            if a < addr + size and addr < a + 8:
                raise SharedMemoryError(
                    f"{what} [{addr:#x}, {addr + size:#x}) overlaps the valid {kind} at {a:#x}: a "
                    f"non-mbarrier access to memory holding a valid mbarrier is undefined "
                    f"(PTX §9.7.13.15); invalidate it first (mbarrier.inval, PTX §9.7.13.15.10)")

    # -- plain (generic) accesses ----------------------------------------------------------------
    def read(self, addr: int, size: int) -> np.ndarray:
        """``ld.shared`` of ``size`` bytes: a copy of the bytes (PTX §9.7.9.8 ld)."""
        self.check_range(addr, size)
        if self._objects:
            self._check_no_object(addr, size, "read")
        return self.array[addr:addr + size].copy()

    def write(self, addr: int, data) -> None:
        """``st.shared`` of the bytes of ``data`` (any NumPy-convertible buffer) (PTX §9.7.9.9 st)."""
        raw = np.ascontiguousarray(data).view(np.uint8).ravel()
        self.check_range(addr, raw.size)
        if self._objects:
            self._check_no_object(addr, raw.size, "write")
        self.array[addr:addr + raw.size] = raw

    # -- raw 64-bit words, used by object views (mbarrier) -----------------------------------------
    def load_u64(self, addr: int) -> int:
        """The little-endian 64-bit word at ``addr`` (no object check: object views use this)."""
        return _U64.unpack_from(self.bytes, addr)[0]

    def store_u64(self, addr: int, value: int) -> None:
        """Store a 64-bit word at ``addr`` (no object check: object views use this)."""
        _U64.pack_into(self.bytes, addr, value)
