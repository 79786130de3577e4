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
