"""Exercise set 7: the reference answers agree with the model's other views (decode, unpack, decompress,
metadata_from_registers), and the kernel exercises' planted mistakes differ from the solution only where the
exercise says."""
import numpy as np

from h100lab.grading.answers import l07 as L
from h100lab.grading.registry import get


def reference(ex_id):
    return get(ex_id).reference()
from h100lab.tensorcore import numerics, quant, sparsity


def test_prediction_answers_are_consistent_with_the_model():
    codes = reference("7.1")
    assert codes[3] == 0x7F and quant.decode_fp8(np.uint8(codes[0]), "e4m3") == quant.FP8_MAX["e4m3"]
    hi, lo = quant.unpack_x2(np.uint16(reference("7.2")), "e4m3")
    assert (float(hi), float(lo)) == L.E2_PAIR
    nib = np.array([reference("7.3")], np.uint8)
    dense = numerics.from_float(np.array([L.E3_ROW], np.float64), "f16")
    vals, _ = sparsity.compress(dense, "f16")
    assert np.array_equal(sparsity.decompress(vals, nib, "f16"), dense)
    t, q = reference("7.4")
    m = np.zeros((64, 8), np.uint8)
    m[:] = 0b0100
    m[L.E4["row"], L.E4["group"]] = 0b1101
    regs = sparsity.metadata_registers(m, "f16", sp_sel=L.E4["sp_sel"])
    assert (int(regs[t]) >> (4 * q)) & 15 == 0b1101
    s, y = reference("7.5")
    assert s * quant.FP8_MAX["e4m3"] == L.E5["amax"] and abs(y - L.E5["x"]) < 0.05 * L.E5["x"]


def test_planted_kernels_change_only_the_named_lines():
    import difflib
    for sol, planted, n in [(L.SOLUTION_EPI, L.PROMPT_7_6, 1), (L.SOLUTION_EPI, L.PLANTED_7_6_QUAD, 2),
                            (L.SOLUTION_EPI, L.PROMPT_7_7, 1), (L.SOLUTION_EPI, L.PLANTED_7_7_HALVES, 4),
                            (L.SOLUTION_GEMM, L.PROMPT_7_8, 1), (L.SOLUTION_GEMM, L.PLANTED_7_8_NOWAIT, 1)]:
        changed = [d for d in difflib.ndiff(sol.splitlines(), planted.splitlines()) if d.startswith("- ")]
        assert len(changed) == n, changed
