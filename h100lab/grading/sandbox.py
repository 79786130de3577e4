"""How the grader starts a student's kernel: a clean ``sys.path``, resource limits and, where the OS
allows it, a sandbox of its own.

The grader never runs ``python -m ipykernel_launcher`` in the student's folder. It runs this file as a
script (standard library only, nothing of ``h100lab`` imported in the kernel before student code)::

    [unshare --user --map-root-user --mount --pid --fork --kill-child --mount-proc --net --ipc --uts --]
        python -P .../h100lab/grading/sandbox.py SPEC.json -- -f CONNECTION_FILE ...

and this file then runs ``ipykernel_launcher`` in the same process (``runpy``):

* **Path.** ``python -P`` (Python >= 3.11, "safe path") puts neither the script's folder nor the
  working folder on ``sys.path``; for Python 3.10, which has no ``-P``, this script removes both itself
  (and any relative entry) before importing anything else. A student's ``ipykernel_launcher.py`` (or
  ``sitecustomize.py``, ``zmq.py`` ...) therefore never replaces the real one. Once the kernel runs,
  ipykernel adds the working folder as usual, so a student's own helper modules import as in Jupyter.
* **Limits** (``setrlimit``): memory (``--memory``, ``RLIMIT_DATA``: heap and private writable
  mappings, so a ``MemoryError`` rather than a swapping machine; unlike ``RLIMIT_AS`` it leaves address
  reservations alone, such as the CUDA driver's), size of any one file written, no core files; BLAS and OpenMP run one thread (same floating-point sums in every run, no thread pile-up with
  ``--jobs``). Output is sent in pieces of at most :data:`CHUNK` characters (a flush every piece), so a
  cell that prints forever cannot pile up gigabytes in the kernel before the grader has counted them.
* **Sandbox** (Linux namespaces through util-linux ``unshare``, no setuid helper): its own user, PID,
  mount, network, IPC and UTS namespaces. Inside, before any student code:

  - every mount is read-only (``mount_setattr(2)`` ``AT_RECURSIVE``, or a remount of each mount on
    kernels older than 5.12); the kernel's scratch folder (its copy of the student's folder and its
    runtime folder: connection file, IPC sockets, IPython folder) is the only writable place on disk,
    with a private ``/tmp`` and ``/dev/shm`` (tmpfs, size-capped);
  - hidden behind empty read-only tmpfs: the submissions folder, the gradebook folder, every other
    student's scratch folder, ``/home``, ``/root``, ``$HOME`` and ``/run`` (sockets of system
    services); the interpreter, its libraries and the ``h100lab`` package are mounted back read-only
    where they live in a hidden folder;
  - a minimal ``/dev`` (null, zero, full, random, urandom, tty), a fresh ``/proc`` of the new PID
    namespace with its kernel knobs (``/proc/sys``, ``sysrq-trigger``, ``irq``, ``bus``) read-only;
  - no network: a new network namespace holds only a loopback that is down (the grader talks to the
    kernel over IPC sockets in the runtime folder, which work across network namespaces);
  - a second user namespace entered after the mounts are made, so the student's code holds no
    capability over them (it cannot unmount the tmpfs that hides the submissions, nor remount
    anything writable); ``no_new_privs`` is set;
  - this script stays as the PID namespace's init: it forks the kernel, reaps orphans, and when the
    kernel ends (or the grader kills the process group) the whole namespace ends with it, so no
    process a student starts, ``setsid`` or not, outlives its kernel. ``os.getppid()`` in the kernel
    is this init, which ignores signals sent from inside; the grader is not visible at all.

  The kernel's user is the grader's own user (root when the grader runs as root): files outside the
  hidden folders can be read, none can be written. What is not capped: CPU time (the per-cell time
  limit does that), the number of processes, and the disk space of the scratch folder (each file is
  capped).

:func:`probe` runs the whole set-up once in a throw-away namespace; where it fails (no ``unshare``,
user namespaces disabled, a container's seccomp policy ...) the grader falls back to no isolation and
says so (``--sandbox on`` makes that an error instead).
"""
from __future__ import annotations

import sys

# First statement: never import anything from the folder this file or the kernel runs in (Python 3.10
# has no -P). Only the standard library is imported below.
if __name__ == "__main__":
    def _clean_path():
        import os

        here, cwd = sys.path[0] if sys.path else None, os.path.realpath(os.getcwd())
        sys.path[:] = [p for p in sys.path if p and p != here and os.path.isabs(p) and os.path.realpath(p) != cwd]

    _clean_path()

import ctypes  # noqa: E402
import errno  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import stat  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

