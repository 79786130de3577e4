"""The multi-stage pipeline ring of a warp-specialized kernel: S stages, each guarded by a ``full`` and an
``empty`` mbarrier, addressed by phase parity (lesson 8).

Ring slot ``i`` (the i-th k-block the producer loads) lives in stage ``i % S``; it is the ``i // S``-th use of that
stage, so the producer waits for phase ``i // S - 1`` of ``empty[s]`` (the consumers released the previous use) and
the consumers wait for phase ``i // S`` of ``full[s]``. ``mbarrier.try_wait.parity`` names a phase only by its
parity (PTX ISA §9.7.13.15.16: it tests "the completion of the phase indicated by phaseParity", i.e. it succeeds
when the barrier's current phase has the other parity). The answer is right only while the barrier's current
phase is the waited-for phase p or p + 1:

* current phase p (incomplete): false — correct;
* current phase p + 1 (p completed): true — correct;
* current phase p + 2 (or p + 4, ...; p completed, same parity): false — phase p was **skipped**: the waiter missed
  it and now waits for p + 2 (a stall; a deadlock when the other side waits on the waiter);
* current phase p - 1 (or p - 3, ...; the waiter runs ahead): true at once — the completion of phase p - 2, which
  has p's parity, is taken for p's: the **ABA** ambiguity; a consumer reads a stage's previous contents.

The protocol keeps every wait in the exact window: the consumer of slot i has waited for slot i - S (the previous
use of the stage), so its full barrier is at least at phase i // S; the producer of slot i waited for the release
of slot i - S. :class:`PhaseBarrier` keeps the true phase count beside the parity, so :meth:`PhaseBarrier.try_wait_parity` with
``target`` raises :class:`ABAError` whenever the parity answer differs from the truth. :class:`Ring` drives the
protocol; :func:`timeline` gives the prologue / steady state / drain times of a producer and a consumer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RingError", "ABAError", "PhaseBarrier", "parity_answer", "classify", "Ring", "Timeline", "timeline"]


class RingError(ValueError):
    """A ring operation that breaks the full/empty protocol."""


class ABAError(RingError):
    """A parity wait whose answer is wrong for the phase the waiter means (phase skipped or ABA)."""


def parity_answer(current_phase: int, parity: int) -> bool:
    """What ``mbarrier.try_wait.parity`` returns when the barrier's current phase is ``current_phase`` (phases
    numbered from 0, all below it completed): True iff the current phase's parity differs from ``parity``."""
    if parity not in (0, 1):
        raise RingError(f"phaseParity {parity}: 0 or 1 (PTX ISA §9.7.13.15.16)")
    return (current_phase & 1) != parity


def classify(current_phase: int, target: int) -> str:
    """How a wait for phase ``target`` by parity fares at ``current_phase``: ``"pending"``, ``"complete"``,
    ``"skipped"`` (target completed but the parity says not: current - target even and >= 2) or ``"aba"``
    (target not reached but the parity says done: target - current odd)."""
    truth = current_phase > target
    said = parity_answer(current_phase, target & 1)
    if truth == said:
        return "complete" if truth else "pending"
    return "skipped" if truth else "aba"


@dataclass
class PhaseBarrier:
    """An mbarrier as the ring sees it: ``count`` arrivals complete a phase; ``phase`` is the current phase's
    number (its parity is the hardware's phase bit); ``pending`` arrivals still missing."""

    count: int
    phase: int = 0
    pending: int = field(default=-1)

    def __post_init__(self):
        if not 1 <= self.count < 2 ** 20:
            raise RingError(f"expected arrival count {self.count}: 1 .. 2^20 - 1 (PTX ISA §9.7.13.15.1)")
        if self.pending < 0:
            self.pending = self.count

    def arrive(self, n: int = 1) -> None:
        if n < 1 or n > self.pending:
            raise RingError(f"{n} arrivals with {self.pending} pending: more arrivals than the phase expects")
        self.pending -= n
        if self.pending == 0:
            self.phase += 1
            self.pending = self.count

    def try_wait_parity(self, parity: int, target: int | None = None) -> bool:
        """The hardware's answer; with ``target`` (the phase the waiter means) raise :class:`ABAError` when it is
        wrong for that phase."""
        ans = parity_answer(self.phase, parity)
        if target is not None:
            if target & 1 != parity:
                raise RingError(f"waiting for phase {target} with parity {parity}: the parity of phase {target} is "
                                f"{target & 1}")
            kind = classify(self.phase, target)
            if kind in ("skipped", "aba"):
                raise ABAError(f"try_wait.parity {parity} for phase {target} at phase {self.phase}: "
                               + ("phase skipped — it completed, but the parity names phase "
                                  f"{self.phase} as pending, so the waiter waits for phase {target + 2}"
                                  if kind == "skipped" else
                                  f"ABA — the barrier is in phase {self.phase}, and the completion of phase "
                                  f"{self.phase - 1}, of the same parity as {target}, is taken for phase {target}'s"))
        return ans


