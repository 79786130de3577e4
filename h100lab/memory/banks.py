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

Inactive lanes [measured on an H200 with Nsight Compute, ``data/l01/bank_wavefronts.json``, check
``h100lab.validation.l01.check_bank_wavefronts``]: an inactive lane matches any partner, so a pair
with one active and one inactive lane does not break pair-uniformity (e.g. an 8-byte load of
``8 * (t // 2)`` with the odd lanes off takes 1 wavefront, not 2); a phase without an active lane
costs nothing; a warp without an active lane takes no wavefront.

Addresses are byte offsets in the CTA's shared window (``.shared::cta``); accesses must be
naturally aligned [PTX §5.4.5 "naturally aligned" vector accesses], or ``ValueError`` is raised.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["BankAccess", "BankError", "bank_of", "bank_access", "wavefronts", "wavefronts_trace",
           "lane_addresses", "phases_of", "min_padding", "matrix_wavefronts", "WARP", "BANKS", "WIDTHS"]

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


_LANES = np.arange(WARP)
_ALL8 = np.uint64(0x0101010101010101)       # eight True bytes read as one uint64


def _rows_all(b: np.ndarray) -> np.ndarray:
    """Row-wise ``all`` of a C-contiguous ``(n, 8k)`` bool array, eight lanes per uint64 compare."""
    v = np.ascontiguousarray(b).view(np.uint64)
    out = v[:, 0] == _ALL8
    for j in range(1, v.shape[1]):
        out &= v[:, j] == _ALL8
    return out


def _pair_uniform(addr: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Per access: every lane equals lane t^1 (or every lane equals lane t^2); a pair with an
    inactive lane is uniform (an inactive lane matches anything: measured, module docstring)."""
    n = addr.shape[0]
    full = bool(active.all())
    if full and addr.dtype == np.int32 and addr.flags.c_contiguous:
        v = addr.view(np.int64)                          # lanes (2k, 2k+1) in one int64
        out = _rows_all((v << 32) == (v & np.int64(-1 << 32)))          # lane 2k == lane 2k+1
        v = v.reshape(n, 8, 2)
        return out | _rows_all(v[:, :, 0] == v[:, :, 1])                # lanes 4k, 4k+1 == 4k+2, 4k+3
    out = np.zeros(n, bool)
    for x in (1, 2):                                     # partners t^1, then t^2
        p = _LANES ^ x
        same = addr == addr[:, p]
        if not full:
            mp = active[:, p]
            same |= ~(active & mp)
        out |= _rows_all(same)
    return out if full else out & active.any(axis=1)


def phases_of(addr: np.ndarray, active: np.ndarray, width: int, op: str) -> np.ndarray:
    """(N, 32) phase index of every lane under the rules of the module docstring."""
    n = addr.shape[0]
    if width == 4:
        return np.zeros((n, WARP), np.int64)
    narrow = _LANES // 16 if width == 8 else _LANES // 8      # half-warps / quarter-warps
    wide = np.zeros(WARP, np.int64) if width == 8 else _LANES // 16
    if op == "st":
        return np.broadcast_to(narrow, (n, WARP)).astype(np.int64)
    uni = _pair_uniform(addr, active)
    return np.where(uni[:, None], wide[None, :], narrow[None, :]).astype(np.int64)


_INACTIVE = np.int32(32 << 24)       # sort key of an inactive lane: after every real key, bin 32


def _per_phase(addr: np.ndarray, active: np.ndarray, width: int, op: str) -> np.ndarray:
    """``(N, width // 4)`` wavefronts of each phase of each access (rules in the module docstring).

    An aligned access of width 4k bytes covers k consecutive banks starting at a multiple of k, the
    same k banks for every lane of that width: counting distinct width-sized chunks per group of k
    banks gives the same per-bank maxima as counting 4-byte words per bank. So each lane gets one
    int32 key ``bin << 24 | row`` with ``bin = phase * groups + bank group`` (always < 32: 32 bank
    groups x 1 phase, 16 x 2 or 8 x 4) and ``row = addr >> 7``. One row-wise sort brings equal keys
    together; a repeated key (a broadcast) costs nothing, every other key adds one to its bin
    (``np.bincount``); a phase's wavefronts are the maximum over its bins. A pair-uniform load's
    phases are the first ``width // 8`` columns; the others are then 0.
    """
    n = addr.shape[0]
    nph, groups = width // 4, BANKS * 4 // width
    if n == 0:
        return np.zeros((0, nph), np.int64)
    full = bool(active.all())
    if addr.dtype != np.int32 and int(addr.max()) < (1 << 31) and int(addr.min()) >= 0:
        addr = addr.astype(np.int32)
    addr = np.ascontiguousarray(addr)
    row = addr >> 7                                  # 128-byte bank row
    if int(row.max()) >= (1 << 23):                  # large (generic) addresses: rows relative to the access
        big = np.iinfo(row.dtype).max
        lo = np.where(active, row, big).min(axis=1)
        row = np.where(active, row - np.where(lo == big, 0, lo)[:, None], 0)
        if int(row.max()) >= (1 << 23):
            raise BankError("one access spans more than 1 GiB of addresses; shared memory is at most 228 KB")
    shift = width.bit_length() - 1                   # log2(width)
    key = ((addr & 127) << (24 - shift)).astype(np.int32, copy=False)   # bank group << 24
    key |= row.astype(np.int32, copy=False)
    if width > 4:
        narrow = ((_LANES // (WARP // nph)) * groups << 24).astype(np.int32)
        key += narrow
        if op == "ld":
            uni = np.flatnonzero(_pair_uniform(addr, active))
            if uni.size:
                wide = ((_LANES // (2 * WARP // nph)) * groups << 24).astype(np.int32)
                key[uni] += wide - narrow
    if not full:
        key[~active] = _INACTIVE
    key.sort(axis=1)
    idx = (key >> 24).astype(np.int64)
    idx += (np.arange(n, dtype=np.int64) * BANKS)[:, None]
    np.copyto(idx[:, 1:], n * BANKS, where=key[:, 1:] == key[:, :-1])   # repeats (broadcasts) -> spare bin
    if not full:
        idx[key == _INACTIVE] = n * BANKS
    cnt = np.bincount(idx.ravel(), minlength=n * BANKS + 1)[:n * BANKS]
    if nph == 1:
        return cnt.reshape(n, BANKS).max(axis=1)[:, None]
    cnt = cnt.reshape(n, nph, groups)
    out = cnt[:, :, 0].copy()
    for g in range(1, groups):
        np.maximum(out, cnt[:, :, g], out=out)
    return out


def wavefronts_trace(addresses, width: int = 4, op: str = "ld", active=None) -> np.ndarray:
    """Wavefronts of every access of a trace: ``addresses`` is ``(N, 32)`` byte addresses.

    ``active`` is an optional ``(N, 32)`` bool mask (False = inactive lane). Returns an int64 array
    of N wavefront counts. Same rules as :func:`wavefronts` (module docstring), vectorised with
    NumPy in cache-sized chunks: each access's (phase, bank group, row) keys are sorted once and the
    distinct ones counted per bank group with one ``np.bincount``.
    """
    addr, mask = _as_trace(addresses, active)
    _validate(addr[:0], mask[:0], width, op)
    out = np.empty(addr.shape[0], np.int64)
    chunk = 1 << 12
    for i in range(0, addr.shape[0], chunk):
        a, m = addr[i:i + chunk], mask[i:i + chunk]
        _validate(a, m, width, op)
        out[i:i + chunk] = _per_phase(a, m, width, op).sum(axis=1)
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
    per_phase = _per_phase(addr, mask, width, op)
    total, ideal = per_phase.sum(axis=1), (per_phase > 0).sum(axis=1)
    phase = phases_of(addr, mask, width, op)
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


def matrix_wavefronts(row_addresses) -> int:
    """Wavefronts of one ``ldmatrix``/``stmatrix`` ``.m8n8.x{1,2,4}.b16`` (PTX ISA §9.7.14.5.15-16).

    ``row_addresses``: (num, 8) byte addresses, the 16-byte rows of each 8 × 8 b16 matrix (thread ``8j + i``
    gives row ``i`` of matrix ``j``). Rule [model — to be measured with Nsight Compute, the probe in
    ``h100lab.measure.l06``]: each matrix is one phase of 8 addresses × 16 bytes = 128 bytes, the width of the
    32 banks; a phase takes ``max over banks of the distinct 4-byte words it touches there`` wavefronts
    (CUTLASS and the CUDA guide's advice that 8 rows of one matrix should hit 8 different 16-byte bank groups
    rests on this), and the access takes the sum over its matrices. Unlike a ``.v4`` load no pair of lanes
    merges phases: the phase is the matrix."""
    rows = np.asarray(row_addresses, np.int64).reshape(-1, 8)
    if (rows % 16).any():
        raise BankError("ldmatrix/stmatrix rows are 16-byte aligned (PTX ISA §9.7.14.5.15)")
    words = (rows[:, :, None] // 4 + np.arange(4)).reshape(rows.shape[0], 32)
    total = 0
    for w in words:
        u = np.unique(w)
        total += int(np.bincount(u % BANKS, minlength=BANKS).max())
    return total
