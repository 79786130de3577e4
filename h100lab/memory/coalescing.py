"""Global-memory coalescing: the 32-byte sectors and 128-byte lines one warp-wide access touches.

Rules (hopper-spec-facts.md §3):

* Device memory is accessed in naturally aligned 32-, 64- or 128-byte transactions; a warp's
  accesses are coalesced into as few as the addresses allow [CPG §8.3.2 #device-memory-accesses].
* A single load/store instruction moves 1, 2, 4, 8 or 16 naturally aligned bytes per thread
  [CPG §8.3.2 "Size and Alignment Requirement"]; a misaligned address is a fault, so the model
  raises ``ValueError``.
* A **sector** is an aligned 32-byte chunk, a **cache line** 4 sectors = 128 bytes; the minimum
  L1/L2 access is one sector [Nsight Compute Profiling Guide, "Quantities"].

For one warp-wide access: ``sectors`` = distinct ``addr // 32`` over active lanes (an aligned
access of at most 16 bytes never straddles a sector); ``lines`` = distinct ``addr // 128``;
``efficiency`` = distinct bytes the lanes ask for / bytes the sectors move (1.0 = perfectly
coalesced; a lane re-reading another lane's bytes adds nothing).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["Sectors", "CoalescingError", "sectors", "sectors_trace", "SECTOR", "LINE", "WIDTHS"]

SECTOR = 32
LINE = 128
WIDTHS = (1, 2, 4, 8, 16)
WARP = 32


class CoalescingError(ValueError):
    """A global access the hardware does not issue (width, alignment, lane count)."""


def _as_trace(addresses, active) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(addresses, np.ndarray) and addresses.dtype != object:
        if not np.issubdtype(addresses.dtype, np.integer):
            raise CoalescingError(f"addresses must be integers, got dtype {addresses.dtype}")
        addr = addresses.astype(np.int64, copy=False)
        if addr.ndim == 1:
            addr = addr[None, :]
        mask = np.ones(addr.shape, bool) if active is None else np.asarray(active, bool).reshape(addr.shape)
    else:
        vals = list(addresses)
        if active is not None:
            vals = [a if on else None for a, on in zip(vals, active)]
        if len(vals) != WARP:
            raise CoalescingError(f"a warp-wide access needs exactly 32 lane addresses (None for an inactive lane), "
                                  f"got {len(vals)}")
        try:
            addr = np.array([[0 if a is None else int(a) for a in vals]], np.int64)
        except (TypeError, ValueError):
            raise CoalescingError("lane addresses must be integers or None") from None
        mask = np.array([[a is not None for a in vals]])
    if addr.shape[-1] != WARP:
        raise CoalescingError(f"a warp-wide access needs exactly 32 lane addresses, got {addr.shape[-1]}")
    return addr, mask


def _validate(addr: np.ndarray, mask: np.ndarray, width: int) -> None:
    if width not in WIDTHS:
        raise CoalescingError(f"a global access moves 1, 2, 4, 8 or 16 bytes per thread, got width {width}")
    if addr.size == 0:
        return
    full = bool(mask.all())
    if full and int(addr.min()) >= 0 and not (np.bitwise_or.reduce(addr, axis=None) & (width - 1)):
        return
    if ((addr < 0) & mask).any():
        raise CoalescingError("global addresses must be >= 0")
    mis = ((addr & (width - 1)) != 0) & mask
    if mis.any():
        x = int(addr[mis][0])
        raise CoalescingError(f"misaligned {width}-byte global access at address {x}: accesses must be naturally "
                              f"aligned (address % {width} = {x % width})")


def _counts(a: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct addresses, sectors and lines per row: one sort (shifts are monotone), three diffs."""
    if a.size and int(a.max()) < (1 << 31) - 1:
        a = a.astype(np.int32)
    big = np.iinfo(a.dtype).max
    k = np.where(m, a, big) if not m.all() else a.copy()
    k.sort(axis=1)
    valid = k != big
    out = []
    for shift in (0, 5, 7):
        s = k >> shift if shift else k
        d = np.empty(k.shape, bool)
        d[:, 0] = True
        np.not_equal(s[:, 1:], s[:, :-1], out=d[:, 1:])
        d &= valid
        out.append(d.sum(axis=1))
    return out[0], out[1], out[2]


