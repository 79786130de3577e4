"""The exercise registry, the comparison rules, the verdicts and check()'s hints.

Fixture exercises are registered here through the public API under lessons 97 and 98 (and 99 from
tests/fixtures/grading/fixture_answers.py), which no lesson of the book uses.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import h100lab.grading as grading
from h100lab.grading import NO_ANSWER, all_exercises, check, compare, exercise, get
from h100lab.grading.grader import load_answers_module
from h100lab.grading.registry import Exercise
from h100lab.grading.verdict import (CORRECT, ERROR, MESSAGE_LIMIT, NO_ANSWER_YET, WRONG, Verdict, failure,
                                     judge, short_repr)

FIXTURES = Path(__file__).parent / "fixtures" / "grading"
load_answers_module(str(FIXTURES / "fixture_answers.py"))


@exercise("98.1", points=3, hint="Count the SMs.")
def _ref_98_1():
    return int(np.int64(132))


@exercise("98.2", hint="A list of four floats.", rtol=1e-6)
def _ref_98_2():
    return np.linspace(0.0, 1.5, 4)


@exercise("98.3", unordered=True)
def _ref_98_3():
    return [3, 1, 2]


@exercise("98.4", equal=lambda v, e: isinstance(v, str) and v.lower() == e)
def _ref_98_4():
    return "swizzle"


@exercise("98.10")
def _ref_98_10():
    return {"banks": 32, "width": 4}


@exercise("98.9")
def _ref_98_9():
    return True


def test_public_api_is_stable():
    for name in ("check", "exercise", "get", "all_exercises", "compare", "NO_ANSWER"):
        assert hasattr(grading, name), name
    assert NO_ANSWER is Ellipsis


def test_check_prints_correct_and_points(capsys):
    check("98.1", 132)
    check("98.1", np.int32(132))
    assert capsys.readouterr().out.splitlines() == ["exercise 98.1: correct (3 points)"] * 2
    check("99.1", 45)
    assert capsys.readouterr().out.strip() == "exercise 99.1: correct (1 point)"


def test_check_wrong_answer_raises_with_hint():
    with pytest.raises(AssertionError, match=r"exercise 98.1: 131 is not right\. Hint: Count the SMs\."):
        check("98.1", 131)


def test_check_stub_says_no_answer_yet():
    with pytest.raises(AssertionError, match=r"no answer yet: replace `\.\.\.` with your answer"):
        check("98.1", ...)


@pytest.mark.parametrize("value, hint", [
    ("132", "Expected a number, got a string."),
    ([132], "Expected a number, got a list."),
    (True, "Expected a number, got a bool"),
    (None, "Expected a number, got None."),
], ids=["str", "list", "bool", "None"])
def test_check_names_the_expected_kind(value, hint):
    with pytest.raises(AssertionError) as info:
        check("98.1", value)
    assert hint in str(info.value)
    assert "132" not in str(info.value).split("is not right")[1], "the hint must not give the answer away"


def test_check_names_the_expected_length_and_keys():
    with pytest.raises(AssertionError, match="Expected 4 items, got 3"):
        check("98.2", [0.0, 0.5, 1.0])
    with pytest.raises(AssertionError, match="missing keys width; unexpected keys bank"):
        check("98.10", {"banks": 32, "bank": 4})
    with pytest.raises(AssertionError, match="Off by more than 50%"):
        check("99.3", 0.5)


def test_check_tolerance_order_and_custom_equality(capsys):
    check("98.2", [0.0, 0.5, 1.0, 1.5 * (1 + 1e-8)])
    with pytest.raises(AssertionError):
        check("98.2", [0.0, 0.5, 1.0, 1.6])
    check("98.3", (2, 3, 1))
    with pytest.raises(AssertionError):
        check("98.3", [1, 2, 2])
    check("98.4", "SWIZZLE")
    with pytest.raises(AssertionError):
        check("98.4", 7)  # the custom predicate rejects it; no crash
    check("98.9", True)
    with pytest.raises(AssertionError):
        check("98.9", 1)  # bool never equals int
    assert capsys.readouterr().out.count("correct") == 4


def test_unknown_exercise_and_bad_ids():
    with pytest.raises(KeyError, match="no exercise set for lesson 96"):
        get("96.1")
    with pytest.raises(KeyError, match="unknown exercise '98.77'"):
        get("98.77")
    for bad in ("1", "1.a", "a.1", "1.2.3", "", 1.2):
        with pytest.raises(ValueError, match="must look like 'L.N'"):
            get(bad)
    with pytest.raises(ValueError, match="points must be a non-negative int"):
        exercise("97.1", points=-1)
    with pytest.raises(ValueError, match="rtol and atol must be >= 0"):
        exercise("97.1", rtol=-1e-3)


def test_registering_a_second_function_for_an_id_raises():
    with pytest.raises(ValueError, match="registered twice"):
        @exercise("98.1")
        def _another():
            return 0
    # the same function again (a module imported twice) is fine
    exercise("98.1", points=3, hint="Count the SMs.")(_ref_98_1)
    assert get("98.1").reference is _ref_98_1


def test_all_exercises_sorted_numerically_per_lesson():
    ids = [e.id for e in all_exercises(98)]
    assert ids == ["98.1", "98.2", "98.3", "98.4", "98.9", "98.10"]
    assert [e.id for e in all_exercises(99)] == ["99.1", "99.2", "99.3", "99.4"]
    assert all(e.lesson == 98 for e in all_exercises(98))
    everything = {e.id for e in all_exercises()}
    assert {"98.1", "99.4"} <= everything


def test_reference_answers_are_computed():
    assert get("99.2").answer() == [0, 1, 0, 1, 1]
    assert get("99.4").answer().tolist() == [[0, 3], [1, 4], [2, 5]]


def test_compare_plain_values():
    ex = Exercise("97.5", lambda: None)
    assert compare(ex, np.array([[1, 2]]), [(1, 2)])
    assert compare(ex, {"a": np.float64(1.0)}, {"a": 1})
    assert compare(ex, float("nan"), float("nan"))
    assert not compare(ex, float("nan"), 1.0)
    assert not compare(ex, 1.0, float("nan"))
    assert not compare(ex, [1, 2], [1, 2, 3])
    assert not compare(ex, "1", 1)


def test_verdict_fields_and_limits():
    ex = get("98.1")
    v = judge(ex, 132, 132)
    assert v == Verdict("98.1", True, CORRECT, "exercise 98.1: correct (3 points)", 3, 3)
    w = judge(ex, list(range(10_000)), 132)
    assert (w.passed, w.status, w.points, w.max_points) == (False, WRONG, 0, 3)
    assert len(w.message) <= MESSAGE_LIMIT
    assert judge(ex, ..., 132).status == NO_ANSWER_YET
    assert failure(ex, ERROR, "x" * 10_000).message.endswith(" ...")
    with pytest.raises(ValueError, match="not a failing status"):
        failure(ex, CORRECT, "no")


def test_short_repr_survives_hostile_objects():
    class Bad:
        def __repr__(self):
            raise RuntimeError("no")

    assert short_repr(Bad()) == "<Bad whose repr raised RuntimeError>"
    assert len(short_repr("x" * 10_000, 50)) == 50


_plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(st.characters(exclude_categories=("Cs",)), max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=3), children, max_size=3),
    max_leaves=12)


@given(_plain_values)
def test_compare_is_reflexive_and_never_raises(value):
    ex = Exercise("97.9", lambda: value)
    assert compare(ex, value, value)
    assert judge(ex, value, value).passed


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.floats(min_value=1e-9, max_value=0.5))
def test_rtol_matches_math_isclose(x, rtol):
    ex = Exercise("97.8", lambda: x, rtol=rtol)
    y = x * (1 + rtol / 2)
    assert compare(ex, y, x) == math.isclose(y, x, rel_tol=rtol)
