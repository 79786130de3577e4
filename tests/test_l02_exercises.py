"""Exercise set 2: every exercise is registered and graded, its answer means what the statement says, 2.5 accepts
every correct spelling of the statement, and the kernel prompts are the broken kernels the statements describe."""
from pathlib import Path

import pytest

from h100lab.grading import check
from h100lab.grading.registry import all_exercises, get
from h100lab.grading.verdict import CORRECT, WRONG, judge

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ("2.11", "2.13", "2.14", "2.15")


def _emu():
    from h100lab import emu

    if not emu.available():
        pytest.skip(f"NVRTC unavailable: {emu.unavailable_reason()}")


def test_registered_and_graded_in_the_solutions():
    ids = [e.id for e in all_exercises(2)]
    assert ids == [f"2.{i}" for i in range(1, 17)]
    text = (ROOT / "solutions" / "02-clusters-ptx.md").read_text()
    for i in ids:
        var = f"kernel_{i.replace('.', '_')}" if i in KERNELS else f"answer_{i.replace('.', '_')}"
        assert f":tags: [grade:{i}]" in text and f'check("{i}", {var})' in text


def test_answers_mean_what_the_statements_say():
    a = {e.id: e.answer() for e in all_exercises(2) if e.id not in KERNELS + ("2.5",)}
    assert (a["2.1"], a["2.2"], a["2.8"], a["2.9"], a["2.10"]) == (5, 6, 10, 45, 20)
    assert a["2.3"] == 0xBE803FC0 and a["2.4"] == 0x3FC0BE80 and a["2.12"] == 0x2000400
    assert (a["2.6"], a["2.7"]) == ("l", ".shared::cluster") and a["2.16"] is False


@pytest.mark.parametrize("statement", [
    'asm("fma.rn.f32 %0,%1,%2,%0;":"+f"(acc):"f"(x),"f"(y));',
    'asm volatile ( "fma.rn.f32 %0, %2, %1, %0;"\n    : "+f"(acc)\n    : "f"(x), "f"(y) )',
    'asm   volatile("fma.rn.f32 %0, %1, %2, %0;" : "+f"(acc) : "f"(x), "f"(y) : "memory");',
    'asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(acc) : "f"(x), "f"(y), "f"(acc));',
])
def test_every_correct_spelling_of_the_statement_passes(statement):
    _emu()
    ex = get("2.5")
    v = judge(ex, statement, ex.answer())
    assert v.status == CORRECT, v.message


@pytest.mark.parametrize("statement,said", [
    ('asm("fma.rn.f32 %0, %1, %2, %0;" : "=f"(acc) : "f"(x), "f"(y));', "read-write modifier"),
    ('asm("fma.rn.f32 %0, %1, %1, %0;" : "+f"(acc) : "f"(x), "f"(y));', "different for 32 of 32"),
    ('acc = fmaf(x, y, acc);', "inline-PTX statement"),
    ('asm("add.f32 %0, %0, %1;" : "+f"(acc) : "f"(x));', "fma.rn.f32"),
    ('asm("fma.rn.f32 %0, %1, %2, %0;" : "+r"(acc) : "f"(x), "f"(y));', "does not compile"),
])
def test_wrong_statements_say_why(statement, said):
    _emu()
    ex = get("2.5")
    v = judge(ex, statement, ex.answer())
    assert v.status == WRONG and said in v.message, v.message


def test_boolean_and_string_answers_get_type_specific_messages():
    with pytest.raises(AssertionError, match="Expected a bool"):
        check("2.16", "no")
    with pytest.raises(AssertionError, match="Expected a string"):
        check("2.6", 108)
    with pytest.raises(AssertionError, match="never shared an SM"):
        check("2.16", True)


@pytest.mark.parametrize("ex_id", KERNELS)
def test_kernel_prompts_are_judged_wrong_and_solutions_right(ex_id):
    _emu()
    from h100lab.grading.answers import l02

    ex = get(ex_id)
    ref = ex.answer()
    key = ex_id.replace(".", "_")
    assert judge(ex, getattr(l02, f"SOLUTION_{key}"), ref).status == CORRECT
    v = judge(ex, getattr(l02, f"PROMPT_{key}"), ref)
    assert v.status == WRONG and "Hint:" in v.message or "but" in v.message


def test_2_13_prompt_loses_exactly_the_unused_atomic():
    """The prompt's two atomics are both non-volatile: the compiler keeps the one whose result is used (the slot)
    and deletes the max, whose result nobody reads; the solution's PTX has both."""
    _emu()
    from h100lab import emu
    from h100lab.grading.answers import l02

    prompt, solution = emu.compile(l02.PROMPT_2_13).ptx, emu.compile(l02.SOLUTION_2_13).ptx
    assert "atom.global.add.u32" in prompt and "atom.global.max.u32" not in prompt
    assert "atom.global.add.u32" in solution and "atom.global.max.u32" in solution
