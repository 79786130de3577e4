"""The instructor's grader: run each submitted notebook in its own kernel and write a gradebook.

``python -m h100lab.grading grade SUBMISSIONS_DIR --set NN [--out DIR] [--timeout S] [--jobs N]
[--sandbox auto|on|off] [--max-output MB] [--memory MB]``

A submission is ``SUBMISSIONS_DIR/<student>.ipynb`` (or ``.md``, a jupytext MyST notebook) or
``SUBMISSIONS_DIR/<student>/NN-*.ipynb`` (or ``.md``). How one is graded:

1. A fresh IPython kernel (``ipykernel``, the grader's own Python) starts in a scratch folder of its own
   (a copy of the student's folder when the submission is one), through :mod:`h100lab.grading.sandbox`:
   ``python -P`` (a student's ``ipykernel_launcher.py`` is never run), memory and file-size limits and,
   where Linux namespaces are available, a sandbox: only the scratch folder writable, the submissions,
   the gradebook folder and the other students invisible, no network, and its own PID namespace, so no
   process it starts outlives it and the grader cannot be signalled. Where no sandbox can be made the
   grader says so and grades without one (``--sandbox on`` refuses instead).
2. Before any student code, the grader runs a cell of its own that creates a module under a random
   name holding :func:`h100lab.grading.wire.encode`, with every builtin it needs already bound.
3. The notebook's code cells run in order, each with a time limit. A cell that runs past it is
   interrupted (SIGINT); when the kernel does not come back within a few seconds it is killed and the
   exercises not yet graded fail with "timed out". A reply that has arrived counts even when the time
   is up (the shell channel is read once more before a timeout is declared).
4. Output is counted, never kept: every IOPub byte counts towards ``--max-output`` (default 100 MB);
   past it the kernel is stopped and the exercises not yet graded fail with a fixed message. The drain
   is bounded by the cell's deadline, messages over 64 MB are refused by ZeroMQ (the kernel is stopped),
   and after each reply the grader reads the request's output up to the kernel's "idle" status, so the
   count a cell is judged on is the same in every run.
5. A cell tagged ``grade:L.N`` is *not* run. The grader takes the graded cell of the exercise set's
   single source (``solutions/NN-*.md``), and asks the kernel to evaluate its ``check`` argument through
   the injected encoder (Jupyter's ``user_expressions``, returned in the execute reply, with a fresh
   random nonce per cell). The value comes back as plain JSON and is judged *in the grader's process*
   with :func:`h100lab.grading.verdict.judge` against the reference computed from the model. Rebinding
   ``check`` or patching ``h100lab.grading.registry.compare`` in the notebook therefore changes nothing.
6. An exercise whose graded cell is absent from the submission (tag deleted) scores 0: "graded cell
   missing". A kernel that dies, sends a message the grader cannot read, or breaks its connection is
   stopped: verdicts already made stay, the exercises not yet graded fail.
7. The submissions folder is hashed before and after grading (a change is reported), and the gradebook
   is written last, each file atomically (a temporary file renamed into place).
"""
from __future__ import annotations

import ast
import csv
import hashlib
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import sandbox
from .notebook import ExerciseSet, find_source, grade_ids, load_exercise_set, read_notebook
from .registry import Exercise, get
from .verdict import ERROR, MISSING, NO_ANSWER_YET, TIMEOUT, Verdict, failure, judge, short_repr
from .wire import decode

__all__ = ["Kernel", "CellRun", "Limits", "Submission", "GradeBook", "find_submissions", "grade_notebook",
           "grade", "load_answers_module", "digest_tree", "DEFAULT_TIMEOUT", "MAX_OUTPUT", "MAX_MESSAGE"]

