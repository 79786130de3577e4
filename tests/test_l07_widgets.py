"""Lesson 7 widgets and figures (headless): FP8 number line, quantisation lab, sparsity packer, commit/wait
timeline — each result is the model's (quant, sparsity, timing)."""
import numpy as np
import pytest

pytest.importorskip("ipywidgets")

from h100lab.tensorcore import quant, sparsity, timing
from h100lab.widgets import l07_wgmma as W


def test_fp8_number_line_rounds_and_saturates_like_cvt():
    ex = W.fp8_number_line()
    r = ex.result
    assert ex.static() is not None and r["code"] == int(quant.cvt_fp8(np.float32(300.0), "e4m3")) and not r["saturated"]
    assert r["max"] == 448.0 and r["grid"]["e4m3"].size == 126 and r["grid"]["e5m2"].size == 123
    ex.controls["value"].value = 500.0                      # above 448: clipped to the largest finite value
    assert ex.result["saturated"] and ex.result["dequantised"] == 448.0 and "saturated" in ex.text.value
    ex.controls["log2_scale"].value = 1                     # s = 2: 500 / 2 fits
    assert not ex.result["saturated"] and ex.result["max"] == 896.0
    ex.controls["fmt"].value = "e5m2"
    assert ex.result["max"] == 2 * 57344.0


def test_quantisation_lab_table_is_the_models():
    ex = W.quantisation_lab()
    r = ex.result
    assert ex.static() is not None and set(r["table"]) == set(quant.GRANULARITIES)
    assert r["table"] == quant.scaling_errors(W._lab_tensor("activations"), "e4m3")
    assert r["table"]["block_1x128"]["rel_rms"] < r["table"]["tensor"]["rel_rms"]     # outlier channels [model]
    ex.controls["kind"].value = "gradients"
    t = ex.result["table"]
    assert t["tensor"]["underflow"] > t["block_1x128"]["underflow"]
    ex.controls["granularity"].value = "tensor"
    assert ex.result["scales"] == 1


def test_sparsity_packer_round_trips_and_locates_the_nibbles():
    from h100lab.tensorcore import numerics
    for atype in W.PACKER_TYPES:
        r = W.packer_result(atype, seed=5, row=37)
        kept, grp = sparsity.granularity(atype)
        assert len(r["values"]) == r["k"] // 2 and len(r["nibbles"]) == r["k"] // grp
        dense = sparsity.decompress(numerics.from_float(r["values"], atype)[None, :],
                                    np.asarray(r["nibbles"], np.uint8)[None, :], atype)[0]
        assert np.array_equal(numerics.to_float(dense, atype), r["dense"])
        nib = np.zeros((64, len(r["nibbles"])), np.uint8)
        nib[:] = r["nibbles"]
        regs = sparsity.metadata_registers(nib, atype, 0)
        for g, (t, q) in enumerate(r["where"]):
            assert (int(regs[t]) >> (4 * q)) & 15 == r["nibbles"][g]
            marked = nib.copy()
            marked[37, g] ^= 0b1010 if atype == "tf32" else 0b0011
            assert sparsity.metadata_from_registers(sparsity.metadata_registers(marked, atype, 0), atype, 0)[37, g] \
                == marked[37, g]
    ex = W.sparsity_packer()
    assert ex.static() is not None and "thread 0" in ex.text.value
    ex.controls["row"].value = 9
    assert ex.result["where"][0][0] != 0


def test_commit_wait_timeline_more_groups_in_flight_keep_the_tensor_core_busier():
    ex = W.commit_wait_timeline(per_group=2, work=40)         # the chapter's setting
    r = ex.result
    assert ex.static() is not None and "model" in ex.text.value
    assert r["curve"][1] > r["curve"][0] and len(r["timeline"].spans) == 8 * r["per_group"]
    # other work longer than the latency hides it even at wait_group 0 (the H200's latency: ~38 cycles after the
    # last wgmma leaves the tensor core)
    long = W.timeline_result(per_group=2, depth=1, work=400)
    assert long["curve"][1] == pytest.approx(long["curve"][0])
    assert r["utilisation"] == pytest.approx(r["curve"][r["depth"]])
    ex.controls["depth"].value = 0
    assert ex.result["utilisation"] == pytest.approx(r["curve"][0])
    p, _ = W.timing_params()
    assert ex.result["exec"] == timing.exec_cycles("bf16", 128, p)