def sectors_trace(addresses, width: int = 4, active=None) -> dict[str, np.ndarray]:
    """Sectors, lines and efficiency of every access of an ``(N, 32)`` address trace.

    Returns ``{"sectors", "lines", "requested_bytes", "efficiency"}`` arrays of length N (rules in
    the module docstring; ``requested_bytes`` counts distinct bytes).
    """
    addr, mask = _as_trace(addresses, active)
    _validate(addr[:0], mask[:0], width)
    n = addr.shape[0]
    sec = np.empty(n, np.int64)
    lines = np.empty(n, np.int64)
    distinct = np.empty(n, np.int64)
    chunk = 1 << 14
    for i in range(0, n, chunk):
        a, m = addr[i:i + chunk], mask[i:i + chunk]
        _validate(a, m, width)
        distinct[i:i + chunk], sec[i:i + chunk], lines[i:i + chunk] = _counts(a, m)
    req = distinct * width
    with np.errstate(invalid="ignore", divide="ignore"):
        eff = np.where(sec > 0, req / np.maximum(sec * SECTOR, 1), 0.0)
    return {"sectors": sec, "lines": lines, "requested_bytes": req, "efficiency": eff}


class Sectors(int):
    """Sectors one warp-wide global access touches (an ``int``), with its breakdown.

    Attributes: ``width``, ``sector_ids`` and ``line_ids`` (sorted distinct ``addr // 32`` and
    ``addr // 128``), ``lines``, ``sectors_per_line`` (dict line -> sectors used in it),
    ``requested_bytes`` (distinct bytes), ``moved_bytes`` (= 32 x sectors), ``efficiency``,
    ``ideal`` (sectors a contiguous aligned access of the same active lanes needs).
    """

    width: int
    sector_ids: tuple[int, ...]
    line_ids: tuple[int, ...]
    sectors_per_line: dict
    requested_bytes: int
    active_lanes: int

    @property
    def sectors(self) -> int:
        return int(self)

    @property
    def lines(self) -> int:
        return len(self.line_ids)

    @property
    def moved_bytes(self) -> int:
        return SECTOR * int(self)

    @property
    def efficiency(self) -> float:
        return self.requested_bytes / self.moved_bytes if int(self) else 0.0

    @property
    def ideal(self) -> int:
        return -(-self.active_lanes * self.width // SECTOR)

    def __repr__(self) -> str:
        return (f"Sectors(sectors={int(self)}, lines={self.lines}, efficiency={self.efficiency:.3f}, "
                f"width={self.width})")


def sectors(addresses: Sequence[int | None] | np.ndarray, width: int = 4, active=None):
    """32-byte sectors (and 128-byte lines) one warp-wide global access touches.

    ``addresses``: 32 byte addresses, one per lane, ``None`` for an inactive lane; ``width``: 1, 2,
    4, 8 or 16 bytes per lane. Returns a :class:`Sectors` (an ``int`` with the breakdown and
    ``efficiency``); an ``(N, 32)`` array returns :func:`sectors_trace`'s arrays instead. Rules: CPG
    §8.3.2 and Nsight Compute's sector/line definitions (module docstring).
    """
    if isinstance(addresses, np.ndarray) and addresses.ndim == 2:
        return sectors_trace(addresses, width, active)
    addr, mask = _as_trace(addresses, active)
    _validate(addr, mask, width)
    a = addr[0][mask[0]]
    sec_ids = tuple(sorted({int(x) >> 5 for x in a}))
    line_ids = tuple(sorted({s >> 2 for s in sec_ids}))
    r = Sectors(len(sec_ids))
    r.width = width
    r.sector_ids = sec_ids
    r.line_ids = line_ids
    r.sectors_per_line = {ln: sum(1 for s in sec_ids if s >> 2 == ln) for ln in line_ids}
    r.requested_bytes = len({int(x) for x in a}) * width
    r.active_lanes = int(mask[0].sum())
    return r