__all__ = ["Isolation", "probe", "resolve", "kernel_command", "UNSHARE", "CHUNK", "SANDBOX_MODES"]

UNSHARE = "unshare"  # util-linux unshare(1); a path or a name looked up on PATH
UNSHARE_ARGS = ["--user", "--map-root-user", "--mount", "--propagation", "private", "--pid", "--fork",
                "--kill-child", "--mount-proc", "--net", "--ipc", "--uts"]
SANDBOX_MODES = ("auto", "on", "off")
CHUNK = 1 << 20                       # characters of output per message the kernel sends (1 Mi)
TMP_SIZE = "256m"                     # the sandbox's private /tmp
SHM_SIZE = "64m"                      # its /dev/shm
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus")
SYSTEM_HIDDEN = ("/home", "/root", "/run")

# Linux ABI constants (include/uapi/linux/mount.h, sched.h, prctl.h); the same on every architecture.
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_RELATIME = 1 << 21
CLONE_NEWUSER = 0x10000000
SYS_MOUNT_SETATTR = {"x86_64": 442, "aarch64": 442, "ppc64le": 442, "s390x": 442}
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY = 0x1
PR_SET_NO_NEW_PRIVS = 38


# ------------------------------------------------------------------------------ grader side
@dataclass(frozen=True)
class Isolation:
    """Whether kernels run sandboxed; ``reason`` says why not (or what the sandbox is)."""

    enabled: bool
    reason: str
    command: tuple = field(default=(), compare=False)  # the unshare prefix of the kernel command

    def describe(self) -> str:
        """One line for the instructor and the gradebook."""
        if self.enabled:
            return ("sandboxed: own user, PID, mount, network, IPC and UTS namespaces; only the scratch "
                    "folder writable; submissions, gradebook folder and other students hidden")
        return f"no isolation: {self.reason}"


def _unshare_prefix() -> list[str] | None:
    import shutil

    exe = UNSHARE if os.sep in UNSHARE else shutil.which(UNSHARE)
    if not exe or not os.access(exe, os.X_OK):
        return None
    return [exe, *UNSHARE_ARGS, "--"]


def python_command() -> list[str]:
    """This interpreter, with ``-P`` where it exists (Python >= 3.11), running this file as a script."""
    return [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), os.path.abspath(__file__)]


def kernel_command(spec_file: str, kernel_args: list[str], isolation: "Isolation | None") -> list[str]:
    """The command line of one grading kernel (``kernel_args`` go to ``ipykernel_launcher``)."""
    prefix = list(isolation.command) if isolation is not None and isolation.enabled else []
    return [*prefix, *python_command(), spec_file, "--", *kernel_args]


