"""Exercise set 7: the reference answers agree with the model's other views (decode, unpack, decompress,
metadata_from_registers), the kernel exercises' planted mistakes differ from the solution only where the exercise
says, and exercise 7.8 (promotion with per-K-block scales) passes its solution, diagnoses every planted mistake with
its own hint and takes its reference from the tensor-core model with windows finer than the scale blocks."""
import numpy as np
import pytest

from h100lab import emu
from h100lab.grading import check
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
    for sol, planted, n in [(L.SOLUTION_7_6, L.PROMPT_7_6, 1), (L.SOLUTION_7_6, L.PLANTED_7_6_PLAIN, 1),
                            (L.SOLUTION_7_6, L.PLANTED_7_6_ROWBITS, 1), (L.SOLUTION_7_6, L.PLANTED_7_6_ONEHALF, 1),
                            (L.SOLUTION_7_7, L.PROMPT_7_7, 2), (L.SOLUTION_7_7, L.PLANTED_7_7_NORELU, 2),
                            (L.SOLUTION_7_7, L.PLANTED_7_7_BYTES, 2), (L.SOLUTION_7_7, L.PLANTED_7_7_HALVES, 1),
                            (L.SOLUTION_7_8, L.PROMPT_7_8, 2), (L.SOLUTION_7_8, L.PLANTED_7_8_WINDOW, 2),
                            (L.SOLUTION_7_8, L.PLANTED_7_8_AROWS, 2), (L.SOLUTION_7_8, L.PLANTED_7_8_BBLOCK, 2),
                            (L.SOLUTION_7_8, L.PLANTED_7_8_BROW, 2), (L.SOLUTION_7_8, L.PLANTED_7_8_ACOL, 2)]:
        changed = [d for d in difflib.ndiff(sol.splitlines(), planted.splitlines()) if d.startswith("- ")]
        assert len(changed) == n, changed
    fix = [d for d in difflib.ndiff(L.SOLUTION_7_8.splitlines(), L.PROMPT_7_8.splitlines()) if d.startswith("- ")]
    assert all("promote_scale" not in d for d in fix)            # only the body of promote_scale is the student's


def test_7_6_7_7_references_agree_with_the_chapters_epilogue_model():
    """7.6's tile (bf16 of D, row-major) is the global tile of the chapter's bf16 epilogue model, whatever the staging;
    7.7's reference, taken as e4m3 without the ReLU, is the chapter's e4m3 epilogue model bit for bit (so its stmatrix
    column order is the model's), and the ReLU zeroes exactly the negative values."""
    from h100lab.tensorcore import epilogue
    D = L._accumulators(L._SEED6)[0]
    assert np.array_equal(L._expect_7_6()["tile"].reshape(-1), np.asarray(epilogue.epilogue(D, "bf16").tile).view(np.uint8).reshape(-1))
    D7 = L._accumulators(L._SEED7)[0]
    assert np.array_equal(L._tile_77(L._SEED7, "e4m3", False).reshape(-1),
                          np.asarray(epilogue.epilogue(D7, "e4m3").tile).view(np.uint8).reshape(-1))
    t = L._expect_7_7()["tile"]
    neg = D7[:, epilogue.fp8_column_order(64)] < 0
    assert neg.any() and np.all(t[neg] == 0) and np.all(t[~neg & (D7[:, epilogue.fp8_column_order(64)] > 1e-3)] != 0)


def test_7_8_windows_are_finer_than_the_scale_blocks():
    """Every case promotes more often than once per K-block, so the chapter's one-scale-per-window index is wrong,
    and the reference's scales are per K-block: windows of one block share them."""
    from h100lab.tensorcore import accumulate
    assert all(K % 128 == 0 and interval < 4 and 4 % interval == 0 for K, interval, _ in L.CASES_7_8)
    K, interval, seed = L.CASES_7_8[0]
    qa, qb, SA, SB = L._inputs_7_8(K, seed)
    blk = np.arange(K // (32 * interval)) * interval // 4
    assert blk.tolist() == [0, 0, 1, 1]
    sa_w, sb_w = L._SCALINGS["right"](SA, SB, blk)
    assert np.array_equal(sa_w[:, 1], SA[:, 0]) and np.array_equal(sb_w[40, 2], SB[1, 1])
    got = np.asarray(L._model_7_8()["acc0"]).view(np.float32)
    exact = accumulate.fp8_gemm_exact(qa, qb, sa_w, sb_w, interval=interval)
    from h100lab.tensorcore import fragments
    D = fragments.accumulator_to_matrix(got.reshape(128, 32), 64).astype(np.float64)
    assert np.abs(D - exact).max() <= 1e-3 * np.abs(exact).max()


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
@pytest.mark.parametrize("source, hint", [
    ("PROMPT_7_8", "_UNSCALED"), ("PLANTED_7_8_WINDOW", "_WINDOW"), ("PLANTED_7_8_AROWS", "_AROWS"),
    ("PLANTED_7_8_BBLOCK", "_BBLOCK"), ("PLANTED_7_8_BROW", "_BROW"), ("PLANTED_7_8_ACOL", "_ACOL")])
def test_7_8_mistakes_are_diagnosed(source, hint):
    with pytest.raises(AssertionError) as err:
        check("7.8", getattr(L, source))
    assert getattr(L, hint) in str(err.value)


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
def test_7_8_solution_passes():
    check("7.8", L.SOLUTION_7_8)
