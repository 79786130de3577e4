"""nvrtc.compile_kernel's disk cache: a second process (here: a cleared in-process cache) gets NVRTC's output back
without compiling; the key covers the options and the package's headers; H100LAB_CACHE=off writes nothing."""
import pytest

from h100lab import nvrtc

pytestmark = pytest.mark.skipif(nvrtc.unavailable_reason() is not None, reason="needs NVRTC")


def _no_compile(*a, **k):
    raise AssertionError("compiled although the disk cache holds the result")


def test_second_compile_comes_from_disk_and_equals_the_first(tmp_path, monkeypatch):
    monkeypatch.setenv("H100LAB_CACHE", str(tmp_path))
    monkeypatch.setattr(nvrtc, "_CACHE", {})
    first = nvrtc.compile_kernel("smoke_vector_add")
    assert len(list(tmp_path.glob("smoke_vector_add-*.json"))) == 1
    monkeypatch.setattr(nvrtc, "_CACHE", {})
    monkeypatch.setattr(nvrtc, "compile", _no_compile)
    again = nvrtc.compile_kernel("smoke_vector_add")
    assert (again.ptx, again.cubin, again.log, again.options) == (first.ptx, first.cubin, first.log, first.options)


def test_key_covers_options_and_headers(tmp_path, monkeypatch):
    src = nvrtc.kernel_source("smoke_vector_add")
    k0 = nvrtc._disk_key(src, "sm_90a", ())
    assert nvrtc._disk_key(src, "sm_90a", ("-DX=1",)) != k0
    assert nvrtc._disk_key(src + "\n", "sm_90a", ()) != k0
    inc = tmp_path / "include"
    (inc / "h100lab").mkdir(parents=True)
    (inc / "h100lab" / "a.cuh").write_text("// one")
    monkeypatch.setattr(nvrtc, "INCLUDE_DIR", inc)
    k1 = nvrtc._disk_key(src, "sm_90a", ())
    (inc / "h100lab" / "a.cuh").write_text("// two")
    assert nvrtc._disk_key(src, "sm_90a", ()) != k1


def test_cache_off_writes_nothing_and_a_corrupt_entry_recompiles(tmp_path, monkeypatch):
    monkeypatch.setenv("H100LAB_CACHE", "off")
    assert nvrtc.cache_dir() is None
    monkeypatch.setenv("H100LAB_CACHE", str(tmp_path))
    monkeypatch.setattr(nvrtc, "_CACHE", {})
    nvrtc.compile_kernel("smoke_vector_add")
    (entry,) = tmp_path.glob("smoke_vector_add-*.json")
    entry.write_text("{not json")
    monkeypatch.setattr(nvrtc, "_CACHE", {})
    c = nvrtc.compile_kernel("smoke_vector_add")
    assert "vector_add" in nvrtc.entry_points(c.ptx)
