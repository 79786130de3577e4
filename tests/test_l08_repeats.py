"""The repeated l08 tables of device request repeats2 (issue 17): benchmarks/merge_gemm_repeats.py --table and
h100lab.validation.l08.repeat_median_rows / repeat_summary on any repeated table."""
import importlib.util
import json
import shutil

import pytest

from h100lab import data
from h100lab.design import perf
from h100lab.validation import l08


def _merge_module():
    spec = importlib.util.spec_from_file_location("merge", "benchmarks/merge_gemm_repeats.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


@pytest.mark.parametrize("table", ["gemm_bench_fp8_stagger", "gemm_steps_ablation"])
def test_merge_on_copies(tmp_path, table):
    """Three copies of a table: every configuration's median is the original's (vs_median 0, the model's error on
    the median the original's where the kernel is the same), the records never timing kinds, the trace found in
    the request's folder above the table's."""
    for r in range(3):
        (tmp_path / table / f"r{r}" / "l08").mkdir(parents=True)
        shutil.copy(data._path(f"l08/{table}"), tmp_path / table / f"r{r}" / "l08" / f"{table}.json")
    (tmp_path / "smi_trace.csv").write_text("timestamp, clocks.sm\n1, 1980 MHz\n2, 1755 MHz\n")
    recs, meta = _merge_module().merge(tmp_path / table, table)
    assert {r["repeat"] for r in recs} == {0, 1, 2} and all(r["kind"].startswith("repeat_") for r in recs)
    assert not any(r["kind"] in perf.TIME_KINDS for r in recs)
    assert meta["original"] == f"l08/{table}" and meta["smi_trace_mhz"] == [1755.0, 1867.5, 1980.0]
    assert f"--name l08/{table}" in meta["command"] and len(meta["repeats"]) == 3
    json.dumps(meta)
    ds = data.Dataset(f"l08/{table}_repeats", meta, recs)
    rows = l08.repeat_median_rows(ds)
    rep = l08.report()
    held = [r for r in rep.rows if r.dataset == f"l08/{table}"]
    assert len(rows) == len(held) and all(r["n"] == 3 and r["spread"] == 0.0 for r in rows)
    for r in rows:
        x = r["original"][f"l08/{table}"]
        assert x["vs_median"] == 0.0
        if x["same_kernel"]:
            assert x["error"] == pytest.approx(r["error"])
    s = l08.repeat_summary(ds)
    o = s["originals"][f"l08/{table}"]
    assert o["over5"] == 0 and o["n"] == len(rows)
    assert o["model_original"] == sum(abs(r.error) <= l08.TOLERANCE for r in held)
    if table == "gemm_steps_ablation":       # its step records also re-time l08/gemm_steps
        assert s["originals"]["l08/gemm_steps"]["n"] == len([r for r in rep.rows if r.dataset == "l08/gemm_steps"])
    else:                                    # the first stagger run's two early-copy forms: not the same kernel
        assert o["same_kernel"] == o["n"] - sum(r["variant"] in perf.EARLY_SCALE_COPY[f"l08/{table}"] for r in rows)


def test_bf16_table_unchanged():
    """The n128b table through the generalised code: the same 37 configurations, each against l08/gemm_bench."""
    rows = l08.repeat_median_rows()
    if not rows:
        pytest.skip("needs l08/gemm_bench_repeats")
    assert len(rows) == 37 and all("l08/gemm_bench" in r["original"] for r in rows)


TABLES = ["l08/gemm_bench_fp8_stagger_repeats", "l08/gemm_steps_ablation_repeats", "l08/gemm_bench_fp8_m256_repeats",
          "l08/gemm_bench_tmastore_repeats"]


@pytest.mark.parametrize("name", TABLES)
def test_committed_repeats(name):
    """Device request repeats2: five complete processes per table (five variant orders where the script takes
    --variants), the repeats agree (median spread < 2 %), no original of the kernel that runs now is more than 10 %
    off its repeat median, and the registered check passes at its floor."""
    if not data.available(name):
        pytest.skip(f"needs {name}")
    ds = data.load(name)
    runs = ds.meta["repeats"]
    assert len(runs) == 5 and all(r["complete"] for r in runs) and ds.meta["original"] == l08.REPEATED[name]
    if "ablation" not in name:
        assert len({tuple(r["variants"]) for r in runs}) == min(5, len(runs[0]["variants"]))
    assert all(r["kind"] == "smi" or r["kind"].startswith("repeat_") for r in ds.records)
    rows = l08.repeat_median_rows(ds)
    assert rows and all(r["n"] == 5 for r in rows)
    assert sorted(r["spread"] for r in rows)[len(rows) // 2] < 0.02
    s = l08.repeat_summary(ds)
    for o, v in s["originals"].items():
        assert v["over10"] == 0 and v["n"] == sum(o in r["original"] for r in rows)
    from h100lab import validation
    check = next(c for c in validation.all_checks() if c.dataset == name)
    res = check.run(ds)
    assert res.mismatches == 0 and res.cases == len(rows)
    assert s["within"] >= l08.ACHIEVED_REPEAT_TABLES[name] * len(rows)


def test_stagger_early_copy_forms_differ():
    """The first stagger run's two early-copy forms (perf.EARLY_SCALE_COPY) are not the kernel that runs now: their
    originals ran 6-12 % slower than the repeats; every same-kernel original within 5 %."""
    name = "l08/gemm_bench_fp8_stagger_repeats"
    if not data.available(name):
        pytest.skip(f"needs {name}")
    rows = l08.repeat_median_rows(name)
    old = [r["original"]["l08/gemm_bench_fp8_stagger"] for r in rows
           if not r["original"]["l08/gemm_bench_fp8_stagger"]["same_kernel"]]
    same = [r["original"]["l08/gemm_bench_fp8_stagger"] for r in rows
            if r["original"]["l08/gemm_bench_fp8_stagger"]["same_kernel"]]
    assert len(old) == 10 and all(x["vs_median"] > 0.05 for x in old)
    assert all(abs(x["vs_median"]) <= 0.05 for x in same)
