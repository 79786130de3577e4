"""The PTX ``mbarrier`` as a state machine: pure functions of (state, operands), and a view at an
address in :class:`~h100lab.sync.smem.SharedMemory` that stores the state as the object's 8 bytes.

What an mbarrier holds [PTX §9.7.13.15.2 "Contents of the mbarrier object"]: the current phase,
the pending arrival count of the current phase, the expected arrival count of the next phases, and
the *tx-count* (pending asynchronous transactions, in bytes for ``cp.async.bulk``). Valid ranges:
expected 1 … 2^20−1, pending 0 … 2^20−1, tx-count −(2^20−1) … +(2^20−1).

Operations (all [PTX §9.7.13.15.x]):

=====================  ======================================================================
``init(n)``            phase 0, expected = pending = n, tx = 0 (§15.9)
arrive-on(c)           pending −= c, then the completion check (§15.7)
expect-tx(e)           tx += e (§15.5.1)
complete-tx(e)         tx −= e, then the completion check (§15.5.2)
completion check       pending == 0 and tx == 0 → phase flips, pending := expected (§15.6)
``arrive_drop(c)``     expected −= c for this and all later phases, then arrive-on(c) (§15.14)
``.noComplete``        an arrive that would complete the phase is undefined behaviour (§15.13)
waits                  ``test_wait/try_wait.parity(p)`` is True iff ``(phase & 1) != p`` (§15.16)
=====================  ======================================================================

Measured on an H200 (reference facts §7, [HW]): the completion check also runs after a bare
expect-tx — a phase held open only by a negative tx-count completes when ``expect_tx`` brings tx back
to zero — so this model checks completion after *every* counter update.

The 8-byte encoding is this model's own (the hardware's is opaque, §15.2)::

    63  62  61  60 ............ 40  39 ........... 20  19 ............ 0
    [0] [nc][P ][ tx-count, 21-bit two's complement ][ expected (20) ][ pending (20) ]

``P`` is the phase parity. The 64-bit *state token* that ``mbarrier.arrive`` returns is the encoding
of the barrier *before* the arrive, with bit 62 (``nc``) set when it came from a ``.noComplete``
arrive — exactly what ``mbarrier.test_wait`` and ``mbarrier.pending_count`` need (§15.16, §15.17).
"""
from __future__ import annotations

import numbers
from typing import NamedTuple

from .smem import SharedMemory, SharedMemoryError

__all__ = [
    "MBarrierError", "MBarrierState", "MBarrier", "MAX_COUNT", "MAX_TX",
    "encode", "decode", "word_init", "word_arrive", "word_arrive_drop", "word_expect_tx", "word_complete_tx",
    "word_arrive_expect_tx", "word_arrive_drop_expect_tx", "init", "arrive", "arrive_drop", "expect_tx", "complete_tx",
    "arrive_expect_tx", "arrive_drop_expect_tx", "test_wait_parity", "try_wait_parity",
    "test_wait", "pending_count", "token_phase", "Step", "parse_ops", "run_ops",
]

MAX_COUNT = (1 << 20) - 1   #: largest expected / pending arrival count (§15.2)
MAX_TX = (1 << 20) - 1      #: largest |tx-count| (§15.2)

_M20 = (1 << 20) - 1
_M21 = (1 << 21) - 1
_NC = 1 << 62
_P = 1 << 61


class MBarrierError(ValueError):
    """An mbarrier operation that PTX leaves undefined (or forbids); the message names the rule."""


class MBarrierState(NamedTuple):
    """The four fields of an mbarrier object (§9.7.13.15.2). ``phase`` is the parity, 0 or 1."""

    phase: int
    pending: int
    expected: int
    tx: int

    def __str__(self) -> str:
        return f"phase {self.phase}, pending {self.pending}/{self.expected}, tx {self.tx:+d}"


