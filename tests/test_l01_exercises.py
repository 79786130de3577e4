"""Exercise set 1: every exercise is registered, computable, and its answer means what the statement says."""
from pathlib import Path

import pytest

from h100lab.grading import check
from h100lab.grading.registry import all_exercises, get
from h100lab.occupancy import occupancy

ROOT = Path(__file__).resolve().parent.parent


def test_registered_and_graded_in_the_solutions():
    ids = [e.id for e in all_exercises(1)]
    assert ids == [f"1.{i}" for i in range(1, 11)]
    text = (ROOT / "solutions" / "01-architecture.md").read_text()
    for i in ids:
        assert f":tags: [grade:{i}]" in text and f'check("{i}", answer_{i.replace(".", "_")})' in text


def test_answers_mean_what_the_statements_say():
    a = {e.id: e.answer() for e in all_exercises(1)}
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


def test_check_rejects_wrong_answers():
    with pytest.raises(AssertionError, match="Hint"):
        check("1.3", 64)
    with pytest.raises(AssertionError):
        check("1.1", "shared_memory")
    with pytest.raises(AssertionError, match="no answer yet"):
        check("1.10", ...)
    check("1.9", [x * (1 + 1e-4) for x in get("1.9").answer()])   # within rtol
