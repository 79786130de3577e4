"""Datasets in data/: complete metadata, readable, and the file format round-trips."""
from __future__ import annotations

import pytest

from h100lab import data


@pytest.mark.parametrize("name", data.names())
def test_committed_dataset_has_metadata_and_records(name):
    ds = data.load(name)
    assert ds.records, f"{name} has no records"
    for k in data.REQUIRED_META:
        assert str(ds.meta[k]).strip(), f"{name}: empty metadata {k}"
    cmd = ds.meta["command"]
    assert "h100lab.measure" in cmd or "benchmarks/" in cmd, \
        f"{name} was produced neither by a measurement script nor by a benchmark of benchmarks/"


def test_write_load_round_trip_and_compression(tmp_path, monkeypatch):
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    meta = {k: "x" for k in data.REQUIRED_META}
    small = [{"a": 1, "b": [1, 2]}]
    assert data.write("t/small", small, meta).name == "small.json"
    assert data.load("t/small").records == small
    big = [{"i": i, "pad": "y" * 64} for i in range(30000)]
    p = data.write("t/small", big, meta)  # grows past the threshold: stored compressed, plain file removed
    assert p.name == "small.json.gz" and not (tmp_path / "t" / "small.json").exists()
    assert data.load("t/small").records == big
    assert data.names() == ["t/small"]
    with pytest.raises(ValueError, match="lacks"):
        data.write("t/bad", small, {"gpu": "x"})
    with pytest.raises(FileNotFoundError):
        data.load("t/missing")