# ---- encoding -----------------------------------------------------------------------------------
def encode(s: MBarrierState) -> int:
    """The 64-bit word that holds ``s`` (this model's layout; see the module docstring)."""
    return (s.pending & _M20) | ((s.expected & _M20) << 20) | ((s.tx & _M21) << 40) | (_P if s.phase & 1 else 0)


def decode(word: int) -> MBarrierState:
    """The state held by a 64-bit mbarrier word or state token (inverse of :func:`encode`)."""
    tx = (word >> 40) & _M21
    if tx > MAX_TX:
        tx -= 1 << 21
    return MBarrierState((word >> 61) & 1, word & _M20, (word >> 20) & _M20, tx)


# ---- checks -------------------------------------------------------------------------------------
def _check_count(c: int, what: str) -> None:
    if c.__class__ is not int and (isinstance(c, bool) or not isinstance(c, numbers.Integral)):
        raise MBarrierError(f"{what} {c!r} is not an integer (PTX §9.7.13.15: counts are integers)")
    if not 1 <= c <= MAX_COUNT:
        raise MBarrierError(f"{what} {c!r} is outside 1 … 2^20−1 = {MAX_COUNT} "
                            f"(PTX §9.7.13.15.2, valid range of arrival counts)")


def _check_tx_operand(e: int, what: str) -> None:
    if e.__class__ is not int and (isinstance(e, bool) or not isinstance(e, numbers.Integral)):
        raise MBarrierError(f"{what} txCount {e!r} is not an integer (PTX §9.7.13.15.11)")
    if not 0 <= e <= MAX_TX:
        raise MBarrierError(f"{what} txCount {e!r} is outside 0 … 2^20−1 = {MAX_TX}: the tx-count "
                            f"range is ±(2^20−1) (PTX §9.7.13.15.2)")


def _check_tx(tx: int, what: str) -> None:
    if not -MAX_TX <= tx <= MAX_TX:
        raise MBarrierError(f"{what} would make tx-count {tx}, outside ±(2^20−1) = ±{MAX_TX} "
                            f"(PTX §9.7.13.15.2); the behaviour is undefined")


def _tx_of(word: int) -> int:
    tx = (word >> 40) & _M21
    return tx - (1 << 21) if tx > MAX_TX else tx


def _with_counts(word: int, pending: int, tx: int) -> int:
    """Store pending and tx into ``word``, then the phase-completion check and transition
    (PTX §9.7.13.15.6): pending == 0 and tx == 0 → the phase flips, pending := expected."""
    if pending == 0 and tx == 0:
        return ((word & ~(_M20 | (_M21 << 40))) | ((word >> 20) & _M20)) ^ _P
    return (word & ~(_M20 | (_M21 << 40))) | pending | ((tx & _M21) << 40)


# ---- operations on the 64-bit word (the executor's form; the state-level API below wraps these) ----
def word_init(count: int) -> int:
    """``mbarrier.init [a], count`` → the new word: phase 0, expected = pending = count, tx 0
    (PTX §9.7.13.15.9)."""
    _check_count(count, "mbarrier.init count")
    count = int(count)
    return count | (count << 20)


def word_arrive(word: int, count: int = 1, no_complete: bool = False,
                what: str = "mbarrier.arrive") -> tuple[int, int]:
    """arrive-on(count) on ``word`` (PTX §9.7.13.15.7, §9.7.13.15.13) → (new word, state token).
    The token is the word before the arrive, bit 62 marking a ``.noComplete`` arrive."""
    if count.__class__ is not int or not 1 <= count <= MAX_COUNT:
        _check_count(count, f"{what} count")
        count = int(count)
    pending = word & _M20
    if count > pending:
        raise MBarrierError(
            f"{what} with count {count} but only {pending} arrival(s) pending in this phase: the "
            f"pending count would leave its range 0 … 2^20−1 (PTX §9.7.13.15.2)")
    pending -= count
    if pending == 0 and not (word >> 40) & _M21:         # pending 0 and tx 0: the phase completes
        if no_complete:
            raise MBarrierError(
                f"{what}.noComplete completed the phase (pending 0, tx 0): a .noComplete arrive must "
                f"not cause phase completion, else the behaviour is undefined (PTX §9.7.13.15.13)")
        new = ((word & ~_M20) | ((word >> 20) & _M20)) ^ _P   # phase flips, pending := expected
    else:
        new = (word & ~_M20) | pending
    return new, (word | _NC) if no_complete else word


