"""h100lab.fitcache: a fit is remembered under the content of its inputs and the package's code, in the process and
on disk; a changed input, a changed model or ``H100LAB_CACHE=off`` recomputes."""
from __future__ import annotations

import pickle

import pytest

from h100lab import fitcache
from h100lab.sim.timing import H200_ESTIMATES


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("H100LAB_CACHE", str(tmp_path))
    fitcache.clear_memory()
    yield tmp_path / "fits"
    fitcache.clear_memory()


def _counted(value):
    calls = []

    def compute():
        calls.append(1)
        return value
    return compute, calls


def test_memo_in_process_on_disk_and_recomputes_on_a_changed_input(cache):
    compute, calls = _counted({"x": 1.5})
    parts = {"records": [{"a": 1, "b": 0.1}], "max_iter": 80}
    first = fitcache.memo("demo", parts, compute)
    assert calls == [1] and len(list(cache.glob("demo-*.pickle"))) == 1
    # equal content, other objects and key order: the same object, not computed again
    assert fitcache.memo("demo", {"max_iter": 80, "records": [{"b": 0.1, "a": 1}]}, compute) is first
    # a new process: the disk copy, equal, not computed again
    fitcache.clear_memory()
    assert fitcache.memo("demo", parts, compute) == first and calls == [1]
    # a changed input (one float, in the last bit) and another fit name are new keys
    fitcache.memo("demo", {"records": [{"a": 1, "b": 0.1 + 2 ** -56}], "max_iter": 80}, compute)
    fitcache.memo("other", parts, compute)
    assert calls == [1, 1, 1]


def test_a_changed_model_source_recomputes(cache, monkeypatch):
    compute, calls = _counted(3)
    fitcache.memo("demo", [1], compute)
    fitcache.clear_memory()
    monkeypatch.setitem(fitcache._DIGEST, "src", "another package source")
    fitcache.memo("demo", [1], compute)
    assert calls == [1, 1]
    # and the digest really follows the code: it covers this package's modules' bytes
    monkeypatch.delitem(fitcache._DIGEST, "src")
    d = fitcache.source_digest()
    assert len(d) == 64 and d == fitcache.source_digest()


def test_off_keeps_nothing_on_disk_and_a_bad_file_is_recomputed(cache, monkeypatch, tmp_path):
    compute, calls = _counted([1, 2])
    monkeypatch.setenv("H100LAB_CACHE", "off")
    assert fitcache.cache_dir() is None
    fitcache.memo("demo", "p", compute)
    fitcache.clear_memory()
    fitcache.memo("demo", "p", compute)
    assert calls == [1, 1] and not cache.exists()
    # a truncated file, and a file holding another key, are computed again (and rewritten)
    monkeypatch.setenv("H100LAB_CACHE", str(tmp_path))
    fitcache.clear_memory()
    fitcache.memo("demo", "p", compute)
    path = next(cache.glob("demo-*.pickle"))
    path.write_bytes(b"\x80\x05trunc")
    fitcache.clear_memory()
    assert fitcache.memo("demo", "p", compute) == [1, 2] and len(calls) == 4
    path.write_bytes(pickle.dumps(("not this key", "stale")))
    fitcache.clear_memory()
    assert fitcache.memo("demo", "p", compute) == [1, 2] and len(calls) == 5
    fitcache.clear_memory()
    assert fitcache.memo("demo", "p", compute) == [1, 2] and len(calls) == 5    # rewritten: read again


def test_an_exception_is_not_remembered(cache):
    calls = []

    def boom():
        calls.append(1)
        raise ValueError("no data")
    for _ in range(2):
        with pytest.raises(ValueError, match="no data"):
            fitcache.memo("demo", 1, boom)
    assert calls == [1, 1] and not list(cache.glob("*.pickle"))


