"""Shared-memory bank conflicts: how many wavefronts one warp-wide shared access takes.

Rules (hopper-spec-facts.md §2):

* 32 banks of 4 bytes; successive 32-bit words go to successive banks, ``bank = (addr >> 2) & 31``;
  two lanes touching the *same* word never conflict (a load broadcasts it, a store keeps one value);
  different words in one bank are serialised [CPG §20.4.3 #shared-memory-5-x, valid for CC 9.0
  by §20.8.3].
* A bank returns 4 B per clock, so one pass ("wavefront", Nsight Compute's unit) moves at most
  128 B. Wider accesses are split into **phases** [measured on an H200 with Nsight Compute,
  hopper-spec-facts.md §2 and §13; NVIDIA GTC 2019 S9593 for the quarter-warp rule]:

  ========= ======================================== =====================
  width     loads                                    stores
  ========= ======================================== =====================
  4 B       1 phase (lanes 0-31)                     same
  8 B       pair-uniform: 1 phase, else half-warps   always half-warps (2)
  16 B      pair-uniform: half-warps, else quarters  always quarters (4)
  ========= ======================================== =====================

  *Pair-uniform* means every lane ``t`` reads the same address as lane ``t ^ 1`` (or every lane
  the same as ``t ^ 2``).
* ``wavefronts(phase) = max over banks of the distinct 4-byte words it touches there`` (at least 1
  when a lane of the phase is active); ``wavefronts = sum over phases``. The ideal is one per
  phase with an active lane; Nsight's "bank conflicts" are the excess.

[model] where the measurements are silent (facts §14.3): a pair with one active and one inactive lane
is *not* uniform; a phase without an active lane costs nothing.

Addresses are byte offsets in the CTA's shared window (``.shared::cta``); accesses must be
naturally aligned [PTX §5.4.5 "naturally aligned" vector accesses], or ``ValueError`` is raised.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["BankAccess", "BankError", "bank_of", "bank_access", "wavefronts", "wavefronts_trace",
           "lane_addresses", "phases_of", "min_padding", "WARP", "BANKS", "WIDTHS"]

WARP = 32
BANKS = 32
WIDTHS = (4, 8, 16)
_OPS = ("ld", "st")


class BankError(ValueError):
    """A shared-memory access the hardware does not issue (wrong width, misaligned, wrong lane count)."""


def bank_of(address):
    """Bank of a byte address: ``(addr >> 2) & 31`` [CPG §20.4.3]. Works on scalars and arrays."""
    return (np.asarray(address) >> 2) & (BANKS - 1) if not isinstance(address, int) else (address >> 2) & 31


def lane_addresses(stride: int, width: int = 4, base: int = 0, lanes: int = WARP) -> list[int]:
    """``base + lane x stride`` for each lane: the address pattern of ``a[lane * stride / width]``.

    ``stride`` is in bytes. A convenience for the book's strided examples.
    """
    return [base + t * stride for t in range(lanes)]


def _validate(addr: np.ndarray, active: np.ndarray, width: int, op: str) -> None:
    if width not in WIDTHS:
        raise BankError(f"shared-memory access width must be 4, 8 or 16 bytes (32-, 64- or 128-bit), got {width}")
    if op not in _OPS:
        raise BankError(f"op must be 'ld' or 'st', got {op!r}")
    if addr.ndim != 2 or addr.shape[1] != WARP:
        raise BankError(f"a warp-wide access needs exactly 32 lane addresses, got shape {addr.shape[1:] or addr.shape}")
    if addr.size == 0:
        return
    full = bool(active.all())
    if full and int(addr.min()) >= 0 and not (width > 1 and np.bitwise_or.reduce(addr, axis=None) & (width - 1)):
        return
    neg = (addr < 0) & active
    if neg.any():
        raise BankError(f"shared-memory address {int(addr[neg].min())} is negative")
    mis = ((addr & (width - 1)) != 0) & active
    if mis.any():
        x = int(addr[mis][0])
        raise BankError(f"misaligned {width}-byte access at address {x}: a {8 * width}-bit shared access "
                        f"must be {width}-byte aligned (address % {width} = {x % width})")


def _as_trace(addresses, active) -> tuple[np.ndarray, np.ndarray]:
    """(N, 32) int64 addresses and bool mask from a trace array or a list with ``None`` lanes."""
    if isinstance(addresses, np.ndarray) and addresses.dtype != object:
        if not np.issubdtype(addresses.dtype, np.integer):
            raise BankError(f"lane addresses must be integers, got dtype {addresses.dtype}")
        addr = addresses if addresses.dtype in (np.int32, np.int64) else addresses.astype(np.int64)
        mask = np.ones(addr.shape, bool) if active is None else np.asarray(active, bool)
        if mask.shape != addr.shape:
            raise BankError(f"active mask shape {mask.shape} differs from the addresses' {addr.shape}")
        return addr, mask
    rows = addresses if (len(addresses) and isinstance(addresses[0], (list, tuple, np.ndarray))) else [addresses]
    out, mask = [], []
    for r in rows:
        r = list(r)
        if len(r) != WARP:
            raise BankError(f"a warp-wide access needs exactly 32 lane addresses (None for an inactive lane), "
                            f"got {len(r)}")
        mask.append([x is not None for x in r])
        try:
            out.append([0 if x is None else int(x) for x in r])
        except (TypeError, ValueError):
            raise BankError(f"lane addresses must be integers or None, got {r!r}") from None
    addr = np.asarray(out, np.int64).reshape(-1, WARP)
    m = np.asarray(mask, bool).reshape(-1, WARP)
    if active is not None:
        m &= np.asarray(active, bool).reshape(m.shape)
    return addr, m


def _pair_uniform(addr: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Per access: every lane equals lane t^1 (or every lane equals lane t^2); a pair of two
    inactive lanes is uniform, a pair with one inactive lane is not."""
    n = addr.shape[0]
    full = bool(active.all())
    out = np.zeros(n, bool)
    for shape in ((n, 16, 2), (n, 8, 2, 2)):            # partners t^1, then t^2
        a = addr.reshape(shape)
        same = a[:, :, 0] == a[:, :, 1]
        if not full:
            m = active.reshape(shape)
            same = (same & m[:, :, 0] & m[:, :, 1]) | (~m[:, :, 0] & ~m[:, :, 1])
        out |= same.reshape(n, -1).all(axis=1)
    return out if full else out & active.any(axis=1)