def word_arrive_drop(word: int, count: int = 1, no_complete: bool = False) -> tuple[int, int]:
    """``mbarrier.arrive_drop``: expected −= count for this and later phases, then arrive-on(count)
    (PTX §9.7.13.15.14) → (new word, token). The expected count must stay ≥ 1 (§15.2)."""
    _check_count(count, "mbarrier.arrive_drop count")
    count = int(count)
    expected = (word >> 20) & _M20
    if expected - count < 1:
        raise MBarrierError(
            f"mbarrier.arrive_drop with count {count} would lower the expected arrival count "
            f"{expected} to {expected - count}, below its minimum 1 (PTX §9.7.13.15.2)")
    dropped = (word & ~(_M20 << 20)) | ((expected - count) << 20)
    new, _ = word_arrive(dropped, count, no_complete, "mbarrier.arrive_drop")
    return new, (word | _NC) if no_complete else word


def _tx_update(word: int, tx: int, what: str, tx_count: int) -> int:
    if not -MAX_TX <= tx <= MAX_TX:
        _check_tx(tx, f"{what} {tx_count}")     # the message is built only on the error path
    pending = word & _M20
    if pending == 0 and tx == 0:                      # the phase completes (PTX §9.7.13.15.6)
        return ((word & ~(_M20 | (_M21 << 40))) | ((word >> 20) & _M20)) ^ _P
    return (word & ~(_M21 << 40)) | ((tx & _M21) << 40)


def word_expect_tx(word: int, tx_count: int) -> int:
    """expect-tx(txCount): tx += txCount, then the completion check (PTX §9.7.13.15.5.1, §15.11;
    the check after expect-tx was measured on an H200, reference facts §7)."""
    if tx_count.__class__ is not int or not 0 <= tx_count <= MAX_TX:
        _check_tx_operand(tx_count, "mbarrier.expect_tx")
        tx_count = int(tx_count)
    tx = (word >> 40) & _M21
    return _tx_update(word, (tx - (1 << 21) if tx > MAX_TX else tx) + tx_count, "mbarrier.expect_tx", tx_count)


def word_complete_tx(word: int, tx_count: int) -> int:
    """complete-tx(txCount): tx −= txCount, then the completion check (PTX §9.7.13.15.5.2)."""
    if tx_count.__class__ is not int or not 0 <= tx_count <= MAX_TX:
        _check_tx_operand(tx_count, "mbarrier.complete_tx")
        tx_count = int(tx_count)
    tx = (word >> 40) & _M21
    return _tx_update(word, (tx - (1 << 21) if tx > MAX_TX else tx) - tx_count, "mbarrier.complete_tx", tx_count)


def word_arrive_expect_tx(word: int, tx_count: int) -> tuple[int, int]:
    """``mbarrier.arrive.expect_tx``: expect-tx(txCount), then arrive-on(1) (PTX §9.7.13.15.13)."""
    new, _ = word_arrive(word_expect_tx(word, tx_count), 1, False, "mbarrier.arrive.expect_tx")
    return new, word


def word_arrive_drop_expect_tx(word: int, tx_count: int) -> tuple[int, int]:
    """``mbarrier.arrive_drop.expect_tx``: expect-tx, then arrive_drop(1) (PTX §9.7.13.15.14)."""
    new, _ = word_arrive_drop(word_expect_tx(word, tx_count), 1)
    return new, word


