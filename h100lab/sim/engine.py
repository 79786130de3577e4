"""A small discrete-event engine: a clock in nanoseconds, processes written as generator functions,
one-shot events, and callbacks at a time.

It follows simpy's shape (``Environment`` → :class:`Engine`, ``env.process(gen)``, ``yield
env.timeout(d)`` → ``yield d``, ``yield event``) but keeps only what the machine model needs, because
speed matters here: lesson 8 simulates whole-GEMM schedules of ~10^6 events and must stay under 2 s.
Measured with ``benchmarks/bench_l03.py`` (CPU time, best of several, on the project's shared 2-core
machine): the bare producer/consumer handshake runs at 1.6–1.75 M steps/s on this engine and at
0.85–0.98 M steps/s on simpy 4.1.2; the full lesson-3 model (mbarrier bytes, pipes) on top reaches
0.65–0.75 M events/s without trace (10^6 events in 1.3–1.5 s) and 0.41–0.43 M with it. With simpy
underneath, the engine's share alone would add ~0.5 µs per event (the difference of the bare
handshakes) and push 10^6 events to ~1.8–2.0 s, at lesson 8's limit. That measurement is why the model
has its own engine.

What keeps it fast (and must keep the schedule exact): the queue is a heap of plain tuples
``(time, sequence number, fn, arg)``; a process's wake-up is one closure over its generator's ``send``,
the queue and the sequence counter, created once; and a process whose next wake-up is strictly earlier
than everything queued continues at once instead of going through the heap — it is exactly the entry
the run loop would pop next, so the order and the step count are unchanged.

A process is a generator. It may yield

* a number — sleep that many ns (``yield 12.5``);
* a :class:`Sleep` — sleep ``ns`` and then receive ``value`` (``tok = yield Sleep(4.0, tok)``);
* an :class:`Event` — wait until it is triggered (plus the event's ``delay``); the ``yield``
  evaluates to the event's value;
* ``None`` — yield control and continue at the same time (after other ready work).

Deterministic: ties in time run in the order they were scheduled.
"""
from __future__ import annotations

import gc
import heapq
import itertools
from typing import Any, Callable, Generator, Iterable

__all__ = ["Engine", "Event", "Process", "Sleep", "Deadlock", "SimulationError"]

_heappush = heapq.heappush


class SimulationError(RuntimeError):
    """A simulation that cannot proceed (a process raised, or the model was misused)."""


class Deadlock(SimulationError):
    """Every remaining process waits on an event that nothing can trigger any more."""

    def __init__(self, blocked: list[tuple[str, str]], now: float):
        self.blocked = blocked
        self.now = now
        lines = "; ".join(f"{p} waits on {e}" for p, e in blocked)
        super().__init__(f"deadlock at {now:.1f} ns: {lines}")


class Sleep:
    """What a process yields to sleep ``ns`` nanoseconds and then receive ``value``."""

    __slots__ = ("ns", "value")

    def __init__(self, ns: float, value: Any = None):
        self.ns = ns
        self.value = value


