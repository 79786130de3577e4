"""Every exercise set of the book, both directions, through the instructor's grader.

For each ``solutions/NN-*.md``:

(a) the committed ``exercises/NN-*.md`` is exactly what ``python -m h100lab.grading student solutions
    exercises`` generates;
(b) graded by the grader (own kernel, answers judged outside it), the solution passes every graded
    cell, and the set's graded ids are exactly the ids registered in ``h100lab/grading/answers/lNN.py``;
(c) the untouched student edition fails every graded cell, each because of its stub ("no answer":
    ``...`` or ``NotImplementedError``), never because of an unrelated crash — except a kernel exercise,
    whose stub is the kernel the student is given to fix or complete: it must be judged wrong;
(d) every planted mistake of the set's table (``Mistake(hint, answer=...)``) gets its own hint;
(e) the student edition imports nothing that computes an answer: only the grading entry point, the
    emulator/GPU backends that run the student's own kernels, NumPy and plotting.

Skips cleanly while there are no solutions files.
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from h100lab.grading import all_exercises
from h100lab.grading.grader import grade
from h100lab.grading.notebook import SOURCE_GLOB, lesson_of_file
from h100lab.grading.student import student_text
from h100lab.grading.kernels import KernelCheck
from h100lab.grading.verdict import CORRECT, NO_ANSWER_YET, WRONG, judge

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob(SOURCE_GLOB))
CELL_TIMEOUT = 300.0  # seconds; a solution cell is a chapter-sized computation at most
PARAMS = [pytest.param(p, id=p.stem) for p in SOLUTIONS] or [
    pytest.param(None, marks=pytest.mark.skip(reason="no solutions/NN-*.md yet"))]


def _table(rows) -> str:
    return "\n".join(f"  {r['student']:8} {r['exercise']:6} {r['status']:10} {r['message']}" for r in rows)


@pytest.mark.parametrize("source", PARAMS)
def test_committed_student_edition_is_generated(source):
    target = ROOT / "exercises" / source.name
    expected = student_text(source.read_text(encoding="utf-8"), f"solutions/{source.name}")
    assert target.exists(), f"{target.relative_to(ROOT)} is missing: run python -m h100lab.grading student solutions exercises"
    assert target.read_text(encoding="utf-8") == expected, (
        f"{target.relative_to(ROOT)} differs from what solutions/{source.name} generates: "
        "run python -m h100lab.grading student solutions exercises (never edit exercises/ by hand)")


@pytest.fixture(scope="module", params=PARAMS)
def graded(request, tmp_path_factory):
    """Both editions of one set graded in one grader run: students "solution" and "student"."""
    source: Path = request.param
    lesson = lesson_of_file(source)
    subs = tmp_path_factory.mktemp(f"set{lesson:02d}") / "submissions"
    subs.mkdir()
    shutil.copy(source, subs / "solution.md")
    (subs / "student.md").write_text(student_text(source.read_text(encoding="utf-8"), f"solutions/{source.name}"),
                                     encoding="utf-8")
    book = grade(subs, lesson, out_dir=None, timeout=CELL_TIMEOUT, solutions_dir=source.parent, jobs=2)
    rows = {who: [r for r in book.rows if r["student"] == who] for who in ("solution", "student")}
    return source, lesson, book, rows


def test_solution_passes_every_graded_cell(graded):
    source, _, book, rows = graded
    failed = [r for r in rows["solution"] if r["status"] != CORRECT]
    assert rows["solution"] and not failed, f"{source.name}: the solution fails graded cells:\n{_table(failed)}"
    assert len(rows["solution"]) == len(book.exercises)


def test_graded_ids_equal_registered_ids(graded):
    source, lesson, book, _ = graded
    registered = [e.id for e in all_exercises(lesson)]
    in_notebook = sorted(book.exercises, key=lambda i: tuple(int(p) for p in i.split(".")))
    assert in_notebook == registered, (
        f"{source.name} has graded cells {in_notebook}; h100lab/grading/answers/l{lesson:02d}.py registers {registered}")


def _is_kernel_exercise(ex_id: str) -> bool:
    from h100lab.grading import get

    return isinstance(get(ex_id).equal, KernelCheck)


def test_untouched_student_edition_fails_every_graded_cell_because_of_its_stub(graded):
    source, _, _, rows = graded
    wrong = [r for r in rows["student"] if r["passed"] or not (
        r["status"] == NO_ANSWER_YET and "no answer yet" in r["message"]
        or r["status"] == WRONG and _is_kernel_exercise(r["exercise"]))]
    assert rows["student"] and not wrong, (
        f"exercises/{source.name}: these graded cells do not fail because of their stub:\n{_table(wrong)}")


@pytest.mark.parametrize("source", PARAMS)
def test_planted_mistakes_get_their_hints(source):
    lesson = lesson_of_file(source)
    for ex in all_exercises(lesson):
        examples = [m for m in ex.mistakes if m.has_example]
        if not examples:
            continue
        expected = ex.answer()
        for m in examples:
            verdict = judge(ex, m.answer, expected)
            assert not verdict.passed and m.hint in verdict.message, (
                f"exercise {ex.id}: the planted mistake for hint {m.hint[:50]!r} got: {verdict.message}")


#: modules a student edition may import: none of them computes an exercise's answer
STUDENT_IMPORTS = ("h100lab.grading", "h100lab.emu", "h100lab.cuda", "h100lab.backends", "h100lab.magic",
                   "h100lab.viz", "numpy", "math", "matplotlib", "ml_dtypes", "fractions", "itertools", "dataclasses")


@pytest.mark.parametrize("source", PARAMS)
def test_student_edition_imports_nothing_that_computes_an_answer(source):
    import ast

    import jupytext

    nb = jupytext.reads((ROOT / "exercises" / source.name).read_text(encoding="utf-8"), fmt="md:myst")
    bad = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse("\n".join(x for x in cell.source.split("\n") if not x.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if name == "h100lab.grading" and isinstance(node, ast.ImportFrom):
                    extra = [a.name for a in node.names if a.name not in ("check",)]
                    if extra:
                        bad.append(f"from h100lab.grading import {', '.join(extra)}")
                    continue
                if name == "h100lab" and isinstance(node, ast.ImportFrom):
                    bad += [f"h100lab.{a.name}" for a in node.names
                            if a.name not in ("emu", "cuda", "backends", "viz", "backend", "magic")]
                    continue
                if name.startswith("h100lab.grading."):
                    bad.append(name)
                elif not (name == "h100lab" and isinstance(node, ast.Import)) and \
                        not any(name == m or name.startswith(m + ".") for m in STUDENT_IMPORTS):
                    bad.append(name)
    assert not bad, f"exercises/{source.name} imports what computes answers: {sorted(set(bad))}"


# ---- kernel fixes the student must reason out, not copy -------------------------------------------------------
#: Every kernel exercise of every set must make the student reason: its fix is no line the book prints (chapters,
#: exercise stubs and kernel sources are published on the site), so copying a chapter listing does not pass it.
#: The kernel exercises, found in the solutions files: a solution region opening `kernel_L_N = r"""` or
#: `SRC_L_N = r'''` (sets 0 and 3) followed by the prompt region the student starts from.
KERNEL_EXERCISES = [f"{m.group(1)}.{m.group(2)}" for p in SOLUTIONS for m in re.finditer(
    r"^# BEGIN SOLUTION\n(?:kernel|SRC)_(\d+)_(\d+) = r", p.read_text(encoding="utf-8"), re.M)]
MIN_FIX_LINE = 20   # characters of code: shorter lines ("}", "++n;") are no evidence of a copy
#: A fix line counts as printed when the book prints it (whitespace and comments aside) or prints a line of the same
#: shape (_shape: the names other than keywords and CUDA builtins abstracted) — the same line with other variable names.
#: ALLOW-LIST — kernel exercises whose fix is STILL a line the book prints (judged by placement for the PLACEMENT
#: exercises below), each waiting for a redesign in the manner of 4.11, 5.10, 6.9-6.11, 7.8 and 8.10 (another shape,
#: swizzle, layout, protocol variant). They are strict xfails, never skipped: a redesigned one XPASSes and fails until
#: it is removed. Empty since every kernel exercise was redesigned (0.6, 0.7, 2.13, 3.7, 7.6, 7.7, 8.8 as variants;
#: 2.11, 3.8, 3.9, 5.11, 6.12 as PLACEMENT exercises) and none of their fixes is a printed line with other names either
#: (_renamed_copies); a new exercise that leaks goes here with the line it repeats.
STILL_PRINTED: dict[str, str] = {}


#: PLACEMENT — kernel exercises whose lesson is WHERE one instruction goes (a fence, a barrier). The instruction itself
#: may be a line the book prints (it is the one the chapter teaches), so these are judged by placement instead:
#: (1) every line the fix adds or moves stands, in the solution kernel, between a code line before and a code line
#:     after it that no published source shows around it (no printed sequence of three code lines is copied), and
#: (2) the planted mistake named here — the same instruction where the book's listing (or the prompt) puts it — is a
#:     registered mistake of the exercise, so test_planted_mistakes_get_their_hints proves the emulator rejects it and
#:     its hint answers it; test_placement_mistake_is_the_same_instruction_misplaced proves it is that instruction.
PLACEMENT = {
    "2.11": "PROMPT_2_11",      # the cluster barrier after the last remote access, before the exit (chapter 2's rings)
    "3.8": "THREAD0_3_8",       # fence.mbarrier_init by thread 0 before __syncthreads (chapter 3's pipeline set-up)
    "3.9": "PASS1_3_9",         # fence.proxy.async after the tile's (first) writes, before the barrier (chapter 3)
    "5.11": "SYNC_5_11",        # fence.proxy.async by every thread before __syncthreads (chapter 5's TMA store)
    "6.12": "KEEP_6_12",        # wgmma.fence after ldmatrix's registers are pinned (chapter 6's RS kernel); the prompt
                                # has it before the K loop (chapter 6's SS kernel)
}

def _sitekit():
    """tests/site/sitekit.py (the site tests' helpers: what the student site may legitimately show)."""
    import importlib.util
    import sys

    if "sitekit" not in sys.modules:
        spec = importlib.util.spec_from_file_location("sitekit", ROOT / "tests" / "site" / "sitekit.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitekit"] = module
        spec.loader.exec_module(module)
    return sys.modules["sitekit"]


def _code(line: str) -> str:
    """A CUDA line as code only: its // comment dropped, whitespace collapsed."""
    return _sitekit().normalize(re.sub(r"//.*$", "", line))


def _regions(ex_id: str) -> tuple[str, str]:
    """(solution kernel text, prompt text with its comment marks removed) of kernel exercise ``ex_id`` in solutions/."""
    lesson, number = ex_id.split(".")
    var = f"(?:kernel|SRC)_{lesson}_{number}"   # sets 0 and 3 name their kernels SRC_L_N
    text = next(p for p in SOLUTIONS if lesson_of_file(p) == int(lesson)).read_text(encoding="utf-8")
    m = re.search(rf"^# BEGIN SOLUTION\n({var} = r(?:\"\"\"|\'\'\').*?)^# END SOLUTION\n# BEGIN PROMPT\n(.*?)^# END PROMPT",
                  text, re.M | re.S)
    assert m, f"no solution and prompt regions of {var}"
    return m.group(1), "\n".join(re.sub(r"^# ?", "", line) for line in m.group(2).splitlines())


def _fix_lines(ex_id: str) -> list[str]:
    """The code lines (at least MIN_FIX_LINE characters) of exercise ``ex_id``'s solution kernel in solutions/ that
    the kernel the student starts from (its prompt region) does not have: what the student must write."""
    solution, prompt = _regions(ex_id)
    given = {_code(line) for line in prompt.splitlines()}
    return [c for c in map(_code, solution.splitlines()) if len(c) >= MIN_FIX_LINE and c not in given]


def _code_lines(text: str) -> list[str]:
    """The non-empty code lines of a text, comments dropped, whitespace collapsed; a line commented out the way the
    student editions show a prompt (``# `` in front) counts as code."""
    return [c for c in (_code(re.sub(r"^\s*(?:# |#$)", "", line)) for line in text.splitlines()) if c]


#: names a kernel does not choose — C++ keywords and types, CUDA builtins (every `__`-prefixed name is one too):
#: they stay as they are when a line is reduced to its shape; every other name becomes `ID`
KEPT_NAMES = frozenset("""asm auto bool break case char const constexpr continue default do double else enum extern false
float for goto if inline int long namespace nullptr return short signed sizeof static static_cast reinterpret_cast struct
switch template true typedef typename union unsigned using void volatile while uint8_t uint16_t uint32_t uint64_t int8_t
int16_t int32_t int64_t size_t half nv_bfloat16 float2 float4 int2 int4 uint2 uint4 dim3 threadIdx blockIdx blockDim
gridDim warpSize clusterDim min max fminf fmaxf fabsf sqrtf expf exp2f rsqrtf atomicAdd atomicMax atomicMin atomicCAS
atomicExch printf""".split())
#: a string literal (kept whole: an asm string is the instruction), a number, a name, a two- or three-character operator,
#: any other character
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|\.?\d[\w.]*|[A-Za-z_]\w*|::|->|<<=|>>=|<<|>>|[-+*/%&|^!<>=]=|&&|\|\||\+\+|--|\S')
#: a fix line is compared by its shape only when the shape has at least this many distinct tokens: below it are the
#: one-operator declarations every kernel prints (`const int ID = ID * ID ;`, `__syncthreads ( ) ;`, `return ;`)
MIN_SHAPE_TOKENS = 8


def _shape(code: str) -> str:
    """A code line with its names abstracted: every name that is not in KEPT_NAMES, not `__`-prefixed and not a member
    (after `.` or `->`: `threadIdx.x`) becomes `ID`; literals (numbers, strings) and operators stay; tokens joined by
    one space. The same line with other variable names has the same shape."""
    out, prev = [], ""
    for tok in _TOKEN.findall(code):
        named = tok[0].isalpha() or tok[0] == "_"
        out.append("ID" if named and tok not in KEPT_NAMES and not tok.startswith("__") and prev not in (".", "->")
                   else tok)
        prev = tok
    return " ".join(out)


_SHAPES: list = []


def _published_shapes() -> list[str]:
    """The shape of every code line of the published sources (those of _published_triples), padded with a space."""
    if not _SHAPES:
        _SHAPES.extend(f" {s} " for line in _published_lines() if (s := _shape(line)))
    return _SHAPES


def _printed_shapes(ex_id: str) -> str:
    """The published shapes, one per line, less one occurrence of each line of exercise ``ex_id``'s own prompt (the stub
    shows it): a fix that renames a name of the prompt's own line is the exercise's business, not a copy."""
    from collections import Counter

    own = Counter(f" {s} " for s in map(_shape, _code_lines(_regions(ex_id)[1])) if s)
    kept = []
    for s in _published_shapes():
        if own[s]:
            own[s] -= 1
        else:
            kept.append(s)
    return "\n".join(kept)


def _renamed_copies(ex_id: str) -> list[str]:
    """The fix lines of ``ex_id`` (MIN_FIX_LINE+ characters) whose shape (MIN_SHAPE_TOKENS+ distinct tokens) stands
    inside a published code line's shape: a line the book prints, with other names."""
    printed = _printed_shapes(ex_id)
    return [line for line in _fix_lines(ex_id)
            if len(set((s := _shape(line)).split())) >= MIN_SHAPE_TOKENS and f" {s} " in printed]


def _placements(ex_id: str) -> list[tuple[str, tuple[str, str, str]]]:
    """(line, (code line before, line, code line after)) for every code line the solution kernel of ``ex_id`` adds to
    its prompt or moves within it (a difflib alignment of the two kernels' code lines)."""
    import difflib

    solution, prompt = _regions(ex_id)
    sol, given = _code_lines(solution), _code_lines(prompt)
    out = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, given, sol, autojunk=False).get_opcodes():
        if tag in ("insert", "replace"):
            out += [(sol[j], (sol[j - 1] if j else "", sol[j], sol[j + 1] if j + 1 < len(sol) else ""))
                    for j in range(j1, j2)]
    return out


_TRIPLES: set = set()


def _published_triples() -> set:
    """Every sequence of three consecutive code lines of the sources the student site may show (the same sources as
    tests/site/sitekit.py's _published_sources: chapters, exercise stubs, the landing page, the book's kernels)."""
    if not _TRIPLES:
        for lines in _published_files():
            _TRIPLES.update(zip([""] + lines, lines, lines[1:] + [""]))
    return _TRIPLES


_SHAPE_TRIPLES: set = set()


def _published_shape_triples() -> set:
    """The shapes (_shape) of every published sequence of three code lines: the same sequence with other names."""
    if not _SHAPE_TRIPLES:
        _SHAPE_TRIPLES.update(tuple(map(_shape, s)) for s in _published_triples())
    return _SHAPE_TRIPLES


def _published_files() -> list[list[str]]:
    """The code lines (_code_lines) of each source the student site may show: chapters, exercise stubs, the landing
    page, the book's kernels and headers (tests/site/sitekit.py's _published_sources)."""
    paths = [p for folder in ("chapters", "exercises") for p in sorted((ROOT / folder).glob("*.md"))]
    paths += [ROOT / "intro.md"] + sorted(ROOT.glob("h100lab/cuda/kernels/*.cu")) + \
        sorted(ROOT.glob("h100lab/cuda/include/**/*.cuh"))
    return [_code_lines(p.read_text(encoding="utf-8")) for p in paths]


def _published_lines() -> list[str]:
    return [line for lines in _published_files() for line in lines]


def test_a_line_of_a_book_kernel_counts_as_published():
    book_line = 'asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(mine) : "memory"); // x'
    assert _code(book_line) in _sitekit()._published_sources()


def test_every_kernel_exercise_is_checked():
    """The list found in the solutions is exactly the registry's kernel exercises, and the allow-list names only them."""
    from h100lab.grading import all_exercises

    registered = [e.id for p in SOLUTIONS for e in all_exercises(lesson_of_file(p)) if _is_kernel_exercise(e.id)]
    assert sorted(KERNEL_EXERCISES) == sorted(registered)
    assert set(STILL_PRINTED) <= set(KERNEL_EXERCISES)


@pytest.mark.parametrize("ex_id", [
    pytest.param(i, marks=pytest.mark.xfail(strict=True, reason=f"allow-list: {STILL_PRINTED[i]}"))
    if i in STILL_PRINTED else i for i in KERNEL_EXERCISES])
def test_kernel_fix_is_no_line_the_book_prints(ex_id):
    published = _sitekit()._published_sources()
    if ex_id in PLACEMENT:     # judged by placement: a printed line is allowed where no printed sequence surrounds it
        moved = _placements(ex_id)
        assert moved, f"exercise {ex_id}: the solution kernel adds or moves no line of its prompt"
        copied = [ctx for line, ctx in moved if ctx in _published_triples()
                  or tuple(map(_shape, ctx)) in _published_shape_triples()]
        assert not copied, (f"exercise {ex_id}: the fix stands where the book prints it — these sequences of code lines "
                            f"(before, fix, after) are printed, or printed with other names, so a student can copy the "
                            f"placement: {copied}")
        return
    fix = _fix_lines(ex_id)
    assert fix, f"exercise {ex_id}: the solution kernel adds no line of {MIN_FIX_LINE}+ characters to its prompt"
    copied = [line for line in fix if line in published]
    assert not copied, (f"exercise {ex_id}: these lines of the fix are printed by the book (chapters, exercise stubs "
                        f"or h100lab/cuda kernel sources), so a student can copy them: {copied}")
    renamed = _renamed_copies(ex_id)
    assert not renamed, (f"exercise {ex_id}: these lines of the fix are lines the book prints with other names (same "
                         f"keywords, literals and operators), so a student can copy them and rename: "
                         f"{[(line, _shape(line)) for line in renamed]}")


def test_a_printed_sequence_counts_as_a_copied_placement():
    """The placement check can fail: three consecutive code lines of a book kernel are a printed sequence, and the
    commented-out prompt lines of an exercise stub count as the code they show."""
    lines = _code_lines((ROOT / "h100lab/cuda/kernels/l02_dsmem_ring.cu").read_text(encoding="utf-8"))
    assert tuple(lines[10:13]) in _published_triples()
    renamed = tuple(re.sub(r"\b(local|remote|owner)\b", r"my_\1", x) for x in lines[10:13])   # other names
    assert renamed != tuple(lines[10:13]) and renamed not in _published_triples()
    assert tuple(map(_shape, renamed)) in _published_shape_triples()
    assert _code_lines('# asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // x') == [
        'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");']


@pytest.mark.parametrize("ex_id", sorted(PLACEMENT))
def test_placement_mistake_is_the_same_instruction_misplaced(ex_id):
    """The planted kernel named in PLACEMENT is a registered mistake of the exercise (so the planted-mistake test
    proves the emulator rejects it with its hint), it holds every line the fix places, and it is judged wrong."""
    import importlib

    from h100lab.grading import get

    ex = get(ex_id)
    planted = getattr(importlib.import_module(f"h100lab.grading.answers.l{int(ex_id.split('.')[0]):02d}"),
                      PLACEMENT[ex_id])
    assert any(m.has_example and m.answer == planted for m in ex.mistakes), f"{PLACEMENT[ex_id]} is no planted mistake"
    have = _code_lines(planted)
    assert all(any(line in h for h in have) for line, _ in _placements(ex_id)), \
        f"{PLACEMENT[ex_id]} lacks the instruction the fix places"
    assert not judge(ex, planted, ex.answer()).passed


def test_a_renamed_book_line_counts_as_printed():
    """The shape check can fail: a line of a book kernel with every variable renamed has a printed shape (also inside
    a longer printed line), while trivial lines and lines of another shape do not count."""
    printed = "\n".join(_published_shapes())
    book = "bar_wait(bars + 8 * s, (unsigned)(it / STAGES) & 1u);"          # h100lab/cuda/kernels/l08_gemm.cu
    assert _code(book) in _sitekit()._published_sources()
    renamed = "bar_wait(barriers + 8 * st, (unsigned)(k_iter / NSTAGE) & 1u);"
    assert renamed not in _sitekit()._published_sources()
    assert _shape(renamed) == _shape(book) == "ID ( ID + 8 * ID , ( unsigned ) ( ID / ID ) & 1u ) ;"
    assert f" {_shape(renamed)} " in printed and len(set(_shape(renamed).split())) >= MIN_SHAPE_TOKENS
    # keywords, builtins, members, literals and asm strings stay; only the kernel's own names are abstracted
    assert _shape('const int i = blockIdx.x * blockDim.x + threadIdx.x;') == \
        "const int ID = blockIdx . x * blockDim . x + threadIdx . x ;"
    assert _shape('asm volatile("fence.proxy.async.shared::cta;" ::: "memory");') == \
        'asm volatile ( "fence.proxy.async.shared::cta;" :: : "memory" ) ;'
    assert _shape("float v = 0.f;") != _shape("float v = 1.f;")
    # trivial lines have too few distinct tokens to be evidence of a copy
    for line in ("}", "return;", "__syncthreads();", "const int s = i % STAGES;", "const int first = g * group;"):
        assert len(set(_shape(line).split())) < MIN_SHAPE_TOKENS, line


def test_renamed_copies_are_found_in_a_fix(monkeypatch):
    """_renamed_copies flags a fix line that is a renamed book line, and not a line whose shape only the exercise's own
    prompt shows (exercise 8.8's stub prints its output line once)."""
    book_line = "bar_wait(barriers + 8 * st, (unsigned)(k_iter / NSTAGE) & 1u);"
    own = "if (pass == 1) out[(2 * i + c) * 32 + lane] = v;"
    assert own in _code_lines(_regions("8.8")[1]) and sum(s == f" {_shape(own)} " for s in _published_shapes()) == 1
    renamed_own = "if (pass == 1) out[(2 * slot + c) * 32 + lane] = sum;"
    assert _shape(renamed_own) == _shape(own)
    monkeypatch.setattr(sys.modules[__name__], "_fix_lines", lambda ex_id: [book_line, renamed_own])
    assert _renamed_copies("8.8") == [book_line]
