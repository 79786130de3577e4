"""The lesson-1 benchmark script runs (a tiny trace, no chapter): it is a report, not a timed test."""
import importlib.util
from pathlib import Path


def test_bench_runs(capsys):
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_l01.py"
    spec = importlib.util.spec_from_file_location("bench_l01", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--accesses", "2048", "--no-chapter"]) == 0
    out = capsys.readouterr().out
    assert "wavefronts 128-bit st" in out and "sectors 32-bit, random" in out and "occupancy() calls" in out