def exposed_paths() -> list[str]:
    """What a kernel must be able to read wherever it lies: the interpreter, its libraries, ``sys.path``
    of the grader, the ``h100lab`` package (an editable install lives outside ``sys.path``) and its
    datasets (``data/`` beside it, ``$H100LAB_DATA``). Sorted, so a folder comes before what is in it."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             package, os.path.join(os.path.dirname(package), "data"), os.environ.get("H100LAB_DATA", "")]
    paths += [p for p in sys.path if p and os.path.isabs(p)]
    out = set()
    for p in paths:
        if not p or not os.path.isabs(p):
            continue
        p = os.path.realpath(p)
        if os.path.isfile(p):  # a zip on sys.path
            p = os.path.dirname(p)
        if os.path.isdir(p) and p != "/":
            out.add(p)
    return sorted(out)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def sandbox_spec(scratch: str, cwd: str, hidden=()) -> dict:
    """The sandbox part of a kernel's spec: ``scratch`` writable, ``hidden`` (and the system folders of
    :data:`SYSTEM_HIDDEN` plus ``$HOME``) invisible, :func:`exposed_paths` readable."""
    home = os.environ.get("HOME", "")
    system = [p for p in (*SYSTEM_HIDDEN, home) if p and os.path.isabs(p) and os.path.realpath(p) != "/"]
    return {"scratch": os.path.realpath(scratch), "cwd": os.path.realpath(cwd),
            "system_hidden": sorted({os.path.realpath(p) for p in system}),
            "hidden": sorted({os.path.realpath(str(p)) for p in hidden if os.path.realpath(str(p)) != "/"}),
            "exposed": exposed_paths()}


_PROBED: dict = {}


def probe(refresh: bool = False, *, fallback_remount: bool = False) -> Isolation:
    """Set up a whole sandbox once, in a throw-away namespace, and check it from inside (a file in the
    scratch folder can be written, ``/`` cannot, the network is unreachable, the PID is 2).

    The answer is cached per process (``refresh`` probes again). ``fallback_remount`` tests the remount
    path used on kernels without ``mount_setattr``.
    """
    key = (UNSHARE, fallback_remount)
    if key in _PROBED and not refresh:
        return _PROBED[key]
    prefix = _unshare_prefix()
    if prefix is None:
        result = Isolation(False, f"util-linux `{UNSHARE}` was not found, so no namespaces can be made "
                                  "(install util-linux)")
    elif not sys.platform.startswith("linux"):
        result = Isolation(False, f"namespaces are Linux-only (this is {sys.platform})")
    else:
        with tempfile.TemporaryDirectory(prefix="h100lab-probe-") as tmp:
            scratch = os.path.join(tmp, "scratch")
            os.mkdir(scratch)
            spec = {"probe": True, "sandbox": sandbox_spec(scratch, scratch, [tmp + "/hidden"]),
                    "fallback_remount": fallback_remount}
            os.mkdir(spec["sandbox"]["hidden"][0])
            with open(os.path.join(spec["sandbox"]["hidden"][0], "secret"), "w") as fh:
                fh.write("x")
            spec_file = os.path.join(tmp, "spec.json")
            with open(spec_file, "w") as fh:
                json.dump(spec, fh)
            try:
                proc = subprocess.run([*prefix, *python_command(), spec_file], capture_output=True, text=True,
                                      timeout=60, cwd=scratch, stdin=subprocess.DEVNULL)
                out = (proc.stdout + proc.stderr).strip()
                ok = proc.returncode == 0 and proc.stdout.strip().endswith("sandbox ok")
            except (OSError, subprocess.SubprocessError) as exc:
                ok, out = False, f"{type(exc).__name__}: {exc}"
        if ok:
            result = Isolation(True, "", tuple(prefix))
        else:
            last = out.splitlines()[-1] if out else "no output"
            result = Isolation(False, f"the namespace sandbox could not be set up here ({last[:300]})")
    _PROBED[key] = result
    return result


def resolve(mode: str) -> Isolation:
    """The isolation for ``--sandbox MODE``: "auto" (sandbox where possible, else none, with the reason),
    "on" (sandbox or ``RuntimeError``), "off" (none)."""
    if mode not in SANDBOX_MODES:
        raise ValueError(f"--sandbox must be one of {', '.join(SANDBOX_MODES)}, got {mode!r}")
    if mode == "off":
        return Isolation(False, "switched off (--sandbox off)")
    iso = probe()
    if mode == "on" and not iso.enabled:
        raise RuntimeError(f"--sandbox on, but {iso.describe()}")
    return iso


# ------------------------------------------------------------------------------ kernel side
_libc = None


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
        _libc.syscall.restype = ctypes.c_long
    return _libc


def _fail(what: str) -> OSError:
    e = ctypes.get_errno()
    return OSError(e, f"{what}: {os.strerror(e)}")


def _mount(source, target, fstype, flags, data=None) -> None:
    enc = (lambda s: None if s is None else s.encode())
    if _c().mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise _fail(f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _mount_points_under(path: str) -> list[str]:
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            mp = line.split()[4]
            mp = mp.encode().decode("unicode_escape").encode("latin-1").decode()  # \040 -> space
            if _inside(mp, path):
                out.append(mp)
    return sorted(set(out), key=len)


_STATVFS_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
                  (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME))


def _set_read_only(path: str, read_only: bool, recursive: bool, fallback: bool = False) -> None:
    """Make the mount at ``path`` (and every mount below it) read-only or writable, changing no other flag."""
    nr = SYS_MOUNT_SETATTR.get(os.uname().machine)
    if nr is not None and not fallback:
        attr = _MountAttr(MOUNT_ATTR_RDONLY if read_only else 0, 0 if read_only else MOUNT_ATTR_RDONLY, 0, 0)
        r = _c().syscall(nr, AT_FDCWD, path.encode(), AT_RECURSIVE if recursive else 0, ctypes.byref(attr),
                         ctypes.c_size_t(ctypes.sizeof(attr)))
        if r == 0:
            return
        if ctypes.get_errno() not in (errno.ENOSYS, errno.EPERM):  # no such syscall (or seccomp says no)
            raise _fail(f"mount_setattr {path}")
    # Kernels before 5.12: remount each mount, keeping the flags it has (locked ones must be kept).
    for mp in (_mount_points_under(path) if recursive else [path]):
        try:
            f_flag = os.statvfs(mp).f_flag
        except OSError:
            continue  # a mount point hidden under a later mount
        flags = MS_REMOUNT | MS_BIND | (MS_RDONLY if read_only else 0)
        flags |= sum(ms for st, ms in _STATVFS_FLAGS if f_flag & st)
        try:
            _mount(None, mp, None, flags)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.ENOENT) or mp == path:
                raise


def _tmpfs(path: str, options: str, flags: int = MS_NOSUID | MS_NODEV) -> None:
    _mount("tmpfs", path, "tmpfs", flags, options)


def _reach(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


def _same(path: str, fd: int) -> bool:
    try:
        a, b = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _bind(fd: int, target: str, always: bool = False) -> None:
    """Mount what ``fd`` refers to (opened before anything was hidden) at ``target`` (unless it is what
    ``target`` shows already and ``always`` is false)."""
    if not always and _same(target, fd):
        return
    os.makedirs(target, exist_ok=True)
    _mount(_reach(fd), target, None, MS_BIND | MS_REC)


def _enter(sb: dict, fallback: bool = False) -> None:
    """Build the sandbox's view of the file system (we are root of a fresh user namespace, pid 1 of a
    fresh PID namespace, in a private mount namespace with /proc already the new one), then give up
    every capability over it by entering a second user namespace."""
    o_path = getattr(os, "O_PATH", 0o10000000)
    flags = o_path | os.O_CLOEXEC
    scratch_fd = os.open(sb["scratch"], flags | os.O_DIRECTORY)
    exposed = {p: os.open(p, flags | os.O_DIRECTORY) for p in sb["exposed"] if os.path.isdir(p)}
    devs = {n: os.open(f"/dev/{n}", flags) for n in DEV_NODES if os.path.exists(f"/dev/{n}")}

    _set_read_only("/", True, recursive=True, fallback=fallback)
    # /proc: writable for this process's own files (the user-namespace maps below), kernel knobs read-only
    _set_read_only("/proc", False, recursive=False, fallback=fallback)
    for name in PROC_READ_ONLY:
        p = f"/proc/{name}"
        if os.path.exists(p):
            _mount(p, p, None, MS_BIND | MS_REC)
            _set_read_only(p, True, recursive=True, fallback=fallback)
    # /dev: the harmless nodes only, plus a private /dev/shm
    _tmpfs("/dev", "mode=0755,size=64k", MS_NOSUID | MS_NOEXEC)
    for name, fd in devs.items():
        with open(f"/dev/{name}", "w"):
            pass
        _mount(_reach(fd), f"/dev/{name}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"/dev/{name}")
    os.mkdir("/dev/shm")
    _tmpfs("/dev/shm", f"mode=1777,size={SHM_SIZE}")
    _tmpfs("/tmp", f"mode=1777,size={TMP_SIZE}")

    covers = ["/dev"]

    def hide(paths):
        for p in paths:
            if os.path.isdir(p) and not os.path.islink(p):
                _tmpfs(p, "mode=0755,size=64k")
                covers.append(p)

    hide(sb["system_hidden"])
    for p, fd in exposed.items():
        _bind(fd, p)
    hide(sb["hidden"])
    for p, fd in exposed.items():  # the interpreter inside a hidden folder (a venv in a gradebook folder ...)
        if any(_inside(p, h) and p != h for h in sb["hidden"]):
            _bind(fd, p)
    _bind(scratch_fd, sb["scratch"], always=True)  # its own mount, the one made writable
    _set_read_only(sb["scratch"], False, recursive=False, fallback=fallback)
    for p in covers:
        if os.path.isdir(p):
            _set_read_only(p, True, recursive=False, fallback=fallback)
    for fd in (scratch_fd, *exposed.values(), *devs.values()):
        os.close(fd)
    os.chdir(sb["cwd"])  # the folder as it is now mounted

    # Drop every capability over this mount namespace: its owner is the current user namespace, and the
    # student's code will run in a child of it (mounts made here are locked for it).
    uid, gid = os.geteuid(), os.getegid()
    if _c().unshare(CLONE_NEWUSER) != 0:
        raise _fail("unshare(CLONE_NEWUSER)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)
    if _c().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _fail("prctl(PR_SET_NO_NEW_PRIVS)")


def _init(child: int) -> None:
    """PID 1 of the sandbox: reap orphans; exit with the kernel's status when it ends (the namespace, and
    every process left in it, ends with us). The grader is not visible from here, so ipykernel's own
    parent poller cannot work; instead stdin is a pipe whose only writer is the grader (its "lifeline"):
    end of file there (the grader is gone, even by SIGKILL) ends the sandbox."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the grader's interrupt is for the kernel

    def stop(signum, frame=None):
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    try:
        watch = stat.S_ISFIFO(os.fstat(0).st_mode)
    except OSError:
        watch = False
    if watch:
        import threading

        def orphaned():
            try:
                while os.read(0, 4096):
                    pass
            except OSError:
                pass
            stop(signal.SIGHUP)

        threading.Thread(target=orphaned, daemon=True).start()
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid == child:
            os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _limits(spec: dict) -> None:
    import resource

    memory = int(spec.get("memory", 0) or 0)
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    file_size = int(spec.get("file_size", 0) or 0)
    if file_size > 0:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails (EFBIG), it does not kill
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _chunked_output(chunk: int) -> None:
    """Send stdout/stderr in pieces of ``chunk`` characters, each flushed before the next is written.

    ipykernel's ``OutStream`` buffers everything written between two flushes (0.2 s apart); a loop that
    prints megabyte strings would fill gigabytes there before the grader sees a byte. Here the writer
    waits for each piece to be handed to the IOPub thread, so the kernel holds at most a few pieces.
    Only in the kernel process itself (a forked child keeps ipykernel's own path).
    """
    from ipykernel.iostream import OutStream

    write, master = OutStream.write, os.getpid()

    def bounded_write(self, string):
        if not isinstance(string, str) or os.getpid() != master:
            return write(self, string)
        pending = getattr(self, "_h100lab_pending", 0)
        if pending + len(string) < chunk:
            self._h100lab_pending = pending + len(string)
            return write(self, string)
        for i in range(0, len(string), chunk):
            write(self, string[i:i + chunk])
            self.flush()
        self._h100lab_pending = 0
        return len(string)

    OutStream.write = bounded_write


