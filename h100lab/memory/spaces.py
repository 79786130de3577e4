"""PTX state spaces, generic addressing, ``cvta`` / ``isspacep``, and shared-memory bank arithmetic.

A *state space* is a storage area with its own characteristics [PTX §5.1 #state-spaces, Table "State
Spaces"]: ``.reg`` (registers, per thread), ``.sreg`` (special registers, read-only), ``.const``
(read-only, per grid), ``.global`` (the whole GPU and the host), ``.local`` (per-thread private memory),
``.param`` (kernel and function parameters), ``.shared`` — ``.shared::cta`` (the CTA's shared memory)
inside ``.shared::cluster`` (the shared memories of every CTA of the cluster) — and ``.tex`` (textures,
deprecated for new code).

Generic addressing [PTX §6.4.1.1 #generic-addressing]: a load or store without a state space uses a
*generic* address. ``.const``, ``.param``, ``.local`` and ``.shared`` are *windows* inside the generic
address space, each with a base and a size; a generic address maps to global memory unless it falls in
one of those windows. ``cvta`` converts between a state-space address and a generic address
[PTX #data-movement-and-conversion-instructions-cvta]; converting a generic address that is *not* inside
the target window is undefined, which ``isspacep`` guards against
[PTX #data-movement-and-conversion-instructions-isspacep].

A ``.shared`` address is raw bits, not a pointer: as a generic address it falls outside every window and
a real GPU faults (``CUDA_ERROR_ILLEGAL_ADDRESS``). :meth:`AddressMap.space_of` raises
:class:`UnmappedAddress` there.

**The shared window, as an H200 shows it** ([HW] ``data/l02/spaces.json`` and ``data/l02/dsmem_ring.json``,
written by ``python -m h100lab.measure.l02``): a ``.shared::cluster`` address is
``(rank << 24) | offset`` — a 16 MiB slot per CTA of the cluster, rank 0 first — and a CTA's own
``.shared::cta`` addresses are simply its slot of that window (PTX §5.1.7: the ``.shared::cta`` window of
the executing CTA lies inside its ``.shared::cluster`` window). So ``cvta.to.shared`` of a variable
returns ``0x400`` in the CTA of rank 0 but ``0x1000400`` in the CTA of rank 1, ``mapa`` only rewrites the
rank bits, and the generic address is the window base plus the cluster address. The first ``0x400``
bytes of every CTA's slot are the 1 KB the system reserves per block [CPG §20.8.3]; the first shared
variable sits at offset ``0x400`` (:data:`SHARED_RESERVED`). The generic window base is the driver's
choice: :class:`AddressMap` uses the one the H200 run reported for shared memory and illustrative
bases for the other windows.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

__all__ = [
    "StateSpace", "STATE_SPACES", "state_space", "AddressSpaceError", "UnmappedAddress", "AddressMap",
    "Window", "CTA_WINDOW_BITS", "SHARED_RESERVED", "cluster_address", "split_cluster_address", "bank", "tile_banks",
    "tile_byte_offsets", "bank_conflict_degree",
]

CTA_WINDOW_BITS = 24          # [HW] one CTA's slot in the .shared::cluster window: 16 MiB, rank r at r << 24
SHARED_RESERVED = 0x400       # [CPG §20.8.3] 1 KB reserved per block; [HW] the first shared variable is at 0x400


class AddressSpaceError(ValueError):
    """An address does not belong to the state space an operation needs (the message names the rule)."""


class UnmappedAddress(AddressSpaceError):
    """A generic address outside every state-space window: a real GPU faults on it."""


@dataclass(frozen=True)
class StateSpace:
    """One row of PTX's state-space table [PTX §5.1, Table "State Spaces" and §5.1.1–§5.1.8]."""

    name: str
    addressable: bool       # can hold variables whose address is taken
    generic: bool           # has a window in the generic address space (cvta / isspacep work)
    access: str             # "RW" | "RO"
    shared_by: str          # who sees the same storage
    lifetime: str
    purpose: str


STATE_SPACES: dict[str, StateSpace] = {s.name: s for s in [
    StateSpace(".reg", False, False, "RW", "one thread", "thread",
               "registers: fast, per thread; no address, so no cvta"),
    StateSpace(".sreg", False, False, "RO", "one thread (values per thread/CTA/cluster/grid)", "thread",
               "special registers: %tid, %ctaid, %clusterid, %cluster_ctarank, %smid, ..."),
    StateSpace(".const", True, True, "RO", "the grid (all threads)", "application",
               "64 KB of constants, cached and broadcast"),
    StateSpace(".global", True, True, "RW", "every thread of every grid, and the host", "application",
               "device memory (HBM), cached in L2/L1"),
    StateSpace(".local", True, True, "RW", "one thread", "thread",
               "per-thread private memory (register spills, stack arrays), physically in device memory"),
    StateSpace(".param", True, True, "RO", "the grid (kernel parameters)", "kernel",
               "kernel parameters (.param::entry); function parameters (.param::func)"),
    StateSpace(".shared::cta", True, True, "RW", "the threads of one CTA", "CTA",
               "the CTA's shared memory on its SM; plain .shared means ::cta"),
    StateSpace(".shared::cluster", True, True, "RW", "the threads of every CTA of a cluster", "CTA",
               "all shared memories of the cluster (distributed shared memory); contains .shared::cta"),
    StateSpace(".tex", False, False, "RO", "the grid", "application",
               "textures (deprecated state space; use texture objects)"),
]}

