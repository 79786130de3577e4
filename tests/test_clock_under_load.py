"""benchmarks/clock_under_load.py: nvidia-smi's CSV is parsed into samples; malformed rows are dropped."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "clock_under_load", Path(__file__).parent.parent / "benchmarks" / "clock_under_load.py")
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
parse_samples = _mod.parse_samples


def test_parse_samples_keeps_numeric_rows_and_reads_reason_bits():
    text = ("2026/12/02 03:00:00.050, 1755, 612.35, 51, 0x0000000000000000\n"
            "2026/12/02 03:00:00.100, 1650, 699.80, 53, 0x0000000000000004\n"
            "2026/12/02 03:00:00.150, [N/A], 700.00, 53, 0x0\n"
            "2026/12/02 03:00:00.2")
    s = parse_samples(text)
    assert [x["sm_mhz"] for x in s] == [1755.0, 1650.0]
    assert s[1]["reasons"] == 4 and s[0]["power_w"] == 612.35 and s[1]["temp_c"] == 53.0
