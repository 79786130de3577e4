"""How answers travel from a student's kernel to the grader (h100lab.grading.wire), without a kernel."""
from __future__ import annotations

import enum
import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from h100lab.grading import wire
from h100lab.grading.verdict import Verdict


def roundtrip(value, nonce="n0"):
    payload = json.loads(wire.encode(value, nonce))
    assert payload["nonce"] == nonce
    assert payload["ok"], payload
    return wire.decode(payload["value"])


def refused(value) -> str:
    payload = json.loads(wire.encode(value, "n1"))
    assert payload["ok"] is False and payload["nonce"] == "n1"
    return payload["error"]


def _text(n):
    return st.text(st.characters(exclude_categories=("Cs",)), max_size=n)


_leaf = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text(6)
         | st.binary(max_size=6) | st.complex_numbers(allow_nan=False))
_hashable_leaf = st.none() | st.booleans() | st.integers() | _text(6)
_values = st.recursive(
    _leaf,
    lambda c: (st.lists(c, max_size=4) | st.tuples(c, c) | st.dictionaries(_text(4), c, max_size=3)
               | st.dictionaries(st.integers() | st.tuples(st.integers(), st.integers()), c, max_size=3)
               | st.frozensets(_hashable_leaf, max_size=4)),
    max_leaves=15)


@given(_values)
def test_roundtrip_is_exact(value):
    out = roundtrip(value)
    assert out == value
    assert type(out) is type(value) or isinstance(value, frozenset)


def test_numpy_arrays_and_scalars_travel_as_plain_values():
    assert roundtrip(np.arange(6).reshape(2, 3).T) == [[0, 3], [1, 4], [2, 5]]
    assert roundtrip(np.float32(1.5)) == 1.5 and type(roundtrip(np.float32(1.5))) is float
    assert roundtrip(np.bool_(True)) is True
    assert roundtrip(np.array([1.0, np.nan]))[1] != roundtrip(np.array([1.0, np.nan]))[1]  # NaN travels
    assert roundtrip(range(4)) == [0, 1, 2, 3]
    assert roundtrip(...) is Ellipsis
    assert roundtrip([...]) == [Ellipsis]


def test_dict_with_the_marker_key_is_not_mistaken_for_a_marker():
    hostile = {wire.MARK: "ellipsis"}
    assert roundtrip(hostile) == hostile


class Colour(enum.Enum):
    RED = 1


@dataclass(frozen=True)
class Point:
    x: int
    y: tuple


def test_h100lab_dataclasses_and_others():
    v = Verdict("1.1", True, "correct", "ok", 1, 1)
    assert roundtrip(v) == v  # a dataclass of the h100lab package is rebuilt
    assert roundtrip(Point(1, (2, 3))) == {"x": 1, "y": (2, 3)}  # any other arrives as a dict of fields
    assert roundtrip(Colour.RED) == 1  # a foreign enum arrives as its value


@pytest.mark.parametrize("value, words", [
    (object(), "of type object cannot be graded"),
    (lambda: 1, "of type function cannot be graded"),
    (np.datetime64("2024-01-01"), "cannot be graded"),
    ([0] * (wire.MAX_NODES + 1), f"more than {wire.MAX_NODES} values"),
    ("x" * (wire.MAX_BYTES + 10), "over 1048576 bytes"),
], ids=["object", "function", "datetime64", "too-many-values", "too-many-bytes"])
def test_unsupported_or_huge_answers_are_refused_with_a_reason(value, words):
    assert words in refused(value)


def test_deep_nesting_is_refused():
    v: list = []
    for _ in range(wire.MAX_DEPTH + 5):
        v = [v]
    assert "nested more than" in refused(v)


def test_an_answer_whose_conversion_raises_is_refused_not_raised():
    class Weird(dict):
        def keys(self):
            raise RuntimeError("nope")

    assert "RuntimeError while reading the answer: nope" in refused(Weird(a=1))


def test_decode_rejects_unknown_markers():
    with pytest.raises(wire.WireError, match="unknown marker"):
        wire.decode({wire.MARK: "pickle", "data": "..."})


def test_injected_copy_keeps_its_references_when_student_code_patches_json(monkeypatch):
    """The grader execs wire.py's source into a fresh module in the kernel; later patches do not reach it."""
    mod = types.ModuleType("_h100lab_grader_test")
    exec(compile(Path(wire.__file__).read_text(), "<h100lab grader>", "exec"), mod.__dict__)
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(json, "dumps", lambda *a, **k: '{"nonce": "forged", "ok": true, "value": 1}')
    text = mod.encode([1, 2], "real")
    monkeypatch.undo()
    assert json.loads(text) == {"nonce": "real", "ok": True, "value": [1, 2]}