class Ring:
    """An S-stage ring: ``full[s]`` (count 1: the producer's arrive.expect_tx, the bytes modelled as landing at
    once) and ``empty[s]`` (``consumers`` arrivals). :meth:`produce` / :meth:`consume` / :meth:`release` take the
    slot number i and check each parity wait against the phase it means (``check=True``)."""

    def __init__(self, stages: int, consumers: int = 1, check: bool = True):
        if stages < 1:
            raise RingError(f"{stages} stages: a ring has at least one stage")
        self.stages = stages
        self.full = [PhaseBarrier(1) for _ in range(stages)]
        self.empty = [PhaseBarrier(consumers) for _ in range(stages)]
        self.check = check

    def slot(self, i: int) -> tuple[int, int]:
        """(stage, lap) of slot i: stage i % S, lap i // S; the full wait's parity is lap & 1, the empty wait's
        (lap & 1) ^ 1 (lap 0 passes on a fresh barrier: its phase -1 is taken as complete)."""
        if i < 0:
            raise RingError(f"slot {i}: slots are numbered from 0")
        return i % self.stages, i // self.stages

    def can_produce(self, i: int) -> bool:
        s, lap = self.slot(i)
        return self.empty[s].try_wait_parity((lap & 1) ^ 1, lap - 1 if self.check and lap > 0 else None)

    def produce(self, i: int) -> None:
        if not self.can_produce(i):
            raise RingError(f"slot {i}: stage {i % self.stages} is still in use (empty barrier not released)")
        self.full[i % self.stages].arrive()

    def can_consume(self, i: int) -> bool:
        s, lap = self.slot(i)
        return self.full[s].try_wait_parity(lap & 1, lap if self.check else None)

    def consume(self, i: int) -> None:
        if not self.can_consume(i):
            raise RingError(f"slot {i}: stage {i % self.stages} is not full yet")

    def release(self, i: int) -> None:
        self.empty[i % self.stages].arrive()


@dataclass(frozen=True)
class Timeline:
    """Per slot: ``load_start``, ``load_end``, ``mma_start``, ``mma_end``; ``prologue`` (time to the first MMA),
    ``drain`` (after the last load lands), ``total``, ``utilization`` = busy MMA time / total."""

    load_start: list
    load_end: list
    mma_start: list
    mma_end: list
    prologue: float
    drain: float
    total: float
    utilization: float


def timeline(stages: int, n: int, load: float, mma: float, issue: float = 0.0) -> Timeline:
    """A producer issuing ``n`` loads (each takes ``load`` from issue to landing; issues ``issue`` apart at least)
    into an S-stage ring, a consumer spending ``mma`` per slot: slot i's load starts when stage i % S is released
    (slot i - S consumed); its MMA starts when it has landed and the previous MMA is done.
    Steady state: the consumer never waits when S·mma ≥ load + mma (the ring hides the latency)."""
    if stages < 1 or n < 1 or load < 0 or mma <= 0 or issue < 0:
        raise RingError("stages >= 1, n >= 1, load >= 0, mma > 0, issue >= 0")
    ls, le, ms, me = [], [], [], []
    for i in range(n):
        start = max(ls[-1] + issue if ls else 0.0, me[i - stages] if i >= stages else 0.0)
        ls.append(start)
        le.append(start + load)
        ms.append(max(le[i], me[-1] if me else 0.0))
        me.append(ms[i] + mma)
    total = me[-1]
    return Timeline(ls, le, ms, me, ms[0], total - le[-1], total, n * mma / total)
