"""A committed run with some of its times planted: the tests of registered rounds check that a check bites."""
from __future__ import annotations

import copy
from typing import Callable

from h100lab.data import Dataset


def planted(ds: Dataset, where: Callable[[dict], bool], factor: float, key: str = "median_ms") -> Dataset:
    """``ds`` with ``key`` of every record for which ``where`` holds (and that has ``key``) multiplied by ``factor``;
    the committed records are not touched."""
    recs = copy.deepcopy(ds.records)
    for r in recs:
        if key in r and where(r):
            r[key] *= factor
    return Dataset(ds.name, ds.meta, recs)
