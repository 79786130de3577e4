"""Exercise set 6: every exercise is registered, its answer means what the statement says, and the kernel
exercises' prompts and planted mistakes are diagnosed (PTX ISA §9.7.15: wgmma; §9.7.14.5.15: ldmatrix)."""
from pathlib import Path

import numpy as np
import pytest

from h100lab import emu
from h100lab.grading import check
from h100lab.grading.answers import l06 as L
from h100lab.grading.registry import all_exercises, get
from h100lab.tensorcore import MatrixDescriptor, accumulator_layout

ROOT = Path(__file__).resolve().parent.parent


def test_registered_and_graded_in_the_solutions():
    ids = [e.id for e in all_exercises(6)]
    assert ids == [f"6.{i}" for i in range(1, 13)]
    text = (ROOT / "solutions" / "06-wgmma.md").read_text()
    for i in ids:
        var = ("kernel_" if i in ("6.9", "6.10", "6.11", "6.12") else "answer_") + i.replace(".", "_")
        assert f":tags: [grade:{i}]" in text and f'check("{i}", {var})' in text


def test_answers_mean_what_the_statements_say():
    a = {e.id: e.answer() for e in all_exercises(6) if e.id not in ("6.9", "6.10", "6.11", "6.12")}
    row, col = accumulator_layout(64)
    t, r = a["6.1"]
    assert (row[t, r], col[t, r]) == L.E1_ELEMENT
    assert a["6.2"] == 128 and a["6.3"] == [8, 16, 32, 32, 256]
    d = MatrixDescriptor.decode(a["6.4"])
    assert (d.start, d.sbo, d.swizzle, d.base_offset) == (0x2400, 1024, "128B", 0)
    assert a["6.5"] == [1, 3, 5] and a["6.6"] == [19, 23, 2]
    assert a["6.7"][0] > a["6.7"][1] == 4 and a["6.8"] == 1.0


def test_value_mistakes_get_their_hints():
    with pytest.raises(AssertionError, match="K = 8"):
        check("6.3", [16, 16, 32, 32, 256])
    with pytest.raises(AssertionError, match="Two values share a register"):
        check("6.2", 64)
    with pytest.raises(AssertionError, match="divided by 16"):
        check("6.4", 0x2400 | 16 << 16 | 1024 << 32 | 1 << 62)
    with pytest.raises(AssertionError, match="exact sum"):
        check("6.8", 1.0 + 3 * 2.0 ** -14)


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
@pytest.mark.parametrize("ex, source, words", [
    ("6.9", "PROMPT_6_9", "chapter's descriptor"), ("6.9", "PLANTED_6_9_SBO", "8 rows"),
    ("6.9", "PLANTED_6_9_TYPE", "layout-type"), ("6.9", "PLANTED_6_9_ORDER", "layout-type"),
    ("6.10", "PLANTED_6_10_LINEAR", "other 8 KB tile"), ("6.10", "PLANTED_6_10_ELEMS", "counts bytes"),
    ("6.11", "PLANTED_6_11_CHAPTER", "chapter's 128B"), ("6.11", "PLANTED_6_11_NOXOR", "same XOR"),
    ("6.11", "PLANTED_6_11_SWAP", "wrong registers"),
    ("6.12", "PROMPT_6_12", "what comes after it"), ("6.12", "LDSM_6_12", "what comes after it"),
    ("6.12", "KEEP_6_12", "what comes after it"),
    ("6.12", "NONE_6_12", "first wgmma must follow"),
])
def test_kernel_mistakes_are_diagnosed(ex, source, words):
    with pytest.raises(AssertionError, match=words):
        check(ex, getattr(L, source))


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
def test_solution_kernels_pass_and_counts():
    for ex, source in (("6.9", L.SOLUTION_6_9), ("6.10", L.SOLUTION_6_10), ("6.11", L.SOLUTION_6_11),
                       ("6.12", L.SOLUTION_6_12)):
        check(ex, source)
    A, Bt = L._inputs(1)
    d = L._ss_variant(1, lambda k: 32 * k, lambda k: 32 * k)        # the model's D of the right kernel
    prog = emu.compile(L.SOLUTION_SS, name="ss.cu")
    D = emu.zeros(4096, np.float32)
    emu.launch(prog.function("gemm_ss"), 1, 128, emu.to_device(A), emu.to_device(Bt), D, shared_mem=17 * 1024)
    assert np.array_equal(D.to_host().view(np.uint32), d.reshape(-1).view(np.uint32))


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
def test_variant_tiles_are_what_the_model_reads():
    """The redesigned tiles mean what their statements say: the 64B-swizzled 64 x 64 x 32 tile (6.9) and the two-atom
    64 x 64 x 128 tile (6.10) give the model's D through the right descriptors, and the chapter's 128B descriptor
    on the 64B tile does not."""
    from h100lab.grading.kernels import run_source

    d9 = L._ss_variant(L._SEED9, lambda s: 32 * s, lambda s: 32 * s, 512, "64B", k=32, stored="64B", row_bytes=64)
    out = run_source(L.SOLUTION_6_9, L._runner("gemm_ss", L._SEED9, k=32), name="x.cu").outputs["d"]
    assert np.array_equal(out.view(np.uint32), d9.view(np.uint32))
    chapter = L._ss_variant(L._SEED9, lambda s: 32 * s, lambda s: 32 * s, 1024, "128B", k=32, stored="64B",
                            row_bytes=64)
    assert not np.array_equal(chapter.view(np.uint32), d9.view(np.uint32))
    d10 = L._ss_variant(L._SEED10, lambda s: (s // 4) * 8192 + 32 * (s % 4), lambda s: (s // 4) * 8192 + 32 * (s % 4),
                        k=128)
    out = run_source(L.SOLUTION_6_10, L._runner("gemm_ss", L._SEED10, k=128, smem=33 * 1024), name="y.cu").outputs["d"]
    assert np.array_equal(out.view(np.uint32), d10.view(np.uint32))


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
def test_6_12_mask_is_causal_and_the_fence_is_what_matters():
    """6.12's reference is the model on the causally masked A (it differs from the unmasked product), and the
    solution differs from its misplaced variants only by where the fence stands."""
    unmasked = L._model_d(*[[M[:, 16 * k:16 * k + 16] for k in range(4)] for M in L._inputs(L._SEED12)])
    assert not np.array_equal(L._expect_6_12()["d"].view(np.uint32), unmasked.view(np.uint32))
    fence = 'asm volatile("wgmma.fence.sync.aligned;" ::: "memory");'
    for planted in (L.PROMPT_6_12, L.KEEP_6_12, L.LDSM_6_12):
        assert planted.count(fence) == 1 and sorted(planted.replace(fence, "").split()) == \
            sorted(L.SOLUTION_6_12.replace(fence, "").split())
