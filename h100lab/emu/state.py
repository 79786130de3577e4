"""The architectural state the emulator executes on: warps (registers and lane program counters), CTAs
(shared memory as bytes, named barriers, mbarriers in those bytes), clusters.

A **warp** holds 32 lanes. Registers are raw bits, one NumPy array per PTX register (``uint32`` for a
``.b32`` register, ``bool`` for ``.pred``); arrays are never modified in place — a write makes a new
array — so warps may start sharing one zero array per type.

**Divergence** (PTX §9.7.12.1 ``bra``: "a branch is taken by the threads for which the guard is true";
CUDA C++ Programming Guide §"Independent Thread Scheduling": from Volta on each thread has its own
program counter). Each lane has a program counter; the warp executes the instruction at the *smallest*
program counter among its live lanes, with every lane that is there (``mask``). Compiler-generated code
places a branch's join after both sides and a loop's exit after its body, so the smallest-PC rule runs
each side to the join and reconverges there (the "thread frontier" policy of the GPUOcelot emulator).
Converged warps keep one scalar ``pc``; ``other`` is the smallest PC of the lanes not in the current
group (``NO_PC`` when converged). A group that blocks in ``mbarrier.try_wait`` while other lanes of the warp
are elsewhere is *parked* (:meth:`Warp.park`) so that those lanes run — the independent thread scheduling
that lets one lane issue a copy while its warp-mates already wait for it.
"""
from __future__ import annotations

import numpy as np

from ..sync.named import ClusterBarrier, NamedBarriers
from ..sync.smem import SMEM_MAX_PER_BLOCK, SharedMemory

__all__ = ["Warp", "Cta", "Cluster", "NO_PC", "WARP", "RESERVED_SMEM"]

WARP = 32
NO_PC = 1 << 40
PARKED = NO_PC - 1        #: program counter of a lane set aside by :meth:`Warp.park` (after every real PC)
RESERVED_SMEM = 1024      #: CPG §20.8.3: 1 KB of shared memory per block is reserved for the system ([HW] offset 0x400)
LANES = np.arange(WARP, dtype=np.uint32)