# ---- operations on the decoded state: functions of (state, operands) -----------------------------
def init(count: int) -> MBarrierState:
    """``mbarrier.init [a], count``: phase 0, expected = pending = count, tx 0 (PTX §9.7.13.15.9)."""
    return decode(word_init(count))


def arrive(s: MBarrierState, count: int = 1, *, no_complete: bool = False) -> tuple[MBarrierState, int]:
    """``mbarrier.arrive{.noComplete} [a]{, count}``: arrive-on(count); returns (state, token).

    The token is the state before the arrive (PTX §9.7.13.15.13); ``count`` defaults to 1 and on
    sm_90 may be given without ``.noComplete``.
    """
    w, tok = word_arrive(encode(s), count, no_complete)
    return decode(w), tok


def arrive_drop(s: MBarrierState, count: int = 1, *, no_complete: bool = False) -> tuple[MBarrierState, int]:
    """``mbarrier.arrive_drop [a]{, count}``: expected −= count for this and later phases, then
    arrive-on(count) (PTX §9.7.13.15.14). The expected count must stay ≥ 1 (§15.2)."""
    w, tok = word_arrive_drop(encode(s), count, no_complete)
    return decode(w), tok


def expect_tx(s: MBarrierState, tx_count: int) -> MBarrierState:
    """``mbarrier.expect_tx [a], txCount``: tx += txCount (PTX §9.7.13.15.11, expect-tx §15.5.1),
    then the completion check (measured on an H200: it can complete a phase; reference §7)."""
    return decode(word_expect_tx(encode(s), tx_count))


def complete_tx(s: MBarrierState, tx_count: int) -> MBarrierState:
    """complete-tx(txCount): tx −= txCount, then the completion check (PTX §9.7.13.15.5.2). This is
    what a ``cp.async.bulk ... mbarrier::complete_tx::bytes`` does when its bytes land, and what
    ``mbarrier.complete_tx`` does on its own (§15.12)."""
    return decode(word_complete_tx(encode(s), tx_count))


def arrive_expect_tx(s: MBarrierState, tx_count: int) -> tuple[MBarrierState, int]:
    """``mbarrier.arrive.expect_tx [a], txCount``: expect-tx(txCount) then arrive-on(1)
    (PTX §9.7.13.15.13). Repeated calls accumulate: two of 4096 B expect 8192 B."""
    w, tok = word_arrive_expect_tx(encode(s), tx_count)
    return decode(w), tok


def arrive_drop_expect_tx(s: MBarrierState, tx_count: int) -> tuple[MBarrierState, int]:
    """``mbarrier.arrive_drop.expect_tx [a], txCount``: expect-tx, then arrive_drop(1)
    (PTX §9.7.13.15.14)."""
    w, tok = word_arrive_drop_expect_tx(encode(s), tx_count)
    return decode(w), tok


def test_wait_parity(s: MBarrierState, parity: int) -> bool:
    """``mbarrier.test_wait.parity``: True iff the phase with parity ``parity`` has completed,
    i.e. ``(phase & 1) != parity`` (PTX §9.7.13.15.16; only the current and the immediately
    preceding phase can be asked about)."""
    if parity not in (0, 1):
        raise MBarrierError(f"phaseParity {parity!r} must be 0 or 1 (PTX §9.7.13.15.16)")
    return (s.phase & 1) != parity


def try_wait_parity(s: MBarrierState, parity: int) -> bool:
    """``mbarrier.try_wait.parity``: the same answer as :func:`test_wait_parity`; on hardware the
    thread may be suspended up to a time limit before the answer comes back (PTX §9.7.13.15.16)."""
    return test_wait_parity(s, parity)


def test_wait(s: MBarrierState, token: int) -> bool:
    """``mbarrier.test_wait [a], state``: True iff the phase in which ``token`` was produced by an
    arrive has completed (PTX §9.7.13.15.16)."""
    return (s.phase & 1) != token_phase(token)


