"""The model's fits, remembered: once per process, and on disk across processes.

A fit of the book's timing models (lesson 3's memory model, :func:`h100lab.validation.timing.fit`; lesson 7's wgmma
constants, :func:`h100lab.tensorcore.timing.calibrate`) is a pure function of the records it is given, its own
arguments and the package's code. Every chapter runs in its own kernel and several ask for the same fits of the
same committed datasets, so :func:`memo` keeps each result

* in the process, under a key of the *content* of its inputs (not the objects' identity): a second caller with
  equal records gets the very same result object — callers read it, they do not modify it;
* on disk (:func:`cache_dir`), under a key of everything the result depends on (:func:`key`): the content of the
  inputs, the source of every module of the package (a changed line of the model is a new key, whichever module
  it is in), and the Python and NumPy versions. A changed input or a changed model is never served an old result.

:func:`on_disk` keeps a result on disk only (each call a fresh object): the emulator's parsed PTX modules of the
book's large kernels (:func:`h100lab.emu.api._parse`), which every chapter and test process would otherwise parse
again.

The disk copy is an optimisation only: an absent, unreadable or foreign file is recomputed, a folder that cannot be
written is ignored. ``$H100LAB_CACHE`` names the cache folder as for the NVRTC cache (:func:`h100lab.nvrtc.cache_dir`;
the fits go to its ``fits/`` subfolder), and ``H100LAB_CACHE=off`` turns the disk cache off (the in-process memory
stays). The files are pickles written by this package for this user's own processes; do not point
``$H100LAB_CACHE`` at a folder others can write.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any, Callable

__all__ = ["cache_dir", "key", "memo", "on_disk", "source_digest", "clear_memory"]

PACKAGE = Path(__file__).resolve().parent
_MEMORY: dict[str, Any] = {}
_DIGEST: dict[str, str] = {}


def cache_dir() -> Path | None:
    """Where fits are kept across processes: ``$H100LAB_CACHE/fits`` (``off``, ``0``, ``no`` or empty: none), else
    ``$XDG_CACHE_HOME/h100lab/fits`` or ``~/.cache/h100lab/fits`` (the rule of :func:`h100lab.nvrtc.cache_base`)."""
    from .nvrtc import cache_base

    base = cache_base("")
    return None if base is None else base / "fits"


def source_digest() -> str:
    """SHA-256 of the package's code: the path and bytes of every ``*.py`` file under ``h100lab/`` (once per
    process)."""
    if "src" not in _DIGEST:
        h = hashlib.sha256()
        for f in sorted(PACKAGE.rglob("*.py")):
            h.update(str(f.relative_to(PACKAGE)).encode())
            h.update(b"\0")
            h.update(f.read_bytes())
            h.update(b"\1")
        _DIGEST["src"] = h.hexdigest()
    return _DIGEST["src"]


def _canonical(parts: Any) -> bytes:
    """The inputs as canonical text: JSON with sorted keys (floats as their shortest exact repr); what JSON cannot
    hold (a tuple key, a dataclass) by ``repr``."""
    return json.dumps(parts, sort_keys=True, default=repr, allow_nan=True).encode()


def key(name: str, parts: Any) -> str:
    """The disk key of fit ``name`` of inputs ``parts``: SHA-256 of the name, the inputs' content
    (:func:`_canonical`), :func:`source_digest`, and the Python and NumPy versions."""
    import numpy as np

    h = hashlib.sha256()
    for p in (name.encode(), _canonical(parts), source_digest().encode(), sys.version.encode(),
              np.__version__.encode()):
        h.update(p)
        h.update(b"\1")
    return h.hexdigest()


def _load(path: Path, want: str) -> tuple[bool, Any]:
    try:
        with open(path, "rb") as f:
            stored_key, value = pickle.load(f)
    except Exception:          # absent, truncated, or written by another version of a class: compute again
        return False, None
    return (True, value) if stored_key == want else (False, None)


def _store(path: Path, k: str, value: Any) -> None:
    import tempfile

    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump((k, value), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)      # atomic: a concurrent reader sees the old file or the whole new one
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        if tmp is not None:        # a read-only folder or an unpicklable result: the cache is an optimisation
            try:
                os.unlink(tmp)
            except OSError:
                pass


def memo(name: str, parts: Any, compute: Callable[[], Any]) -> Any:
    """``compute()``, remembered under the content of ``parts`` (everything ``compute`` reads besides the package's
    code): in the process, then on disk (module docstring). An exception of ``compute`` is never remembered."""
    k = key(name, parts)
    if k in _MEMORY:
        return _MEMORY[k]
    value = _MEMORY[k] = _on_disk(name, k, compute)
    return value


def on_disk(name: str, parts: Any, compute: Callable[[], Any]) -> Any:
    """``compute()``, remembered on disk only (as :func:`memo`, without the process's copy): every call returns a
    fresh object — for results a caller may modify or that are too large to keep for the whole process (the
    emulator's parsed PTX modules)."""
    return _on_disk(name, key(name, parts), compute)


def _on_disk(name: str, k: str, compute: Callable[[], Any]) -> Any:
    folder = cache_dir()
    path = folder / f"{name}-{k[:40]}.pickle" if folder is not None else None
    hit, value = _load(path, k) if path is not None and path.is_file() else (False, None)
    if not hit:
        value = compute()
        if path is not None:
            _store(path, k, value)
    return value


def clear_memory() -> None:
    """Forget the in-process results (the disk copies stay): what a new process sees."""
    _MEMORY.clear()
