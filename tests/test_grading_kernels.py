"""Kernel exercises (h100lab.grading.kernels), mistake tables and prompt regions of the grading package."""
from __future__ import annotations

import numpy as np
import pytest

from h100lab.grading.kernels import KernelCheck, KernelRun, Property, Symptom, kernel_exercise
from h100lab.grading.registry import _REGISTRY, Exercise, Feedback, Mistake, exercise, get
from h100lab.grading.student import stub_code
from h100lab.grading.verdict import CORRECT, WRONG, judge

GOOD = r'''
extern "C" __global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}'''
ONE_BLOCK = GOOD.replace("blockIdx.x * blockDim.x + threadIdx.x", "threadIdx.x")
NO_GUARD = GOOD.replace("if (i < n) ", "")
SYNTAX = GOOD.replace("2.0f *", "2.0f + *")
FIRST_BLOCK_HINT = "Only the first block's elements are written: which element does a thread of block 1 own?"


def _run(program):
    from h100lab import emu

    x = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    dx, dy = emu.to_device(x), emu.zeros(1000, np.float32)
    stats = emu.launch(program.function("scale"), 4, 256, dx, dy, np.int32(1000))
    return KernelRun({"y": dy.to_host()}, stats)


@pytest.fixture(scope="module")
def kex():
    kernel_exercise("95.1", run=_run, reference=GOOD, hint="general hint",
                    symptoms=[Symptom(lambda out, ref, st: bool((out["y"][256:] == 0).all()), FIRST_BLOCK_HINT)],
                    properties=[Property(lambda out, st: None if st.instructions < 10_000 else "too slow")],
                    mistakes=[Mistake(FIRST_BLOCK_HINT, answer=ONE_BLOCK)])
    ex = get("95.1")
    yield ex, ex.answer()
    _REGISTRY.pop("95.1", None)


def test_kernel_exercise_passes_the_reference_and_names_what_is_wrong(kex):
    ex, ref = kex
    assert judge(ex, GOOD, ref).status == CORRECT
    v = judge(ex, ONE_BLOCK, ref)
    assert v.status == WRONG and FIRST_BLOCK_HINT in v.message and "744 of 1000" in v.message
    v = judge(ex, SYNTAX, ref)
    assert "does not compile" in v.message and "line 4" in v.message
    v = judge(ex, NO_GUARD, ref)
    assert "MemoryFault" in v.message and "line 4" in v.message
    v = judge(ex, 42, ref)
    assert not v.passed and "CUDA C++ source" in v.message
    for m in ex.mistakes:  # what tests/test_exercises.py proves for every set
        assert m.hint in judge(ex, m.answer, ref).message


def test_reference_values_never_leak_into_a_kernel_verdict(kex):
    ex, ref = kex
    v = judge(ex, ONE_BLOCK, ref)
    assert repr(float(ref["y"][300]))[:6] not in v.message


def test_a_violated_property_is_named():
    chk = KernelCheck(_run, properties=[Property(lambda out, st: "it used shared memory" if True else None)])
    from h100lab.grading.kernels import run_source

    ref = {"y": run_source(GOOD, _run).outputs["y"]}
    fb = chk(GOOD, ref)
    assert isinstance(fb, Feedback) and not fb and "it used shared memory" in fb.message


def test_mistake_table_answers_the_specific_mistake():
    @exercise("95.2", hint="general", mistakes=[Mistake("bytes, not elements", answer=4096 * 4),
                                                Mistake("off by one granule", when=lambda v, e: v == e + 256)])
    def _():
        return 4096

    try:
        ex = get("95.2")
        assert "bytes, not elements" in judge(ex, 16384, 4096).message
        assert "off by one granule" in judge(ex, 4352, 4096).message
        assert "general" in judge(ex, 7, 4096).message
        assert judge(ex, 4096, 4096).passed
    finally:
        _REGISTRY.pop("95.2", None)


def test_mistakes_need_an_example_or_a_predicate():
    with pytest.raises(ValueError, match="answer= or when="):
        exercise("95.3", mistakes=[Mistake("h")])(lambda: 1)


def test_tuple_and_bool_answers_get_type_specific_messages():
    ex = Exercise("95.4", lambda: (1, 0, 1))
    assert "tuple of 3 items, got 2" in judge(ex, (1, 0), (1, 0, 1)).message
    assert "Item 2 of the 3 is not right" in judge(ex, (1, 1, 1), (1, 0, 1)).message
    bex = Exercise("95.5", lambda: True)
    assert "Expected a bool (True/False), got a number" in judge(bex, 1, True).message


def test_prompt_region_replaces_its_solution_region_in_the_student_edition():
    src = "x = 1\n# BEGIN SOLUTION\nSRC = r'''\ngood\n'''\n# END SOLUTION\n# BEGIN PROMPT\n# SRC = r'''\n# bad\n# '''\n" \
          "# END PROMPT\nprint(SRC)"
    assert stub_code(src) == "x = 1\nSRC = r'''\nbad\n'''\nprint(SRC)"
    assert stub_code(stub_code(src)) == stub_code(src)  # idempotent
    alone = "# BEGIN PROMPT\n# y = 2\n# END PROMPT\n"
    assert stub_code(alone) == "y = 2\n"


