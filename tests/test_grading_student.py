"""The student-edition generator (h100lab.grading.student) and the exercise-set parser (notebook)."""
from __future__ import annotations

import keyword
import string
import shutil
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from h100lab.grading.__main__ import main
from h100lab.grading.notebook import GradingFormatError, load_exercise_set, parse_graded_cell
from h100lab.grading.student import NOTE_PREFIX, PROSE_STUB, generate, student_text, stub_code, stub_markdown

FIXTURES = Path(__file__).parent / "fixtures" / "grading"
SOURCE = FIXTURES / "solutions" / "99-fixture.md"
HEADER = SOURCE.read_text().split("---\n", 2)
HEADER = "---\n" + HEADER[1] + "---\n"


def cells(body: str) -> str:
    return HEADER + "\n" + textwrap.dedent(body).lstrip("\n")


# ------------------------------------------------------------------------------------- code regions
def test_assignment_region_becomes_ellipsis_per_name():
    src = "x = 1\n# BEGIN SOLUTION\nanswer_1_3 = occupancy(256, 64).active_blocks\n# END SOLUTION\nprint(x)"
    assert stub_code(src) == "x = 1\nanswer_1_3 = ...  # YOUR ANSWER\nprint(x)"


def test_multiline_and_multiple_assignments():
    src = textwrap.dedent("""\
        # BEGIN SOLUTION
        # a comment the student never sees
        a = b = f(1,
                  2)
        c, (d, *e) = g()
        a = 3
        t: int = 4
        # END SOLUTION""")
    assert stub_code(src).split("\n") == [f"{n} = ...  # YOUR ANSWER" for n in "abcdet"]


def test_function_body_region_raises_at_its_indentation():
    src = textwrap.dedent('''\
        def bank(address):
            """Bank of a byte address."""
            # BEGIN SOLUTION
            word = address // 4
            return word % 32
            # END SOLUTION


        answer = [bank(a) for a in range(3)]''')
    out = stub_code(src)
    assert out == textwrap.dedent('''\
        def bank(address):
            """Bank of a byte address."""
            raise NotImplementedError  # YOUR CODE HERE


        answer = [bank(a) for a in range(3)]''')
    with pytest.raises(NotImplementedError):
        exec(out, {})


def test_other_top_level_region_raises():
    src = "# BEGIN SOLUTION\nfor i in range(3):\n    total = i\n# END SOLUTION"
    assert stub_code(src) == "raise NotImplementedError  # YOUR CODE HERE"
    src = "# BEGIN SOLUTION\nanswer = 1\nprint(answer)\n# END SOLUTION"  # not only assignments
    assert stub_code(src) == "raise NotImplementedError  # YOUR CODE HERE"
    src = "# BEGIN SOLUTION\nobj.attr = 1\n# END SOLUTION"  # an attribute is not a name
    assert stub_code(src) == "raise NotImplementedError  # YOUR CODE HERE"


def test_several_regions_in_one_cell_and_nbgrader_style_markers():
    src = "### BEGIN SOLUTION\na = 1\n### END SOLUTION\nmid = 0\n# BEGIN SOLUTION  \nb = 2\n#END SOLUTION"
    assert stub_code(src) == "a = ...  # YOUR ANSWER\nmid = 0\nb = ...  # YOUR ANSWER"
    with pytest.raises(GradingFormatError, match="whole statements"):  # the marker's indentation is the stub's
        stub_code("  # BEGIN SOLUTION\nb = 2\n# END SOLUTION")


@pytest.mark.parametrize("src, words", [
    ("# BEGIN SOLUTION\na = 1", "BEGIN SOLUTION without END SOLUTION"),
    ("a = 1\n# END SOLUTION", "END SOLUTION without BEGIN SOLUTION"),
    ("# BEGIN SOLUTION\n# BEGIN SOLUTION\na = 1\n# END SOLUTION\n# END SOLUTION", "inside another solution region"),
    ("# BEGIN SOLUTION\n\n# END SOLUTION", "empty solution region"),
    ("x = f(\n# BEGIN SOLUTION\n1,\n# END SOLUTION\n)", "must hold whole statements"),
], ids=["unclosed", "stray-end", "nested", "empty", "partial-statement"])
def test_malformed_regions_are_errors_naming_the_rule(src, words):
    with pytest.raises(GradingFormatError, match=words):
        stub_code(src, "solutions/01-x.md, cell 3")