def phases_of(addr: np.ndarray, active: np.ndarray, width: int, op: str) -> np.ndarray:
    """(N, 32) phase index of every lane under the rules of the module docstring."""
    lanes = np.arange(WARP)
    n = addr.shape[0]
    if width == 4:
        return np.zeros((n, WARP), np.int64)
    narrow = lanes // 16 if width == 8 else lanes // 8      # half-warps / quarter-warps
    wide = np.zeros(WARP, np.int64) if width == 8 else lanes // 16
    if op == "st":
        return np.broadcast_to(narrow, (n, WARP)).astype(np.int64)
    uni = _pair_uniform(addr, active)
    return np.where(uni[:, None], wide[None, :], narrow[None, :]).astype(np.int64)


_SENTINEL = np.iinfo(np.int32).max


def _count(addr: np.ndarray, active: np.ndarray, width: int, op: str):
    """Vectorised counter: per access (wavefronts, ideal, lane phases).

    Each lane's access gets an int32 key ``phase | bank group | row``. One row-wise sort brings
    equal accesses together; repeats (broadcasts) become a sentinel and a second sort compacts the
    distinct accesses, still grouped by (phase, bank group); an access's rank inside its group is its
    position minus the group's first position, so the largest rank in a phase is that phase's
    wavefront count.
    """
    n = addr.shape[0]
    if addr.dtype != np.int32 and n and int(addr.max()) < (1 << 31) and int(addr.min()) >= 0:
        addr = addr.astype(np.int32)
    phase = phases_of(addr, active, width, op)
    # An aligned access of width 4k bytes covers k consecutive banks starting at a multiple of k, the
    # same k banks for every lane of that width: counting distinct width-sized chunks per group of k
    # banks gives the same per-bank maxima as counting 4-byte words per bank, with 32 keys per access.
    shift = width.bit_length() - 1                       # log2(width)
    groups = BANKS * 4 // width                          # 32, 16 or 8 bank groups
    unit = addr >> shift
    act = active
    row = unit >> (groups.bit_length() - 1)
    if n and int(row.max()) >= (1 << 23):          # large (generic) addresses: rows relative to the access
        big = np.iinfo(row.dtype).max
        lo = np.where(act, row, big).min(axis=1)
        row = np.where(act, row - np.where(lo == big, 0, lo)[:, None], 0)
        if int(row.max()) >= (1 << 23):
            raise BankError("one access spans more than 1 GiB of addresses; shared memory is at most 228 KB")
    key = (((unit & (groups - 1)) << 24) | row).astype(np.int32, copy=False)
    if width > 4:
        key |= phase.astype(np.int32) << 29
    if not act.all():
        key[~act] = _SENTINEL
    key.sort(axis=1)
    dup = np.zeros(key.shape, bool)
    np.equal(key[:, 1:], key[:, :-1], out=dup[:, 1:])
    key[dup] = _SENTINEL                               # broadcast: a repeated word costs nothing
    key.sort(axis=1)
    grp = key >> 24                                    # phase * 32 + bank group; 127 = sentinel
    cols = np.arange(key.shape[1], dtype=np.int32)
    start = np.empty(key.shape, bool)
    start[:, 0] = True
    np.not_equal(grp[:, 1:], grp[:, :-1], out=start[:, 1:])
    first = np.maximum.accumulate(np.where(start, cols, 0), axis=1)
    rank = cols - first + 1
    rank[key == _SENTINEL] = 0
    if width == 4:
        per_phase = rank.max(axis=1)[:, None]
    else:
        nph = 2 if width == 8 else 4
        ph = grp >> 5
        per_phase = np.stack([np.where(ph == p, rank, 0).max(axis=1) for p in range(nph)], axis=1)
    return per_phase.sum(axis=1), (per_phase > 0).sum(axis=1), phase


