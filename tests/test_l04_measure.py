"""Lesson 4 measurement and validation: case matrices, buffers, packing, model images; GPU parts marked."""
import numpy as np
import pytest

from h100lab import tma
from h100lab.measure import l04 as m
from h100lab.validation import CheckResult, all_checks
from h100lab.validation import l04 as v

BOTH_SIDES = ["tensorRank 1..5", "interleave needs tensorRank >= 3", "globalAddress 16-byte aligned",
              "globalAddress 32-byte aligned with INTERLEAVE_32B", "globalDim 1..2^32", "globalStrides multiple of 16",
              "globalStrides < 2^40", "globalStrides multiple of 32 with INTERLEAVE_32B", "boxDim 1..256",
              "inner box bytes multiple of 16", "inner box <= swizzle span", "elementStrides 1..8",
              "OOB NaN fill only with floating-point types"]


def verdicts():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c["id"]: (c["rule"], tma.verdict(**m.model_args(c))) for c in m.encode_cases()}


def test_encode_matrix_covers_every_rule_on_both_sides():
    by_rule = {}
    for rule, ver in verdicts().values():
        by_rule.setdefault(rule, set()).add(ver.ok)
    for rule in BOTH_SIDES:
        assert by_rule.get(rule) == {True, False}, rule
    vs = verdicts()
    assert vs["base"][1].ok and not vs["rank6"][1].ok and vs["stride16"][1].doc_warnings
    assert vs["il32_sw128"][1].ok and vs["il32_sw128"][1].doc_warnings      # measured: the driver accepts it
    assert all(c["dtype"].startswith("CU_TENSOR_MAP_DATA_TYPE_") for c in m.encode_cases())


def test_image_cases_are_valid_maps_and_cover_the_topics():
    cases = m.image_cases() + m.store_cases() + m.im2col_cases()
    kinds = {c["kind"] for c in cases}
    assert kinds == {"load", "store", "reduce", "im2col"}
    loads = [c for c in cases if c["kind"] == "load"]
    assert {c["swizzle"].rsplit("_", 1)[1] for c in loads} == {"NONE", "32B", "64B", "128B"}
    assert {c["rank"] for c in loads} == {1, 2, 3, 4, 5}
    assert any(min(c["coords"]) < 0 for c in loads) and any(c["dst_offset"] == 384 for c in loads)
    assert any(c["interleave"].endswith("16B") for c in loads) and any(c["oob_fill"].endswith("FMA") for c in loads)
    assert {c["op"] for c in cases if c["kind"] == "reduce"} == set(m.REDUCE_OPS)
    for c in cases:
        tm = m._map_for(c)
        assert m.region_bytes(c, tm.smem_bytes) % 16 == 0
        assert tm.smem_bytes + c["dst_offset"] + 1024 < 200 * 1024


def test_buffers_and_packing():
    c = m.image_cases()[0]
    g = m.tensor_buffer(c)
    assert g.size % 16 == 0 and g.size >= m._map_for(c).global_bytes
    c16 = next(x for x in m.image_cases() if x["id"] == "sweep_BFLOAT16_128B_origin")
    assert list(m.tensor_buffer(c16).view("<u2")[:4]) == [0, 1, 2, 3]
    rnd = next(x for x in m.store_cases() if x["id"] == "red_add_FLOAT32")
    assert np.isfinite(m.tensor_buffer(rnd).view(np.float32)).all()
    blob = np.repeat(np.arange(50, dtype=np.uint8), 200)
    assert np.array_equal(m.unpack(m.pack(blob)), blob) and len(m.pack(blob)) < blob.size
    assert np.array_equal(m.unpack(m.pack(bytes(blob))), blob)


def test_model_image_of_a_case():
    c = next(x for x in m.image_cases() if x["id"] == "dst384_128B")
    img = m.model_image(c)
    tm = m._map_for(c)
    assert (img[:384] == m.SENTINEL).all() and (img[384 + tm.smem_bytes:] == m.SENTINEL).all()
    st = next(x for x in m.store_cases() if x["id"] == "st_edge")
    after = m.model_store(st)
    assert (after != m.GSENTINEL).sum() > 0 and (after == m.GSENTINEL).sum() > 0


def fake_records():
    """Records as the GPU would write them if the hardware agreed with the model (tests the checks)."""
    enc = []
    for c in m.encode_cases()[:12]:
        r = dict(c, address=(1 << 20) + c["address_offset"])
        r["result"] = tma.verdict(**m.model_args(c)).result
        enc.append(r)
    imgs = []
    for c in m.image_cases()[:6] + m.im2col_cases()[:2]:
        imgs.append(dict(c, completed=True, image=m.pack(m.model_image(c)), tx_bytes=m._map_for(c).tx_bytes))
    for c in m.store_cases()[:3]:
        imgs.append(dict(c, completed=True, global_after=m.pack(m.model_store(c))))
    return enc, imgs