def _probe_checks(sb: dict) -> None:
    import socket

    with open(os.path.join(sb["scratch"], "probe"), "w") as fh:
        fh.write("ok")
    for path in ("/", "/proc/sys", *sb["exposed"]):
        if not os.statvfs(path).f_flag & os.ST_RDONLY:
            raise SystemExit(f"sandbox probe: {path} is writable")
    for h in sb["hidden"]:
        if os.path.exists(os.path.join(h, "secret")):
            raise SystemExit(f"sandbox probe: {h} is visible")
    try:
        socket.create_connection(("192.0.2.1", 9), timeout=2).close()
    except OSError:
        pass
    else:
        raise SystemExit("sandbox probe: the network is reachable")
    if os.getpid() != 2:
        raise SystemExit(f"sandbox probe: pid {os.getpid()}, not 2")
    print("sandbox ok", flush=True)


def main(argv: list[str]) -> int:
    """``sandbox.py SPEC.json [-- ARGS of ipykernel_launcher]``.

    SPEC keys: ``cwd``, ``memory``, ``file_size``, ``chunk`` (see the module docstring), ``sandbox``
    (:func:`sandbox_spec`; needs a fresh PID namespace), and for tests and diagnostics: ``probe`` (check
    the sandbox from inside, print "sandbox ok"), ``exec`` (run this command, with SPEC appended, where
    the kernel would run), ``report_path`` (print ``sys.path`` as JSON and stop).
    """
    if not argv:
        print("usage: sandbox.py SPEC.json [-- ipykernel_launcher args]", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        spec = json.load(fh)
    if spec.get("report_path"):
        print(json.dumps(sys.path))
        return 0
    kernel_args = argv[2:] if len(argv) > 1 and argv[1] == "--" else argv[1:]
    sb = spec.get("sandbox")
    if sb:
        if os.getpid() != 1:
            print("sandbox.py: a sandbox spec needs a fresh PID namespace (run through unshare)", file=sys.stderr)
            return 2
        _enter(sb, fallback=bool(spec.get("fallback_remount")))
        child = os.fork()
        if child:
            _init(child)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # ipykernel exits when its parent is not JPY_PARENT_PID (the grader's pid, meaningless here);
        # its parent is this sandbox's init, which never goes away while it runs ("1": no poller).
        os.environ["JPY_PARENT_PID"] = "1"
    if spec.get("probe"):
        _probe_checks(sb)
        return 0
    if spec.get("exec"):
        os.execv(spec["exec"][0], [*spec["exec"], argv[0]])
    _limits(spec)
    if spec.get("cwd"):
        os.chdir(spec["cwd"])
    _chunked_output(int(spec.get("chunk", CHUNK)))
    import runpy

    sys.argv = ["ipykernel_launcher", *kernel_args]
    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
