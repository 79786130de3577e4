"""Named barriers (``bar.sync`` / ``bar.arrive``, ``barrier{.cta}``) and the cluster barrier
(``barrier.cluster.arrive`` / ``.wait``) as state machines of plain values.

Named barriers [PTX §9.7.13.1 ``bar, barrier``]:

* each CTA has 16 barriers, ids 0 … 15;
* operand ``b`` is the number of participating threads, a multiple of the warp size (32); ``bar.sync``
  without ``b`` means all threads of the CTA; ``bar.arrive`` requires a non-zero ``b``;
* arrival is counted per warp (the instruction "marks warps' arrival"), so a warp adds its 32 threads;
* when ``b`` threads have arrived the barrier completes, the ``bar.sync`` waiters restart and the
  barrier is re-initialised for the next use (its *generation* advances);
* different warps may mix ``bar.sync`` and ``bar.arrive`` on one barrier **with the same thread
  count** (producer/consumer); a warp must not arrive twice before the barrier resets — both are
  undefined otherwise, so this model raises.

Cluster barrier [PTX §9.7.13.3 ``barrier.cluster``]: every non-exited thread of the cluster arrives
once per phase; ``wait`` returns when all have arrived; the barrier re-arms automatically; arriving
twice before completion, or waiting without a preceding arrive, is an error here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BarrierError", "NamedBarriers", "NamedBarrierState", "ClusterBarrier", "WARP_SIZE",
           "NUM_NAMED_BARRIERS"]

WARP_SIZE = 32
NUM_NAMED_BARRIERS = 16


class BarrierError(ValueError):
    """A use of bar/barrier/barrier.cluster that PTX leaves undefined or forbids."""


@dataclass
class NamedBarrierState:
    """One named barrier: thread count of the current generation (0 = idle), threads arrived so far,
    warps that arrived, and how many generations have completed."""

    expected: int = 0
    arrived: int = 0
    warps: set = field(default_factory=set)
    generation: int = 0


class NamedBarriers:
    """The 16 named barriers of one CTA (PTX §9.7.13.1). ``cta_threads`` is the block size, used
    when ``bar.sync`` is given no thread count."""

    def __init__(self, cta_threads: int):
        if not 1 <= cta_threads <= 1024:
            raise BarrierError(f"CTA of {cta_threads} threads: 1 … 1024 threads per block (CPG §20.2)")
        self.cta_threads = cta_threads
        self.bars = [NamedBarrierState() for _ in range(NUM_NAMED_BARRIERS)]

    def _count(self, b: int | None, op: str) -> int:
        if b is None:
            if op == "bar.arrive":
                raise BarrierError("bar.arrive needs a non-zero thread count (PTX §9.7.13.1)")
            return -(-self.cta_threads // WARP_SIZE) * WARP_SIZE
        if b <= 0 or b % WARP_SIZE:
            raise BarrierError(f"{op} thread count {b} must be a positive multiple of the warp size 32 "
                               f"(PTX §9.7.13.1)")
        if b > -(-self.cta_threads // WARP_SIZE) * WARP_SIZE:
            raise BarrierError(f"{op} thread count {b} exceeds the CTA's {self.cta_threads} threads: the "
                               f"barrier could never complete (PTX §9.7.13.1)")
        return b

    def arrive(self, barrier_id: int, b: int | None, warp, *, op: str = "bar.arrive",
               threads: int = WARP_SIZE) -> tuple[int, bool]:
        """Warp ``warp`` (any hashable id) arrives with ``threads`` threads on barrier ``barrier_id``
        expecting ``b`` threads. Returns ``(generation, completed)``: the generation it arrived in and
        whether this arrival completed it (PTX §9.7.13.1)."""
        if not isinstance(barrier_id, int) or not 0 <= barrier_id < NUM_NAMED_BARRIERS:
            raise BarrierError(f"{op} barrier id {barrier_id!r}: each CTA has barriers 0 … 15 (PTX §9.7.13.1)")
        n = self._count(b, op)
        st = self.bars[barrier_id]
        if st.arrived and st.expected != n:
            raise BarrierError(
                f"{op} {barrier_id}, {n} while the barrier's current use expects {st.expected} threads: "
                f"warps sharing a barrier must use the same thread count (PTX §9.7.13.1)")
        if warp in st.warps:
            raise BarrierError(
                f"warp {warp!r} arrived twice at barrier {barrier_id} before it reset (e.g. bar.arrive "
                f"followed by another bar on the same barrier): undefined (PTX §9.7.13.1)")
        st.expected = n
        st.arrived += threads
        st.warps.add(warp)
        gen = st.generation
        if st.arrived > n:
            raise BarrierError(f"barrier {barrier_id}: {st.arrived} threads arrived, more than the {n} "
                               f"expected (PTX §9.7.13.1)")
        if st.arrived == n:
            st.expected, st.arrived, st.warps, st.generation = 0, 0, set(), gen + 1
            return gen, True
        return gen, False

    def sync(self, barrier_id: int, b: int | None, warp, *, threads: int = WARP_SIZE) -> tuple[int, bool]:
        """``bar.sync a{, b}``: arrive like :meth:`arrive`; the caller then waits until generation
        ``generation`` has completed (``completed`` tells whether it already has)."""
        return self.arrive(barrier_id, b, warp, op="bar.sync", threads=threads)

    def completed(self, barrier_id: int, generation: int) -> bool:
        """Whether generation ``generation`` of the barrier has completed."""
        return self.bars[barrier_id].generation > generation


class ClusterBarrier:
    """``barrier.cluster`` for a cluster of ``threads`` participating threads (PTX §9.7.13.3).
    Participants are named by any hashable id; ``weight`` lets one actor stand for a warp (32)."""

    def __init__(self, threads: int):
        if threads <= 0:
            raise BarrierError("a cluster barrier needs at least one participating thread")
        self.threads = threads
        self.arrived = 0
        self.phase = 0
        self._who: dict = {}      # actor -> phase it last arrived in

    def arrive(self, who, weight: int = 1) -> tuple[int, bool]:
        """``barrier.cluster.arrive``: returns ``(phase, completed)`` (PTX §9.7.13.3)."""
        if self._who.get(who) == self.phase:
            raise BarrierError(f"{who!r} arrived twice at barrier.cluster before it completed: each "
                               f"thread arrives once per phase (PTX §9.7.13.3)")
        self._who[who] = self.phase
        self.arrived += weight
        ph = self.phase
        if self.arrived > self.threads:
            raise BarrierError(f"barrier.cluster: {self.arrived} arrivals for {self.threads} threads")
        if self.arrived == self.threads:
            self.arrived = 0
            self.phase += 1
            return ph, True
        return ph, False

    def wait_phase(self, who) -> int:
        """The phase ``barrier.cluster.wait`` by ``who`` waits for (the one it arrived in)."""
        if who not in self._who:
            raise BarrierError(f"{who!r} executes barrier.cluster.wait without a preceding "
                               f"barrier.cluster.arrive (PTX §9.7.13.3)")
        return self._who[who]

    def completed(self, phase: int) -> bool:
        """Whether phase ``phase`` has completed."""
        return self.phase > phase