def test_checks_pass_on_agreeing_records_and_catch_disagreement():
    enc, imgs = fake_records()
    assert v.check_encode(enc).ok and v.run_on("l04/encode_verdicts", enc).ok
    res = v.run_on("l04/tma_images", imgs)
    assert res.ok and res.cases == len(imgs)
    enc[0] = dict(enc[0], result="CUDA_ERROR_INVALID_VALUE")
    enc.append(dict(enc[1], result="not_callable"))
    r = v.check_encode(enc)
    assert r.mismatches == 1 and "skipped" in r.note
    bad = dict(imgs[0], image=m.pack(np.zeros(10, np.uint8)))
    assert v.check_images([bad]).mismatches == 1
    img = m.unpack(imgs[1]["image"])
    img[100] ^= 1
    r = v.check_images([dict(imgs[1], image=m.pack(img))])
    assert r.mismatches == 1 and r.examples[0]["first"] == 100
    assert v.check_images([dict(imgs[1], completed=False)]).mismatches == 1
    g = m.unpack(imgs[-1]["global_after"])
    g[0] ^= 0xFF
    assert v.check_stores([dict(imgs[-1], global_after=m.pack(g))]).mismatches == 1


def test_checks_are_registered():
    titles = [c.title for c in all_checks() if c.lesson == 4]
    assert len(titles) == 3 and all(c.dataset.startswith("l04/") for c in all_checks() if c.lesson == 4)
    assert isinstance(v.check_images([]), CheckResult)


def _compiler():
    from h100lab import cuda
    reason = cuda.compiler_unavailable_reason()
    if reason:
        pytest.skip(reason)
    return cuda


def test_kernel_compiles_for_sm90a():
    cuda = _compiler()
    prog = cuda.compile_kernel("l04_tma_image")
    assert "cp.async.bulk.tensor.5d" in prog.ptx and "cp.reduce.async.bulk.tensor.2d" in prog.ptx
    assert ".im2col" in prog.ptx and len(prog.cubin) > 0


@pytest.mark.gpu
def test_gpu_images_match_the_model():
    cases = [c for c in m.image_cases() if c["id"] in ("sweep_BFLOAT16_128B_inner", "edge_nan_neg_corner",
                                                        "dst384_64B", "es_1_3_edge", "rank5")]
    cases += m.store_cases()[:2] + m.im2col_cases()[:1]
    recs = m.measure_images(cases, progress=False)
    res = v.run_on("l04/tma_images", recs)
    assert res.ok, res.examples


@pytest.mark.gpu
def test_gpu_encode_verdicts_match_the_model():
    recs = m.measure_encode(m.encode_cases())
    res = v.check_encode(recs)
    assert res.ok, res.examples


META = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.159.04", "cuda": "13.0",
        "date": "2026-01-01", "command": "python -m h100lab.measure.l04"}


def test_hardware_report_reads_datasets(tmp_path, monkeypatch):
    from h100lab import data
    monkeypatch.setenv("H100LAB_DATA", str(tmp_path))
    assert v.hardware_report(live=False)["source"] is None
    enc, imgs = fake_records()
    data.write("l04/encode_verdicts", enc, META)
    data.write("l04/tma_images", imgs, META)
    hw = v.hardware_report(live=False)
    assert hw["source"] == "dataset" and "NVIDIA H200" in hw["where"]
    assert hw["encode"].ok and hw["images"].ok and hw["stores"].ok
    from h100lab.validation import run_all
    results = {c.title: r for c, ds, r in run_all() if c.lesson == 4}
    assert results and all(r is not None and r.ok for r in results.values())


def test_live_subset_ids_exist():
    ids = {c["id"] for c in m.image_cases() + m.store_cases() + m.im2col_cases()}
    assert set(v.LIVE_IMAGE_IDS) <= ids