def test_a_timing_table_survives_the_disk():
    t = H200_ESTIMATES.model2(tma_op_ns=12.5)
    u = pickle.loads(pickle.dumps(t))
    assert u.rows() == t.rows() and u.name == t.name and u.tma_op_ns == 12.5
    with pytest.raises(AttributeError, match="no parameter"):
        u.no_such_parameter


def test_the_memory_model_fit_is_remembered_and_a_changed_record_refits(cache, monkeypatch):
    """h100lab.validation.timing.fit through the cache: synthetic records (the model's own, as in
    tests/test_timing_model.py), one changed measurement is a new fit."""
    from h100lab.sim.stream import STREAM_KERNEL, analytic_stream, config_from_record
    from h100lab.measure import timing_sweep as ts
    from h100lab.validation import timing as vt

    truth = H200_ESTIMATES.model2(hbm_read_bytes_per_ns=4600.0, hbm_bytes_per_ns=4200.0, tma_op_ns=20.0)
    stream = []
    for c in ts.stream_cases():
        r = dict(c, grid=ts.stream_grid(c, 132), tiles_per_cta=ts.plan_tiles(c, 132), flags=0, ok=True)
        cfg = config_from_record(r)
        a = analytic_stream(cfg, truth, STREAM_KERNEL)
        r.update(ns_per_tile=a.span_ns / cfg.tiles, moved_gbps=cfg.moved_bytes / a.kernel_ns)
        stream.append(r)
    calls = []
    real = vt._fit
    monkeypatch.setattr(vt, "_fit", lambda *a: calls.append(1) or real(*a))
    f = vt.fit(stream, None, None, None, max_iter=3)
    assert vt.fit([dict(r) for r in stream], None, None, None, max_iter=3) is f and len(calls) == 1
    fitcache.clear_memory()
    g = vt.fit(stream, None, None, None, max_iter=3)
    assert len(calls) == 1 and g.timing.rows() == f.timing.rows() and g.lsq.values == f.lsq.values
    cal = next(i for i, r in enumerate(stream) if vt.SPLITS["stream"].calibrate(r))
    changed = [dict(r, ns_per_tile=r["ns_per_tile"] * 1.2) if i == cal else r for i, r in enumerate(stream)]
    h = vt.fit(changed, None, None, None, max_iter=3)
    assert len(calls) == 2 and h.lsq.values != f.lsq.values
    assert vt.fit(stream, None, None, None, max_iter=4) is not f and len(calls) == 3


def test_on_disk_gives_a_fresh_equal_object_from_the_disk(cache):
    compute, calls = _counted({"x": [1, 2]})
    first = fitcache.on_disk("demo", [7], compute)
    second = fitcache.on_disk("demo", [7], compute)
    assert calls == [1] and second == first and second is not first      # no copy kept in the process
    second["x"].append(3)                                                   # a caller's change stays its own
    assert fitcache.on_disk("demo", [7], compute) == {"x": [1, 2]} and calls == [1]


def test_a_parsed_ptx_module_comes_back_from_the_disk_equal_and_fresh(cache, monkeypatch):
    from h100lab.emu import api, ptx

    text = "\n".join([".version 8.0", ".target sm_90a", ".address_size 64", ".visible .entry k(.param .u64 p)",
                      "{", ".reg .b32 %r<2>;", "mov.u32 %r1, 5;", "ret;", "}"])
    api._parse(text)
    assert not list(cache.glob("ptx-module-*.pickle"))                      # a short text: parsed, never kept
    monkeypatch.setattr(api, "PARSE_CACHE_MIN", 0)
    a, b = api._parse(text), api._parse(text)
    assert a == ptx.parse(text) and b == a and b is not a
    assert len(list(cache.glob("ptx-module-*.pickle"))) == 1
    with pytest.raises(ptx.PtxSyntaxError):                                 # a parse error is never kept
        api._parse(text.replace("mov.u32", "mov.u32 {"))
    assert len(list(cache.glob("ptx-module-*.pickle"))) == 1
