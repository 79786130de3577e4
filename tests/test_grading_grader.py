"""The instructor's grader on hostile submissions (tests/fixtures/grading/submissions/).

One run of the real command line (``python -m h100lab.grading grade``, each notebook in its own kernel,
3 s per cell) grades every fixture submission; the tests read its gradebook:

alice/      a folder with a correct .ipynb that reads a data file and writes a scratch file
carol.md    correct, saved as plain jupytext Markdown (```python fences), not MyST
bob.md      wrong answers            stub.md     the untouched student edition
raises.md   a cell raises mid-way    hangs.md    a cell sleeps for 10 minutes (interruptible)
hangs_hard.md  ignores SIGINT and sleeps (the kernel must be killed)
prints.md   prints ~5 MB and raises an error with a 2 MB message
rebinds.md  rebinds h100lab.grading.check (and check) to print "correct"
patches.md  monkeypatches h100lab.grading.registry.compare to accept anything
deleted.md  a graded cell deleted, one untagged, one edited
exits.md    kills its own kernel     broken.ipynb   not JSON     nobody/   no notebook at all
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from h100lab.grading.__main__ import main
from h100lab.grading.grader import find_submissions, grade_notebook, load_answers_module
from h100lab.grading.notebook import load_exercise_set
from h100lab.grading.verdict import MESSAGE_LIMIT

FIXTURES = Path(__file__).parent / "fixtures" / "grading"
SUBMISSIONS = FIXTURES / "submissions"
ROOT = Path(__file__).resolve().parent.parent
IDS = ["99.1", "99.2", "99.3", "99.4"]


def tree_digest(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file and folder under ``folder``: size, modification time and content hash."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            out[str(p.relative_to(folder))] = (st.st_size, st.st_mtime_ns, digest)
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gradebook")
    before = tree_digest(SUBMISSIONS)
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "h100lab.grading", "grade", str(SUBMISSIONS), "--set", "99", "--out", str(out),
         "--timeout", "3", "--jobs", "3", "--solutions", str(FIXTURES / "solutions"),
         "--answers-module", str(FIXTURES / "fixture_answers.py")],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    book = json.loads((out / "gradebook-99.json").read_text())
    rows = {(r["student"], r["exercise"]): r for r in book["rows"]}
    return {"proc": proc, "out": out, "book": book, "rows": rows, "before": before, "elapsed": elapsed}


def statuses(run, student):
    return [run["rows"][(student, i)]["status"] for i in IDS]


def test_gradebook_files(run):
    book, out = run["book"], run["out"]
    assert book["set"] == "99" and book["exercises"] == IDS
    with open(out / "gradebook-99.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["student", "exercise", "passed", "status", "message", "points", "max_points"]
    assert len(rows) == len(book["rows"]) == 14 * 4
    for c, j in zip(rows, book["rows"]):
        assert (c["student"], c["exercise"], c["passed"], c["points"]) == \
               (j["student"], j["exercise"], str(j["passed"]), str(j["points"]))
        assert j["points"] == (j["max_points"] if j["passed"] else 0)
        assert len(j["message"]) <= MESSAGE_LIMIT
    assert book["totals"]["alice"] == {"points": 5, "max_points": 5, "passed": 4, "exercises": 4}
    assert (out / "gradebook-99.json").stat().st_size < 64_000, "megabytes of output never reach the gradebook"
    assert "alice         5/5   ++++" in run["proc"].stdout


def test_submissions_folder_is_untouched(run):
    assert tree_digest(SUBMISSIONS) == run["before"]


def test_correct_folder_submission(run):
    assert statuses(run, "alice") == ["correct"] * 4
    assert statuses(run, "carol") == ["correct"] * 4
    assert run["rows"][("alice", "99.4")]["points"] == 2


def test_wrong_answers_get_hints(run):
    assert statuses(run, "bob") == ["wrong"] * 4
    msg = run["rows"][("bob", "99.2")]["message"]
    assert "Expected 5 items, got 4" in msg and "Hint: A bank is 4 bytes wide" in msg
    assert "Expected a list, got a string" in run["rows"][("bob", "99.4")]["message"]


def test_untouched_stub_fails_every_cell_as_unanswered(run):
    assert statuses(run, "stub") == ["no answer"] * 4
    assert "replace `...`" in run["rows"][("stub", "99.4")]["message"]
    assert "NotImplementedError" in run["rows"][("stub", "99.2")]["message"]
    # 99.1's graded cell in the source runs `import math`, then checks int(answer_99_1): int(...) raises
    assert "'ellipsis'" in run["rows"][("stub", "99.1")]["message"]
    # 99.3: the stub cell raises; the next cell's `answer_99_3 = root` fails on the name it never got
    assert "holds a stub (NotImplementedError), so name 'answer_99_3' is not defined" in \
        run["rows"][("stub", "99.3")]["message"]


def test_a_cell_that_raises_spoils_only_what_depends_on_it(run):
    assert statuses(run, "raises") == ["correct", "correct", "error", "correct"]
    msg = run["rows"][("raises", "99.3")]["message"]
    assert "answer_99_3" in msg and "ZeroDivisionError" in msg


def test_an_interruptible_hang_is_interrupted_and_grading_goes_on(run):
    assert statuses(run, "hangs") == ["correct", "timeout", "correct", "correct"]
    assert "longer than 3 s" in run["rows"][("hangs", "99.2")]["message"]


def test_a_hang_that_ignores_interrupts_kills_the_kernel(run):
    assert statuses(run, "hangs_hard") == ["correct", "timeout", "timeout", "timeout"]
    assert "could not be interrupted" in run["rows"][("hangs_hard", "99.4")]["message"]
    assert run["elapsed"] < 120


def test_megabytes_of_output_are_graded(run):
    assert statuses(run, "prints") == ["correct"] * 4
    assert "fd-level" not in run["proc"].stdout + run["proc"].stderr
    assert len(run["proc"].stdout) < 10_000


@pytest.mark.parametrize("student", ["rebinds", "patches"])
def test_rebinding_check_or_patching_compare_changes_nothing(run, student):
    assert statuses(run, student) == ["wrong"] * 4


def test_deleted_untagged_and_edited_graded_cells(run):
    assert statuses(run, "deleted") == ["correct", "missing", "missing", "correct"]
    assert run["rows"][("deleted", "99.2")]["message"].endswith(
        "graded cell missing (the cell tagged grade:99.2 is not in the submission)")


def test_a_kernel_that_dies(run):
    assert statuses(run, "exits") == ["correct", "error", "missing", "missing"]
    assert "kernel died" in run["rows"][("exits", "99.2")]["message"]


def test_unreadable_and_absent_notebooks(run):
    assert statuses(run, "broken") == ["error"] * 4
    assert "could not read the submission broken.ipynb" in run["rows"][("broken", "99.1")]["message"]
    assert statuses(run, "nobody") == ["missing"] * 4
    assert "no notebook 99-*.ipynb" in run["rows"][("nobody", "99.1")]["message"]


def test_find_submissions(tmp_path):
    subs = {s.student: s for s in find_submissions(SUBMISSIONS, 99)}
    assert sorted(subs) == ["alice", "bob", "broken", "carol", "deleted", "exits", "hangs", "hangs_hard", "nobody",
                            "patches", "prints", "raises", "rebinds", "stub"]
    assert subs["alice"].path.name == "99-fixture.ipynb" and subs["alice"].folder == SUBMISSIONS / "alice"
    assert subs["nobody"].path is None and subs["bob"].folder is None
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / "README.md").write_text("notes")
    (tmp_path / "carol").mkdir()
    for name in ("99-x.md", "99-x.ipynb", "98-y.ipynb"):
        (tmp_path / "carol" / name).write_text("{}")
    found = find_submissions(tmp_path, 99)
    assert [(s.student, s.path.name) for s in found] == [("carol", "99-x.ipynb")]
    with pytest.raises(FileNotFoundError):
        find_submissions(tmp_path / "nope", 99)


def test_gradebook_inside_the_submissions_is_refused(tmp_path, capsys):
    code = main(["grade", str(SUBMISSIONS), "--set", "99", "--out", str(SUBMISSIONS / "gradebook"),
                 "--solutions", str(FIXTURES / "solutions"), "--answers-module", str(FIXTURES / "fixture_answers.py")])
    assert code == 2
    assert "inside the submissions folder" in capsys.readouterr().err
    assert not (SUBMISSIONS / "gradebook").exists()
    assert main(["grade", str(tmp_path), "--set", "nine"]) == 2
    assert main(["grade", str(tmp_path), "--set", "99", "--jobs", "0"]) == 2
    assert main(["grade", str(tmp_path), "--set", "99", "--timeout", "0"]) == 2
    assert "timeout must be > 0" in capsys.readouterr().err
    assert main(["grade", str(tmp_path), "--set", "99", "--solutions", str(tmp_path)]) == 2
    assert "no solutions file 99-*.md" in capsys.readouterr().err


def test_grade_notebook_api_on_the_fixture_solution():
    """The set's own solutions file passes every graded cell (the Python API, one kernel)."""
    load_answers_module(str(FIXTURES / "fixture_answers.py"))
    exset = load_exercise_set(FIXTURES / "solutions" / "99-fixture.md")
    verdicts = grade_notebook(exset.path, exset, timeout=30)
    assert [(v.exercise, v.status, v.points) for v in verdicts] == \
           [("99.1", "correct", 1), ("99.2", "correct", 1), ("99.3", "correct", 1), ("99.4", "correct", 2)]