_ALIASES = {".shared": ".shared::cta", "shared": ".shared::cta"}


def state_space(name: str) -> StateSpace:
    """Look a state space up by its PTX name (``.shared`` means ``.shared::cta`` [PTX §5.1.7])."""
    key = _ALIASES.get(name, name if name.startswith(".") else "." + name)
    key = _ALIASES.get(key, key)
    if key not in STATE_SPACES:
        raise AddressSpaceError(f"{name!r} is not a PTX state space ({', '.join(STATE_SPACES)}) [PTX §5.1]")
    return STATE_SPACES[key]


def cluster_address(rank: int, offset: int, cluster_size: int = 16) -> int:
    """The ``.shared::cluster`` address of byte ``offset`` of the shared-memory slot of CTA ``rank``:
    ``(rank << 24) | offset`` ([HW] what ``mapa.shared::cluster`` and ``cvta.to.shared`` return on an H200;
    PTX §9.7.9.23 leaves the encoding to the implementation)."""
    rank, offset = operator.index(rank), operator.index(offset)
    if not 0 <= rank < cluster_size:
        raise AddressSpaceError(f"rank {rank} is outside the cluster (0 <= rank < {cluster_size}) "
                                "[PTX %cluster_ctarank range]")
    if not 0 <= offset < (1 << CTA_WINDOW_BITS):
        raise AddressSpaceError(f"offset {offset:#x} is outside a CTA's shared window (< {1 << CTA_WINDOW_BITS:#x})")
    return (rank << CTA_WINDOW_BITS) | offset


def split_cluster_address(addr: int) -> tuple[int, int]:
    """``(rank, offset)`` of a 32-bit ``.shared::cluster`` address — also of a ``.shared::cta`` address,
    which carries its own CTA's rank ([HW] ``cvta.to.shared`` gave ``0x1000400`` in the CTA of rank 1)."""
    addr = operator.index(addr)
    if addr < 0 or addr >= (1 << 32):
        raise AddressSpaceError(f"{addr:#x} is not a 32-bit shared address")
    return addr >> CTA_WINDOW_BITS, addr & ((1 << CTA_WINDOW_BITS) - 1)


@dataclass(frozen=True)
class Window:
    """A state space's window in the generic address space: ``[base, base + size)``."""

    space: str
    base: int
    size: int

    def __contains__(self, gaddr: int) -> bool:
        return self.base <= gaddr < self.base + self.size