def token_phase(token: int) -> int:
    """The phase parity recorded in a state token returned by an arrive (§9.7.13.15.13)."""
    return (token >> 61) & 1


def pending_count(token: int) -> int:
    """``mbarrier.pending_count``: the pending arrival count before the ``.noComplete`` arrive that
    produced ``token`` (PTX §9.7.13.15.17); undefined for any other token, so that raises."""
    if not token & _NC:
        raise MBarrierError("mbarrier.pending_count needs a state token from an arrive.noComplete or "
                            "arrive_drop.noComplete; any other token is undefined (PTX §9.7.13.15.17)")
    return decode(token & ~_NC).pending


# ---- the object at an address ---------------------------------------------------------------------
_ANY_CTA = ("arrive", "arrive_drop", "expect_tx", "complete_tx")


class MBarrier:
    """An mbarrier object at byte address ``addr`` of a CTA's :class:`SharedMemory`.

    Every operation reads the 8 bytes, applies the pure function of this module and writes them back.
    ``rank`` (optional on every operation) is the ``%cluster_ctarank`` of the executing thread's CTA:
    arrive, arrive_drop, expect_tx and complete_tx may target a barrier of another CTA of the cluster
    (``.shared::cluster``, no token is returned); init, inval and waits only the own CTA's
    (PTX §9.7.13.15.8).
    """

    __slots__ = ("smem", "addr")

    def __init__(self, smem: SharedMemory, addr: int):
        if addr % 8:
            raise MBarrierError(f"mbarrier at {addr:#x} is not 8-byte aligned: the .b64 object must be "
                                f"aligned to 8 bytes (PTX §9.7.13.15.1)")
        try:
            smem.check_range(addr, 8)
        except SharedMemoryError as exc:
            raise MBarrierError(f"mbarrier at {addr:#x}: {exc}") from None
        self.smem = smem
        self.addr = addr

    def __repr__(self) -> str:
        if not self.valid:
            return f"mbarrier@{self.addr:#06x} (not initialised)"
        return f"mbarrier@{self.addr:#06x} {{{self.state}}}"

    # -- state access ---------------------------------------------------------------------------
    @property
    def valid(self) -> bool:
        """Whether the memory holds an initialised, not invalidated mbarrier (§9.7.13.15.10)."""
        return self.smem.live_object(self.addr) == "mbarrier"

    def _require(self, op: str, rank: int | None) -> None:
        if rank is not None and rank != self.smem.cta_rank and op not in _ANY_CTA:
            raise MBarrierError(
                f"mbarrier.{op} on the barrier of CTA {self.smem.cta_rank} from CTA {rank}: only "
                f"arrive, arrive_drop, expect_tx and complete_tx may target another CTA's barrier "
                f"(PTX §9.7.13.15.8)")
        if not self.valid:
            raise MBarrierError(
                f"mbarrier.{op} at {self.addr:#x}, which does not hold a valid mbarrier (used before "
                f"mbarrier.init or after mbarrier.inval): undefined behaviour (PTX §9.7.13.15)")

    @property
    def state(self) -> MBarrierState:
        """The decoded 8 bytes (raises if no valid barrier is there)."""
        self._require("state", None)
        return decode(self.smem.load_u64(self.addr))

    @property
    def word(self) -> int:
        """The raw 64-bit word at the barrier's address."""
        return self.smem.load_u64(self.addr)

    @property
    def phase(self) -> int:
        """Current phase parity (0 or 1)."""
        return self.state.phase

    @property
    def pending(self) -> int:
        """Pending arrivals of the current phase."""
        return self.state.pending

    @property
    def expected(self) -> int:
        """Expected arrivals of the next phases."""
        return self.state.expected

    @property
    def tx_count(self) -> int:
        """Pending transaction count (bytes for cp.async.bulk), may be negative."""
        return self.state.tx

    def _apply(self, op: str, rank: int | None, fn, *args):
        self._require(op, rank)
        out = fn(self.smem.load_u64(self.addr), *args)
        new, ret = out if out.__class__ is tuple else (out, None)
        self.smem.store_u64(self.addr, new)
        return ret

    # -- lifecycle ------------------------------------------------------------------------------
    def init(self, count: int, *, rank: int | None = None) -> None:
        """``mbarrier.init.shared::cta.b64 [addr], count`` (PTX §9.7.13.15.9)."""
        if rank is not None and rank != self.smem.cta_rank:
            raise MBarrierError(f"mbarrier.init from CTA {rank} on CTA {self.smem.cta_rank}'s memory: "
                                f"init works only on the executing CTA's barrier (PTX §9.7.13.15.8)")
        if self.smem.live_object(self.addr) is not None:
            raise MBarrierError(
                f"mbarrier.init at {self.addr:#x}, which already holds a valid mbarrier: re-initialising "
                f"an object in use is undefined; mbarrier.inval it first (PTX §9.7.13.15.9–10)")
        self.smem._check_no_object(self.addr, 8, "mbarrier.init")
        self.smem.store_u64(self.addr, word_init(count))
        self.smem._register(self.addr, "mbarrier")

    def inval(self, *, rank: int | None = None) -> None:
        """``mbarrier.inval``: the memory no longer holds an mbarrier (PTX §9.7.13.15.10)."""
        self._require("inval", rank)
        self.smem._unregister(self.addr)

    # -- arrivals and transactions --------------------------------------------------------------
    def arrive(self, count: int = 1, *, no_complete: bool = False, rank: int | None = None) -> int | None:
        """``mbarrier.arrive{.noComplete}`` → state token (None for another CTA's barrier)."""
        tok = self._apply("arrive", rank, word_arrive, count, no_complete)
        return None if rank is not None and rank != self.smem.cta_rank else tok

    def arrive_drop(self, count: int = 1, *, no_complete: bool = False, rank: int | None = None) -> int | None:
        """``mbarrier.arrive_drop{.noComplete}`` → state token (None for another CTA's barrier)."""
        tok = self._apply("arrive_drop", rank, word_arrive_drop, count, no_complete)
        return None if rank is not None and rank != self.smem.cta_rank else tok

    def expect_tx(self, tx_count: int, *, rank: int | None = None) -> None:
        """``mbarrier.expect_tx [addr], txCount`` (PTX §9.7.13.15.11)."""
        self._apply("expect_tx", rank, word_expect_tx, tx_count)

    def complete_tx(self, tx_count: int, *, rank: int | None = None) -> None:
        """complete-tx, as performed by a finishing bulk copy or ``mbarrier.complete_tx`` (§15.12)."""
        self._apply("complete_tx", rank, word_complete_tx, tx_count)

    def arrive_expect_tx(self, tx_count: int, *, rank: int | None = None) -> int | None:
        """``mbarrier.arrive.expect_tx [addr], txCount`` → state token (PTX §9.7.13.15.13)."""
        tok = self._apply("arrive", rank, word_arrive_expect_tx, tx_count)
        return None if rank is not None and rank != self.smem.cta_rank else tok

    def arrive_drop_expect_tx(self, tx_count: int, *, rank: int | None = None) -> int | None:
        """``mbarrier.arrive_drop.expect_tx [addr], txCount`` → state token (PTX §9.7.13.15.14)."""
        tok = self._apply("arrive_drop", rank, word_arrive_drop_expect_tx, tx_count)
        return None if rank is not None and rank != self.smem.cta_rank else tok

    # -- waits ----------------------------------------------------------------------------------
    def test_wait_parity(self, parity: int, *, rank: int | None = None) -> bool:
        """``mbarrier.test_wait.parity``: has the phase with this parity completed? (§9.7.13.15.16)"""
        self._require("test_wait", rank)
        return test_wait_parity(self.state, parity)

    def try_wait_parity(self, parity: int, *, rank: int | None = None) -> bool:
        """``mbarrier.try_wait.parity``: same answer as test_wait (§9.7.13.15.16)."""
        self._require("try_wait", rank)
        return try_wait_parity(self.state, parity)

    def test_wait(self, token: int, *, rank: int | None = None) -> bool:
        """``mbarrier.test_wait [addr], state``: has the token's phase completed? (§9.7.13.15.16)"""
        self._require("test_wait", rank)
        return test_wait(self.state, token)

    def try_wait(self, token: int, *, rank: int | None = None) -> bool:
        """``mbarrier.try_wait [addr], state`` (§9.7.13.15.16)."""
        self._require("try_wait", rank)
        return test_wait(self.state, token)

    @staticmethod
    def pending_count(token: int) -> int:
        """``mbarrier.pending_count`` of a ``.noComplete`` token (PTX §9.7.13.15.17)."""
        return pending_count(token)


