"""Exercise set 5's kernel exercise 5.10 (a multicast mask per column): the solution passes on every cluster shape
the grader runs, the prompt and every planted mask get their own hint, the hints come from the masks the issuers
computed (also when the emulator stopped the kernel), and the planted kernels differ from the solution only in the
mask (PTX ISA §9.7.9.25.4.1: bit i of ctaMask names %cluster_ctarank i)."""
import difflib

import numpy as np
import pytest

from h100lab import emu
from h100lab.grading import check
from h100lab.grading.answers import l05 as L

needs_nvrtc = pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
PLANTED = {"PROMPT_5_10": "_NOBODY", "PLANTED_5_10_ALL": "_EXTRA", "PLANTED_5_10_CONTIG": "_EXTRA",
           "PLANTED_5_10_NOSELF": "_ISSUER", "PLANTED_5_10_SELF": "_MISSING", "PLANTED_5_10_GRID": "_RANK"}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_kernels_change_only_the_mask(name):
    changed = [d for d in difflib.ndiff(L.SOLUTION_5_10.splitlines(), getattr(L, name).splitlines())
               if d.startswith("- ")]
    assert changed and all("mask" in d for d in changed), changed


def test_the_cases_need_a_strided_mask():
    """Every case has more than one column and more than one row, and the two cases' columns differ, so neither the
    chapter's every-CTA mask nor a mask written for one shape passes."""
    assert all(cols > 1 and n // cols > 1 and n % cols == 0 for n, cols, _, _ in L.E10_CASES)
    assert len({cols for _, cols, _, _ in L.E10_CASES}) == len(L.E10_CASES)
    assert L._column(4, 2, 1) == 0b1010 and L._column(8, 4, 3) == 0b10001000


def test_expected_sums_are_the_column_streams():
    exp = L._expect_5_10()
    for i, (n, cols, clusters, k) in enumerate(L.E10_CASES):
        x = L._tensor_5_10(i).reshape(cols, k, 256)
        for b in range(n * clusters):
            assert np.array_equal(exp[f"sums{i}"][b], x[b % n % cols].sum(0))


@needs_nvrtc
def test_solution_passes():
    check("5.10", L.SOLUTION_5_10)


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_kernel_mistakes_are_diagnosed(name):
    with pytest.raises(AssertionError) as err:
        check("5.10", getattr(L, name))
    assert getattr(L, PLANTED[name]) in str(err.value)


@needs_nvrtc
def test_a_mask_written_for_one_shape_fails_the_other():
    src = L.SOLUTION_5_10.replace(L._MASK_LOOP, "    mask = static_cast<unsigned short>(0b0101u << col);\n")
    with pytest.raises(AssertionError, match="outside the issuer's column"):
        check("5.10", src)
