"""Exercise set 1: every exercise is registered, computable, and its answer means what the statement says; the
kernel exercises' prompts are the kernels the statements describe."""
from pathlib import Path

import numpy as np
import pytest

from h100lab.grading import check
from h100lab.grading.registry import all_exercises, get
from h100lab.grading.verdict import CORRECT, WRONG, judge
from h100lab.occupancy import occupancy

ROOT = Path(__file__).resolve().parent.parent


def test_registered_and_graded_in_the_solutions():
    ids = [e.id for e in all_exercises(1)]
    assert ids == [f"1.{i}" for i in range(1, 17)]
    text = (ROOT / "solutions" / "01-architecture.md").read_text()
    for i in ids:
        var = f"kernel_{i.replace('.', '_')}" if i in ("1.14", "1.15", "1.16") else f"answer_{i.replace('.', '_')}"
        assert f":tags: [grade:{i}]" in text and f'check("{i}", {var})' in text


def test_answers_mean_what_the_statements_say():
    a = {e.id: e.answer() for e in all_exercises(1) if e.id not in ("1.14", "1.15", "1.16")}
    assert a["1.1"] == "registers" and a["1.2"] == 2
    # 1.3: one register fewer keeps the block, the answer loses it
    assert occupancy(256, a["1.3"] - 1).active_blocks == occupancy(256, 56).active_blocks
    assert occupancy(256, a["1.3"]).active_blocks < occupancy(256, 56).active_blocks
    # 1.4: __launch_bounds__(512, 2)
    assert occupancy(512, a["1.4"]).active_blocks >= 2 > occupancy(512, a["1.4"] + 1).active_blocks
    assert a["1.5"] == 1 and occupancy(128, 32, 100 * 1024).active_blocks == 2
    assert (a["1.6"], a["1.7"], a["1.8"], a["1.10"]) == (2, 8, 12, 60)
    r = a["1.9"]
    assert r[1] == pytest.approx(2 * r[0], rel=1e-3) and r[2] < r[0]
    assert a["1.11"] == pytest.approx((989.4, 1070.5), rel=1e-3)
    assert a["1.12"] == pytest.approx(4.4e12 * 1.1e-6 / 132 / 1024)
    assert a["1.13"] is True


def test_check_rejects_wrong_answers_with_type_specific_messages():
    with pytest.raises(AssertionError, match="Hint"):
        check("1.3", 64)
    with pytest.raises(AssertionError):
        check("1.1", "shared_memory")
    with pytest.raises(AssertionError, match="no answer yet"):
        check("1.10", ...)
    check("1.9", [x * (1 + 1e-4) for x in get("1.9").answer()])   # within rtol
    with pytest.raises(AssertionError, match="Expected a bool"):
        check("1.13", "memory")
    with pytest.raises(AssertionError, match="Item 2 of the 2 is not right"):
        check("1.11", (989.4, 989.4))
    with pytest.raises(AssertionError, match="wrong order"):
        check("1.11", tuple(reversed(get("1.11").answer())))


@pytest.mark.parametrize("ex_id", ["1.14", "1.15", "1.16"])
def test_kernel_prompts_run_but_are_judged_wrong_and_solutions_right(ex_id):
    from h100lab import emu

    if not emu.available():
        pytest.skip(f"NVRTC unavailable: {emu.unavailable_reason()}")
    from h100lab.grading.answers import l01

    ex = get(ex_id)
    ref = ex.answer()
    key = ex_id.replace(".", "_")
    prompt, solution = getattr(l01, f"PROMPT_{key}"), getattr(l01, f"SOLUTION_{key}")
    assert judge(ex, solution, ref).status == CORRECT
    v = judge(ex, prompt, ref)
    assert v.status == WRONG and "the outputs are right, but" in v.message     # the prompt computes the right thing
    assert str(np.asarray(next(iter(ref.values())))[3])[:6] not in v.message  # no reference values leak