def wavefronts_trace(addresses, width: int = 4, op: str = "ld", active=None) -> np.ndarray:
    """Wavefronts of every access of a trace: ``addresses`` is ``(N, 32)`` byte addresses.

    ``active`` is an optional ``(N, 32)`` bool mask (False = inactive lane). Returns an int64 array
    of N wavefront counts. Same rules as :func:`wavefronts` (module docstring), vectorised with
    NumPy: each access's (phase, bank, word) keys are sorted once and the distinct words per bank
    counted in one pass.
    """
    addr, mask = _as_trace(addresses, active)
    _validate(addr[:0], mask[:0], width, op)
    out = np.empty(addr.shape[0], np.int64)
    chunk = 1 << 14
    for i in range(0, addr.shape[0], chunk):
        a, m = addr[i:i + chunk], mask[i:i + chunk]
        _validate(a, m, width, op)
        out[i:i + chunk] = _count(a, m, width, op)[0]
    return out


class BankAccess(int):
    """The wavefront count of one warp-wide access (an ``int``), with its breakdown.

    Attributes: ``width``, ``op``, ``phases`` (phases the access is split into), ``ideal`` (one
    wavefront per phase with an active lane), ``conflicts`` (= wavefronts - ideal, Nsight's
    "bank conflicts"), ``pair_uniform``, ``lane_phase`` and ``lane_bank`` (per lane, -1 inactive),
    ``per_bank`` (``phases x 32`` array: distinct 4-byte words each phase touches in each bank).
    """

    width: int
    op: str
    phases: int
    ideal: int
    conflicts: int
    pair_uniform: bool
    lane_phase: np.ndarray
    lane_bank: np.ndarray
    per_bank: np.ndarray

    @property
    def wavefronts(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return (f"BankAccess(wavefronts={int(self)}, ideal={self.ideal}, conflicts={self.conflicts}, "
                f"width={self.width}, op={self.op!r})")


def bank_access(addresses: Sequence[int | None], width: int = 4, op: str = "ld") -> BankAccess:
    """One warp-wide shared access with its per-bank breakdown (see :class:`BankAccess`)."""
    addr, mask = _as_trace(addresses, None)
    if addr.shape[0] != 1:
        raise BankError("bank_access takes one warp-wide access (32 addresses); use wavefronts_trace for a trace")
    _validate(addr, mask, width, op)
    total, ideal, phase = _count(addr, mask, width, op)
    nph = {4: 1, 8: 2, 16: 4}[width]
    uni = bool(_pair_uniform(addr, mask)[0]) if width > 4 and op == "ld" else False
    k = width // 4
    per_bank = np.zeros((nph, BANKS), np.int64)
    a, m, ph = addr[0], mask[0], phase[0]
    for p in range(nph):
        words = {int(a[t] >> 2) + j for t in range(WARP) if m[t] and ph[t] == p for j in range(k)}
        for w in words:
            per_bank[p, w & 31] += 1
    r = BankAccess(int(total[0]))
    r.width, r.op, r.ideal, r.conflicts, r.pair_uniform = width, op, int(ideal[0]), int(total[0] - ideal[0]), uni
    r.phases = {4: 1, 8: 1 if uni else 2, 16: 2 if uni else 4}[width]
    r.lane_phase = np.where(m, ph, -1)
    r.lane_bank = np.where(m, (a >> 2) & 31, -1)
    r.per_bank = per_bank
    assert int(per_bank.max(axis=1).sum()) == int(r), "breakdown disagrees with the vectorised count"
    return r


def wavefronts(addresses, width: int = 4, op: str = "ld", active=None):
    """Wavefronts one warp-wide shared-memory access takes (rules in the module docstring).

    ``addresses``: 32 byte addresses, one per lane, ``None`` for an inactive lane; ``width``: 4, 8 or
    16 bytes per lane (``ld.shared.b32/.v2.b32/.v4.b32``); ``op``: ``"ld"`` or ``"st"``. Returns a
    :class:`BankAccess` (an ``int`` with the per-bank breakdown). Given an ``(N, 32)`` array, returns
    the N counts as an array (:func:`wavefronts_trace`).
    """
    if isinstance(addresses, np.ndarray) and addresses.ndim == 2:
        return wavefronts_trace(addresses, width, op, active)
    if active is not None:
        addresses = [a if on else None for a, on in zip(addresses, active)]
    return bank_access(addresses, width, op)


def min_padding(row_bytes: int, width: int = 4, op: str = "ld", max_pad_words: int = 64) -> int:
    """Smallest padding (in 4-byte words) added to each row of a row-major tile so that a warp
    reading one column (lane ``t`` reads row ``t``, ``width`` bytes) takes the ideal number of
    wavefronts. The classic answer for a 32 x 32 ``float`` tile is 1 word (row pitch 33 words)
    [CPG §20.4.3; the access is counted by :func:`wavefronts`].
    """
    if row_bytes <= 0 or row_bytes % width:
        raise BankError(f"row size must be a positive multiple of the {width}-byte access width, got {row_bytes}")
    for pad in range(0, max_pad_words + 1):
        pitch = row_bytes + 4 * pad
        if pitch % width:
            continue
        r = bank_access(lane_addresses(pitch, width), width, op)
        if r.conflicts == 0:
            return pad
    raise BankError(f"no padding up to {max_pad_words} words makes a column access conflict-free")
