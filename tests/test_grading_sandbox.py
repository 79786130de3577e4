"""The kernel launcher and sandbox (h100lab.grading.sandbox), without a kernel.

The namespace tests run the real set-up through util-linux ``unshare`` and skip, with the probe's
reason, where namespaces are unavailable (no ``unshare``, user namespaces disabled, a container's
seccomp policy). The whole-grader tests of the sandbox are in test_grading_hostile.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from h100lab.grading import sandbox

ISOLATION = sandbox.probe()
needs_sandbox = pytest.mark.skipif(not ISOLATION.enabled, reason=f"no namespace sandbox here: {ISOLATION.reason}")

INSIDE = r'''
import json, os, signal, socket, subprocess, sys
out = {"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(), "path": sys.path}
def visible(p):
    return os.path.exists(p)
def writable(p):
    try:
        with open(p, "a"):
            pass
        return True
    except OSError:
        return False
spec = json.load(open(sys.argv[1]))
sb = spec["sandbox"]
out["hidden_visible"] = [h for h in sb["hidden"] if visible(os.path.join(h, "secret"))]
out["home_visible"] = visible(os.path.join(sb["system_hidden"][0], "."))
out["writable"] = {p: writable(p) for p in [os.path.join(sb["scratch"], "w"), "/tmp/w", "/dev/shm/w", "/w",
                   os.path.join(sb["exposed"][0], "w"), "/proc/sys/kernel/hostname", "/dev/w"]}
out["dev"] = sorted(os.listdir("/dev"))
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2)
    out["net"] = True
except OSError:
    out["net"] = False
r = subprocess.run(["unshare", "--mount", "sh", "-c", "umount " + sb["hidden"][0] + " && ls " + sb["hidden"][0]],
                   capture_output=True, text=True)
out["nested_umount"] = r.returncode
os.kill(1, signal.SIGKILL)  # the init ignores signals from inside
out["alive"] = True
print(json.dumps(out))
'''


def _inside(tmp_path: Path, *, fallback: bool = False) -> dict:
    """Run INSIDE through the launcher's sandbox set-up (the probe path, then a script instead of a
    kernel): returns what it saw."""
    scratch, hidden = tmp_path / "scratch", tmp_path / "hidden"
    (scratch / "work").mkdir(parents=True)
    hidden.mkdir()
    (hidden / "secret").write_text("x")
    spec = {"sandbox": sandbox.sandbox_spec(str(scratch), str(scratch / "work"), [str(hidden)]),
            "fallback_remount": fallback, "exec": [sys.executable, "-c", INSIDE]}
    spec_file = scratch / "spec.json"  # the script reads it again inside
    spec_file.write_text(json.dumps(spec))
    proc = subprocess.run([*ISOLATION.command, *sandbox.python_command(), str(spec_file)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_sandbox
@pytest.mark.parametrize("fallback", [False, True], ids=["mount_setattr", "remount-each-mount"])
def test_inside_the_sandbox(tmp_path, fallback):
    seen = _inside(tmp_path, fallback=fallback)
    assert seen["pid"] == 2 and seen["ppid"] == 1 and seen["alive"]
    assert seen["cwd"] == str((tmp_path / "scratch" / "work").resolve())
    assert seen["hidden_visible"] == []
    w = seen["writable"]
    assert [p for p, ok in w.items() if ok] == [str((tmp_path / "scratch" / "w").resolve()), "/tmp/w", "/dev/shm/w"]
    assert seen["dev"] == ["fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout", "tty", "urandom", "zero"]
    assert seen["net"] is False
    assert seen["nested_umount"] != 0  # a new mount namespace inside cannot uncover what is hidden
    assert (tmp_path / "scratch" / "w").exists()  # the scratch folder is the real one


def test_probe_says_why_when_there_is_no_unshare(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "UNSHARE", str(tmp_path / "missing"))
    iso = sandbox.probe(refresh=True)
    assert not iso.enabled and "was not found" in iso.reason
    assert iso.describe().startswith("no isolation: util-linux")
    with pytest.raises(RuntimeError, match="--sandbox on, but no isolation"):
        sandbox.resolve("on")
    assert sandbox.resolve("auto") == iso
    assert sandbox.resolve("off").reason == "switched off (--sandbox off)"
    with pytest.raises(ValueError, match="--sandbox must be one of"):
        sandbox.resolve("maybe")


def test_the_launcher_never_imports_from_its_folder_or_the_working_folder(tmp_path):
    """Python 3.10 has no -P: the launcher removes its own folder and relative entries itself. Here both
    ways are checked (with -P where it exists, and without, as on 3.10), from a working folder holding an
    ``ipykernel_launcher.py`` that would announce itself."""
    (tmp_path / "ipykernel_launcher.py").write_text("raise SystemExit('the student launcher ran')\n")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"report_path": True}))
    here = os.path.dirname(os.path.abspath(sandbox.__file__))
    for cmd in (sandbox.python_command(), [sys.executable, os.path.abspath(sandbox.__file__)]):
        proc = subprocess.run([*cmd, str(spec)], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                              env=dict(os.environ, PYTHONPATH=f".{os.pathsep}{os.pathsep}{tmp_path}"))
        assert proc.returncode == 0, proc.stderr
        path = json.loads(proc.stdout)
        assert "" not in path and "." not in path and here not in path and str(tmp_path) not in path
        assert path == [p for p in path if os.path.isabs(p)]
    if sys.version_info >= (3, 11):
        assert sandbox.python_command()[1] == "-P"


def test_exposed_paths_hold_the_interpreter_and_the_package():
    paths = sandbox.exposed_paths()
    assert paths == sorted(paths) and "/" not in paths
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(sandbox.__file__)))
    assert pkg in paths and os.path.realpath(sys.base_prefix) in paths


def test_kernel_command():
    iso = sandbox.Isolation(True, "", ("unshare", "--"))
    assert sandbox.kernel_command("s.json", ["-f", "c.json"], iso)[:2] == ["unshare", "--"]
    cmd = sandbox.kernel_command("s.json", ["-f", "c.json"], sandbox.Isolation(False, "off"))
    assert cmd[0] == sys.executable and cmd[-4:] == ["s.json", "--", "-f", "c.json"]
