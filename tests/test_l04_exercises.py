"""Exercise set 4's kernel exercise 4.11 (publish edited maps): the solution passes, the prompt and every planted
mistake are diagnosed with their own hint, the planted kernels differ from the solution only where they say, and the
grader's model images really depend on what the exercise asks the student to fix (PTX ISA §9.7.9.28
tensormap.replace, §9.7.13.4.3 fence.proxy.tensormap::generic)."""
import difflib

import numpy as np
import pytest

from h100lab import emu
from h100lab.grading import check
from h100lab.grading.answers import l04 as L
from h100lab.grading.registry import get

needs_nvrtc = pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")


def _changed(a: str, b: str) -> list[str]:
    return [d for d in difflib.ndiff(a.splitlines(), b.splitlines()) if d[:2] in ("- ", "+ ")]


def test_planted_kernels_change_only_what_they_name():
    assert len(_changed(L.SOLUTION_4_11, L.PLANTED_4_11_PITCH)) == 2            # the two lines of the pitch edit
    assert len(_changed(L.SOLUTION_4_11, L.PLANTED_4_11_ORD)) == 2              # the ord, one line replaced
    assert len(_changed(L.SOLUTION_4_11, L.PLANTED_4_11_ONE)) == 2              # the acquire moved out of the loop
    assert len(_changed(L.SOLUTION_4_11, L.PLANTED_4_11_EARLY)) == 2            # the acquire moved before the release
    prompt = _changed(L.SOLUTION_4_11, L.PROMPT_4_11)
    assert any("TODO" in d for d in prompt) and any("release" in d for d in prompt)


def test_the_model_images_depend_on_rows_and_pitches():
    imgs = L._expect_4_11()["tiles"]
    assert imgs.shape == (len(L.E11_ROWS), 8, 32)
    for j, (r, p) in enumerate(zip(L.E11_ROWS, L.E11_PITCHES)):
        assert (imgs[j, r:] == 0).all() and (imgs[j, :r, 0] == 1000 * j + np.arange(r) * p // 4).all()
    assert len(set(L.E11_PITCHES)) == len(L.E11_PITCHES) and not np.array_equal(
        imgs, L._images_4_11([L.E11_PITCHES[0]] * len(L.E11_ROWS)))


@needs_nvrtc
def test_solution_passes():
    check("4.11", L.SOLUTION_4_11)


@needs_nvrtc
@pytest.mark.parametrize("source, hint", [
    ("PROMPT_4_11", "_UNRELEASED"), ("PLANTED_4_11_ONE", "_EACH"), ("PLANTED_4_11_EARLY", "_ORDER"),
    ("PLANTED_4_11_PITCH", "_PITCH_HINT"), ("PLANTED_4_11_ORD", "_ORD")])
def test_kernel_mistakes_are_diagnosed(source, hint):
    with pytest.raises(AssertionError) as err:
        check("4.11", getattr(L, source))
    assert getattr(L, hint) in str(err.value)


@needs_nvrtc
def test_no_release_at_all_gets_the_release_hint():
    src = L.SOLUTION_4_11.replace(L._RELEASE, "")
    with pytest.raises(AssertionError, match="no release followed"):
        check("4.11", src)


def test_registered_as_a_kernel_exercise_with_a_model_reference():
    ex = get("4.11")
    assert [m.answer for m in ex.mistakes].count(L.PROMPT_4_11) == 1