class AddressMap:
    """The generic address space of one thread: a window per addressable state space.

    ``cta_rank`` / ``cluster_size`` say which CTA the thread belongs to (for ``.shared::cta`` versus
    ``.shared::cluster``); ``smem_bytes`` is the CTA's shared memory for its variables (its slot spans
    :data:`SHARED_RESERVED` + ``smem_bytes`` bytes, variables from offset ``0x400``), ``local_bytes`` the
    thread's local memory, ``global_bytes`` how much device memory is allocated. The shared window base
    is the one an H200 run reported ([HW], the driver's choice); the others are illustrative ([model]).
    """

    GLOBAL_BASE = 0x0000_7F00_0000_0000
    SHARED_BASE = 0x0000_7F90_0000_0000       # [HW] data/l02/spaces.json: generic address of rank 0's byte 0
    PARAM_BASE = 0x0000_7FFC_0000_0000
    CONST_BASE = 0x0000_7FFD_0000_0000
    LOCAL_BASE = 0x0000_7FFE_0000_0000

    def __init__(self, *, cta_rank: int = 0, cluster_size: int = 1, smem_bytes: int = 232448,
                 local_bytes: int = 1 << 16, global_bytes: int = 1 << 34, const_bytes: int = 1 << 16,
                 param_bytes: int = 32764):
        if not 1 <= cluster_size <= 16:
            raise AddressSpaceError(f"cluster_size {cluster_size}: a cluster holds 1..16 CTAs on sm_90")
        if not 0 <= cta_rank < cluster_size:
            raise AddressSpaceError(f"cta_rank {cta_rank} is outside the cluster (0..{cluster_size - 1})")
        if not 0 < smem_bytes <= (1 << CTA_WINDOW_BITS) - SHARED_RESERVED:
            raise AddressSpaceError("smem_bytes must be positive and fit a CTA's 16 MiB slot")
        self.cta_rank, self.cluster_size, self.smem_bytes = cta_rank, cluster_size, smem_bytes
        self.slot_bytes = SHARED_RESERVED + smem_bytes
        self.sizes = {".global": global_bytes, ".const": const_bytes, ".local": local_bytes,
                      ".param": param_bytes}
        slot = 1 << CTA_WINDOW_BITS
        self.windows: dict[str, Window] = {
            ".global": Window(".global", self.GLOBAL_BASE, global_bytes),
            ".shared::cluster": Window(".shared::cluster", self.SHARED_BASE, cluster_size * slot),
            ".shared::cta": Window(".shared::cta", self.SHARED_BASE + cta_rank * slot, self.slot_bytes),
            ".param": Window(".param", self.PARAM_BASE, param_bytes),
            ".const": Window(".const", self.CONST_BASE, const_bytes),
            ".local": Window(".local", self.LOCAL_BASE, local_bytes),
        }

    # -- helpers -----------------------------------------------------------------------------------
    def _space(self, space: str) -> str:
        s = state_space(space)
        if not s.generic:
            raise AddressSpaceError(f"{s.name} has no window in the generic address space: its contents have no "
                                    "address, so cvta/isspacep do not apply [PTX §5.1, §6.4.1.1]")
        return s.name

    def _shared_generic_parts(self, gaddr: int) -> tuple[int, int] | None:
        """(rank, offset) of a generic address in some CTA's shared memory, or None."""
        if gaddr not in self.windows[".shared::cluster"]:
            return None
        rank, off = split_cluster_address(gaddr - self.SHARED_BASE)
        return (rank, off) if off < self.slot_bytes else None

    def _shared_address(self, addr: int, own: bool) -> int:
        """Check a 32-bit shared address (of the own CTA when ``own``) and return it."""
        rank, off = split_cluster_address(addr)
        if rank >= self.cluster_size:
            raise AddressSpaceError(f"{addr:#x} names rank {rank}, outside this cluster of {self.cluster_size}")
        if own and rank != self.cta_rank:
            raise AddressSpaceError(f"{addr:#x} is in the shared memory of rank {rank}, not of the executing CTA "
                                    f"(rank {self.cta_rank}, whose .shared::cta addresses are "
                                    f"{cluster_address(self.cta_rank, 0):#x} + offset): use .shared::cluster")
        if off >= self.slot_bytes:
            raise AddressSpaceError(f"offset {off:#x} is beyond the CTA's {self.slot_bytes} B of shared memory "
                                    f"({SHARED_RESERVED} B reserved + {self.smem_bytes} B)")
        return addr

    # -- PTX operations ----------------------------------------------------------------------------
    def isspacep(self, space: str, gaddr: int) -> bool:
        """``isspacep.space p, a``: whether generic address ``a`` lies in ``space``'s window
        [PTX #data-movement-and-conversion-instructions-isspacep]. ``.shared::cta`` is true only for the
        executing CTA's own shared memory; ``.shared::cluster`` for any CTA of the cluster."""
        sp = self._space(space)
        gaddr = operator.index(gaddr)
        if sp in (".shared::cta", ".shared::cluster"):
            parts = self._shared_generic_parts(gaddr)
            if parts is None:
                return False
            return sp == ".shared::cluster" or parts[0] == self.cta_rank
        if sp == ".global":
            return gaddr in self.windows[".global"]
        return gaddr in self.windows[sp]

    def space_of(self, gaddr: int) -> str:
        """The state space a generic address is routed to (the most specific: ``.shared::cta`` before
        ``.shared::cluster``) [PTX §6.4.1.1]. Raises :class:`UnmappedAddress` for an address outside
        every window — e.g. a ``.shared`` offset used as a pointer."""
        gaddr = operator.index(gaddr)
        for sp in (".shared::cta", ".shared::cluster", ".local", ".const", ".param", ".global"):
            if self.isspacep(sp, gaddr):
                return sp
        hint = ""
        if 0 <= gaddr < (1 << 32):
            hint = (" — it looks like a 32-bit state-space address (a .shared offset from cvta.to.shared or "
                    "__cvta_generic_to_shared): such raw bits are not a generic pointer; convert back with "
                    "cvta.shared first")
        raise UnmappedAddress(f"generic address {gaddr:#x} is outside every state-space window; a real GPU "
                              f"faults (CUDA_ERROR_ILLEGAL_ADDRESS){hint}")

    def cvta(self, space: str, addr: int) -> int:
        """``cvta.space.u64 g, a``: the generic address of state-space address ``a``
        [PTX #data-movement-and-conversion-instructions-cvta]. A ``.shared::cluster`` address may name any
        rank of the cluster; a ``.shared::cta`` address must lie in the executing CTA's slot. Both map to
        ``SHARED_BASE + a`` ([HW] H200)."""
        sp = self._space(space)
        addr = operator.index(addr)
        if sp in (".shared::cta", ".shared::cluster"):
            return self.SHARED_BASE + self._shared_address(addr, own=sp == ".shared::cta")
        size = self.sizes[sp]
        if sp == ".global":
            if not 0 <= addr - self.GLOBAL_BASE < size:
                raise AddressSpaceError(f"{addr:#x} is not an allocated .global address "
                                        f"([{self.GLOBAL_BASE:#x}, {self.GLOBAL_BASE + size:#x}))")
            return addr                        # global addresses are generic addresses (UVA)
        if not 0 <= addr < size:
            raise AddressSpaceError(f"{addr:#x} is outside {sp} (size {size} B)")
        return self.windows[sp].base + addr

    def cvta_to(self, space: str, gaddr: int) -> int:
        """``cvta.to.space.u64 a, g``: the state-space address of generic address ``g``. PTX leaves the
        result undefined when ``g`` is not in ``space``'s window; the model raises instead, naming
        ``isspacep`` as the guard [PTX #data-movement-and-conversion-instructions-cvta]."""
        sp = self._space(space)
        gaddr = operator.index(gaddr)
        if not self.isspacep(sp, gaddr):
            raise AddressSpaceError(f"cvta.to{sp}: generic address {gaddr:#x} is not in the {sp} window, so the "
                                    "result is undefined [PTX cvta]; test it with isspacep first")
        if sp == ".global":
            return gaddr
        if sp in (".shared::cta", ".shared::cluster"):
            return gaddr - self.SHARED_BASE        # [HW] the rank bits stay: 0x1000400 in the CTA of rank 1
        return gaddr - self.windows[sp].base

    def window_table(self) -> list[dict]:
        """The windows as rows ``{space, base, end, size}`` (for tables and plots)."""
        return [{"space": w.space, "base": w.base, "end": w.base + w.size, "size": w.size}
                for w in self.windows.values()]


