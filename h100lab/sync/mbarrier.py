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

from typing import NamedTuple

from .smem import SharedMemory, SharedMemoryError

__all__ = [
    "MBarrierError", "MBarrierState", "MBarrier", "MAX_COUNT", "MAX_TX",
    "encode", "decode", "init", "arrive", "arrive_drop", "expect_tx", "complete_tx",
    "arrive_expect_tx", "arrive_drop_expect_tx", "test_wait_parity", "try_wait_parity",
    "test_wait", "pending_count", "token_phase",
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
    if not isinstance(c, int) or not 1 <= c <= MAX_COUNT:
        raise MBarrierError(f"{what} {c!r} is outside 1 … 2^20−1 = {MAX_COUNT} "
                            f"(PTX §9.7.13.15.2, valid range of arrival counts)")


def _check_tx_operand(e: int, what: str) -> None:
    if not isinstance(e, int) or not 0 <= e <= MAX_TX:
        raise MBarrierError(f"{what} txCount {e!r} is outside 0 … 2^20−1 = {MAX_TX}: the tx-count "
                            f"range is ±(2^20−1) (PTX §9.7.13.15.2)")


def _check_tx(tx: int, what: str) -> None:
    if not -MAX_TX <= tx <= MAX_TX:
        raise MBarrierError(f"{what} would make tx-count {tx}, outside ±(2^20−1) = ±{MAX_TX} "
                            f"(PTX §9.7.13.15.2); the behaviour is undefined")


def _complete(s: MBarrierState) -> MBarrierState:
    """Phase completion check and transition (PTX §9.7.13.15.6)."""
    if s.pending == 0 and s.tx == 0:
        return MBarrierState(s.phase ^ 1, s.expected, s.expected, 0)
    return s


def _arrive_on(s: MBarrierState, count: int, no_complete: bool, what: str) -> MBarrierState:
    """arrive-on(count): pending −= count, then the completion check (§9.7.13.15.7)."""
    if count > s.pending:
        raise MBarrierError(
            f"{what} with count {count} but only {s.pending} arrival(s) pending in this phase: the "
            f"pending count would leave its range 0 … 2^20−1 (PTX §9.7.13.15.2)")
    mid = s._replace(pending=s.pending - count)
    out = _complete(mid)
    if no_complete and out.phase != s.phase:
        raise MBarrierError(
            f"{what}.noComplete completed the phase (pending 0, tx 0): a .noComplete arrive must not "
            f"cause phase completion, else the behaviour is undefined (PTX §9.7.13.15.13)")
    return out


def _token(s: MBarrierState, no_complete: bool) -> int:
    return encode(s) | (_NC if no_complete else 0)


# ---- operations: functions of (state, operands) -------------------------------------------------
def init(count: int) -> MBarrierState:
    """``mbarrier.init [a], count``: phase 0, expected = pending = count, tx 0 (PTX §9.7.13.15.9)."""
    _check_count(count, "mbarrier.init count")
    return MBarrierState(0, count, count, 0)


def arrive(s: MBarrierState, count: int = 1, *, no_complete: bool = False) -> tuple[MBarrierState, int]:
    """``mbarrier.arrive{.noComplete} [a]{, count}``: arrive-on(count); returns (state, token).

    The token is the state before the arrive (PTX §9.7.13.15.13); ``count`` defaults to 1 and on
    sm_90 may be given without ``.noComplete``.
    """
    _check_count(count, "mbarrier.arrive count")
    return _arrive_on(s, count, no_complete, "mbarrier.arrive"), _token(s, no_complete)


def arrive_drop(s: MBarrierState, count: int = 1, *, no_complete: bool = False) -> tuple[MBarrierState, int]:
    """``mbarrier.arrive_drop [a]{, count}``: expected −= count for this and later phases, then
    arrive-on(count) (PTX §9.7.13.15.14). The expected count must stay ≥ 1 (§15.2)."""
    _check_count(count, "mbarrier.arrive_drop count")
    if s.expected - count < 1:
        raise MBarrierError(
            f"mbarrier.arrive_drop with count {count} would lower the expected arrival count "
            f"{s.expected} to {s.expected - count}, below its minimum 1 (PTX §9.7.13.15.2)")
    dropped = s._replace(expected=s.expected - count)
    return _arrive_on(dropped, count, no_complete, "mbarrier.arrive_drop"), _token(s, no_complete)


def expect_tx(s: MBarrierState, tx_count: int) -> MBarrierState:
    """``mbarrier.expect_tx [a], txCount``: tx += txCount (PTX §9.7.13.15.11, expect-tx §15.5.1),
    then the completion check (measured on an H200: it can complete a phase; reference §7)."""
    _check_tx_operand(tx_count, "mbarrier.expect_tx")
    tx = s.tx + tx_count
    _check_tx(tx, f"mbarrier.expect_tx {tx_count}")
    return _complete(s._replace(tx=tx))


def complete_tx(s: MBarrierState, tx_count: int) -> MBarrierState:
    """complete-tx(txCount): tx −= txCount, then the completion check (PTX §9.7.13.15.5.2). This is
    what a ``cp.async.bulk ... mbarrier::complete_tx::bytes`` does when its bytes land, and what
    ``mbarrier.complete_tx`` does on its own (§15.12)."""
    _check_tx_operand(tx_count, "mbarrier.complete_tx")
    tx = s.tx - tx_count
    _check_tx(tx, f"mbarrier.complete_tx {tx_count}")
    return _complete(s._replace(tx=tx))


def arrive_expect_tx(s: MBarrierState, tx_count: int) -> tuple[MBarrierState, int]:
    """``mbarrier.arrive.expect_tx [a], txCount``: expect-tx(txCount) then arrive-on(1)
    (PTX §9.7.13.15.13). Repeated calls accumulate: two of 4096 B expect 8192 B."""
    mid = expect_tx(s, tx_count)   # (completes the phase only if it was waiting on tx alone)
    return _arrive_on(mid, 1, False, "mbarrier.arrive.expect_tx"), _token(s, False)


def arrive_drop_expect_tx(s: MBarrierState, tx_count: int) -> tuple[MBarrierState, int]:
    """``mbarrier.arrive_drop.expect_tx [a], txCount``: expect-tx, then arrive_drop(1)
    (PTX §9.7.13.15.14)."""
    mid = expect_tx(s, tx_count)
    out, _ = arrive_drop(mid, 1)
    return out, _token(s, False)


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

    def _apply(self, op: str, rank: int | None, fn, *args, **kw):
        self._require(op, rank)
        s = decode(self.smem.load_u64(self.addr))
        out = fn(s, *args, **kw)
        new, ret = (out, None) if isinstance(out, MBarrierState) else out
        self.smem.store_u64(self.addr, encode(new))
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
        st = init(count)
        self.smem.store_u64(self.addr, encode(st))
        self.smem._register(self.addr, "mbarrier")

    def inval(self, *, rank: int | None = None) -> None:
        """``mbarrier.inval``: the memory no longer holds an mbarrier (PTX §9.7.13.15.10)."""
        self._require("inval", rank)
        self.smem._unregister(self.addr)

    # -- arrivals and transactions --------------------------------------------------------------
    def arrive(self, count: int = 1, *, no_complete: bool = False, rank: int | None = None) -> int | None:
        """``mbarrier.arrive{.noComplete}`` → state token (None for another CTA's barrier)."""
        tok = self._apply("arrive", rank, arrive, count, no_complete=no_complete)
        return None if rank is not None and rank != self.smem.cta_rank else tok

    def arrive_drop(self, count: int = 1, *, no_complete: bool = False, rank: int | None = None) -> int | None:
        """``mbarrier.arrive_drop{.noComplete}`` → state token (None for another CTA's barrier)."""
        tok = self._apply("arrive_drop", rank, arrive_drop, count, no_complete=no_complete)
        return None if rank is not None and rank != self.smem.cta_rank else tok

    def expect_tx(self, tx_count: int, *, rank: int | None = None) -> None:
        """``mbarrier.expect_tx [addr], txCount`` (PTX §9.7.13.15.11)."""
        self._apply("expect_tx", rank, expect_tx, tx_count)

    def complete_tx(self, tx_count: int, *, rank: int | None = None) -> None:
        """complete-tx, as performed by a finishing bulk copy or ``mbarrier.complete_tx`` (§15.12)."""
        self._apply("complete_tx", rank, complete_tx, tx_count)

    def arrive_expect_tx(self, tx_count: int, *, rank: int | None = None) -> int | None:
        """``mbarrier.arrive.expect_tx [addr], txCount`` → state token (PTX §9.7.13.15.13)."""
        tok = self._apply("arrive", rank, arrive_expect_tx, tx_count)
        return None if rank is not None and rank != self.smem.cta_rank else tok

    def arrive_drop_expect_tx(self, tx_count: int, *, rank: int | None = None) -> int | None:
        """``mbarrier.arrive_drop.expect_tx [addr], txCount`` → state token (PTX §9.7.13.15.14)."""
        tok = self._apply("arrive_drop", rank, arrive_drop_expect_tx, tx_count)
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