def test_prompt_lines_must_be_commented_out():
    from h100lab.grading.notebook import GradingFormatError

    with pytest.raises(GradingFormatError, match="commented out"):
        stub_code("# BEGIN SOLUTION\na = 1\n# END SOLUTION\n# BEGIN PROMPT\na = 2\n# END PROMPT\n")


ANSWERS_94 = '''
import numpy as np
from h100lab.grading.kernels import KernelRun, kernel_exercise

GOOD = r"""
extern "C" __global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}"""


def run(program):
    from h100lab import emu
    x = np.arange(256, dtype=np.float32)
    dx, dy = emu.to_device(x), emu.zeros(256, np.float32)
    stats = emu.launch(program.function("scale"), 2, 128, dx, dy, np.int32(256))
    return KernelRun({"y": dy.to_host()}, stats)


kernel_exercise("94.7", run=run, reference=GOOD, points=3, budget=60)
'''

LOOPS = r'''
extern "C" __global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    while (x[0] == 0.0f) { i += 1; }              // x[0] is 0: never ends
    if (i < n) y[i] = 2.0f * x[i];
}'''

HANGS = r'''
#include <cuda/std/cstdint>
extern "C" __global__ void scale(const float* x, float* y, int n) {
    __shared__ __align__(8) unsigned long long bar;
    unsigned a = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1000;" :: "r"(a) : "memory");
    __syncthreads();
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(a) : "memory");   // 128 of 1000 arrivals:
    unsigned done = 0;                                                                 // phase 0 never completes
    while (!done) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                               : "=r"(done) : "r"(a) : "memory");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}'''


def _notebook(source_var: str) -> str:
    from mystkit import MYST_HEADER

    return (MYST_HEADER + "\n# Set 94\n\n```{code-cell} ipython3\nfrom h100lab.grading import check\n```\n\n"
            "```{code-cell} ipython3\n" + source_var + "\n```\n\n"
            "```{code-cell} ipython3\n:tags: [grade:94.7]\n\ncheck(\"94.7\", SRC)\n```\n")


def test_the_grader_scores_hostile_kernels_with_the_emulators_report(tmp_path):
    """Issue 14, grader item 6: a student's kernel runs on the emulator inside the grader's process with a
    time and an instruction budget; a kernel that never ends or deadlocks scores 0 with the emulator's
    report (the CUDA line) as the message, and the correct one full marks — every run the same."""
    import json

    from h100lab.grading.grader import grade

    answers = tmp_path / "answers94.py"
    answers.write_text(ANSWERS_94)
    sols = tmp_path / "solutions"
    sols.mkdir()
    good = "SRC = r'''" + ANSWERS_94.split('GOOD = r"""')[1].split('"""')[0] + "'''"
    (sols / "94-kernels.md").write_text(_notebook(good))
    subs = tmp_path / "subs"
    for who, src in (("good", good), ("loops", f"SRC = r'''{LOOPS}'''"), ("hangs", f"SRC = r'''{HANGS}'''")):
        (subs / who).mkdir(parents=True)
        (subs / who / "94-kernels.md").write_text(_notebook(src))
    books = [grade(subs, 94, out_dir=None, timeout=120, solutions_dir=sols, answers_modules=[str(answers)])
             for _ in range(2)]
    rows = {r["student"]: r for r in books[0].rows}
    assert rows["good"]["status"] == "correct" and rows["good"]["points"] == 3
    assert rows["loops"]["points"] == 0 and "BudgetExceeded" in rows["loops"]["message"] \
        and "line 4" in rows["loops"]["message"]
    assert rows["hangs"]["points"] == 0 and "DeadlockError" in rows["hangs"]["message"]
    assert json.dumps(books[0].rows, sort_keys=True) == json.dumps(books[1].rows, sort_keys=True)


def test_printf_exercise_keeps_its_lines_when_another_thread_flushes():
    """Exercise 0.8 is graded on its printed lines; the grader checks two notebooks at once, so another thread's
    emu.synchronize() (which flushes the process's printf output) must not take this launch's lines."""
    import threading

    from h100lab import emu
    from h100lab.grading.answers import l00

    program = emu.compile(l00.SHARE)
    stop = threading.Event()

    def flusher():
        while not stop.is_set():
            emu.synchronize()

    t = threading.Thread(target=flusher)
    t.start()
    try:
        runs = [l00._share_run(program) for _ in range(3)]
    finally:
        stop.set()
        t.join()
    blocks = -(-l00.N_0_8 // l00.BLOCK_0_8)
    for run in runs:
        assert len(run.outputs["lines"]) == blocks
