"""Datasets measured on real GPUs, kept in the repository's ``data/`` folder.

Every dataset is one JSON file ``data/<lesson>/<name>.json`` holding ``meta`` (GPU name, compute
capability, driver and CUDA versions, date, the exact command that produced it, the script) and
``records`` (a list of plain dicts). Writers call :func:`write`; readers (tests, chapters, the
model-vs-silicon appendix) call :func:`load`.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Dataset", "data_dir", "load", "write", "available", "REQUIRED_META"]

REQUIRED_META = ("gpu", "compute_capability", "driver", "cuda", "date", "command")


@dataclass(frozen=True)
class Dataset:
    name: str
    meta: dict[str, Any]
    records: list[dict[str, Any]]

    def describe(self) -> str:
        m = self.meta
        return f"{m['gpu']} (driver {m['driver']}, CUDA {m['cuda']}), {m['date']}: `{m['command']}`"


def data_dir() -> Path:
    """The repository's data folder (``$H100LAB_DATA`` overrides it)."""
    env = os.environ.get("H100LAB_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "data"


def _path(name: str) -> Path:
    if not name.endswith(".json"):
        name += ".json"
    return data_dir() / name


def available(name: str) -> bool:
    return _path(name).is_file()


def load(name: str) -> Dataset:
    """Load ``data/<name>.json`` (e.g. ``load("l01/occupancy")``); check its metadata is complete."""
    p = _path(name)
    if not p.is_file():
        raise FileNotFoundError(f"dataset {name!r} not found at {p}")
    obj = json.loads(p.read_text())
    missing = [k for k in REQUIRED_META if k not in obj.get("meta", {})]
    if missing:
        raise ValueError(f"dataset {name!r} lacks metadata {missing}")
    return Dataset(name, obj["meta"], obj["records"])


def write(name: str, records: list[dict[str, Any]], meta: dict[str, Any]) -> Path:
    """Write a dataset; ``meta`` must hold every key of :data:`REQUIRED_META`."""
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise ValueError(f"dataset metadata lacks {missing}")
    p = _path(name)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"meta": meta, "records": records}, indent=1, sort_keys=True) + "\n")
    return p
