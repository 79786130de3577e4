"""Every registered model-vs-silicon check, run against its dataset in data/.

A check whose dataset exists must find at least one case and no mismatch; a check whose dataset has not
been measured yet is skipped, naming the command that makes it (on a Hopper GPU).
"""
from __future__ import annotations

import pytest

from h100lab import data
from h100lab.cuda.silicon import measure_command
from h100lab.validation import all_checks

CHECKS = all_checks()


def test_check_titles_are_unique_and_datasets_named_by_lesson():
    titles = [c.title for c in CHECKS]
    assert len(titles) == len(set(titles))
    for c in CHECKS:
        assert c.dataset.startswith(f"l{c.lesson:02d}/"), f"{c.title}: dataset {c.dataset} is not under l{c.lesson:02d}/"


@pytest.mark.parametrize("check", CHECKS, ids=[c.title for c in CHECKS])
def test_model_matches_silicon(check):
    if not data.available(check.dataset):
        pytest.skip(f"dataset {check.dataset} not measured yet: `{measure_command(check.lesson)}` on a Hopper GPU")
    ds = data.load(check.dataset)
    res = check.run(ds)
    assert res.cases > 0, f"{check.title}: dataset {check.dataset} gave no case to compare"
    assert res.mismatches == 0, (f"{check.title}: model and {ds.describe()} disagree in {res.mismatches} of "
                                 f"{res.cases} cases, e.g. {res.examples[:3]} {res.note}")