# ---- running a written sequence of operations (the stepper of lesson 3) -------------------------------
class Step(NamedTuple):
    """One operation of :func:`run_ops` and the barrier right after it. ``phase_number`` counts
    completed phases (the parity is ``phase_number & 1``); ``waits`` is what
    ``try_wait.parity(0)`` and ``try_wait.parity(1)`` would return now."""

    op: str
    state: MBarrierState
    phase_number: int
    completed: bool
    waits: tuple[bool, bool]


_OPS = {
    "arrive": ("count", arrive), "arrive.noComplete": ("count", None), "arrive_drop": ("count", arrive_drop),
    "expect_tx": ("bytes", expect_tx), "complete_tx": ("bytes", complete_tx),
    "arrive.expect_tx": ("bytes", arrive_expect_tx), "arrive_expect_tx": ("bytes", arrive_expect_tx),
}


def parse_ops(text: str) -> list[tuple[str, int]]:
    """Parse ``"arrive; expect_tx 64; arrive 2"`` (separated by ``;``, ``,`` or new lines) into
    ``[(op, operand), …]``. Ops: arrive [n], arrive.noComplete [n], arrive_drop [n], expect_tx B,
    complete_tx B, arrive.expect_tx B."""
    out = []
    for part in text.replace(",", ";").replace("\n", ";").split(";"):
        words = part.split()
        if not words:
            continue
        op = words[0]
        if op not in _OPS:
            raise MBarrierError(f"unknown operation {op!r}: use one of {', '.join(_OPS)}")
        kind = _OPS[op][0]
        if len(words) > 2:
            raise MBarrierError(f"{part.strip()!r}: one operand at most")
        if len(words) == 1:
            if kind == "bytes":
                raise MBarrierError(f"{op} needs a byte count, e.g. '{op} 64'")
            n = 1
        else:
            try:
                n = int(words[1])
            except ValueError:
                raise MBarrierError(f"{part.strip()!r}: the operand must be an integer") from None
        out.append((op, n))
    return out


def run_ops(count: int, ops) -> list[Step]:
    """Initialise a barrier with ``count`` and apply ``ops`` (a string for :func:`parse_ops` or a list
    of ``(op, operand)``); returns the :class:`Step` after init and after every operation. An operation
    that PTX leaves undefined raises :class:`MBarrierError` naming the rule."""
    seq = parse_ops(ops) if isinstance(ops, str) else list(ops)
    s = init(count)
    k = 0
    steps = [Step(f"mbarrier.init {count}", s, 0, False, (test_wait_parity(s, 0), test_wait_parity(s, 1)))]
    for op, n in seq:
        if op == "arrive.noComplete":
            new, _ = arrive(s, n, no_complete=True)
        else:
            out = _OPS[op][1](s, n)
            new = out[0] if op.startswith("arrive") else out
        done = new.phase != s.phase
        k += done
        s = new
        steps.append(Step(f"{op} {n}", s, k, done, (test_wait_parity(s, 0), test_wait_parity(s, 1))))
    return steps
