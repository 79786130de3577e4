"""A small L2 model for the TMA lessons: sectors, fill granularity (L2 promotion), eviction priorities.

What it keeps [NCU "Quantities"; hopper-spec-facts §3, §5, §6]:

* the L2 holds 128-byte lines of four 32-byte sectors; a sector is the smallest unit moved;
* a request that misses fills from HBM at the *promotion* granularity: 32 B (``L2_PROMOTION_NONE``,
  one sector), 64, 128 or 256 bytes — the tensor map's ``l2Promotion`` [DRV]; sectors of the fill that
  were already present are not fetched again;
* lines carry an eviction priority from the access's cache policy (``createpolicy``:
  ``evict_first``, ``evict_normal``, ``evict_last``, ``evict_unchanged`` [PTX §9.7.9.18]); when the
  cache is full the victim is the least recently used line of the lowest class present
  (evict_first < evict_normal < evict_last).

[model] What it leaves out, on purpose: the real L2 is split into two partitions with a hashed
address mapping and set associativity (undocumented); this one is fully associative and LRU within
a priority class. It answers "how many bytes came from HBM" for streams of accesses, which is what
the chapters ask of it, not hit rates of real kernels.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable

__all__ = ["CachePolicy", "createpolicy_fractional", "createpolicy_range", "CUTLASS_CACHE_HINTS", "L2Cache",
           "Access", "SECTOR", "LINE", "PRIORITIES"]

SECTOR = 32
LINE = 128
PRIORITIES = ("evict_first", "evict_normal", "evict_last")   # eviction order, first evicted first
_PRIMARY = ("evict_last", "evict_normal", "evict_first", "evict_unchanged")
_SECONDARY = ("evict_first", "evict_unchanged")

#: The 64-bit ``cache-policy`` operands CUTLASS passes for whole-tensor (fraction 1.0) hints
#: [CUTLASS include/cute/arch/copy_sm90_desc.hpp ``CacheHintSm90``]. The encoding is otherwise opaque
#: (PTX only says createpolicy returns a 64-bit value), so only these three are given.
CUTLASS_CACHE_HINTS = {"evict_normal": 0x1000000000000000, "evict_first": 0x12F0000000000000,
                       "evict_last": 0x14F0000000000000}


@dataclass(frozen=True)
class CachePolicy:
    """What ``createpolicy`` encodes: the priority given to the lines an access touches.

    ``fractional``: a fraction (0, 1] of the accessed lines get ``primary``, the rest ``secondary``.
    ``range``: lines in ``[base, base + primary_size)`` get ``primary``, those in
    ``[base + primary_size, base + total_size)`` get ``secondary``, others ``evict_unchanged``
    [PTX §9.7.9.18 createpolicy].
    """

    kind: str
    primary: str
    secondary: str = "evict_unchanged"
    fraction: float = 1.0
    base: int = 0
    primary_size: int = 0
    total_size: int = 0

    def priority(self, line_addr: int) -> str:
        """The priority this policy gives the line at ``line_addr`` (byte address of its first byte).

        Fractional policies choose lines by a fixed hash of the line index ([model]: which lines the
        hardware picks is not documented; the fraction is honoured on average).
        """
        if self.kind == "fractional":
            if self.fraction >= 1.0:
                return self.primary
            h = ((line_addr // LINE) * 0x9E3779B1) & 0xFFFF
            return self.primary if h < self.fraction * 0x10000 else self.secondary
        if self.base <= line_addr < self.base + self.primary_size:
            return self.primary
        if self.base + self.primary_size <= line_addr < self.base + self.total_size:
            return self.secondary
        return "evict_unchanged"

    @property
    def cutlass_constant(self) -> int | None:
        """CUTLASS's 64-bit operand for this policy, where it has one (fraction 1.0, no secondary)."""
        if self.kind == "fractional" and self.fraction == 1.0:
            return CUTLASS_CACHE_HINTS.get(self.primary)
        return None

    def ptx(self) -> str:
        """The ``createpolicy`` instruction that makes this policy."""
        sec = f".L2::{self.secondary}" if self.secondary != "evict_unchanged" else ""
        if self.kind == "fractional":
            return f"createpolicy.fractional.L2::{self.primary}{sec}.b64 policy, {self.fraction:g};"
        return (f"createpolicy.range.global.L2::{self.primary}{sec}.b64 policy, [0x{self.base:x}], "
                f"{self.primary_size}, {self.total_size};")