def test_markdown_region_becomes_a_prompt():
    src = "Why?\n\n<!-- BEGIN SOLUTION -->\nBecause.\nReally.\n<!--END SOLUTION-->\n\nNext."
    assert stub_markdown(src) == f"Why?\n\n{PROSE_STUB}\n\nNext."
    with pytest.raises(GradingFormatError, match="without <!-- END SOLUTION -->"):
        stub_markdown("<!-- BEGIN SOLUTION -->\nBecause.")
    assert stub_markdown("# BEGIN SOLUTION\ntext") == "# BEGIN SOLUTION\ntext"  # a heading, not a marker


_names = (st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True, alphabet=string.ascii_lowercase + string.digits + "_")
          .filter(lambda n: not keyword.iskeyword(n)))


@given(st.lists(_names, min_size=1, max_size=5), st.sampled_from(["", "    ", "\t"]),
       st.lists(st.integers(0, 99), min_size=1, max_size=5))
def test_assignment_stub_property(names, indent, values):
    """Any region of name assignments gives one `name = ...` per distinct name, in order, and is a fixpoint."""
    body = "\n".join(f"{indent}{n} = {values[i % len(values)]} + 1" for i, n in enumerate(names))
    src = f"{indent}# BEGIN SOLUTION\n{body}\n{indent}# END SOLUTION"
    out = stub_code(src)
    distinct = list(dict.fromkeys(names))
    assert out.split("\n") == [f"{indent}{n} = ...  # YOUR ANSWER" for n in distinct]
    assert stub_code(out) == out


# ----------------------------------------------------------------------------------- whole notebooks
def test_fixture_student_edition(tmp_path):
    text = student_text(SOURCE.read_text(), "solutions/99-fixture.md")
    assert text.startswith(HEADER), "the jupytext header is copied byte for byte"
    assert text.split(HEADER, 1)[1].lstrip().startswith(NOTE_PREFIX)
    assert "from solutions/99-fixture.md" in text and "Do not edit" in text
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert "word = address // 4" not in text and "contradiction" not in text
    assert text.count("= ...  # YOUR ANSWER") == 2 and text.count("raise NotImplementedError") == 2
    assert text.count("check(\"99.") == 4, "graded cells are kept"
    assert text.count(":tags: [grade:99.") == 4, "tags are written as the sources write them"
    assert "Sum the integers 0 to 9." in text


def test_generation_is_deterministic_and_idempotent(tmp_path):
    a, b = tmp_path / "a" / "solutions", tmp_path / "b" / "deep" / "solutions"
    for d in (a, b):
        d.mkdir(parents=True)
        shutil.copy(SOURCE, d)
    generate(a, tmp_path / "a" / "exercises")
    generate(b, tmp_path / "b" / "exercises")
    one = (tmp_path / "a" / "exercises" / SOURCE.name).read_text()
    assert one == (tmp_path / "b" / "exercises" / SOURCE.name).read_text(), "output depends on the path"
    assert student_text(one, "exercises/99-fixture.md") == one, "generating from the output changes nothing"
    outcomes = generate(a, tmp_path / "a" / "exercises")
    assert [o.action for o in outcomes] == ["unchanged"]


def test_first_cell_code_gets_a_note_cell():
    text = student_text(cells("""
        ```{code-cell} ipython3
        # BEGIN SOLUTION
        x = 1
        # END SOLUTION
        ```

        ```{code-cell} ipython3
        :tags: [grade:7.1]

        check("7.1", x)
        ```
        """), "solutions/07-x.md")
    body = text[len(HEADER):].lstrip("\n")
    assert body.startswith(NOTE_PREFIX)
    assert student_text(text, "whatever") == text


def test_graded_cell_with_a_region_is_an_error():
    with pytest.raises(GradingFormatError, match="graded cell may not hold a solution region"):
        student_text(cells("""
            ```{code-cell} ipython3
            :tags: [grade:7.1]

            # BEGIN SOLUTION
            x = 1
            # END SOLUTION
            check("7.1", x)
            ```
            """), "solutions/07-x.md")


def test_missing_header_is_an_error():
    with pytest.raises(GradingFormatError, match="jupytext header"):
        student_text("# no header\n", "solutions/07-x.md")


