"""Lesson 7 measurement plan (h100lab.measure.l07) without a GPU: case lists, output counts, robustness."""
import numpy as np
import pytest

from h100lab.cuda import compiler
from h100lab.measure import l07


def test_sparse_forms_match_the_kernel_files():
    for form in l07.SPARSE_FORMS:
        src = compiler.kernel_source(l07.sparse_module(form))
        assert f"sp_{form}(" in src and l07._sspec(form).opcode() in src


def test_timing_forms_match_the_kernel_file():
    src = compiler.kernel_source("l07_wgmma_timing")
    for t, n in l07.TIMING_FORMS:
        assert f"tim_{t}_n{n}(" in src


def test_10000_random_outputs_per_sparse_type_and_fp8_pairing():
    per = {}
    for c in l07.sparse_cases():
        if c["input"] in ("normal", "garbage", "unordered", "special", "chain4", "scaled0"):
            sp = l07._sspec(c["form"])
            key = (sp.atype, sp.btype)
            per[key] = per.get(key, 0) + c["grid"] * 64 * sp.n
    assert {a for a, _ in per} == {"f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"}
    assert min(per.values()) >= 10_000
    fp8 = {}
    for c in l07.fp8_gemm_cases():
        fp8[(c["atype"], c["btype"])] = fp8.get((c["atype"], c["btype"]), 0) + c["grid"] * 64 * 64
    assert len(fp8) == 4 and min(fp8.values()) >= 10_000


def test_case_ids_unique_and_inputs_deterministic():
    cases = l07.sparse_cases() + l07.fp8_gemm_cases() + l07.epilogue_cases() + l07.accumulation_cases() + \
        l07.timing_cases()
    assert len({c["id"] for c in cases}) == len(cases)
    c = l07.sparse_cases()[2]
    a, b = l07.build_sparse(c), l07.build_sparse(c)
    assert (a["img"] == b["img"]).all() and (a["meta"] == b["meta"]).all()


def test_invalid_cases_really_hold_invalid_metadata():
    from h100lab.tensorcore import sparsity
    for c in [x for x in l07.sparse_cases() if x["input"] == "invalid"][::5]:
        b = l07.build_sparse(c)
        with pytest.raises(sparsity.SparsityError):
            sparsity.check_metadata(b["nib"][0][0], b["spec"].atype)


def test_one_failing_case_keeps_the_others():
    class Broken:
        def compile_kernel(self, name):
            raise RuntimeError("no GPU here")
    recs = l07.run_cases(Broken(), l07.epilogue_cases()[:2])
    assert [r["ok"] for r in recs] == [False, False] and all(r["error"] for r in recs)


def test_budget_skips_are_recorded():
    recs = l07.run_cases(None, l07.epilogue_cases()[:2], budget_s=-1)
    assert all(not r["ok"] and "budget" in r["error"] for r in recs)


def test_main_without_gpu_returns_2(monkeypatch):
    from h100lab import cuda
    monkeypatch.setattr(cuda, "available", lambda: False)
    assert l07.main([]) == 2


def test_dep_forms_match_the_kernel_file_and_do_the_same_work():
    src = compiler.kernel_source("l07_wgmma_deps")
    for mode, n, a, g in l07.DEP_FORMS:
        assert f"dep_{mode}_n{n}_a{a}_g{g}(" in src
    cases = l07.dep_cases()
    assert len({c["id"] for c in cases}) == len(cases)
    assert {c["iters"] * c["per_group"] for c in cases} == {l07.DEP_WGMMAS}
    assert all(c["iters"] % c["sets"] == 0 for c in cases)


def test_meta_probe_inputs_name_every_nibble_and_isolate_one_slot():
    from h100lab.tensorcore import sparsity
    for c in l07.meta_cases():
        b = l07.build_sparse(c)
        sp = b["spec"]
        nibs = [b["nib"][g][0] for g in range(c["grid"])]
        assert [int(n[0, 0]) for n in nibs] == list(range(16))       # CTA v: every group of row 0 holds v
        vals = b["vals"][0][0]
        nz = (vals != 0).sum(axis=1)
        if c["input"] == "meta_basis":
            assert (nz == 1).all()
        else:
            assert (nz == sp.packed_k).all()
        # the registers carry exactly these nibbles for the lanes sp-sel names
        for g in (0, 5, 14):
            regs = b["meta"].reshape(c["grid"], 128)[g]
            assert (sparsity.metadata_from_registers(regs, sp.atype, sp.sp_sel) == b["nib"][g][0]).all()


def test_only_names_datasets(monkeypatch, capsys):
    from h100lab import cuda
    monkeypatch.setattr(cuda, "available", lambda: True)
    monkeypatch.setattr(cuda, "run_metadata", lambda cmd: {"command": cmd})
    assert l07.main(["--only", "nonsense"]) == 2
    assert "no dataset l07/nonsense" in capsys.readouterr().err


def test_static_depth_forms_match_the_kernel_file():
    src = compiler.kernel_source("l07_wgmma_deps")
    for mode, n, a, g in l07.DEPTH_FORMS:
        assert f"DEP4(dep_{mode}_n{n}_a{a}_g{g}," in src
    cases = l07.depth_cases()
    assert len({c["id"] for c in cases}) == len(cases) and all(c["static"] for c in cases)


def test_zero_align_cases_put_a_zero_against_2_to_120():
    from h100lab.tensorcore import numerics
    for c in l07.zero_align_cases():
        b = l07.build_zero_align(c)
        sp = b["spec"]
        a, bt = numerics.to_float(b["A"][0], sp.atype), numerics.to_float(b["B"][0], sp.btype).T
        zero_side, big_side = (a[:, 1:], bt[1:, :]) if c["input"] == "zero_a" else (bt[1:, :], a[:, 1:])
        assert (zero_side == 0).all() and (big_side == 1.75 * 2.0 ** 120).all()
