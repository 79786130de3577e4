"""Lesson 6 measurement plan (h100lab.measure.l06) without a GPU: case lists, input generation, robustness."""
import numpy as np
import pytest

from h100lab.cuda import compiler
from h100lab.measure import l06
from h100lab.tensorcore import shapes


def test_probe_forms_match_the_kernel_file():
    src = compiler.kernel_source("l06_wgmma_probe")
    for form in l06.PROBE_FORMS:
        assert f"probe_{form}(" in src
        sp = l06._spec(form)
        assert sp.opcode() in src


def test_every_type_combination_has_10000_outputs():
    per = {}
    for c in l06.numerics_cases():
        sp = l06._spec(c["form"])
        per[c["form"]] = per.get(c["form"], 0) + c["grid"] * 64 * sp.n
    pairs = {(l06._spec(f).dtype, l06._spec(f).atype, l06._spec(f).btype) for f in per}
    assert len(pairs) == 17          # f16 (2 D types), bf16, tf32, fp8 4 pairs x 2, int8 4 pairs, b1
    assert min(per.values()) >= 10_000


def test_case_ids_unique_and_deterministic():
    cases = l06.fragment_cases() + l06.descriptor_cases() + l06.ldmatrix_cases() + l06.gemm_cases() + \
        l06.numerics_cases()
    assert len({c["id"] for c in cases}) == len(cases)
    c = l06.numerics_cases()[3]
    a, b = l06.build_case(c), l06.build_case(c)
    assert (a["img"] == b["img"]).all() and (a["c_in"] == b["c_in"]).all()


def test_descriptor_cases_fit_and_differ():
    outs = {}
    for c in l06.descriptor_cases()[::4]:
        outs[c["id"]] = l06.model_case(c).tobytes()
    assert len(set(outs.values())) > len(outs) // 2


def test_one_failing_case_keeps_the_others():
    class Broken:
        def compile_kernel(self, name):
            raise RuntimeError("no GPU here")
    recs = l06.run_cases(Broken(), l06.gemm_cases()[:2])
    assert [r["ok"] for r in recs] == [False, False] and all(r["error"] for r in recs)


def test_main_without_gpu_returns_2(monkeypatch):
    from h100lab import cuda
    monkeypatch.setattr(cuda, "available", lambda: False)
    assert l06.main([]) == 2
