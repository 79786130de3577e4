"""h100lab.measure.smi: nvidia-smi's clock trace read back (the SM-clock range the l08 datasets record)."""
from __future__ import annotations

from hypothesis import given, strategies as st

from h100lab.measure import smi

TRACE = """timestamp, clocks.current.sm [MHz], power.draw [W], temperature.gpu, clocks_event_reasons.active
2026/12/02 19:55:32.570, 345 MHz, 80.30 W, 38, 0x0000000000000001
2026/12/02 19:55:32.676, [N/A], 80.30 W, 38, 0x0000000000000001
2026/12/02 19:55:32.780, 1980 MHz, 650.10 W, 52, 0x0000000000000000
2026/12/02 19:55:32.880, 1755 MHz, 700.00 W, 55, 0x0000000000000004
"""


def test_a_trace_reads_back():
    assert smi.sm_clock_mhz(TRACE) == [345.0, 1980.0, 1755.0]          # the [N/A] sample is left out
    assert smi.clock_range(smi.sm_clock_mhz(TRACE)) == [345.0, 1755.0, 1980.0]
    assert smi.event_reasons(TRACE) == {"0x0000000000000001": 1, "0x0000000000000000": 1,
                                        "0x0000000000000004": 1}
    assert smi.clock_range([]) is None and smi.sm_clock_mhz("") == []
    assert smi.mhz(" 1410 MHz") == 1410.0 and smi.mhz("[N/A]") is None and smi.mhz("") is None


@given(st.lists(st.integers(210, 1980), min_size=1, max_size=50))
def test_the_range_brackets_every_sample(clocks):
    text = "timestamp, clocks.current.sm [MHz]\n" + "".join(f"t, {c} MHz\n" for c in clocks)
    got = smi.sm_clock_mhz(text)
    assert got == [float(c) for c in clocks]
    lo, med, hi = smi.clock_range(got)
    assert lo == min(clocks) <= med <= hi == max(clocks)


def test_the_clock_column_is_found_by_its_header():
    short = "timestamp, clocks.sm\n1, 1980 MHz\n2, 1755 MHz\n"          # --query-gpu=clocks.sm as older drivers head it
    assert smi.sm_clock_mhz(short) == [1980.0, 1755.0] and smi.event_reasons(short) == {"?": 2}
    assert smi.sm_clock_mhz("timestamp, power.draw [W]\n1, 80 W\n") == []
