"""``python -m h100lab.measure``: lesson order, --out forwarding, keep going past failures, exit codes."""
from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from h100lab.measure import __main__ as runner

LESSONS = {
    "l01": "def main(argv=None):\n    open(argv[1] + '/l01', 'w').write(' '.join(argv))\n",
    "l02": "def main(argv=None):\n    raise RuntimeError('kernel fault')\n",
    "l03": "def main(argv=None):\n    open(argv[1] + '/l03', 'w').write('x')\n    return 3\n",
    "l04": "X = 1\n",
    "l05": "import sys\ndef main(argv=None):\n    open(argv[1] + '/l05', 'w').write('x')\n    sys.exit(0)\n",
    "helper": "raise ImportError('not a lesson, never imported')\n",
}


@pytest.fixture()
def fake(tmp_path, monkeypatch):
    pkg = tmp_path / "fakemeasure"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, src in LESSONS.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(src))
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    yield "fakemeasure", out
    for m in [m for m in sys.modules if m.startswith("fakemeasure")]:
        del sys.modules[m]


def test_discover_lists_lessons_in_order(fake):
    assert runner.discover(fake[0]) == ["l01", "l02", "l03", "l04", "l05"]


def test_runs_every_lesson_keeps_going_and_fails_at_the_end(fake, capsys):
    pkg, out = fake
    code = runner.main(["all", "--out", str(out), "--no-gpu-check"], package=pkg)
    text = capsys.readouterr().out
    assert code == 1
    assert (out / "l01").read_text() == f"--out {out}"
    assert (out / "l03").exists() and (out / "l05").exists()      # ran after l02 failed
    assert "measurement scripts: 2 ok, 3 failed" in text
    assert "l02: RuntimeError: kernel fault" in text and "l03: main returned 3" in text
    assert "l04: fakemeasure.l04 has no main(argv)" in text


def test_only_the_named_lessons_run(fake):
    pkg, out = fake
    assert runner.main(["1", "L5", "--out", str(out), "--no-gpu-check"], package=pkg) == 0
    assert sorted(p.name for p in out.iterdir()) == ["l01", "l05"]


def test_a_missing_lesson_is_a_failure(fake):
    res = runner.run(["l09"], [], fake[0], stream=io.StringIO())
    assert res == {"l09": "no measurement script fakemeasure.l09"}


def test_bad_lesson_name_is_a_usage_error(fake):
    with pytest.raises(SystemExit) as ei:
        runner.main(["lesson-one", "--no-gpu-check"], package=fake[0])
    assert ei.value.code == 2


@given(st.integers(1, 99))
def test_lesson_name_forms(n):
    assert runner.lesson_name(str(n)) == runner.lesson_name(f"l{n}") == runner.lesson_name(f"L{n:02d}") == f"l{n:02d}"


@pytest.mark.parametrize("bad", ["l0", "l100", "x1", "", "all1"])
def test_lesson_name_rejects(bad):
    with pytest.raises(ValueError, match="not a lesson"):
        runner.lesson_name(bad)


def test_without_a_gpu_nothing_is_measured():
    from h100lab import cuda

    if cuda.available():
        pytest.skip("a GPU is present")
    r = subprocess.run([sys.executable, "-m", "h100lab.measure", "all"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no usable Hopper GPU" in r.stderr


def test_list():
    r = subprocess.run([sys.executable, "-m", "h100lab.measure", "--list"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip()