class Event:
    """A one-shot event. ``succeed(value)`` triggers it; waiting processes resume with ``value``
    ``delay`` ns later (a wake-up latency); callbacks ``fn(arg)`` registered with :meth:`on` run at
    the trigger time. ``label`` names it in deadlock reports."""

    __slots__ = ("engine", "_label", "triggered", "value", "delay", "_waiters")

    def __init__(self, engine: "Engine", label: str = "event", delay: float = 0.0):
        self.engine = engine
        self._label = label        # a str, or (format, *args) formatted on first read (hot paths)
        self.triggered = False
        self.value: Any = None
        self.delay = delay
        self._waiters: list = []   # Process objects or (callable, arg) pairs

    @property
    def label(self) -> str:
        """The event's name in deadlock reports."""
        lab = self._label
        if lab.__class__ is tuple:
            lab = self._label = lab[0].format(*lab[1:])
        return lab

    @label.setter
    def label(self, value: str) -> None:
        self._label = value

    def __repr__(self) -> str:
        return f"Event({self.label!r}{', triggered' if self.triggered else ''})"

    def succeed(self, value: Any = None) -> "Event":
        """Trigger now; everything waiting on it is scheduled at the current time."""
        if self.triggered:
            raise SimulationError(f"event {self.label!r} triggered twice")
        self.triggered = True
        self.value = value
        waiters = self._waiters
        if waiters:
            self._waiters = []
            eng = self.engine
            t = eng.now + self.delay
            q, nxt = eng._q, eng._next
            for w in waiters:
                if w.__class__ is Process:
                    w._waiting = None
                    _heappush(q, (t, nxt(), w._resume, value))
                else:
                    w[0](w[1])
        return self

    def on(self, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` when the event triggers (right away if it already has)."""
        if self.triggered:
            fn(arg)
        else:
            self._waiters.append((fn, arg))


class Process:
    """A running generator. ``done`` is an :class:`Event` triggered with its return value."""

    __slots__ = ("engine", "name", "gen", "done", "_waiting", "_resume", "__weakref__")

    def __init__(self, engine: "Engine", gen: Generator, name: str):
        self.engine = engine
        self.name = name
        self.gen = gen
        self.done = Event(engine, f"end of {name}")
        self._waiting: Event | None = None
        self._resume = _stepper(self, engine, gen)   # one closure, reused for every wake-up

    def __repr__(self) -> str:
        return f"Process({self.name!r})"


def _stepper(proc: Process, eng: "Engine", gen: Generator) -> Callable[[Any], None]:
    """The wake-up function of ``proc``: send ``value`` into the generator and schedule what it yields.
    A closure over the queue, the generator's ``send`` and the sequence counter (no attribute lookups
    on the hot path)."""
    send = gen.send
    q = eng._q
    nxt = eng._next
    push = _heappush

    def step(value: Any) -> None:
        while True:
            try:
                cmd = send(value)
            except StopIteration as stop:
                eng._live -= 1
                proc.done.succeed(stop.value)
                return
            except Exception as exc:  # name the process in the error
                raise SimulationError(f"process {proc.name!r} failed at {eng.now:.1f} ns: {exc}") from exc
            cls = cmd.__class__
            if cls is float or cls is int:
                if cmd < 0:
                    raise SimulationError(f"process {proc.name!r} asked to sleep {cmd} ns")
                t = eng.now + cmd
                value = None
            elif cls is Sleep:
                t = eng.now + cmd.ns
                value = cmd.value
            elif cls is Event:
                if not cmd.triggered:
                    proc._waiting = cmd
                    cmd._waiters.append(proc)
                    return
                t = eng.now
                value = cmd.value
            elif cmd is None:
                t = eng.now
                value = None
            else:
                raise SimulationError(f"process {proc.name!r} yielded {cmd!r}: yield a delay in ns, a Sleep, "
                                      f"an Event or None")
            # Would this wake-up be the next entry the run loop pops? It would be if it is strictly earlier
            # than everything queued (at a tie the queued entry was scheduled first and runs first) and not
            # past run(until=...). Then run it now, as the loop would, without the heap round trip: the same
            # order, the same times, one engine step.
            if (not q or t < q[0][0]) and t <= eng._until:
                eng.now = t
                eng.steps += 1
                continue
            push(q, (t, nxt(), step, value))
            return

    return step


class Engine:
    """The clock and the event queue. ``now`` is the current time in ns."""

    def __init__(self):
        self.now = 0.0
        self._q: list = []                       # heap of (time, sequence number, fn, arg)
        self._next = itertools.count(1).__next__   # sequence numbers: ties run in scheduling order
        self._live = 0
        self.processes: list[Process] = []
        self.steps = 0   # callbacks executed so far (the benchmark's "events")
        self._until = float("inf")   # the running run()'s time limit

    def _push(self, t: float, fn: Callable, arg: Any) -> None:
        _heappush(self._q, (t, self._next(), fn, arg))

    # -- public API -----------------------------------------------------------------------------
    def event(self, label: str = "event", delay: float = 0.0) -> Event:
        """A new untriggered event (waiting processes resume ``delay`` ns after it triggers)."""
        return Event(self, label, delay)

    def process(self, gen: Generator, name: str = "process") -> Process:
        """Start a generator as a process at the current time."""
        p = Process(self, gen, name)
        self.processes.append(p)
        self._live += 1
        self._push(self.now, p._resume, None)
        return p

    def at(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` at absolute time ``t`` ns (not before now)."""
        if t < self.now:
            raise SimulationError(f"cannot schedule at {t} ns, before now ({self.now} ns)")
        self._push(t, fn, arg)

    def timeout(self, delay: float, value: Any = None, label: str = "timeout") -> Event:
        """An event that triggers ``delay`` ns from now."""
        ev = Event(self, label)
        self._push(self.now + delay, ev.succeed, value)
        return ev

    def all_of(self, events: Iterable[Event], label: str = "all_of") -> Event:
        """An event triggered when every event in ``events`` has triggered (value: their values)."""
        evs = list(events)
        out = Event(self, label)
        left = [len(evs)]
        if not evs:
            out.succeed([])
            return out

        def one(_):
            left[0] -= 1
            if left[0] == 0:
                out.succeed([e.value for e in evs])

        for e in evs:
            e.on(one)
        return out

    def run(self, until: float | None = None) -> float:
        """Run until nothing is left to do (or until ``until`` ns); returns the final time.

        Raises :class:`Deadlock` when processes are still waiting but no event is scheduled.
        """
        q = self._q
        pop = heapq.heappop
        steps = 0
        gc_was_on = gc.isenabled()
        gc.disable()   # a long trace of small tuples would otherwise trigger repeated full collections
        self._until = float("inf") if until is None else until
        try:
            if until is None:
                while q:
                    t, _, fn, arg = pop(q)
                    self.now = t
                    fn(arg)
                    steps += 1
            else:
                while q:
                    if q[0][0] > until:
                        self.now = until
                        return until
                    t, _, fn, arg = pop(q)
                    self.now = t
                    fn(arg)
                    steps += 1
        finally:
            self.steps += steps
            self._until = float("inf")
            if gc_was_on:
                gc.enable()
        if self._live:
            blocked = [(p.name, p._waiting.label if p._waiting else "?") for p in self.processes
                       if not p.done.triggered]
            raise Deadlock(blocked, self.now)
        return self.now