def test_faults_and_refusals_are_verdicts_the_model_must_reproduce():
    by_id = {c["id"]: c for c in m.image_cases() + m.store_cases() + m.im2col_cases()}
    fault = dict(by_id["edge_zero_mixed"], completed=False, fault="CUDA_ERROR_ILLEGAL_INSTRUCTION",
                 fault_alone="CUDA_ERROR_ILLEGAL_INSTRUCTION", tx_bytes=0)
    assert v.check_images([fault]).ok                                  # the model faults the same way
    assert v.check_images([dict(fault, fault="CUDA_ERROR_MISALIGNED_ADDRESS",
                                fault_alone="CUDA_ERROR_MISALIGNED_ADDRESS")]).mismatches == 1
    assert v.check_images([dict(fault, fault_alone=None)]).mismatches == 1      # did not repeat alone
    ok_case = by_id["sweep_BFLOAT16_128B_inner"]
    assert v.check_images([dict(ok_case, completed=False, fault="CUDA_ERROR_ILLEGAL_INSTRUCTION",
                                fault_alone="CUDA_ERROR_ILLEGAL_INSTRUCTION", tx_bytes=0)]).mismatches == 1
    assert v.check_stores([dict(by_id["red_or_INT64"], fault="CUDA_ERROR_ILLEGAL_INSTRUCTION",
                                fault_alone="CUDA_ERROR_ILLEGAL_INSTRUCTION")]).ok
    refused = dict(ok_case, box_dim=[256, 16], completed=False, encode_result="CUDA_ERROR_INVALID_VALUE")
    assert v.check_images([refused]).ok                                # model refuses the 512-B inner box too
    assert v.check_images([dict(ok_case, completed=False, encode_result="CUDA_ERROR_INVALID_VALUE")]).mismatches == 1
    # a record whose copy completed although the model predicts a fault is a mismatch
    done = {k: x for k, x in fault.items() if k not in ("fault", "fault_alone")}
    assert v.check_images([dict(done, completed=True, image=m.pack(np.zeros(8, np.uint8)))]).mismatches == 1


def test_isolated_measurement_restarts_after_a_fault(monkeypatch):
    """measure_images runs cases in child processes; a faulting case is recorded, re-run alone, and the
    remaining cases go to a fresh child (simulated children: no GPU needed)."""
    from h100lab import cuda
    cases = [c for c in m.image_cases() if c["id"] in ("sweep_UINT8_NONE_origin", "edge_zero_mixed", "rank3")]
    calls = []

    def fake_child(folder, todo, program, timeout):
        calls.append([c["id"] for c in todo])
        recs = []
        for c in todo:
            if c["id"] == "edge_zero_mixed":
                return recs, {"id": c["id"], "error": "CUDA_ERROR_ILLEGAL_INSTRUCTION", "call": "cuCtxSynchronize"}, ""
            recs.append(dict(c, completed=True, image=m.pack(m.model_image(c)), tx_status=1))
        return recs, None, ""

    monkeypatch.setattr(m, "_run_child", fake_child)
    monkeypatch.setattr(cuda, "compile_kernel", lambda name, **kw: object())
    recs = m.measure_images(cases, progress=False)
    assert [r["id"] for r in recs] == [c["id"] for c in cases]
    assert calls == [["sweep_UINT8_NONE_origin", "edge_zero_mixed", "rank3"], ["edge_zero_mixed"], ["rank3"]]
    bad = recs[1]
    assert bad["fault"] == bad["fault_alone"] == "CUDA_ERROR_ILLEGAL_INSTRUCTION" and not bad["completed"]
    assert v.check_images(recs).ok


def test_child_output_parsing(monkeypatch, tmp_path):
    """_run_child reads the worker's start/record/fault lines; a child that dies inside a case blames that case."""
    import json
    import subprocess
    cases = m.image_cases()[:3]

    def run_writing(lines, rc):
        def fake_run(cmd, **kw):
            (tmp_path / "out.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
            return subprocess.CompletedProcess(cmd, rc, "", "boom")
        return fake_run

    rec = dict(cases[0], completed=True)
    monkeypatch.setattr(subprocess, "run", run_writing([{"start": cases[0]["id"]}, {"record": rec},
                                                        {"start": cases[1]["id"]},
                                                        {"fault": cases[1]["id"], "error": "CUDA_ERROR_X",
                                                         "call": "cuCtxSynchronize"}], 3))
    recs, fault, err = m._run_child(tmp_path, cases, None, 10)
    assert [r["id"] for r in recs] == [cases[0]["id"]] and fault["id"] == cases[1]["id"] and fault["error"] == "CUDA_ERROR_X"
    monkeypatch.setattr(subprocess, "run", run_writing([{"start": cases[0]["id"]}], -11))
    recs, fault, err = m._run_child(tmp_path, cases, None, 10)
    assert recs == [] and fault == {"id": cases[0]["id"], "error": "process exited with -11", "call": ""}
    assert json.loads((tmp_path / "cases.json").read_text())[0]["id"] == cases[0]["id"]


def test_probe_cases_cover_the_measured_rules():
    ids = {c["id"] for c in m.image_cases() + m.store_cases() + m.im2col_cases()}
    for needed in ("unaligned_x3", "aligned_x16_u8", "st_unaligned_x", "nhwc_c0_unaligned", "bits_TFLOAT32_special",
                   "st_tf32_special", "st_gran_u8", "red_gran_add_u32", "red_or_INT64", "ilq_r4_1121", "ilx_r4_edge"):
        assert needed in ids
    enc = {c["id"]: c for c in m.encode_cases()}
    assert enc["rank1_null_strides"]["global_strides_null"] and m.model_args(enc["rank1_null_strides"])["global_strides"] is None
    assert len(m.F32_SPECIAL) == len(set(m.F32_SPECIAL)) == 40