DEFAULT_TIMEOUT = 60.0     # seconds per cell
INTERRUPT_GRACE = 3.0      # seconds a kernel gets to answer an interrupt before it is killed
STARTUP_TIMEOUT = 60.0     # seconds for a kernel to start
IDLE_GRACE = 2.0           # seconds, after a reply, to read the rest of its output (up to "idle")
OUTPUT_TAIL = 2000         # characters of output kept per notebook, for diagnostics
MAX_OUTPUT = 100_000_000   # bytes of IOPub traffic a notebook may send before its kernel is stopped
MAX_MESSAGE = 64_000_000   # bytes of one message frame the grader accepts (ZMQ_MAXMSGSIZE)
RECEIVE_QUEUE = 16         # messages ZeroMQ queues per socket in the grader (ZMQ_RCVHWM)
PARSE_LIMIT = 64 * 1024    # IOPub messages larger than this are counted, not parsed
DEFAULT_MEMORY = 4_000_000_000  # bytes a kernel may allocate (RLIMIT_DATA)
FILE_SIZE = 1 << 30        # bytes of any one file a kernel writes (RLIMIT_FSIZE)
CSV_FIELDS = ["student", "exercise", "passed", "status", "message", "points", "max_points"]


def _mb(n: int) -> str:
    return f"{n / 1e6:g} MB"


# --------------------------------------------------------------------------------------------- kernel
@dataclass(frozen=True)
class Limits:
    """What one grading kernel may use: IOPub bytes in all (``max_output``), allocated memory (``memory``,
    0: no limit) and the size of any one file it writes (``file_size``, 0: no limit)."""

    max_output: int = MAX_OUTPUT
    memory: int = DEFAULT_MEMORY
    file_size: int = FILE_SIZE

    def __post_init__(self):
        if self.max_output <= 0:
            raise ValueError(f"the output limit must be > 0 bytes, got {self.max_output}")
        if self.memory < 0 or self.file_size < 0:
            raise ValueError("memory and file-size limits must be >= 0 (0: no limit)")


@dataclass
class CellRun:
    """The outcome of one execute request: ``status`` is "ok", "error", "timeout", "dead" (the kernel
    died), "output" (past the output limit) or "broken" (an unreadable message or a broken connection);
    for the last two ``evalue`` says why. The kernel is stopped after "dead", "output" and "broken"."""

    status: str
    ename: str = ""
    evalue: str = ""
    user_expressions: dict = field(default_factory=dict)
    recovered: bool = True  # after a timeout: the interrupt worked and the kernel can go on


class _Broken(Exception):
    """The kernel sent something the grader cannot read, or broke a connection."""


def _kernel_spec_manager(argv: list[str]):
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class _OneSpec(KernelSpecManager):
        def get_kernel_spec(self, kernel_name, *args, **kwargs):
            return KernelSpec(argv=argv, display_name="h100lab grader", language="python")

    return _OneSpec()