def test_committed_fixture_editions_are_current():
    outcomes = generate(FIXTURES / "solutions", FIXTURES / "exercises", check=True)
    assert [(o.target.name, o.action) for o in outcomes] == [("99-fixture.md", "unchanged")]
    stub = (FIXTURES / "submissions" / "stub.md").read_text()
    assert stub == (FIXTURES / "exercises" / "99-fixture.md").read_text(), "stub.md is the untouched student edition"


def test_check_mode_and_cli(tmp_path, capsys):
    src, dst = tmp_path / "solutions", tmp_path / "exercises"
    src.mkdir()
    shutil.copy(SOURCE, src)
    assert main(["student", str(src), str(dst), "--check"]) == 1
    assert "missing" in capsys.readouterr().out
    assert not dst.exists(), "--check writes nothing"
    assert main(["student", str(src), str(dst)]) == 0
    assert main(["student", str(src), str(dst), "--check"]) == 0
    target = dst / SOURCE.name
    target.write_text(target.read_text().replace("Sum the integers", "Add the integers"))
    assert main(["student", str(src), str(dst), "--check"]) == 1
    out = capsys.readouterr().out
    assert "out of date" in out and "-Add the integers" in out and "+Sum the integers" in out
    (dst / "42-orphan.md").write_text("x")
    main(["student", str(src), str(dst)])
    assert main(["student", str(src), str(dst), "--check"]) == 1
    assert "42-orphan.md: no source file" in capsys.readouterr().out
    bad = src / "98-bad.md"
    bad.write_text(cells("""
        ```{code-cell} ipython3
        # BEGIN SOLUTION
        x = 1
        ```

        ```{code-cell} ipython3
        :tags: [grade:98.1]

        check("98.1", x)
        ```
        """))
    assert main(["student", str(src), str(dst)]) == 2
    assert "BEGIN SOLUTION without END SOLUTION" in capsys.readouterr().err


# --------------------------------------------------------------------------------- exercise sets
def test_load_exercise_set():
    exset = load_exercise_set(SOURCE)
    assert exset.lesson == 99 and exset.ids == ["99.1", "99.2", "99.3", "99.4"]
    assert exset.cell("99.2").expr == "answer_99_2" and exset.cell("99.2").setup == ""
    assert (exset.cell("99.1").setup, exset.cell("99.1").expr) == ("import math", "int(answer_99_1)")


def test_parse_graded_cell_rules():
    g = parse_graded_cell("import numpy as np\nv = np.arange(3); check('3.2', value=v.sum())", "3.2")
    assert (g.setup, g.expr) == ("import numpy as np\nv = np.arange(3)", "v.sum()")
    multi = parse_graded_cell('h100lab.grading.check(\n    "3.2",\n    [a,\n     b],\n)', "3.2")
    assert multi.expr == "[a,\n     b]"
    for src, words in [
        ("check('3.1', x)", "checks '3.1', not '3.2'"),
        ("x = 1", "must end with check"),
        ("", "is empty"),
        ("check('3.2')", "with two arguments"),
        ("check('3.2', x)\ncheck('3.2', x)", "calls check more than once"),
        ("check('3.2', x", "not valid Python"),
    ]:
        with pytest.raises(GradingFormatError, match=words):
            parse_graded_cell(src, "3.2")


@pytest.mark.parametrize("body, words", [
    ('```{code-cell} ipython3\n:tags: [grade:7.1]\n\ncheck("7.1", 1)\n```\n\n'
     '```{code-cell} ipython3\n:tags: [grade:7.1]\n\ncheck("7.1", 1)\n```\n', "has two graded cells"),
    ('```{code-cell} ipython3\n:tags: [grade:8.1]\n\ncheck("8.1", 1)\n```\n', "not in lesson 7"),
    ('```{code-cell} ipython3\n:tags: [grade:7.1, grade:7.2]\n\ncheck("7.1", 1)\n```\n', "one grade: tag"),
    ("Just prose.\n", "no graded cells"),
], ids=["duplicate-id", "other-lesson", "two-tags", "no-graded-cells"])
def test_exercise_set_rules(tmp_path, body, words):
    path = tmp_path / "07-x.md"
    path.write_text(HEADER + "\n" + body)
    with pytest.raises(GradingFormatError, match=words):
        load_exercise_set(path)
    with pytest.raises(GradingFormatError, match="named NN-<slug>.md"):
        load_exercise_set(tmp_path / "x.md")
