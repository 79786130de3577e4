"""The generic and the async proxy of a CTA's shared memory, as a *value* model: a missing fence
shows up as a stale value.

PTX calls the way an operation reaches memory its *proxy* [PTX §8.6 "Proxies"]: ordinary loads and
stores use the generic proxy; ``cp{.reduce}.async.bulk`` (TMA) and ``wgmma`` operands use the async
proxy [PTX §9.7.9.25.2 "Async proxy"]. Accesses to the same location through different proxies are
ordered only by a proxy fence — ``fence.proxy.async`` for the async proxy — and the completion of a
bulk copy is followed by an *implicit* generic-async proxy fence, so its result is visible to generic
loads once the completion has been observed (mbarrier wait or ``wait_group``) [§9.7.9.25.2].

The seed (lesson 3 §7.2) explains why: the generic proxy goes through the SM's L1 and store buffers,
the async proxy goes around them. This module keeps the two views apart:

* :meth:`ProxyMemory.st` writes the generic view (the :class:`SharedMemory` bytes) and leaves the
  bytes *unfenced* for the writing thread; :meth:`fence_proxy_async` by that thread copies its
  unfenced bytes into the async view.
* :meth:`async_write` (a TMA copy landing) writes the async view and leaves the bytes *unobserved*;
  :meth:`observe` (the waiter saw the completion: the implicit fence) copies them into the generic view.
* :meth:`async_read` (a TMA store's source, a wgmma operand) reads the async view;
  :meth:`ld` reads the generic view.

So: RAW generic→async without the fence reads the old bytes; RAW async→generic without a wait reads
the old bytes; and the WAR failures of seed §8.2 appear too — a generic load after an unobserved async
write keeps returning the old value, and a store still waiting in the writer's buffer, fenced after an
async write to the same bytes, overwrites the newer value in the async view ("the stale line wins").
This is a teaching model of *values*; which orderings are required is decided exactly, for whole
traces, by :mod:`h100lab.sync.hazards`.
"""
from __future__ import annotations

from typing import Hashable

import numpy as np

from .smem import SharedMemory

__all__ = ["ProxyMemory"]


class ProxyMemory:
    """Generic and async views of one CTA's :class:`SharedMemory` (the generic view *is* its bytes)."""

    def __init__(self, smem: SharedMemory):
        self.smem = smem
        self.async_view = smem.array.copy()
        self._unfenced: dict[Hashable, list[tuple[int, bytes]]] = {}
        self._unobserved: dict[int, list[tuple[int, bytes]]] = {}
        self._next = 0

    # -- generic proxy ------------------------------------------------------------------------
    def st(self, thread: Hashable, addr: int, data) -> None:
        """``st.shared`` by ``thread`` (generic proxy): visible to generic loads, not yet to the async
        proxy (PTX §8.6)."""
        raw = np.ascontiguousarray(data).view(np.uint8).ravel()
        self.smem.write(addr, raw)
        self._unfenced.setdefault(thread, []).append((addr, raw.tobytes()))

    def ld(self, thread: Hashable, addr: int, size: int) -> np.ndarray:
        """``ld.shared`` by ``thread`` (generic proxy): the generic view."""
        return self.smem.read(addr, size)

    def fence_proxy_async(self, thread: Hashable) -> None:
        """``fence.proxy.async.shared::cta`` by ``thread``: its earlier generic writes become visible to
        the async proxy (PTX §9.7.13.4 membar/fence, proxy fences; §9.7.9.25.2)."""
        for addr, raw in self._unfenced.pop(thread, []):
            self.async_view[addr:addr + len(raw)] = np.frombuffer(raw, np.uint8)

    def unfenced(self, thread: Hashable) -> list[tuple[int, int]]:
        """``(addr, size)`` of ``thread``'s generic writes the async proxy cannot see yet."""
        return [(a, len(r)) for a, r in self._unfenced.get(thread, [])]

    # -- async proxy --------------------------------------------------------------------------
    def async_write(self, addr: int, data) -> int:
        """A bulk copy's bytes land (async proxy); returns a handle for :meth:`observe`."""
        raw = np.ascontiguousarray(data).view(np.uint8).ravel()
        self.smem.check_range(addr, raw.size)
        self.async_view[addr:addr + raw.size] = raw
        h = self._next
        self._next += 1
        self._unobserved[h] = [(addr, raw.tobytes())]
        return h

    def async_read(self, addr: int, size: int) -> np.ndarray:
        """What an async-proxy read (TMA store source, wgmma operand) sees."""
        self.smem.check_range(addr, size)
        return self.async_view[addr:addr + size].copy()

    def observe(self, handle: int) -> None:
        """The completion of async write ``handle`` was observed (mbarrier wait returned True, or
        wait_group covered it): the implicit generic-async proxy fence makes it visible to generic
        loads (PTX §9.7.9.25.2)."""
        for addr, raw in self._unobserved.pop(handle, []):
            self.smem.array[addr:addr + len(raw)] = np.frombuffer(raw, np.uint8)

    def consistent(self, addr: int, size: int) -> bool:
        """Whether both proxies currently see the same bytes in ``[addr, addr+size)``."""
        self.smem.check_range(addr, size)
        return bool(np.array_equal(self.smem.array[addr:addr + size], self.async_view[addr:addr + size]))
