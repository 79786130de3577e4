"""nvidia-smi's clock trace, read back: the benchmarks run ``nvidia-smi --query-gpu=timestamp,clocks.sm,...
--format=csv -lms N`` beside a timed run (a sample every N ms) and record the SM clock's range in a dataset's
metadata. No GPU needed: these read the CSV text the trace left."""
from __future__ import annotations

import csv
import statistics
from typing import Sequence

__all__ = ["mhz", "sm_clock_mhz", "event_reasons", "clock_range"]

#: how the SM-clock column of ``--query-gpu=clocks.sm`` is headed (nvidia-smi 5xx: ``clocks.current.sm [MHz]``)
SM_CLOCK = ("clocks.current.sm", "clocks.sm")
#: how the column of ``clocks_throttle_reasons.active`` is headed (nvidia-smi 5xx: ``clocks_event_reasons.active``)
REASONS = ("clocks_event_reasons", "clocks_throttle_reasons")


def mhz(field: str) -> float | None:
    """One clock field (``"1980 MHz"``) in MHz; None for a field that holds no number (``[N/A]``, empty)."""
    try:
        return float(str(field).strip().split()[0])
    except (ValueError, IndexError):
        return None


def _samples(text: str) -> list[tuple[float, str]]:
    """Each sample of the trace that holds an SM clock: (MHz, its event-reason mask, ``"?"`` without that column);
    the columns found by their headers (:data:`SM_CLOCK`, :data:`REASONS`)."""
    r = csv.DictReader(text.splitlines(), skipinitialspace=True)
    names = r.fieldnames or []
    clock = next((h for h in names if h.startswith(SM_CLOCK)), None)
    why = next((h for h in names if h.startswith(REASONS)), None)
    if clock is None:
        return []
    out = []
    for row in r:
        m = mhz(row.get(clock, ""))
        if m is not None:
            out.append((m, row.get(why, "?") if why else "?"))
    return out


def sm_clock_mhz(text: str) -> list[float]:
    """The SM clock of every sample of a trace (the CSV text, header first; the column headed ``clocks.sm`` or
    ``clocks.current.sm ...``), in MHz, in order; samples without a number are left out; [] without that column."""
    return [m for m, _ in _samples(text)]


def event_reasons(text: str) -> dict[str, int]:
    """How many samples of a trace carry each clock-event bit mask (``"0x...01"``: idle, ...), in first-seen
    order; samples without an SM clock are left out."""
    out: dict[str, int] = {}
    for _, k in _samples(text):
        out[k] = out.get(k, 0) + 1
    return out


def clock_range(samples: Sequence[float]) -> list[float] | None:
    """``[min, median, max]`` of clock samples (the datasets' ``smi_trace_mhz``); None for none."""
    return [min(samples), statistics.median(samples), max(samples)] if samples else None