class Kernel:
    """One IPython kernel subprocess, driven over Jupyter's messaging protocol (jupyter_client).

    Runs in ``cwd`` with a private IPython and runtime folder under ``runtime``, over IPC sockets, started
    by :mod:`h100lab.grading.sandbox` with ``limits`` and, when ``isolation`` is enabled, in a sandbox
    whose only writable folder is ``scratch`` (default: the common parent of ``cwd`` and ``runtime``)
    and where ``hidden`` folders do not exist. :meth:`run` never blocks past its timeout (plus
    :data:`IDLE_GRACE`); output is counted (``output_bytes``) and only its last characters kept
    (``output_tail``).
    """

    def __init__(self, cwd: Path, runtime: Path, env: dict[str, str] | None = None, *,
                 limits: Limits | None = None, isolation: sandbox.Isolation | None = None,
                 scratch: Path | None = None, hidden: Iterable[Path] = ()):
        self.cwd, self.runtime = Path(cwd), Path(runtime)
        self.scratch = Path(scratch) if scratch else Path(os.path.commonpath([self.cwd.resolve(), self.runtime.resolve()]))
        self.extra_env = dict(env or {})
        self.limits = limits or Limits()
        self.isolation = isolation
        self.hidden = [Path(h) for h in hidden]
        self.km = self.kc = self._ctx = None
        self._poller = self._lifeline = None
        self._monitors: dict[str, Any] = {}
        self._disconnected: set[str] = set()
        self._idle: set[str] = set()
        self._idle_misses = 0
        self.output_bytes = 0
        self.output_tail = ""
        self.alive = False

    @property
    def sandboxed(self) -> bool:
        return bool(self.isolation is not None and self.isolation.enabled)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"MPLBACKEND": "Agg", "PYTHONHASHSEED": "0", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
                    "IPYTHONDIR": str(self.runtime / "ipython"), "JUPYTER_RUNTIME_DIR": str(self.runtime),
                    "MPLCONFIGDIR": str(self.runtime / "matplotlib"),
                    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        env.pop("JPY_PARENT_PID", None)
        if env.get("PYTHONPATH"):  # a relative entry would put the student's folder on sys.path
            env["PYTHONPATH"] = os.pathsep.join(p for p in env["PYTHONPATH"].split(os.pathsep) if os.path.isabs(p))
        if self.sandboxed:  # the real home and /run are hidden: a home of its own, no session bus
            (self.runtime / "home").mkdir(exist_ok=True)
            env["HOME"] = str(self.runtime / "home")
            env["TMPDIR"] = "/tmp"  # the sandbox's own
            for k in ("XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
                      "DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK"):
                env.pop(k, None)
        env.update(self.extra_env)
        return env

    def start(self) -> None:
        """Launch the kernel (:func:`h100lab.grading.sandbox.kernel_command`: ``ipykernel_launcher -f
        <connection file>`` with this interpreter; jupyter-client docs, "Kernel specs": ``argv`` with
        ``{connection_file}``) over IPC transport, and wait until it answers ``kernel_info_request``."""
        import zmq
        from jupyter_client import KernelManager

        self.runtime.mkdir(parents=True, exist_ok=True)
        spec = {"cwd": str(self.cwd.resolve()), "memory": self.limits.memory, "file_size": self.limits.file_size,
                "chunk": sandbox.CHUNK}
        if self.sandboxed:
            spec["sandbox"] = sandbox.sandbox_spec(str(self.scratch), str(self.cwd), [str(h) for h in self.hidden])
        spec_file = self.runtime / "launch.json"
        spec_file.write_text(json.dumps(spec), encoding="utf-8")
        argv = sandbox.kernel_command(str(spec_file), ["-f", "{connection_file}", "--HistoryManager.enabled=False",
                                                       "--IPKernelApp.quiet=True"], self.isolation)
        self.km = KernelManager(kernel_name="h100lab-grader", kernel_spec_manager=_kernel_spec_manager(argv),
                                transport="ipc", connection_file=str(self.runtime / "kernel.json"))
        # The kernel's own stdout/stderr (fd-level writes, C extensions) go to a file, never to the
        # grader's terminal; what cells print travels over IOPub and is counted by _drain().
        self._log = open(self.runtime / "kernel-output.txt", "wb")
        # The kernel's stdin is a pipe whose only writer is this process: when the grader dies, the
        # sandbox's init sees its end of file and ends the sandbox (ipykernel's own parent poller cannot
        # see the grader from inside a PID namespace).
        lifeline_r, self._lifeline = os.pipe()
        try:
            self.km.start_kernel(cwd=str(self.cwd), env=self._env(), stdin=lifeline_r, stdout=self._log,
                                 stderr=self._log)
        finally:
            self._log.close()  # the child holds its own descriptors
            os.close(lifeline_r)
        self.alive = True
        # Every socket of the client: frames over MAX_MESSAGE are refused (ZeroMQ drops the connection,
        # seen by the monitors below), at most RECEIVE_QUEUE messages wait in the grader's memory.
        self._ctx = zmq.Context()
        self._ctx.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
        self._ctx.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
        self.kc = self.km.client(context=self._ctx)
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=STARTUP_TIMEOUT)
        except Exception as exc:
            tail = self.log_tail()
            self.stop()
            raise RuntimeError(f"the kernel did not start: {exc}" + (f"; its output ends: {tail}" if tail else "")) from None
        self._poller = zmq.Poller()
        for name in ("iopub", "shell"):
            sock = getattr(self.kc, f"{name}_channel").socket
            mon = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            self._monitors[name] = mon
            self._poller.register(sock, zmq.POLLIN)
            self._poller.register(mon, zmq.POLLIN)

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
        """Stop the kernel now (its whole process group; in a sandbox, its whole PID namespace) and close
        the channels."""
        self.alive = False
        if self.kc is not None:
            for name, mon in self._monitors.items():
                try:
                    getattr(self.kc, f"{name}_channel").socket.disable_monitor()
                except Exception:
                    pass
                try:
                    mon.close(linger=0)
                except Exception:
                    pass
            self._monitors = {}
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
        if self._ctx is not None:
            try:
                self._ctx.destroy(linger=0)
            except Exception:
                pass
        if self._lifeline is not None:
            os.close(self._lifeline)
        self.km = self.kc = self._ctx = self._poller = self._lifeline = None

    def __enter__(self) -> "Kernel":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- reading
    def _recv(self, sock):
        import zmq

        try:
            return sock.recv_multipart(zmq.NOBLOCK, copy=False)
        except zmq.Again:
            return None
        except zmq.ZMQError as exc:
            raise _Broken(f"the connection to the kernel failed ({exc})") from None

    def _parse(self, frames) -> dict:
        session = self.kc.session
        _, msg_list = session.feed_identities(frames, copy=False)
        msg = session.deserialize(msg_list, content=True, copy=False)
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), dict) \
                or not isinstance(msg.get("parent_header"), dict):
            raise ValueError("not a Jupyter message")
        return msg

    def _drain(self, until: float) -> None:
        """Read IOPub until it is empty, the output limit is passed, or ``until`` (monotonic) comes: every
        byte counts; small messages are parsed (the idle status, a tail for diagnostics), an unreadable
        one is only counted."""
        sock = self.kc.iopub_channel.socket
        while True:
            frames = self._recv(sock)
            if frames is None:
                return
            size = sum(len(f) for f in frames)
            self.output_bytes += size
            if size <= PARSE_LIMIT:
                self._note(frames)
            if self.output_bytes > self.limits.max_output or time.monotonic() >= until:
                return

    def _note(self, frames) -> None:
        try:
            msg = self._parse(frames)
        except Exception:
            return
        kind, content = msg.get("msg_type"), msg["content"]
        if kind == "status" and content.get("execution_state") == "idle":
            self._idle.add(str(msg["parent_header"].get("msg_id")))
            return
        if kind == "stream":
            text = str(content.get("text", ""))
        elif kind in ("display_data", "execute_result", "update_display_data"):
            data = content.get("data")
            text = str(data.get("text/plain", "")) if isinstance(data, dict) else ""
        elif kind == "error":
            text = f"{content.get('ename', '')}: {content.get('evalue', '')}\n"
        else:
            return
        self.output_tail = (self.output_tail + text[-OUTPUT_TAIL:])[-OUTPUT_TAIL:]

    def _take_reply(self, msg_id: str) -> dict | None:
        """The execute reply to ``msg_id`` if it has arrived (other replies are dropped); raises
        :class:`_Broken` on a message that cannot be read."""
        sock = self.kc.shell_channel.socket
        while True:
            frames = self._recv(sock)
            if frames is None:
                return None
            try:
                msg = self._parse(frames)
            except Exception:  # which check fails first may vary: the message stays the same
                raise _Broken("it sent a reply the grader cannot read") from None
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg["content"]

    def _check_monitors(self) -> None:
        from zmq.utils.monitor import recv_monitor_message
        import zmq

        for name, mon in self._monitors.items():
            while True:
                try:
                    event = recv_monitor_message(mon, zmq.NOBLOCK)
                except zmq.Again:
                    break
                except Exception:
                    self._disconnected.add(name)
                    break
                if event.get("event") == zmq.EVENT_DISCONNECTED:
                    self._disconnected.add(name)

    def _is_alive(self) -> bool:
        try:
            return bool(self.km is not None and self.km.is_alive())
        except Exception:
            return False

    def _over(self) -> bool:
        return self.output_bytes > self.limits.max_output

    def _await_idle(self, msg_id: str) -> None:
        """Read the request's remaining output, up to its "idle" status (at most IDLE_GRACE seconds; a
        kernel that never sends a readable idle is not waited for again after three misses)."""
        if self._idle_misses >= 3:
            self._drain(time.monotonic() + 0.05)
            return
        end = time.monotonic() + IDLE_GRACE
        while msg_id not in self._idle and not self._over():
            now = time.monotonic()
            if now >= end:
                self._idle_misses += 1
                return
            self._poller.poll(max(1, int(min(0.05, end - now) * 1000)))
            self._drain(min(end, time.monotonic() + 0.05))
        self._idle.discard(msg_id)

    def _reply(self, msg_id: str, seconds: float) -> dict | str | None:
        """The execute reply to ``msg_id`` within ``seconds``; None on timeout; "dead" if the kernel died;
        "output" past the output limit (or a message over MAX_MESSAGE). Raises :class:`_Broken`.

        The shell channel is read first in every round, so a reply that arrived just as the time ran
        out still counts; IOPub is drained in slices of 50 ms, so a flood of output cannot hold the
        loop past the deadline.
        """
        deadline = time.monotonic() + seconds
        while True:
            content = self._take_reply(msg_id)
            if content is not None:
                self._await_idle(msg_id)
                return "output" if self._over() else content
            if self._over():
                return "output"
            self._check_monitors()
            if self._disconnected:
                return self._after_disconnect()
            now = time.monotonic()
            if now >= deadline:
                return None
            self._poller.poll(max(1, int(min(0.25, deadline - now) * 1000)))
            self._drain(min(deadline, time.monotonic() + 0.05))
            if not self._is_alive():
                content = self._take_reply(msg_id)
                return content if content is not None else "dead"

    def _after_disconnect(self) -> str:
        end = time.monotonic() + 1.0  # a dying kernel closes its sockets just before its process is gone
        while self._is_alive() and time.monotonic() < end:
            time.sleep(0.02)
        if not self._is_alive():
            return "dead"
        if "shell" in self._disconnected:
            raise _Broken("it broke its connection to the grader (a reply over "
                          f"{_mb(MAX_MESSAGE)}?)")
        self.output_bytes = max(self.output_bytes, MAX_MESSAGE)
        return "oversize"

    def run(self, code: str, *, timeout: float, user_expressions: dict[str, str] | None = None,
            silent: bool = False) -> CellRun:
        """Execute ``code``; evaluate ``user_expressions`` afterwards if it succeeded.

        Jupyter messaging protocol ("Messaging in Jupyter", jupyter-client docs), ``execute_request`` on
        the shell channel: ``user_expressions`` maps names to expressions evaluated in the user namespace
        only after the code succeeded (IPython docs, "Execution semantics in the IPython kernel", phase 4),
        returned in the ``execute_reply`` as display data (``text/plain``) or as ``ename``/``evalue``.
        ``allow_stdin=False`` makes ``input()`` raise at once instead of waiting for a reply.
        Never raises: an unreadable message or any other failure to talk to the kernel is "broken".
        """
        if not self.alive:
            return CellRun("dead", recovered=False)
        try:
            msg_id = self.kc.execute(code, silent=silent, store_history=not silent,
                                     user_expressions=user_expressions or {}, allow_stdin=False,
                                     stop_on_error=False)
            content = self._reply(msg_id, timeout)
            if content is None:
                return self._interrupt(msg_id)
        except _Broken as exc:
            self.stop()
            return CellRun("broken", evalue=str(exc), recovered=False)
        except Exception as exc:  # anything else while talking to the kernel: the same
            self.stop()
            return CellRun("broken", evalue=f"the grader could not talk to it ({type(exc).__name__}: "
                                            f"{short_repr(str(exc), 200)})", recovered=False)
        return self._outcome(content)

    def _outcome(self, content) -> CellRun:
        if content == "dead":
            self.stop()
            return CellRun("dead", recovered=False)
        if content in ("output", "oversize"):
            self.stop()
            why = (f"it sent one message over {_mb(MAX_MESSAGE)}" if content == "oversize" else
                   f"its output passed the {_mb(self.limits.max_output)} limit")
            return CellRun("output", evalue=why, recovered=False)
        if content.get("status") == "ok":
            ue = content.get("user_expressions")
            return CellRun("ok", user_expressions=ue if isinstance(ue, dict) else {})
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
        if content in ("output", "oversize"):
            return self._outcome(content)
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
    defines: frozenset[str]  # for a cell that cannot be parsed: every name it mentions
    timeout: bool = False
    cause: "_Failure | None" = None  # the earlier failure this one follows from (a NameError chain)
    unparsed: str = ""  # the parse error ("invalid syntax, line 3") of a cell that is not valid Python

    @property
    def root(self) -> "_Failure":
        return self.cause.root if self.cause is not None else self


