"""The model-vs-silicon report rows and tables (h100lab.cuda.silicon), on made-up checks and datasets."""
from __future__ import annotations

import json

import pytest

from h100lab import cuda
from h100lab.cuda import silicon
from h100lab.data import Dataset
from h100lab.validation import CheckResult, SiliconCheck

META = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.159.04", "cuda": "13.0",
        "date": "2026-11-04", "command": "python -m h100lab.measure l01"}


def _results():
    ok = SiliconCheck("Occupancy | blocks per SM", 1, "l01/occupancy", lambda ds: CheckResult(len(ds.records), 0))
    bad = SiliconCheck("Bank wavefronts", 1, "l01/banks", lambda ds: CheckResult(3, 1, [{"pattern": "x"}], "one off"))
    empty = SiliconCheck("Swizzle image", 4, "l04/swizzle", lambda ds: CheckResult(0, 0))
    gone = SiliconCheck("Descriptor verdicts", 4, "l04/encode", lambda ds: CheckResult(1, 0))
    out = []
    for c, ds in ((ok, Dataset("l01/occupancy", META, [{}] * 5)), (bad, Dataset("l01/banks", META, [{}] * 3)),
                  (empty, Dataset("l04/swizzle", META, [])), (gone, None)):
        out.append((c, ds, c.run(ds) if ds is not None else None))
    return out


def test_rows_verdicts():
    t = silicon.rows(_results())
    assert [(r.verdict, r.cases, r.mismatches) for r in t] == [
        ("match", 5, 0), ("MISMATCH", 3, 1), ("no cases", 0, 0), ("no dataset", None, None)]
    assert t[1].examples == [{"pattern": "x"}] and t[1].note == "one off"
    assert "580.159.04" in t[0].measured_on and "python -m h100lab.measure l01" in t[0].measured_on
    assert [r.behaviour for r in silicon.failures(t)] == ["Bank wavefronts", "Swizzle image"]
    assert [r.dataset for r in silicon.missing(t)] == ["l04/encode"]
    assert "python -m h100lab.measure l04" in t[3].note


def test_markdown_table_has_a_line_per_check_and_escapes_pipes():
    md = silicon.markdown_table(silicon.rows(_results()))
    lines = md.splitlines()
    assert len(lines) == 2 + 4
    assert lines[0].count("|") == 8 and all(ln.count("|") - ln.count("\\|") == 8 for ln in lines)
    assert "Occupancy \\| blocks per SM" in md and "`data/l01/occupancy.json`" in md
    assert "✗ MISMATCH" in lines[3] and "✓ match" in lines[2] and "– no dataset" in lines[5]
    assert silicon.markdown_table([]).startswith("_No silicon check")


def test_measure_command():
    assert silicon.measure_command(4) == "python -m h100lab.measure l04"


def test_kernels_markdown_lists_every_kernel():
    md = silicon.kernels_markdown()
    for name in cuda.list_kernels():
        assert f"`{name}.cu`" in md


def test_data_dir_override_is_scoped(tmp_path, monkeypatch):
    from h100lab import data

    monkeypatch.delenv("H100LAB_DATA", raising=False)
    before = data.data_dir()
    (tmp_path / "l01").mkdir()
    (tmp_path / "l01" / "x.json").write_text(json.dumps({"meta": META, "records": [{"a": 1}]}))
    with silicon.data_dir_override(tmp_path):
        assert data.available("l01/x") and data.load("l01/x").records == [{"a": 1}]
    assert data.data_dir() == before


def test_remeasure_needs_a_gpu(tmp_path):
    if cuda.available():
        pytest.skip("a GPU is present")
    with pytest.raises(cuda.CudaUnavailable, match="cannot re-measure"):
        silicon.remeasure([1], tmp_path)


def test_live_table_renders():
    md = silicon.markdown_table(silicon.rows())
    assert md
