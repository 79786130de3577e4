"""Datasets measured on real GPUs, kept in the repository's ``data/`` folder.

Every dataset is one JSON file ``data/<lesson>/<name>.json`` holding ``meta`` (GPU name, compute
capability, driver and CUDA versions, date, the exact command that produced it, the script) and
``records`` (a list of plain dicts). Writers call :func:`write`; readers (tests, chapters, the
model-vs-silicon appendix) call :func:`load`.
"""
from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Dataset", "data_dir", "load", "committed", "write", "available", "names", "rewrite", "REQUIRED_META",
           "display_command"]

REQUIRED_META = ("gpu", "compute_capability", "driver", "cuda", "date", "command")


@dataclass(frozen=True)
class Dataset:
    name: str
    meta: dict[str, Any]
    records: list[dict[str, Any]]

    def describe(self) -> str:
        """GPU, driver, CUDA, date and the command, as a reader would type it in a clone
        (:func:`display_command`); ``meta["command"]`` keeps what was run."""
        m = self.meta
        return f"{m['gpu']} (driver {m['driver']}, CUDA {m['cuda']}), {m['date']}: `{display_command(m['command'])}`"


def display_command(command: str) -> str:
    """A recorded command without the measuring machine's folders: environment assignments before it
    are dropped, an absolute path ending in ``data`` (the output folder) becomes ``data``, and any other
    absolute path its last component (a tool found on ``PATH``, a file next to the command).

    >>> display_command("PYTHONPATH=/tmp/x:. python3 -m h100lab.measure.l01 --out /root/out/data --ncu /usr/bin/ncu")
    'python3 -m h100lab.measure.l01 --out data --ncu ncu'
    """
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return command
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words.pop(0)

    def local(path: str) -> str:
        return "data" if Path(path).name == "data" else (Path(path).name or path)

    out = []
    for w in words:
        opt, eq, val = w.partition("=")
        if w.startswith("/"):
            w = local(w)
        elif eq and opt.startswith("-") and val.startswith("/"):
            w = f"{opt}={local(val)}"
        out.append(w)
    return shlex.join(out)


def data_dir() -> Path:
    """The repository's data folder (``$H100LAB_DATA`` overrides it)."""
    env = os.environ.get("H100LAB_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "data"


#: datasets larger than this are stored gzip-compressed (``name.json.gz``)
COMPRESS_ABOVE = 1 << 20


def _path(name: str) -> Path:
    """The dataset's file: ``name.json``, or ``name.json.gz`` for a large one."""
    name = name.removesuffix(".gz").removesuffix(".json")
    plain = data_dir() / f"{name}.json"
    gz = plain.with_name(plain.name + ".gz")
    return gz if gz.is_file() and not plain.is_file() else plain


def _read(p: Path) -> str:
    if p.suffix == ".gz":
        return gzip.decompress(p.read_bytes()).decode()
    return p.read_text()


def _save(p: Path, text: str) -> Path:
    """Write ``text`` to the dataset path, compressed when large (the other form is removed)."""
    plain = p.with_name(p.name.removesuffix(".gz"))
    gz = plain.with_name(plain.name + ".gz")
    if len(text) > COMPRESS_ABOVE:
        gz.write_bytes(gzip.compress(text.encode(), mtime=0))  # mtime 0: byte-identical reruns
        plain.unlink(missing_ok=True)
        return gz
    plain.write_text(text)
    gz.unlink(missing_ok=True)
    return plain


def available(name: str) -> bool:
    return _path(name).is_file()


def load(name: str) -> Dataset:
    """Load ``data/<name>.json`` (or ``.json.gz``) (e.g. ``load("l01/occupancy")``); check its metadata is complete."""
    p = _path(name)
    if not p.is_file():
        raise FileNotFoundError(f"dataset {name!r} not found at {p}")
    obj = json.loads(_read(p))
    missing = [k for k in REQUIRED_META if k not in obj.get("meta", {})]
    if missing:
        raise ValueError(f"dataset {name!r} lacks metadata {missing}")
    return Dataset(name, obj["meta"], obj["records"])


def committed(ds: "Dataset | str") -> "Dataset | None":
    """``ds`` itself (a :class:`Dataset`), or the committed dataset of that name; None when it is not committed."""
    if isinstance(ds, str):
        return load(ds) if available(ds) else None
    return ds


def write(name: str, records: list[dict[str, Any]], meta: dict[str, Any]) -> Path:
    """Write a dataset; ``meta`` must hold every key of :data:`REQUIRED_META`."""
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise ValueError(f"dataset metadata lacks {missing}")
    p = _path(name)
    p.parent.mkdir(parents=True, exist_ok=True)
    return _save(p, dumps(meta, records))


def dumps(meta: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The file format: readable metadata, then one compact JSON record per line (small diffs)."""
    lines = ",\n".join(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in records)
    head = json.dumps(meta, indent=1, sort_keys=True)
    return f'{{"meta": {head},\n "records": [\n{lines}\n]}}\n'


def rewrite(name: str) -> Path:
    """Rewrite an existing dataset in the current file format (content unchanged)."""
    ds = load(name)
    return _save(_path(name), dumps(ds.meta, ds.records))


def names() -> list[str]:
    """Every dataset in the data folder, as names for :func:`load` (``"l01/occupancy"``)."""
    root = data_dir()
    found = {str(p.relative_to(root)).removesuffix(".gz").removesuffix(".json")
             for pat in ("*/*.json", "*/*.json.gz") for p in root.glob(pat)}
    return sorted(found)


def digest() -> str:
    """SHA-256 of every dataset of the data folder (:func:`names`: each one's name and file bytes): the key of a
    result computed from the committed measurements as a whole (:mod:`h100lab.fitcache`) — a changed, added or
    removed dataset is a new key."""
    import hashlib

    h = hashlib.sha256()
    for n in names():
        h.update(n.encode())
        h.update(b"\0")
        h.update(_path(n).read_bytes())
        h.update(b"\1")
    return h.hexdigest()