_NAME_ERROR = re.compile(r"name '([A-Za-z_][A-Za-z_0-9]*)' is not defined")


_SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _transformed(source: str) -> str:
    """A cell's source after IPython's own magic transforms (what the kernel compiles)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # no IPython here, or a cell it cannot transform: parse as plain Python
        return source


def _parse_error(source: str) -> str:
    """Why a cell is not valid Python ("invalid syntax, line 3"), or "" when it parses."""
    try:
        ast.parse(_transformed(source))
    except SyntaxError as exc:
        return f"{exc.msg}, line {exc.lineno}" if exc.lineno else str(exc.msg)
    except Exception as exc:  # ValueError (null bytes) and the like
        return f"{type(exc).__name__}: {short_repr(str(exc), 80)}"
    return ""


def _defined_names(source: str) -> frozenset[str]:
    """Names a cell would bind (assignments, defs, imports), after IPython's own magic transforms."""
    source = _transformed(source)
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
            unparsed = _parse_error(source) if run.ename in _SYNTAX_ERRORS else ""
            if unparsed:  # it never ran: any name it mentions may be one it was meant to define
                self.failures.append(_Failure(k, run.ename, run.evalue, frozenset(_IDENTIFIER.findall(source)),
                                              unparsed=unparsed))
            else:
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
        elif run.status in ("output", "broken"):
            self.stopped = f"the kernel was stopped in cell {k}: {run.evalue}"

    def _cause(self, ename: str, evalue: str) -> _Failure | None:
        """For a NameError: the latest failed cell that would have defined the name (a cell that could
        not be parsed counts for every name it mentions); failing that, the latest cell that failed on a
        stub (a replaced solution region defines nothing any more)."""
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
            if cause.unparsed:
                return failure(ex, ERROR, f"exercise {ex.id}: cell {cause.cell} could not be parsed "
                                          f"({cause.ename}: {cause.unparsed}), so {evalue}")
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
        if run.status in ("output", "broken"):
            self.stopped = f"the kernel was stopped in graded cell {k}: {run.evalue}"
            return failure(ex, ERROR, f"exercise {ex.id}: {self.stopped}")
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
                   env: dict[str, str] | None = None, limits: Limits | None = None,
                   isolation: "sandbox.Isolation | str" = "auto", hidden: Iterable[str | Path] = (),
                   scratch_root: str | Path | None = None) -> list[Verdict]:
    """Grade one notebook against exercise set ``exset``; one verdict per graded cell of the set, in order.

    ``references`` maps exercise ids to reference answers (computed here from the registry when not
    given). ``folder`` is copied as the kernel's working folder (default: an empty temporary folder).
    ``env`` adds environment variables for the kernel; ``limits`` caps its output, memory and files.
    ``isolation`` is a :class:`~h100lab.grading.sandbox.Isolation` or a ``--sandbox`` mode ("auto", "on",
    "off"); in a sandbox the folders in ``hidden``, the notebook's own folder and ``folder`` are not
    visible. The scratch folder is made in ``scratch_root`` (default: the system's temporary folder).
    Nothing is written next to ``path``.
    """
    exercises = {i: get(i) for i in exset.ids}
    if references is None:
        references = {i: exercises[i].answer() for i in exset.ids}
    iso = sandbox.resolve(isolation) if isinstance(isolation, str) else isolation
    path = Path(path)
    try:
        nb = read_notebook(path)
    except Exception as exc:
        msg = f"could not read the submission {path.name}: {type(exc).__name__}: {short_repr(str(exc), 200)}"
        return [failure(exercises[i], ERROR, f"exercise {i}: {msg}") for i in exset.ids]
    wanted = set(exset.ids)
    hidden = [*hidden, path.resolve().parent, *([Path(folder).resolve()] if folder else [])]
    with tempfile.TemporaryDirectory(prefix="h100lab-grade-", dir=scratch_root, ignore_cleanup_errors=True) as tmp:
        tmp = Path(tmp)
        kernel = Kernel(_workdir(Path(folder) if folder else None, tmp), tmp / "rt", env, limits=limits,
                        isolation=iso, scratch=tmp, hidden=hidden)
        kernel.start()
        try:
            state = _NotebookRun(kernel, exset, exercises, references, timeout)
            state.inject()
            for k, cell in enumerate(nb.cells, start=1):  # cells are numbered from 1 in messages
                if cell.get("cell_type") != "code":
                    continue
                try:
                    tags = [i for i in grade_ids(cell) if i in wanted]
                    if tags:  # a graded cell: never run as written, graded from the set's source
                        for ex_id in tags:
                            if ex_id not in state.verdicts:
                                state.graded_cell(k, ex_id)
                        continue
                    state.student_cell(k, cell.get("source", "") or "")
                except Exception as exc:  # a grader bug must not cost the verdicts already made
                    if not state.stopped:
                        state.stopped = (f"the grader failed at cell {k}: {type(exc).__name__}: "
                                         f"{short_repr(str(exc), 200)}")
                    kernel.stop()
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
    isolation: str = ""  # how the kernels ran (Isolation.describe())
    submissions_changed: list[str] = field(default_factory=list)  # "path: added|removed|changed"

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
        ids, rows, totals, isolation, submissions_changed) into ``out_dir``, each atomically: written to a
        temporary file in ``out_dir``, flushed to disk, then renamed over the old one, so a reader sees
        the old gradebook or the new one, never a mix."""
        import io

        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        self.csv_path = out_dir / f"gradebook-{self.lesson:02d}.csv"
        self.json_path = out_dir / f"gradebook-{self.lesson:02d}.json"
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(self.rows)
        doc = {"set": f"{self.lesson:02d}", "exercises": self.exercises, "rows": self.rows,
               "totals": self.totals(), "isolation": self.isolation,
               "submissions_changed": self.submissions_changed}
        _write_atomic(self.csv_path, buf.getvalue())
        _write_atomic(self.json_path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # what open() would have made, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def digest_tree(root: str | Path) -> dict[str, str]:
    """Every entry under ``root`` (symbolic links not followed): relative path -> SHA-256 of a file's
    bytes, ``dir``, ``link -> target`` or the kind of anything else."""
    root = Path(root)
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in dirnames + sorted(filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            try:
                st = p.lstat()
                if p.is_symlink():
                    out[rel] = f"link -> {os.readlink(p)}"
                elif p.is_dir():
                    out[rel] = "dir"
                elif p.is_file():
                    h = hashlib.sha256()
                    with open(p, "rb") as fh:
                        for block in iter(lambda: fh.read(1 << 20), b""):
                            h.update(block)
                    out[rel] = "sha256:" + h.hexdigest()
                else:
                    out[rel] = f"special (mode {st.st_mode:o})"
            except OSError as exc:
                out[rel] = f"unreadable ({exc.strerror})"
    return out


def _changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    out = []
    for rel in sorted(before.keys() | after.keys()):
        if rel not in after:
            out.append(f"{rel}: removed")
        elif rel not in before:
            out.append(f"{rel}: added")
        elif before[rel] != after[rel]:
            out.append(f"{rel}: changed")
    return out


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
          jobs: int = 1, progress=None, isolation: str = "auto", limits: Limits | None = None,
          warn=None) -> GradeBook:
    """Grade every submission of exercise set ``lesson`` in ``submissions_dir``; write the gradebook.

    Exercises come from the set's single source ``solutions_dir/NN-*.md`` (graded cells) and the
    registry (reference answers, computed once here). ``out_dir`` (None: do not write) may not lie inside
    ``submissions_dir``. ``jobs`` notebooks are graded at a time (each in its own kernel); the gradebook's
    order is the students' sorted order either way. ``progress`` is called with each student's name.

    ``isolation`` is the ``--sandbox`` mode: "auto" (a namespace sandbox per kernel where the OS allows
    it, else none), "on" (``RuntimeError`` when none can be made), "off". In the sandbox the submissions,
    ``out_dir`` and every other student's scratch folder are hidden. ``limits`` caps each kernel's output,
    memory and file sizes. ``warn`` is called with messages for the instructor (no isolation; the
    submissions folder changed while grading, found by hashing it before and after). The gradebook is
    written last.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if not timeout > 0:
        raise ValueError(f"the per-cell timeout must be > 0 seconds, got {timeout}")
    limits = limits or Limits()
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
    subs = find_submissions(submissions_dir, lesson)
    iso = sandbox.resolve(isolation)
    book = GradeBook(lesson, exset.ids, isolation=iso.describe())
    if not iso.enabled and warn is not None:
        warn(f"warning: {iso.describe()}. Student code runs with your permissions: it can read and change "
             "your files, other submissions and the gradebook, and leave processes behind. Grade untrusted "
             "work in a container or a throw-away account.")
    before = digest_tree(submissions_dir)

    with tempfile.TemporaryDirectory(prefix="h100lab-grade-", ignore_cleanup_errors=True) as scratch_root:
        hidden = [submissions_dir.resolve(), Path(scratch_root)] + ([Path(out_dir).resolve()] if out_dir else [])

        def one(sub: Submission) -> list[Verdict]:
            if progress is not None:
                progress(sub.student)
            if sub.path is None:
                return [failure(exercises[i], MISSING, f"exercise {i}: no notebook {lesson:02d}-*.ipynb or "
                                                       f"{lesson:02d}-*.md in the student's folder")
                        for i in exset.ids]
            try:
                return grade_notebook(sub.path, exset, references, timeout=timeout, folder=sub.folder, env=env,
                                      limits=limits, isolation=iso, hidden=hidden, scratch_root=scratch_root)
            except Exception as exc:  # the kernel did not start: grade the others, say why here
                msg = f"not graded: the grader failed: {type(exc).__name__}: {short_repr(str(exc), 200)}"
                return [failure(exercises[i], ERROR, f"exercise {i}: {msg}") for i in exset.ids]

        if jobs > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=jobs) as pool:
                results = list(pool.map(one, subs))
        else:
            results = [one(sub) for sub in subs]
    for sub, verdicts in zip(subs, results):
        book.add(sub.student, verdicts)
    book.submissions_changed = _changes(before, digest_tree(submissions_dir))
    if book.submissions_changed and warn is not None:
        warn(f"warning: the submissions folder {submissions_dir} changed while it was graded: "
             + "; ".join(book.submissions_changed[:20])
             + (f"; ... {len(book.submissions_changed) - 20} more" if len(book.submissions_changed) > 20 else ""))
    if out_dir is not None:
        book.write(out_dir)
    return book