# ------------------------------------------------------------------------------------------- banks

def bank(addr, banks: int = 32, bank_bytes: int = 4):
    """Shared-memory bank of a byte address: ``(addr // 4) % 32`` — successive 32-bit words map to
    successive banks [CPG §20.4.3 #shared-memory-5-x, applies to CC 9.0]. Works on ints and arrays."""
    if isinstance(addr, np.ndarray):
        if (addr < 0).any():
            raise AddressSpaceError("shared-memory addresses are >= 0")
        return (addr // bank_bytes) % banks
    a = operator.index(addr)
    if a < 0:
        raise AddressSpaceError(f"shared-memory address {a} is negative")
    return (a // bank_bytes) % banks


def tile_byte_offsets(rows: int, cols: int, elem_bytes: int, row_pitch: int | None = None, base: int = 0) -> np.ndarray:
    """Byte address of element ``(r, c)`` of a row-major tile: ``base + r·pitch + c·elem_bytes``
    (``pitch`` = ``cols·elem_bytes`` unless given)."""
    if rows <= 0 or cols <= 0 or elem_bytes <= 0:
        raise AddressSpaceError("a tile has positive rows, columns and element size")
    pitch = cols * elem_bytes if row_pitch is None else row_pitch
    if pitch < cols * elem_bytes:
        raise AddressSpaceError(f"row pitch {pitch} B is shorter than a row ({cols} x {elem_bytes} B)")
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    return base + r * pitch + c * elem_bytes


def tile_banks(rows: int, cols: int, elem_bytes: int, row_pitch: int | None = None, base: int = 0) -> np.ndarray:
    """The bank of every element of a row-major shared-memory tile (shape ``rows × cols``)
    [CPG §20.4.3]. For a 64×64 bf16 tile a row is 128 B = 32 banks × 4 B, so every element of a column
    lands in the same bank — the motivation for swizzling."""
    return bank(tile_byte_offsets(rows, cols, elem_bytes, row_pitch, base))


def bank_conflict_degree(byte_addrs) -> int:
    """Wavefronts of one warp-wide ≤32-bit shared access: the largest number of *distinct* 32-bit words
    any bank must serve (identical words are broadcast) [CPG §20.4.3; hopper-spec-facts §2]."""
    a = np.asarray(byte_addrs, dtype=np.int64).ravel()
    if a.size == 0:
        raise AddressSpaceError("a warp access needs at least one address")
    words = np.unique(a // 4)
    counts = np.bincount(words % 32, minlength=32)
    return int(counts.max())
