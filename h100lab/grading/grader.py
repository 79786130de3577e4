"""The instructor's grader: run each submitted notebook in its own kernel and write a gradebook.

``python -m h100lab.grading grade SUBMISSIONS_DIR --set NN [--out DIR] [--timeout S]``

A submission is ``SUBMISSIONS_DIR/<student>.ipynb`` (or ``.md``, a jupytext MyST notebook) or
``SUBMISSIONS_DIR/<student>/NN-*.ipynb`` (or ``.md``). How one is graded:

1. A fresh IPython kernel (``ipykernel``, the grader's own Python) starts in a temporary working folder
   (a copy of the student's folder when the submission is one), so nothing is ever written into the
   submissions folder.
2. Before any student code, the grader runs a cell of its own that creates a module under a random
   name holding :func:`h100lab.grading.wire.encode`, with every builtin it needs already bound.
3. The notebook's code cells run in order, each with a time limit. A cell that runs past it is
   interrupted (SIGINT); when the kernel does not come back within a few seconds it is killed and the
   exercises not yet graded fail with "timed out". Output is drained and discarded as it arrives
   (only its size and a short tail are kept), so megabytes of prints cost no memory.
4. A cell tagged ``grade:L.N`` is *not* run. The grader takes the graded cell of the exercise set's
   single source (``solutions/NN-*.md``), and asks the kernel to evaluate its ``check`` argument through
   the injected encoder (Jupyter's ``user_expressions``, returned in the execute reply, with a fresh
   random nonce per cell). The value comes back as plain JSON and is judged *in the grader's process*
   with :func:`h100lab.grading.verdict.judge` against the reference computed from the model. Rebinding
   ``check`` or patching ``h100lab.grading.registry.compare`` in the notebook therefore changes nothing.
5. An exercise whose graded cell is absent from the submission (tag deleted) scores 0: "graded cell
   missing".

This is not a sandbox: student code runs with the instructor's permissions. Grade untrusted
submissions inside a container or a throw-away account.
"""
from __future__ import annotations

import ast
import csv
import json
import os
import queue
import re
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .notebook import ExerciseSet, find_source, grade_ids, load_exercise_set, read_notebook
from .registry import Exercise, get
from .verdict import ERROR, MISSING, NO_ANSWER_YET, TIMEOUT, Verdict, failure, judge, short_repr
from .wire import decode

