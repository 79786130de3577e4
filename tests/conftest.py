"""Shared test configuration: hypothesis profiles, GPU skipping, fixtures folders."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# CI: reproducible examples, no deadline flakiness on a loaded 2-core machine.
settings.register_profile("ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Hostile notebooks and other fixtures are data for the tests, never tests themselves.
collect_ignore_glob = ["fixtures/*"]
# The browser tests of the built site run only through `make test-site` (tools/site.py test).
collect_ignore = [] if os.environ.get("H100LAB_SITE_TESTS") else ["site"]


def _gpu_skip_reason() -> str | None:
    try:
        from h100lab import cuda
    except ImportError as exc:  # the backend is not importable at all
        return f"h100lab.cuda is not importable: {exc}"
    return cuda.unavailable_reason()


def pytest_collection_modifyitems(config, items):
    gpu_items = [it for it in items if it.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _gpu_skip_reason()
    if reason:
        skip = pytest.mark.skip(reason=f"needs a Hopper GPU: {reason}")
        for it in gpu_items:
            it.add_marker(skip)


def pytest_ignore_collect(collection_path, config):
    """Under ``-m gpu`` collect only test modules that contain GPU tests.

    The GPU image has the CUDA packages but not the book's notebook stack (simpy, ipywidgets,
    jupytext); modules without GPU tests need not even be imported there.
    """
    if getattr(config.option, "markexpr", "") != "gpu":
        return None
    p = str(collection_path)
    if p.endswith(".py") and "/tests/" in p and collection_path.name.startswith("test_"):
        return "mark.gpu" not in collection_path.read_text(encoding="utf-8")
    return None


@pytest.fixture(autouse=True)
def _data_folder_restored():
    """A benchmark's or measure script's ``main(["--out", tmp])`` points ``$H100LAB_DATA`` at its output folder for
    the rest of the process; put it back after every test, so a notebook that the same pytest worker runs later
    (nbval starts its kernel with this process's environment) reads the repository's data, not a test's."""
    old = os.environ.get("H100LAB_DATA")
    yield
    if old is None:
        os.environ.pop("H100LAB_DATA", None)
    else:
        os.environ["H100LAB_DATA"] = old