def _prio(name: str, allowed: tuple[str, ...], what: str) -> str:
    n = name.removeprefix("L2::").removeprefix(".L2::")
    if n not in allowed:
        raise ValueError(f"{what} priority {name!r}: createpolicy allows {', '.join(allowed)} (PTX §9.7.9.18)")
    return n


def createpolicy_fractional(primary: str, fraction: float = 1.0, secondary: str = "evict_unchanged") -> CachePolicy:
    """``createpolicy.fractional.L2::primary{.L2::secondary}.b64 policy, fraction`` [PTX §9.7.9.18].

    ``fraction`` must be in (0.0, 1.0]; ``primary`` one of evict_last / evict_normal / evict_first /
    evict_unchanged, ``secondary`` evict_first or evict_unchanged (the default).
    """
    p = _prio(primary, _PRIMARY, "primary")
    s = _prio(secondary, _SECONDARY, "secondary")
    if not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"createpolicy fraction {fraction} must be in (0.0, 1.0] (PTX §9.7.9.18)")
    return CachePolicy("fractional", p, s, float(fraction))


def createpolicy_range(primary: str, base: int, primary_size: int, total_size: int,
                       secondary: str = "evict_unchanged") -> CachePolicy:
    """``createpolicy.range.global.L2::primary{.L2::secondary}.b64 policy, [a], primary-size, total-size``.

    ``primary_size <= total_size`` [PTX §9.7.9.18].
    """
    p = _prio(primary, _PRIMARY, "primary")
    s = _prio(secondary, _SECONDARY, "secondary")
    if not 0 <= primary_size <= total_size:
        raise ValueError(f"createpolicy.range needs 0 <= primary-size ({primary_size}) <= total-size ({total_size}) "
                         "(PTX §9.7.9.18)")
    return CachePolicy("range", p, s, 1.0, int(base), int(primary_size), int(total_size))


@dataclass(frozen=True)
class Access:
    """The outcome of one request: sectors asked for, found, and bytes fetched from HBM."""

    requested_sectors: int
    hit_sectors: int
    fetched_sectors: int

    @property
    def requested_bytes(self) -> int:
        return self.requested_sectors * SECTOR

    @property
    def hbm_bytes(self) -> int:
        """Bytes read from HBM to serve the request (the promotion can make it more than the misses)."""
        return self.fetched_sectors * SECTOR

    def __add__(self, other: "Access") -> "Access":
        return Access(self.requested_sectors + other.requested_sectors, self.hit_sectors + other.hit_sectors,
                      self.fetched_sectors + other.fetched_sectors)


