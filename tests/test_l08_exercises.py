"""Exercise set 8: every exercise is registered and graded in the solutions, the answers mean what the statements
say, value mistakes get their hints, and the kernel exercises' prompts and planted mistakes are diagnosed."""
from pathlib import Path

import numpy as np
import pytest

from h100lab import emu
from h100lab.design import registers, ring, schedule, tiles
from h100lab.grading import check
from h100lab.grading.answers import l08 as L
from h100lab.grading.registry import all_exercises

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ("8.8", "8.9", "8.10")


def test_registered_and_graded_in_the_solutions():
    ids = [e.id for e in all_exercises(8)]
    assert ids == [f"8.{i}" for i in range(1, 11)]
    text = (ROOT / "solutions" / "08-kernel-design.md").read_text()
    for i in ids:
        var = ("kernel_" if i in KERNELS else "answer_") + i.replace(".", "_")
        assert f":tags: [grade:{i}]" in text and f'check("{i}", {var})' in text


def test_answers_mean_what_the_statements_say():
    a = {e.id: e.answer() for e in all_exercises(8) if e.id not in KERNELS}
    assert round(a["8.1"]) == 412 and abs(a["8.2"] - 256 * 128 / (256 + 128)) < 1e-9
    assert a["8.3"] == 6 and 6 * 200 >= 900 + 200 > 5 * 200
    assert a["8.4"] == [ring.classify(c, 5) for c in (4, 6, 7, 3)]
    assert a["8.5"][:2] == [162, 2] and a["8.6"] == tiles.max_stages(128, 192, 64) == 5
    assert a["8.7"] == 8 * 8192 * 8192
    assert registers.best_split(1, 2, producer_regs=24).regs == (24, 240, 240)
    assert schedule.tile_at(1, 7, 5, 3, "m") == (1, 0)


def test_value_mistakes_get_their_hints():
    with pytest.raises(AssertionError, match="half"):
        check("8.1", 2 * 1979e12 / 4.8e12)
    with pytest.raises(AssertionError, match="bytes"):
        check("8.2", 2 * 256 * 128 * 64 / ((256 + 128) * 64))
    with pytest.raises(AssertionError, match="MMA reading it"):
        check("8.3", 5)
    with pytest.raises(AssertionError, match="partial wave"):
        check("8.5", [162, 2, 162 / 132])
    with pytest.raises(AssertionError, match="reads and writes"):
        check("8.7", 2 * 8192 * 8192 * 2)


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
@pytest.mark.parametrize("ex, source, words", [
    ("8.8", L.PROMPT_8_8, "not initialised again"), ("8.8", L.PLANTED_8_8_LAP, "not initialised again"),
    ("8.8", L.PLANTED_8_8_EMPTY, "fresh empty"), ("8.8", L.PLANTED_8_8_STAGE, "skipped phase"),
    ("8.8", L.PLANTED_8_8_WHOLE, "skipped phase"), ("8.8", L.PLANTED_8_8_ONE_SIDE, "skipped phase"),
    ("8.9", L.PROMPT_8_9, "give back more"), ("8.9", L.PLANTED_8_9_POOL, "received at launch"),
    ("8.9", L.PLANTED_8_9_PRODUCER, "give back more"),
    ("8.10", L.PROMPT_8_10, "row-major"), ("8.10", L.PLANTED_8_10_NOSNAKE, "bottom to top"),
    ("8.10", L.PLANTED_8_10_PARITY, "must start at the top"), ("8.10", L.PLANTED_8_10_CLIP, "narrower"),
    ("8.10", L.PLANTED_8_10_ROWWISE, "not the order of the tiles inside a row"),
    ("8.10", L.PLANTED_8_10_ALONG_M, "roles of M and N")])
def test_kernel_mistakes_are_diagnosed(ex, source, words):
    with pytest.raises(AssertionError, match=words):
        check(ex, source)


def test_8_10_reference_is_the_snake_order():
    """The grader's reference (the chapter's grouped order along N, odd groups reversed along M) equals the order
    written out from the statement, visits every tile once, and the cases need a narrower last group."""
    ref = L._orders()
    assert any(n % g for _, n, g in L._CASES) and any(g > n for _, n, g in L._CASES)
    for k, (tiles_m, tiles_n, group) in enumerate(L._CASES):
        want = []
        for g, first in enumerate(range(0, tiles_n, group)):
            cols = list(range(first, min(first + group, tiles_n)))
            rows = range(tiles_m) if g % 2 == 0 else range(tiles_m - 1, -1, -1)
            want += [(m, n) for m in rows for n in cols]
        assert ref[f"order{k}"].tolist() == [list(x) for x in want]
        assert len(set(want)) == tiles_m * tiles_n


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
@pytest.mark.parametrize("ex, source", [("8.8", L.SOLUTION_8_8), ("8.9", L.SOLUTION_8_9), ("8.10", L.SOLUTION_8_10)])
def test_kernel_solutions_pass(ex, source):
    check(ex, source)


def _run_8_8(source):
    from h100lab.grading.kernels import run_source

    return run_source(source, L._run_8_8).outputs["out"].reshape(L.SLOTS_8_8, 2, 32)


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
def test_8_8_reference_means_the_statement():
    """The grader's reference (the solution kernel on the emulator) is, per slot and consumer lane, the sum of the
    lane's 4 values of the slot minus the largest value that lane read in pass 0 (NumPy, to float32 rounding); the
    prompt's pass 1 differs, and the prompt restarts both the stage and the lap of the ring."""
    x = np.random.default_rng(L._SEED8).standard_normal(L.SLOTS_8_8 * 256).astype(np.float32)
    xs = x.reshape(L.SLOTS_8_8, 2, 4, 32).astype(np.float64)          # slot, consumer, j, lane
    want = (xs - xs.max(axis=(0, 2))[None, :, None, :]).sum(axis=2)
    got = _run_8_8(L.SOLUTION_8_8)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)
    assert not np.allclose(_run_8_8(L.PROMPT_8_8), want, rtol=1e-5, atol=1e-5)
    assert L.SLOTS_8_8 % (2 * 3) and "#define STAGES 3\n" in L.SOLUTION_8_8


@pytest.mark.skipif(not emu.available(), reason="the emulator needs NVRTC")
def test_8_8_restarting_the_ring_is_right_after_an_even_number_of_laps():
    """What the solution prose says: when a pass is an even number of whole laps (SLOTS a multiple of 2 * STAGES),
    every barrier ends pass 0 as it was when fresh, and the prompt's restarted ring computes what the solution does."""
    six = {k: getattr(L, k).replace("#define SLOTS 10\n", "#define SLOTS 6\n") for k in ("SOLUTION_8_8", "PROMPT_8_8")}
    assert all(s != getattr(L, k) for k, s in six.items())
    ok, restarted = _run_8_8(six["SOLUTION_8_8"]), _run_8_8(six["PROMPT_8_8"])
    assert np.array_equal(ok[:6].view(np.uint32), restarted[:6].view(np.uint32)) and ok[:6].any()