__all__ = ["Kernel", "CellRun", "Submission", "GradeBook", "find_submissions", "grade_notebook", "grade",
           "load_answers_module", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 60.0     # seconds per cell
INTERRUPT_GRACE = 3.0      # seconds a kernel gets to answer an interrupt before it is killed
STARTUP_TIMEOUT = 60.0     # seconds for a kernel to start
OUTPUT_TAIL = 2000         # characters of output kept per notebook, for diagnostics
CSV_FIELDS = ["student", "exercise", "passed", "status", "message", "points", "max_points"]


# --------------------------------------------------------------------------------------------- kernel
@dataclass
class CellRun:
    """The outcome of one execute request: ``status`` is "ok", "error", "timeout" or "dead"."""

    status: str
    ename: str = ""
    evalue: str = ""
    user_expressions: dict = field(default_factory=dict)
    recovered: bool = True  # after a timeout: the interrupt worked and the kernel can go on


def _kernel_spec_manager(argv: list[str]):
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class _OneSpec(KernelSpecManager):
        def get_kernel_spec(self, kernel_name, *args, **kwargs):
            return KernelSpec(argv=argv, display_name="h100lab grader", language="python")

    return _OneSpec()


class Kernel:
    """One IPython kernel subprocess, driven over Jupyter's messaging protocol (jupyter_client).

    Runs in ``cwd`` with a private IPython and runtime folder under ``runtime``, over IPC sockets.
    :meth:`run` never blocks past its timeout; output is drained and discarded (``output_bytes``
    counts it, ``output_tail`` keeps its last characters).
    """

    def __init__(self, cwd: Path, runtime: Path, env: dict[str, str] | None = None):
        self.cwd, self.runtime = Path(cwd), Path(runtime)
        self.extra_env = dict(env or {})
        self.km = self.kc = None
        self.output_bytes = 0
        self.output_tail = ""
        self.alive = False

    def start(self) -> None:
        """Launch ``python -m ipykernel_launcher -f <connection file>`` with this interpreter (jupyter-client
        docs, "Kernel specs": ``argv`` with ``{connection_file}``) over IPC transport, and wait until it
        answers ``kernel_info_request``."""
        from jupyter_client import KernelManager

        self.runtime.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                "--HistoryManager.enabled=False", "--IPKernelApp.quiet=True"]
        env = dict(os.environ)
        env.update({"MPLBACKEND": "Agg", "PYTHONHASHSEED": "0", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
                    "IPYTHONDIR": str(self.runtime / "ipython"), "JUPYTER_RUNTIME_DIR": str(self.runtime)})
        env.pop("JPY_PARENT_PID", None)
        env.update(self.extra_env)
        self.km = KernelManager(kernel_name="h100lab-grader", kernel_spec_manager=_kernel_spec_manager(argv),
                                transport="ipc", connection_file=str(self.runtime / "kernel.json"))
        # The kernel's own stdout/stderr (fd-level writes, C extensions) go to a file, never to the
        # grader's terminal; what cells print travels over IOPub and is drained by _drain().
        self._log = open(self.runtime / "kernel-output.txt", "wb")
        try:
            self.km.start_kernel(cwd=str(self.cwd), env=env, stdout=self._log, stderr=self._log)
        finally:
            self._log.close()  # the child holds its own descriptor
        self.alive = True
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=STARTUP_TIMEOUT)
        except Exception as exc:
            tail = self.log_tail()
            self.stop()
            raise RuntimeError(f"the kernel did not start: {exc}" + (f"; its output ends: {tail}" if tail else "")) from None

    def log_tail(self, n: int = 500) -> str:
        """The last ``n`` characters the kernel process wrote to its own stdout/stderr."""
        try:
            with open(self.runtime / "kernel-output.txt", "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - n))
                return fh.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the kernel now (its whole process group) and close the channels."""
        self.alive = False
        if self.kc is not None:
            try:
                self.kc.stop_channels()
            except Exception:
                pass
        if self.km is not None:
            try:
                if self.km.has_kernel:
                    self.km.shutdown_kernel(now=True)
            except Exception:
                pass
            try:
                self.km.cleanup_resources()
            except Exception:
                pass
        self.km = self.kc = None

    def __enter__(self) -> "Kernel":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _drain(self) -> None:
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=0)
            except queue.Empty:
                return
            except Exception:  # a message the session cannot read: drop it
                continue
            kind, content = msg.get("msg_type"), msg.get("content", {})
            if kind == "stream":
                text = str(content.get("text", ""))
            elif kind in ("display_data", "execute_result", "update_display_data"):
                text = str(content.get("data", {}).get("text/plain", ""))
            elif kind == "error":
                text = f"{content.get('ename', '')}: {content.get('evalue', '')}\n"
            else:
                continue
            self.output_bytes += len(text)
            self.output_tail = (self.output_tail + text[-OUTPUT_TAIL:])[-OUTPUT_TAIL:]

    def _is_alive(self) -> bool:
        try:
            return bool(self.km is not None and self.km.is_alive())
        except Exception:
            return False

    def _reply(self, msg_id: str, seconds: float) -> dict | None | str:
        """The execute reply to ``msg_id`` within ``seconds``; None on timeout; "dead" if the kernel died."""
        deadline = time.monotonic() + seconds
        while True:
            self._drain()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                reply = self.kc.get_shell_msg(timeout=min(0.25, left))
            except queue.Empty:
                if not self._is_alive():
                    return "dead"
                continue
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                self._drain()
                return reply["content"]

    def run(self, code: str, *, timeout: float, user_expressions: dict[str, str] | None = None,
            silent: bool = False) -> CellRun:
        """Execute ``code``; evaluate ``user_expressions`` afterwards if it succeeded.

        Jupyter messaging protocol ("Messaging in Jupyter", jupyter-client docs), ``execute_request`` on
        the shell channel: ``user_expressions`` maps names to expressions evaluated in the user namespace
        only after the code succeeded (IPython docs, "Execution semantics in the IPython kernel", phase 4),
        returned in the ``execute_reply`` as display data (``text/plain``) or as ``ename``/``evalue``.
        ``allow_stdin=False`` makes ``input()`` raise at once instead of waiting for a reply.
        """
        if not self.alive:
            return CellRun("dead", recovered=False)
        msg_id = self.kc.execute(code, silent=silent, store_history=not silent,
                                 user_expressions=user_expressions or {}, allow_stdin=False,
                                 stop_on_error=False)
        content = self._reply(msg_id, timeout)
        if content is None:
            return self._interrupt(msg_id)
        if content == "dead":
            self.stop()
            return CellRun("dead", recovered=False)
        if content.get("status") == "ok":
            return CellRun("ok", user_expressions=content.get("user_expressions") or {})
        return CellRun("error", ename=str(content.get("ename", "Error")), evalue=str(content.get("evalue", "")))

    def _interrupt(self, msg_id: str) -> CellRun:
        """Interrupt a cell past its time: SIGINT to the kernel's process group (kernel spec
        ``interrupt_mode: signal``, the default; jupyter-client docs, "Kernel specs"), then SIGKILL to the
        group when no ``execute_reply`` arrives within ``INTERRUPT_GRACE`` seconds."""
        try:
            self.km.interrupt_kernel()
        except Exception:
            pass
        content = self._reply(msg_id, INTERRUPT_GRACE)
        if isinstance(content, dict):
            return CellRun("timeout", recovered=True)
        self.stop()
        return CellRun("timeout", recovered=False)


# -------------------------------------------------------------------------------------- submissions
@dataclass(frozen=True)
class Submission:
    """One student's notebook for the set (``path`` None when the student's folder has none)."""

    student: str
    path: Path | None
    folder: Path | None = None  # the student's own folder, copied as the kernel's working folder


def find_submissions(root: str | Path, lesson: int) -> list[Submission]:
    """The submissions in ``root``: ``<student>.ipynb|.md`` files and ``<student>/NN-*.ipynb|.md`` folders.

    Names starting with "." or "_" (``.ipynb_checkpoints``) and README files are skipped. In a folder,
    an ``.ipynb`` is preferred over an ``.md`` of the same set.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no submissions folder {root}")
    subs: dict[str, Submission] = {}
    for entry in sorted(root.iterdir()):
        if entry.name.startswith((".", "_")) or entry.name.lower().startswith("readme"):
            continue
        if entry.is_file() and entry.suffix in (".ipynb", ".md"):
            name, sub = entry.stem, Submission(entry.stem, entry)
        elif entry.is_dir():
            found = sorted(entry.glob(f"{lesson:02d}-*.ipynb")) + sorted(entry.glob(f"{lesson:02d}-*.md"))
            name, sub = entry.name, Submission(entry.name, found[0] if found else None, entry)
        else:
            continue
        if name in subs:
            name = entry.name
            sub = Submission(name, sub.path, sub.folder)
        subs[name] = sub
    return list(subs.values())


