"""Packaging: pyproject.toml and environment.yml agree; the package imports fast; the version is set."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
REQ = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(spec: str) -> tuple[str, str]:
    m = REQ.match(spec)
    assert m, spec
    return _norm(m.group(1)), m.group(2).replace(" ", "")


def pyproject_requirements() -> dict[str, str]:
    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(proj["dependencies"])
    for extra in proj["optional-dependencies"].values():
        specs += extra
    return dict(_parse(s) for s in specs)


def environment_requirements() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    out = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            out.update(_parse(s) for s in dep["pip"] if not s.startswith("-e"))
        else:
            name, spec = _parse(dep)
            if name not in ("python", "pip"):
                out[name] = spec
    return out


def test_environment_yml_matches_pyproject():
    py, env = pyproject_requirements(), environment_requirements()
    assert set(py) == set(env), f"only in pyproject: {set(py) - set(env)}; only in environment.yml: {set(env) - set(py)}"
    diff = {k: (py[k], env[k]) for k in py if py[k] != env[k]}
    assert not diff, f"version bounds differ (pyproject, environment.yml): {diff}"


def test_bounds_are_lower_bounds_not_pins():
    for name, spec in pyproject_requirements().items():
        assert "==" not in spec, f"{name} is pinned exactly ({spec}); pin lower bounds"
        assert spec.startswith(">="), f"{name} needs a lower bound, has {spec!r}"


def test_version():
    import h100lab

    assert re.fullmatch(r"\d+\.\d+\.\d+", h100lab.__version__)


def test_import_is_fast_and_lazy():
    code = ("import time, sys; t = time.perf_counter(); import h100lab; dt = time.perf_counter() - t; "
            "heavy = [m for m in ('matplotlib', 'ipywidgets', 'cuda', 'simpy', 'jupytext') if m in sys.modules]; "
            "print(dt, heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(maxsplit=1)
    dt, heavy = float(out[0]), out[1].strip()
    assert heavy == "[]", f"import h100lab pulled in heavy modules: {heavy}"
    assert dt < 0.5, f"import h100lab took {dt:.2f} s"