class L2Cache:
    """A fully associative L2 of ``capacity`` bytes in 128-byte lines (default: the H200's 60 MiB).

    State: for each resident line, the set of its valid sectors and its priority class. Every method
    is a function of (state, request); ``hbm_read_bytes`` / ``hbm_write_bytes`` accumulate traffic.
    """

    def __init__(self, capacity: int | None = None):
        if capacity is None:
            from ..specs import H200_SXM

            capacity = H200_SXM.l2_bytes
        if capacity < LINE or capacity % LINE:
            raise ValueError(f"L2 capacity {capacity} B must be a positive multiple of the {LINE}-byte line")
        self.capacity = int(capacity)
        self.max_lines = self.capacity // LINE
        self._classes: dict[str, OrderedDict[int, list]] = {p: OrderedDict() for p in PRIORITIES}
        self._where: dict[int, str] = {}
        self.hbm_read_bytes = 0
        self.hbm_write_bytes = 0

    def __repr__(self) -> str:
        return f"L2Cache({self.capacity} B, {len(self._where)} lines resident)"

    # ---- state ----------------------------------------------------------------------------------
    @property
    def resident_lines(self) -> int:
        return len(self._where)

    def contains(self, addr: int) -> bool:
        """Whether the sector holding byte ``addr`` is valid in the cache."""
        line = addr - addr % LINE
        cls = self._where.get(line)
        return cls is not None and bool(self._classes[cls][line][0] >> ((addr % LINE) // SECTOR) & 1)

    def priority_of(self, addr: int) -> str | None:
        """The priority class of the line holding ``addr`` (``None`` if not resident)."""
        return self._where.get(addr - addr % LINE)

    def _evict_one(self) -> None:
        for cls in PRIORITIES:
            od = self._classes[cls]
            if od:
                line, (valid, dirty) = od.popitem(last=False)
                del self._where[line]
                self.hbm_write_bytes += SECTOR * bin(dirty).count("1")
                return
        raise RuntimeError("eviction from an empty cache")

    def _touch(self, line: int, prio: str) -> list:
        """Make ``line`` resident and most recently used in its (possibly new) class; return its entry."""
        cls = self._where.get(line)
        if cls is None:
            if len(self._where) >= self.max_lines:
                self._evict_one()
            new = "evict_normal" if prio == "evict_unchanged" else prio
            entry = [0, 0]
            self._classes[new][line] = entry
            self._where[line] = new
            return entry
        entry = self._classes[cls].pop(line)
        new = cls if prio == "evict_unchanged" else prio
        self._classes[new][line] = entry
        self._where[line] = new
        return entry

    # ---- requests -------------------------------------------------------------------------------
    def read(self, addr: int, nbytes: int, *, promotion: int = SECTOR, policy: CachePolicy | None = None) -> Access:
        """Serve a read of ``[addr, addr + nbytes)``; misses fill ``promotion``-byte aligned blocks.

        ``promotion`` is 32, 64, 128 or 256 (see :func:`h100lab.tma.enums.promotion_bytes`).
        """
        if promotion not in (32, 64, 128, 256):
            raise ValueError(f"L2 fill granularity {promotion} B: the promotions are 32 (none), 64, 128, 256 B")
        if nbytes <= 0:
            return Access(0, 0, 0)
        first, last = addr // SECTOR, (addr + nbytes - 1) // SECTOR
        requested = last - first + 1
        missing = []
        for sec in range(first, last + 1):
            a = sec * SECTOR
            if self.contains(a):
                line = a - a % LINE
                self._touch(line, policy.priority(line) if policy else "evict_unchanged")
            else:
                missing.append(a)
        hits = requested - len(missing)
        fetched = 0
        for blk in sorted({a - a % promotion for a in missing}):
            for b in range(blk, blk + promotion, SECTOR):
                if not self.contains(b):
                    line = b - b % LINE
                    entry = self._touch(line, policy.priority(line) if policy else "evict_unchanged")
                    entry[0] |= 1 << ((b % LINE) // SECTOR)
                    fetched += 1
        self.hbm_read_bytes += fetched * SECTOR
        return Access(requested, hits, fetched)

    def read_segments(self, segments: Iterable[tuple[int, int]], *, promotion: int = SECTOR,
                      policy: CachePolicy | None = None) -> Access:
        """:meth:`read` of several ``(address, nbytes)`` ranges (a TMA box's rows), summed."""
        total = Access(0, 0, 0)
        for a, n in segments:
            total = total + self.read(a, n, promotion=promotion, policy=policy)
        return total

    def write(self, addr: int, nbytes: int, *, policy: CachePolicy | None = None) -> int:
        """A write of whole sectors: they become valid and dirty (written back on eviction). Returns sectors."""
        if nbytes <= 0:
            return 0
        first, last = addr // SECTOR, (addr + nbytes - 1) // SECTOR
        for sec in range(first, last + 1):
            a = sec * SECTOR
            line = a - a % LINE
            entry = self._touch(line, policy.priority(line) if policy else "evict_unchanged")
            bit = 1 << ((a % LINE) // SECTOR)
            entry[0] |= bit
            entry[1] |= bit
        return last - first + 1

    def flush(self) -> int:
        """Write every dirty sector back; returns the bytes written to HBM by this flush."""
        n = 0
        for od in self._classes.values():
            for entry in od.values():
                n += SECTOR * bin(entry[1]).count("1")
                entry[1] = 0
        self.hbm_write_bytes += n
        return n
