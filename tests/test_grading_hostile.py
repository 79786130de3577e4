"""The grader against a hostile class: notebooks built here, in a temporary folder, graded by the real
command line (``python -m h100lab.grading grade``) against the fixture set 99.

The class: copies of fixture submissions (alice/, raises, hangs, exits, stub, prints) and

printer     prints forever after answering 99.1        jsonbreak  answers 99.1-99.2, then rebinds json.dumps
syntax      the cell defining answer_99_3 does not parse
shadow/     a folder with its own ipykernel_launcher.py (which would exit at once if it ran)
evil        (only where the namespace sandbox works) looks for the submissions, the gradebook folders,
            the other students' scratch folders, /root/.ssh and /run; appends to a classmate's notebook
            and to the gradebook folders; opens a network connection; starts a setsid process meant to
            rewrite the gradebook later; SIGKILLs its parent (the grader, without a sandbox). Every
            answer is right only if each attempt saw or changed nothing.

The class lives outside /tmp (in /var/tmp where it can), and the grader runs with TMPDIR there too, so
what hides the submissions, the gradebook folder and the other students' scratch folders is the
grader's own list, not the sandbox's private /tmp. Run A grades the class with --jobs 2, run B with
--jobs 1, run C with --jobs 2 again, each into the same --out folder (emptied in between): the
gradebooks must be byte-identical. Other tests: an output flood's memory, the no-sandbox fallback (warning, report
of a changed submissions folder, --sandbox on refusing), and the read loop of the grader's kernel client
on a fake kernel (a reply that arrived as the time ran out counts; endless output cannot hold the loop).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from h100lab.grading import sandbox
from h100lab.grading.__main__ import main
from h100lab.grading.grader import Kernel, Limits, digest_tree, grade, load_answers_module
from mystkit import MYST_HEADER

FIXTURES = Path(__file__).parent / "fixtures" / "grading"
SOLUTIONS = FIXTURES / "solutions"
ANSWERS = FIXTURES / "fixture_answers.py"
ROOT = Path(__file__).resolve().parent.parent
IDS = ["99.1", "99.2", "99.3", "99.4"]
ISOLATION = sandbox.probe()
needs_sandbox = pytest.mark.skipif(not ISOLATION.enabled, reason=f"no namespace sandbox here: {ISOLATION.reason}")
MARKER = f"H100LAB-DAEMON-{uuid.uuid4().hex}"

HEAD = MYST_HEADER + "\n"
A1 = "answer_99_1 = int(np.arange(10).sum())"
A2 = "answer_99_2 = [(a // 4) % 32 for a in (0, 4, 128, 132, 260)]"
A3 = "answer_99_3 = float(np.sqrt(2.0))"
A4 = "answer_99_4 = np.arange(6).reshape(2, 3).T"
ALL = "\n".join([A1, A2, A3, A4])


def cell(source: str, tag: str | None = None) -> str:
    tags = f":tags: [grade:{tag}]\n\n" if tag else ""
    return f"```{{code-cell}} ipython3\n{tags}{source}\n```\n\n"


def graded(ex_id: str) -> str:
    return cell(f'check("{ex_id}", answer_{ex_id.replace(".", "_")})', ex_id)


def notebook(*cells: str) -> str:
    return HEAD + cell("from h100lab.grading import check\nimport numpy as np") + "".join(cells)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


EVIL = '''
import glob, os, signal, socket, subprocess, sys
SUBS, OUT, SCRATCH, MARKER = {subs!r}, {out!r}, {scratch!r}, {marker!r}
mine = os.path.dirname(os.getcwd())
seen = [p for p in [SUBS, OUT, "/root/.ssh", "/run"] if os.path.isdir(p) and os.listdir(p)]
seen += [p for p in glob.glob(SCRATCH + "/h100lab-grade-*/*") if p != mine]
wrote = []
for p in [os.path.join(SUBS, "stub.md"), os.path.join(OUT, "gradebook-99.csv"), os.path.join(OUT, "x")]:
    try:
        with open(p, "a") as fh:
            fh.write("pwned")
        wrote.append(p)
    except OSError:
        pass
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2).close()
    net = 1
except OSError:
    net = 0
subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(60); "
                  "open(sys.argv[2] + '/gradebook-99.csv', 'w').write('pwned')", MARKER, OUT],
                 start_new_session=True)
os.kill(os.getppid(), signal.SIGKILL)
answer_99_1 = int(np.arange(10).sum()) + len(seen)
answer_99_2 = [(a // 4) % 32 for a in (0, 4, 128, 132, 260)] + wrote
answer_99_3 = float(np.sqrt(2.0)) + net
'''


def build_class(root: Path, evil: bool) -> Path:
    subs = root / "class"
    subs.mkdir()
    for name in ("raises.md", "hangs.md", "exits.md", "stub.md", "prints.md"):
        shutil.copy(FIXTURES / "submissions" / name, subs / name)
    shutil.copytree(FIXTURES / "submissions" / "alice", subs / "alice")
    write(subs / "printer.md", notebook(cell(A1), graded("99.1"), cell(A2), cell('while True:\n    print("y" * 1000)'),
                                        graded("99.2"), cell(A3), graded("99.3"), cell(A4), graded("99.4")))
    write(subs / "jsonbreak.md", notebook(cell(A1 + "\n" + A2), graded("99.1"), graded("99.2"),
                                          cell("import json\njson.dumps = lambda *a, **k: 'not json'"),
                                          cell(A3), graded("99.3"), cell(A4), graded("99.4")))
    write(subs / "syntax.md", notebook(cell(A1), graded("99.1"), cell(A2), graded("99.2"),
                                       cell("answer_99_3 = float(np.sqrt(2.0)\nx = 1"), graded("99.3"),
                                       cell(A4), graded("99.4")))
    write(subs / "shadow" / "99-fixture.md", notebook(cell(ALL), *(graded(i) for i in IDS)))
    write(subs / "shadow" / "ipykernel_launcher.py", "import sys\nsys.exit('the student launcher ran')\n")
    if evil:
        source = EVIL.format(subs=str(subs), out=str(root / "out"), scratch=str(root / "tmp"), marker=MARKER)
        write(subs / "evil.md", notebook(cell(source), graded("99.1"), graded("99.2"), graded("99.3"), cell(A4),
                                         graded("99.4")))
    (root / "tmp").mkdir()
    return subs


def run_cli(subs: Path, out: Path, *args: str, timeout: int = 300, tmpdir: Path | None = None
            ) -> subprocess.CompletedProcess:
    env = dict(os.environ, **({"TMPDIR": str(tmpdir)} if tmpdir else {}))
    return subprocess.run(
        [sys.executable, "-m", "h100lab.grading", "grade", str(subs), "--set", "99", "--out", str(out),
         "--solutions", str(SOLUTIONS), "--answers-module", str(ANSWERS), *args],
        capture_output=True, text=True, cwd=ROOT, timeout=timeout, env=env)


def daemons() -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and MARKER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


CLASS_ARGS = ("--timeout", "5", "--max-output", "20")


def grade_class(root: Path, subs: Path, name: str, jobs: str) -> tuple[subprocess.CompletedProcess, Path, list]:
    """Grade into root/out (made empty first, so it exists and must be hidden), move the result to
    root/<name>; also the processes left with the marker right after the grader returned."""
    out = root / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    proc = run_cli(subs, out, "--jobs", jobs, *CLASS_ARGS, tmpdir=root / "tmp")
    alive = daemons()
    out.rename(root / name)
    return proc, root / name, alive


@pytest.fixture(scope="module")
def klass():
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="h100lab-hostile-", dir=base)).resolve()
    try:
        subs = build_class(root, evil=ISOLATION.enabled)
        before = digest_tree(subs)
        proc, result, alive = grade_class(root, subs, "A", "2")
        book = json.loads((result / "gradebook-99.json").read_text()) if proc.returncode == 0 else None
        rows = {(r["student"], r["exercise"]): r for r in book["rows"]} if book else {}
        yield {"root": root, "subs": subs, "result": result, "proc": proc, "book": book, "rows": rows,
               "before": before, "daemons": alive}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def statuses(run, student):
    return [run["rows"][(student, i)]["status"] for i in IDS]


def message(run, student, ex_id):
    return run["rows"][(student, ex_id)]["message"]


def test_the_class_is_graded(klass):
    assert klass["proc"].returncode == 0, klass["proc"].stderr
    assert statuses(klass, "alice") == ["correct"] * 4
    assert statuses(klass, "raises") == ["correct", "correct", "error", "correct"]
    assert statuses(klass, "hangs") == ["correct", "timeout", "correct", "correct"]
    assert statuses(klass, "exits") == ["correct", "error", "missing", "missing"]
    assert statuses(klass, "stub") == ["no answer"] * 4
    assert statuses(klass, "prints") == ["correct"] * 4


def test_a_cell_that_prints_forever_stops_its_kernel_with_a_fixed_message(klass):
    assert statuses(klass, "printer") == ["correct", "error", "error", "error"]
    for i in IDS[1:]:
        assert message(klass, "printer", i) == \
            f"exercise {i}: not graded: the kernel was stopped in cell 5: its output passed the 20 MB limit"


def test_an_unreadable_kernel_message_keeps_the_verdicts_already_made(klass):
    assert statuses(klass, "jsonbreak") == ["correct", "correct", "error", "error"]
    assert "the grader failed" not in message(klass, "jsonbreak", "99.3")
    assert message(klass, "jsonbreak", "99.3").startswith(
        "exercise 99.3: not graded: the kernel was stopped in cell 5: it sent a reply the grader cannot read")


def test_a_syntax_error_names_the_cell_that_did_not_parse(klass):
    assert statuses(klass, "syntax") == ["correct", "correct", "error", "correct"]
    msg = message(klass, "syntax", "99.3")
    assert msg.startswith("exercise 99.3: cell 6 could not be parsed (SyntaxError: ")
    assert msg.endswith(", line 1), so name 'answer_99_3' is not defined")


def test_a_launcher_in_the_students_folder_never_runs(klass):
    assert statuses(klass, "shadow") == ["correct"] * 4


@needs_sandbox
def test_the_sandbox_isolates_each_student(klass):
    # evil's answers are right only when it saw and changed nothing and had no network
    assert statuses(klass, "evil") == ["correct"] * 4, [message(klass, "evil", i) for i in IDS]
    assert klass["book"]["isolation"].startswith("sandboxed: own user, PID, mount, network")
    assert klass["book"]["submissions_changed"] == []
    assert digest_tree(klass["subs"]) == klass["before"]
    assert sorted(p.name for p in klass["result"].iterdir()) == ["gradebook-99.csv", "gradebook-99.json"]
    assert list((klass["root"] / "tmp").iterdir()) == []  # every scratch folder was removed
    # the setsid process ended with the kernel's PID namespace, before the grader wrote the gradebook
    assert klass["daemons"] == [] and daemons() == []


def test_grading_twice_and_with_one_job_gives_byte_identical_gradebooks(klass):
    """Run A (--jobs 2), run B (--jobs 1), run C (--jobs 2 again): same bytes, CSV and JSON."""
    out_a = klass["result"]
    proc, out_b, _ = grade_class(klass["root"], klass["subs"], "B", "1")
    assert proc.returncode == 0, proc.stderr
    proc, out_c, _ = grade_class(klass["root"], klass["subs"], "C", "2")
    assert proc.returncode == 0, proc.stderr
    for name in ("gradebook-99.csv", "gradebook-99.json"):
        a = (out_a / name).read_bytes()
        assert (out_b / name).read_bytes() == a, f"{name}: --jobs 1 differs from --jobs 2"
        assert (out_c / name).read_bytes() == a, f"{name}: a second --jobs 2 run differs from the first"
    assert digest_tree(klass["subs"]) == klass["before"]


def _peak_rss_of_kernels(stop: threading.Event, peaks: dict) -> None:
    while not stop.is_set():
        for pid in os.listdir("/proc"):
            try:
                if pid.isdigit() and b"h100lab/grading/sandbox.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            peaks[pid] = max(peaks.get(pid, 0), int(line.split()[1]) * 1024)
            except OSError:
                pass
        stop.wait(0.05)


def test_an_output_flood_costs_neither_kernel_nor_grader_memory(tmp_path):
    """Megabyte prints in an endless loop (before: a 2.6 GB kernel and a 1 GB grader in 9 s) stop at the
    default 100 MB limit with a few hundred MB at most anywhere. The grader runs in a fresh process whose
    peak RSS is measured by the kernel (RUSAGE_CHILDREN of a wrapper); the kernels' by sampling VmHWM.
    A second notebook asks for 2 GB with --memory 1000: MemoryError in that cell, the rest graded."""
    subs = tmp_path / "subs"
    write(subs / "flood.md", notebook(cell(A1), graded("99.1"), cell('while True:\n    print("y" * 1_000_000)'),
                                      cell(A2), graded("99.2")))
    write(subs / "hog.md", notebook(cell(A1 + "\n" + A2), cell("hog = bytearray(2_000_000_000)"),
                                    cell("try:\n    hog = bytearray(2_000_000_000)\nexcept MemoryError:\n    " + A3),
                                    cell(A4), *(graded(i) for i in IDS)))
    wrapper = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024); sys.exit(p.returncode)")
    peaks: dict = {}
    stop = threading.Event()
    sampler = threading.Thread(target=_peak_rss_of_kernels, args=(stop, peaks), daemon=True)
    sampler.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", wrapper, sys.executable, "-m", "h100lab.grading", "grade", str(subs), "--set", "99",
             "--out", str(tmp_path / "out"), "--timeout", "60", "--memory", "1000", "--solutions", str(SOLUTIONS),
             "--answers-module", str(ANSWERS)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    finally:
        stop.set()
        sampler.join()
    assert proc.returncode == 0, proc.stderr
    grader_peak = int(proc.stdout.strip().splitlines()[-1])
    book = json.loads((tmp_path / "out" / "gradebook-99.json").read_text())
    rows = {r["exercise"]: r for r in book["rows"] if r["student"] == "flood"}
    assert rows["99.1"]["status"] == "correct"
    assert rows["99.2"]["message"] == ("exercise 99.2: not graded: the kernel was stopped in cell 4: its output "
                                       "passed the 100 MB limit")
    assert book["totals"]["hog"]["points"] == 5  # 99.3 is right only after a MemoryError
    assert grader_peak < 400e6, f"grader peak RSS {grader_peak / 1e6:.0f} MB"
    assert peaks and max(peaks.values()) < 600e6, f"kernel peak RSS {max(peaks.values()) / 1e6:.0f} MB"


def test_without_a_sandbox_a_changed_submission_is_reported(tmp_path):
    """--sandbox off: a warning says so; a notebook that appends to a classmate's file is found by hashing
    the submissions before and after (exit status 1, JSON submissions_changed); the gradebook is written."""
    subs = tmp_path / "subs"
    write(subs / "target.md", notebook(cell(ALL), *(graded(i) for i in IDS)))
    write(subs / "vandal.md", notebook(cell(f"open({str(subs / 'target.md')!r}, 'a').write('x')\n" + ALL),
                                       *(graded(i) for i in IDS)))
    out = tmp_path / "out"
    proc = run_cli(subs, out, "--sandbox", "off")
    assert proc.returncode == 1, proc.stderr
    assert "warning: no isolation: switched off (--sandbox off)" in proc.stderr
    assert "changed while it was graded: target.md: changed" in proc.stderr
    book = json.loads((out / "gradebook-99.json").read_text())
    assert book["submissions_changed"] == ["target.md: changed"]
    assert book["isolation"] == "no isolation: switched off (--sandbox off)"
    assert book["totals"]["vandal"]["points"] == 5
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_where_no_sandbox_can_be_made_auto_warns_and_on_refuses(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "UNSHARE", str(tmp_path / "no-unshare"))
    subs = tmp_path / "subs"
    write(subs / "ok.md", notebook(cell(ALL), *(graded(i) for i in IDS)))
    args = ["grade", str(subs), "--set", "99", "--out", str(tmp_path / "out"), "--solutions", str(SOLUTIONS),
            "--answers-module", str(ANSWERS)]
    assert main(args + ["--sandbox", "on"]) == 2
    err = capsys.readouterr().err
    assert "--sandbox on, but no isolation: util-linux" in err and "was not found" in err
    assert not (tmp_path / "out").exists()
    load_answers_module(str(ANSWERS))
    warnings: list[str] = []
    book = grade(subs, 99, out_dir=None, solutions_dir=SOLUTIONS, timeout=30, warn=warnings.append)
    assert book.isolation.startswith("no isolation: util-linux") and book.totals()["ok"]["points"] == 5
    assert len(warnings) == 1 and warnings[0].startswith("warning: no isolation: util-linux")
    assert "Student code runs with your permissions" in warnings[0]


# ------------------------------------------------------------------ the read loop, on a fake kernel
class _Poller:
    def __init__(self, on_poll):
        self.on_poll = on_poll

    def poll(self, ms):
        self.on_poll(ms / 1000)
        return []


class _FakeKernel(Kernel):
    """A Kernel whose sockets are replaced: ``replies`` is what the shell channel holds, ``flood`` makes
    IOPub never empty."""

    def __init__(self, limits=None, flood=False):
        super().__init__(Path("."), Path("."), limits=limits)
        self.replies: list[dict] = []
        self.flood = flood
        self.alive = True
        self.kc = type("KC", (), {"iopub_channel": type("C", (), {"socket": "iopub"})(),
                                  "shell_channel": type("C", (), {"socket": "shell"})()})()
        self._poller = _Poller(time.sleep)

    def _recv(self, sock):
        if sock == "iopub":
            return [b"x" * 100_000] if self.flood else None
        return None

    def _take_reply(self, msg_id):
        return self.replies.pop(0) if self.replies else None

    def _check_monitors(self):
        pass

    def _is_alive(self):
        return True


def test_a_reply_that_arrived_as_the_time_ran_out_counts():
    k = _FakeKernel()
    k._idle_misses = 3  # this fake sends no idle status

    def late(seconds):  # the reply arrives while the loop waits past its deadline
        time.sleep(seconds + 0.05)
        k.replies.append({"status": "ok"})

    k._poller = _Poller(late)
    assert k._reply("m1", 0.1) == {"status": "ok"}


def test_endless_output_cannot_hold_the_loop_past_its_deadline():
    k = _FakeKernel(limits=Limits(max_output=10**15), flood=True)
    t0 = time.monotonic()
    assert k._reply("m1", 0.5) is None  # a timeout, on time, although IOPub is never empty
    assert time.monotonic() - t0 < 1.5
    assert k.output_bytes > 0
    k = _FakeKernel(limits=Limits(max_output=1_000_000), flood=True)
    assert k._reply("m2", 30) == "output"


def test_limits_are_checked():
    with pytest.raises(ValueError, match="output limit"):
        Limits(max_output=0)
    with pytest.raises(ValueError, match=">= 0"):
        Limits(memory=-1)