class Warp:
    """One warp of a CTA. ``wid`` is ``%warpid`` within the CTA; ``lanes_valid`` the lanes that exist (a
    block whose size is not a multiple of 32 has a partial last warp)."""

    __slots__ = ("cta", "wid", "R", "pc", "pcs", "alive", "mask", "full", "other", "done", "wait",
                 "sregs", "local", "code", "fn", "icount", "bulk_groups", "spin", "label",
                 "stall", "lanes_valid", "blocked_on", "on_wake", "timed", "wait_pc", "parked_pc", "park_conds",
                 "fuse_yield")

    def __init__(self, cta: "Cta", wid: int, nlanes: int, regs: list, code: list, fn, local_bytes: int):
        self.cta = cta
        self.wid = wid
        self.R = regs
        self.code = code
        self.fn = fn
        self.pc = 0
        self.pcs = None
        self.lanes_valid = LANES < nlanes
        self.alive = self.lanes_valid.copy()
        self.mask = self.alive.copy()
        self.full = bool(self.mask.all())
        self.other = NO_PC
        self.done = False
        self.wait = None           # callable: True when the warp may run again
        self.blocked_on = None     # text describing what it waits for (deadlock reports)
        self.on_wake = None        # called once when ``wait`` lets the warp go on
        self.timed = False         # the wait is a try_wait, which may time out
        self.wait_pc = None        # the instruction of the last wait (deadlock reports)
        self.local = np.zeros((WARP, max(local_bytes, 16)), np.uint8) if local_bytes else None
        self.icount = 0
        self.bulk_groups: dict = {}
        self.spin = False
        self.stall = 0
        self.sregs: dict = {}
        self.label = f"CTA {cta.label} warp {wid}"
        self.parked_pc = None      # per lane: the instruction a parked lane waits at (NO_PC: not parked)
        self.park_conds: list = []
        self.fuse_yield = None     # the PCs where this warp gave up its turn for warp fusion (fuse.py)

    # -- divergence ------------------------------------------------------------------------------
    def _lane_pcs(self) -> np.ndarray:
        """Per-lane program counters (made from the scalar ``pc`` when the warp was converged)."""
        if self.pcs is None:
            self.pcs = np.where(self.alive, self.pc, NO_PC).astype(np.int64)
        return self.pcs

    def _pick(self) -> int:
        """Make the group at the smallest program counter of the live, unparked lanes current and return that PC
        (-1 when no lane is left). When every live lane is parked, the parked lanes are released first."""
        live = np.where(self.alive, self.pcs, NO_PC)
        m = int(live.min())
        if m >= PARKED and m < NO_PC:
            self.unpark()
            live = np.where(self.alive, self.pcs, NO_PC)
            m = int(live.min())
        if m >= NO_PC:
            self.done = True
            return -1
        mask = live == m
        self.mask = mask
        self.full = bool(mask.all())
        rest = live[~mask]
        self.other = int(rest.min()) if rest.size and int(rest.min()) < NO_PC else NO_PC
        if self.other == NO_PC and self.parked_pc is None:
            self.pcs = None
        self.pc = m
        return m

    def regroup(self, npc: int) -> int:
        """The current group moves to ``npc``; pick the next group (the smallest PC) and return its PC.
        Returns -1 when no lane is left."""
        self._lane_pcs()[self.mask] = npc
        return self._pick()

    def diverge(self, taken: np.ndarray, target: int, fall: int) -> int:
        """A branch taken by ``taken`` lanes of the group (others fall through to ``fall``)."""
        pcs = self._lane_pcs()
        pcs[self.mask & ~taken] = fall
        pcs[taken] = target
        return self._pick()

    def exit_lanes(self, m: np.ndarray, fall: int) -> int:
        """Lanes ``m`` of the group exit (``exit``/``ret`` of the kernel); the rest of the group goes on at
        ``fall``. Returns the next PC, or -1 when the warp has no lane left."""
        stay = self.mask & ~m
        self.alive = self.alive & ~m
        if not self.alive.any():
            self.done = True
            self.mask = self.alive
            return -1
        pcs = self._lane_pcs()
        pcs[m] = NO_PC
        pcs[stay] = fall
        return self._pick()

    # -- independent thread scheduling -----------------------------------------------------------
    def park(self, pc: int, cond) -> int:
        """The current group cannot go on at ``pc`` until ``cond()`` (a ``try_wait`` on an unfinished phase):
        set it aside so the warp's other lanes run meanwhile — CUDA C++ Programming Guide §"Independent Thread
        Scheduling": from Volta on, diverged threads of a warp make progress independently, so a lane that
        spins on a barrier cannot starve the lane that will complete it. Returns the next group's PC, or -1
        when every live lane is parked (the caller then suspends the warp on :meth:`park_wait`)."""
        pcs = self._lane_pcs()
        if self.parked_pc is None:
            self.parked_pc = np.full(WARP, NO_PC, np.int64)
        self.parked_pc[self.mask] = pc
        pcs[self.mask] = PARKED
        self.park_conds.append(cond)
        live = np.where(self.alive, pcs, NO_PC)
        if int(live.min()) >= PARKED:
            return -1
        return self._pick()

    def park_wait(self):
        """Release every parked group and return the condition that wakes the warp: any of theirs."""
        conds = list(self.park_conds)
        self.unpark()
        self._pick()
        return lambda: any(c() for c in conds)

    def unpark(self) -> None:
        """Parked lanes go back to their instruction (they re-execute it when their group is picked)."""
        if self.parked_pc is None:
            return
        sel = self.parked_pc < NO_PC
        self.pcs[sel] = self.parked_pc[sel]
        self.parked_pc = None
        self.park_conds = []

    def settle(self) -> None:
        """End of the warp's turn: the current group keeps its ``pc``, parked lanes are released and the warp
        resumes next time at its smallest program counter."""
        if self.parked_pc is None:
            return
        self._lane_pcs()[self.mask] = self.pc
        self.unpark()
        self._pick()

    def where_text(self) -> str:
        ins = self.fn.body[self.pc] if 0 <= self.pc < len(self.fn.body) else None
        lanes = np.flatnonzero(self.mask)
        lane_txt = f"lanes {lanes[0]}..{lanes[-1]}" if lanes.size > 1 else (f"lane {lanes[0]}" if lanes.size else "no lane")
        return f"{self.label} ({lane_txt})" + (f" at PTX line {ins.line}: {ins.text}" if ins else "")


class Cta:
    """One CTA: ``ctaid`` (x, y, z), cluster ``rank``, shared memory (``smem``: a
    :class:`~h100lab.sync.smem.SharedMemory` of ``RESERVED_SMEM + static + dynamic`` bytes whose addresses
    are the hardware's ``.shared::cta`` offsets), named barriers, warps."""

    def __init__(self, launch, ctaid, rank: int, cluster: "Cluster", smem_bytes: int, threads: int, label: str,
                 linear: int, smid: int):
        self.launch = launch
        self.ctaid = ctaid
        self.rank = rank
        self.cluster = cluster
        self.linear = linear
        self.smid = smid
        self.label = label
        size = -(-(RESERVED_SMEM + smem_bytes) // 16) * 16
        self.smem = SharedMemory(size, cta_rank=rank, limit=SMEM_MAX_PER_BLOCK + RESERVED_SMEM)
        self.smem_u8 = self.smem.array
        self.objmask = np.zeros(size, bool)          # bytes holding a valid mbarrier
        self.unfenced = np.zeros(size, np.int16)     # warp id + 1 of an unfenced generic write, per byte
        self.inflight = np.zeros(size, np.int32)     # async writes in flight, per byte
        self.inflight_ops = 0
        self.bars = NamedBarriers(threads)
        self.threads = threads
        self.warps: list[Warp] = []
        self.exited_warps = 0
        self.shared_base = rank << 24                # [HW] .shared::cta addresses carry the rank bits
        self.symcache: dict = {}
        self.done = False

    def live_warps(self) -> int:
        return sum(1 for w in self.warps if not w.done)


class Cluster:
    """The CTAs of one cluster (by rank) and its ``barrier.cluster``."""

    def __init__(self, cid, linear: int, size: int, threads_per_cta: int):
        self.cid = cid
        self.linear = linear
        self.size = size
        self.ctas: list[Cta] = []
        self.barrier = ClusterBarrier(size * (-(-threads_per_cta // WARP)) * WARP)
        self.exited_threads = 0