# ------------------------------------------------------------------------------------------ grading
@dataclass
class _Failure:
    """A failed student cell (or a timeout), remembered to explain later NameErrors."""

    cell: int
    ename: str
    evalue: str
    defines: frozenset[str]
    timeout: bool = False
    cause: "_Failure | None" = None  # the earlier failure this one follows from (a NameError chain)

    @property
    def root(self) -> "_Failure":
        return self.cause.root if self.cause is not None else self


_NAME_ERROR = re.compile(r"name '([A-Za-z_][A-Za-z_0-9]*)' is not defined")


def _defined_names(source: str) -> frozenset[str]:
    """Names a cell would bind (assignments, defs, imports), after IPython's own magic transforms."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except Exception:  # no IPython here, or a cell it cannot transform: parse as plain Python
        pass
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def _is_stub_error(ename: str, evalue: str) -> bool:
    return ename == "NotImplementedError" or "'ellipsis'" in evalue


class _NotebookRun:
    """State of grading one notebook: the kernel, the failures so far, the verdicts."""

    def __init__(self, kernel: Kernel, exset: ExerciseSet, exercises: dict[str, Exercise],
                 references: dict[str, Any], timeout: float):
        self.kernel, self.exset, self.exercises = kernel, exset, exercises
        self.references, self.timeout = references, timeout
        self.failures: list[_Failure] = []
        self.stopped: str | None = None  # why the kernel is gone
        self.stopped_status = ERROR
        self.verdicts: dict[str, Verdict] = {}
        self.module = f"_h100lab_grader_{secrets.token_hex(8)}"

    # -- student cells
    def inject(self) -> None:
        from . import wire

        source = Path(wire.__file__).read_text(encoding="utf-8")
        code = ("def _h100lab_grader_setup(src, name):\n"
                "    import sys, types\n"
                "    mod = types.ModuleType(name)\n"
                "    exec(compile(src, '<h100lab grader>', 'exec'), mod.__dict__)\n"
                "    sys.modules[name] = mod\n"
                f"_h100lab_grader_setup({source!r}, {self.module!r})\n"
                "del _h100lab_grader_setup\n")
        run = self.kernel.run(code, timeout=STARTUP_TIMEOUT, silent=True)
        if run.status != "ok":
            raise RuntimeError(f"the grader's own first cell failed in the kernel: {run.status} {run.ename}: {run.evalue}")

    def student_cell(self, k: int, source: str) -> None:
        if self.stopped or not source.strip():
            return
        run = self.kernel.run(source, timeout=self.timeout)
        if run.status == "error":
            self.failures.append(_Failure(k, run.ename, run.evalue, _defined_names(source),
                                          cause=self._cause(run.ename, run.evalue)))
        elif run.status == "timeout":
            self.failures.append(_Failure(k, "TimeoutError", f"cell {k} ran longer than {self.timeout:g} s",
                                          _defined_names(source), timeout=True))
            if not run.recovered:
                self.stopped = f"cell {k} ran longer than {self.timeout:g} s and could not be interrupted"
                self.stopped_status = TIMEOUT
        elif run.status == "dead":
            self.stopped = f"the kernel died while running cell {k}"

    def _cause(self, ename: str, evalue: str) -> _Failure | None:
        """For a NameError: the latest failed cell that would have defined the name; failing that, the
        latest cell that failed on a stub (a replaced solution region defines nothing any more)."""
        m = _NAME_ERROR.search(evalue) if ename in ("NameError", "UnboundLocalError") else None
        if m is None:
            return None
        found = next((f for f in reversed(self.failures) if m.group(1) in f.defines), None)
        if found is None:
            found = next((f for f in reversed(self.failures) if _is_stub_error(f.ename, f.evalue)), None)
        return found

    # -- graded cells
    def _explain(self, ex: Exercise, ename: str, evalue: str) -> Verdict:
        """A verdict for a graded expression that raised ``ename: evalue``.

        An untouched stub shows as ``NotImplementedError`` or as an operation on ``...`` (a TypeError or
        AttributeError naming 'ellipsis'): "no answer". A NameError is traced back through the failed
        cells that would have defined the name, so a stub or a timeout several cells earlier is named
        as the reason rather than the NameError it caused.
        """
        evalue = evalue if len(evalue) <= 300 else evalue[:295] + " ..."
        if _is_stub_error(ename, evalue):
            return failure(ex, NO_ANSWER_YET, f"exercise {ex.id}: no answer yet: the stub is still in place "
                                              f"({ename}: {evalue})".replace(": )", ")"))
        cause = self._cause(ename, evalue)
        if cause is not None:
            cause = cause.root
            if cause.timeout:
                return failure(ex, TIMEOUT, f"exercise {ex.id}: timed out: {cause.evalue}, so {evalue}")
            if _is_stub_error(cause.ename, cause.evalue):
                return failure(ex, NO_ANSWER_YET, f"exercise {ex.id}: no answer yet: cell {cause.cell} still "
                                                  f"holds a stub ({cause.ename}), so {evalue}")
            return failure(ex, ERROR, f"exercise {ex.id}: {ename}: {evalue} (cell {cause.cell} raised "
                                      f"{cause.ename}: {short_repr(cause.evalue, 200)})")
        return failure(ex, ERROR, f"exercise {ex.id}: your code raised {ename}: {evalue}")

    def graded_cell(self, k: int, ex_id: str) -> None:
        ex = self.exercises[ex_id]
        if self.stopped:
            self.verdicts[ex_id] = failure(ex, self.stopped_status, f"exercise {ex_id}: not graded: {self.stopped}")
            return
        gc = self.exset.cell(ex_id)
        if gc.setup:
            run = self.kernel.run(gc.setup, timeout=self.timeout, silent=True)
            if run.status != "ok":
                self.verdicts[ex_id] = self._verdict_of_failed_run(ex, k, run)
                return
        nonce = secrets.token_hex(16)
        wrapped = f"__import__('sys').modules[{self.module!r}].encode(({gc.expr}\n), {nonce!r})"
        run = self.kernel.run("", timeout=self.timeout, user_expressions={"answer": wrapped}, silent=True)
        if run.status != "ok":
            self.verdicts[ex_id] = self._verdict_of_failed_run(ex, k, run)
            return
        result = run.user_expressions.get("answer")
        if not isinstance(result, dict):
            self.verdicts[ex_id] = failure(ex, ERROR, f"exercise {ex_id}: the kernel sent no answer back")
            return
        if result.get("status") != "ok":
            self.verdicts[ex_id] = self._explain(ex, str(result.get("ename", "Error")), str(result.get("evalue", "")))
            return
        self.verdicts[ex_id] = self._judge_payload(ex, result, nonce)

    def _verdict_of_failed_run(self, ex: Exercise, k: int, run: CellRun) -> Verdict:
        if run.status == "timeout":
            if not run.recovered:
                self.stopped = f"graded cell {k} ran longer than {self.timeout:g} s and could not be interrupted"
                self.stopped_status = TIMEOUT
            return failure(ex, TIMEOUT, f"exercise {ex.id}: timed out: evaluating the answer took longer than "
                                        f"{self.timeout:g} s")
        if run.status == "dead":
            self.stopped = f"the kernel died while grading cell {k}"
            return failure(ex, ERROR, f"exercise {ex.id}: the kernel died while evaluating the answer")
        return self._explain(ex, run.ename, run.evalue)

    def _judge_payload(self, ex: Exercise, result: dict, nonce: str) -> Verdict:
        try:
            text = ast.literal_eval(result["data"]["text/plain"])
            payload = json.loads(text)
            if not isinstance(payload, dict) or payload.get("nonce") != nonce:
                raise ValueError("nonce mismatch")
        except Exception:
            return failure(ex, ERROR, f"exercise {ex.id}: the grader could not read the answer back from the "
                                      "kernel (was IPython's display machinery changed?)")
        if not payload.get("ok"):
            return failure(ex, ERROR, f"exercise {ex.id}: {payload.get('error', 'the answer cannot be read')}")
        try:
            value = decode(payload.get("value"))
        except Exception as exc:
            return failure(ex, ERROR, f"exercise {ex.id}: the answer cannot be read: {exc}")
        return judge(ex, value, self.references[ex.id])


def _workdir(submission_folder: Path | None, tmp: Path) -> Path:
    work = tmp / "work"
    if submission_folder is not None:
        shutil.copytree(submission_folder, work, symlinks=True,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    else:
        work.mkdir()
    return work


def grade_notebook(path: str | Path, exset: ExerciseSet, references: dict[str, Any] | None = None, *,
                   timeout: float = DEFAULT_TIMEOUT, folder: str | Path | None = None,
                   env: dict[str, str] | None = None) -> list[Verdict]:
    """Grade one notebook against exercise set ``exset``; one verdict per graded cell of the set, in order.

    ``references`` maps exercise ids to reference answers (computed here from the registry when not
    given). ``folder`` is copied as the kernel's working folder (default: an empty temporary folder).
    ``env`` adds environment variables for the kernel. Nothing is written next to ``path``.
    """
    exercises = {i: get(i) for i in exset.ids}
    if references is None:
        references = {i: exercises[i].answer() for i in exset.ids}
    path = Path(path)
    try:
        nb = read_notebook(path)
    except Exception as exc:
        msg = f"could not read the submission {path.name}: {type(exc).__name__}: {short_repr(str(exc), 200)}"
        return [failure(exercises[i], ERROR, f"exercise {i}: {msg}") for i in exset.ids]
    wanted = set(exset.ids)
    with tempfile.TemporaryDirectory(prefix="h100lab-grade-") as tmp:
        tmp = Path(tmp)
        kernel = Kernel(_workdir(Path(folder) if folder else None, tmp), tmp / "rt", env)
        kernel.start()
        try:
            state = _NotebookRun(kernel, exset, exercises, references, timeout)
            state.inject()
            for k, cell in enumerate(nb.cells, start=1):  # cells are numbered from 1 in messages
                if cell.get("cell_type") != "code":
                    continue
                tags = [i for i in grade_ids(cell) if i in wanted]
                if tags:  # a graded cell: never run as written, graded from the set's source
                    for ex_id in tags:
                        if ex_id not in state.verdicts:
                            state.graded_cell(k, ex_id)
                    continue
                state.student_cell(k, cell.get("source", "") or "")
        finally:
            kernel.stop()
    out = []
    for i in exset.ids:
        out.append(state.verdicts.get(i) or failure(exercises[i], MISSING, f"exercise {i}: graded cell missing "
                                                    f"(the cell tagged grade:{i} is not in the submission)"))
    return out


# ---------------------------------------------------------------------------------------- gradebook
@dataclass
class GradeBook:
    """Every (student, exercise) verdict of one grading run, and where it was written."""

    lesson: int
    exercises: list[str]
    rows: list[dict] = field(default_factory=list)
    csv_path: Path | None = None
    json_path: Path | None = None

    def add(self, student: str, verdicts: Iterable[Verdict]) -> None:
        """Append one row per verdict for ``student``."""
        for v in verdicts:
            self.rows.append({"student": student, "exercise": v.exercise, "passed": v.passed, "status": v.status,
                              "message": v.message, "points": v.points, "max_points": v.max_points})

    def totals(self) -> dict[str, dict[str, int]]:
        """Per student: points, max_points, exercises passed and exercises graded."""
        out: dict[str, dict[str, int]] = {}
        for r in self.rows:
            t = out.setdefault(r["student"], {"points": 0, "max_points": 0, "passed": 0, "exercises": 0})
            t["points"] += r["points"]
            t["max_points"] += r["max_points"]
            t["passed"] += int(r["passed"])
            t["exercises"] += 1
        return out

    def row(self, student: str, exercise: str) -> dict:
        """The row of one (student, exercise); KeyError when there is none."""
        for r in self.rows:
            if r["student"] == student and r["exercise"] == exercise:
                return r
        raise KeyError((student, exercise))

    def write(self, out_dir: str | Path) -> None:
        """Write ``gradebook-NN.csv`` (columns :data:`CSV_FIELDS`) and ``gradebook-NN.json`` (set, exercise
        ids, rows, totals) into ``out_dir``."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        self.csv_path = out_dir / f"gradebook-{self.lesson:02d}.csv"
        self.json_path = out_dir / f"gradebook-{self.lesson:02d}.json"
        with open(self.csv_path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
            w.writeheader()
            w.writerows(self.rows)
        doc = {"set": f"{self.lesson:02d}", "exercises": self.exercises, "rows": self.rows,
               "totals": self.totals()}
        self.json_path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load_answers_module(spec: str) -> None:
    """Import a module that registers exercises: a dotted name, or the path of a ``.py`` file."""
    import importlib
    import importlib.util

    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = Path(spec).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no answers module {spec}")
        name = "_h100lab_answers_" + re.sub(r"\W", "_", path.stem)
        if name in sys.modules:
            return
        mod_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module
        try:
            mod_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    else:
        importlib.import_module(spec)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def default_solutions_dir() -> Path:
    """``./solutions`` when it exists, else the repository's ``solutions/`` next to the package."""
    here = Path.cwd() / "solutions"
    return here if here.is_dir() else Path(__file__).resolve().parents[2] / "solutions"


def grade(submissions_dir: str | Path, lesson: int, *, out_dir: str | Path | None = "gradebook",
          timeout: float = DEFAULT_TIMEOUT, solutions_dir: str | Path | None = None,
          answers_modules: Iterable[str] = (), env: dict[str, str] | None = None,
          jobs: int = 1, progress=None) -> GradeBook:
    """Grade every submission of exercise set ``lesson`` in ``submissions_dir``; write the gradebook.

    Exercises come from the set's single source ``solutions_dir/NN-*.md`` (graded cells) and the
    registry (reference answers, computed once here). ``out_dir`` (None: do not write) may not lie inside
    ``submissions_dir``. ``jobs`` notebooks are graded at a time (each in its own kernel); the gradebook's
    order is the students' sorted order either way. ``progress`` is called with each student's name.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if not timeout > 0:
        raise ValueError(f"the per-cell timeout must be > 0 seconds, got {timeout}")
    submissions_dir = Path(submissions_dir)
    if out_dir is not None and _inside(Path(out_dir), submissions_dir):
        raise ValueError(f"the gradebook folder {out_dir} is inside the submissions folder {submissions_dir}; "
                         "the grader never writes into submissions")
    for spec in answers_modules:
        load_answers_module(spec)
    source = find_source(solutions_dir or default_solutions_dir(), lesson)
    exset = load_exercise_set(source)
    exercises = {i: get(i) for i in exset.ids}
    references = {i: ex.answer() for i, ex in exercises.items()}
    book = GradeBook(lesson, exset.ids)

    def one(sub: Submission) -> list[Verdict]:
        if progress is not None:
            progress(sub.student)
        if sub.path is None:
            return [failure(exercises[i], MISSING, f"exercise {i}: no notebook {lesson:02d}-*.ipynb or "
                                                   f"{lesson:02d}-*.md in the student's folder")
                    for i in exset.ids]
        try:
            return grade_notebook(sub.path, exset, references, timeout=timeout, folder=sub.folder, env=env)
        except Exception as exc:  # the kernel did not start: grade the others, say why here
            msg = f"not graded: the grader failed: {type(exc).__name__}: {short_repr(str(exc), 200)}"
            return [failure(exercises[i], ERROR, f"exercise {i}: {msg}") for i in exset.ids]

    subs = find_submissions(submissions_dir, lesson)
    if jobs > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(one, subs))
    else:
        results = [one(sub) for sub in subs]
    for sub, verdicts in zip(subs, results):
        book.add(sub.student, verdicts)
    if out_dir is not None:
        book.write(out_dir)
    return book
