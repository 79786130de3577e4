"""Build the book's two editions and test the built site.

    python tools/site.py student      # _build/html: chapters, exercises (stubs), appendices
    python tools/site.py instructor   # _build_instructor/html: the same plus the solutions
    python tools/site.py test         # browser test of _build/html (see tests/site/)

Both builds start from a clean folder (an incremental Jupyter Book rebuild after a failure exits 0),
execute every chapter, and treat warnings as errors (-W -n --keep-going).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _toc(edition: str) -> dict:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    if edition == "instructor":
        sols = [p for p in sorted((ROOT / "solutions").glob("[0-9][0-9]-*.md"))]
        if sols:
            part = {"caption": "Solutions (instructor edition)",
                    "chapters": [{"file": f"solutions/{p.stem}"} for p in sols]}
            parts = toc["parts"]
            idx = next((i for i, p in enumerate(parts) if p.get("caption") == "Appendix"), len(parts))
            parts.insert(idx, part)
    return toc


def build(edition: str) -> Path:
    base = ROOT if edition == "student" else ROOT / "_build_instructor"
    out = base / "_build"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    toc_path = out / f"_toc-{edition}.yml"
    toc_path.write_text(yaml.safe_dump(_toc(edition), sort_keys=False))
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--path-output", str(base),
           "--toc", str(toc_path), "-W", "-n", "--keep-going"]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)
    index = out / "html" / "index.html"
    print(f"\nThe {edition} edition of H100 Lab is at {index}")
    return index


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("student", "instructor", "test"):
        print(__doc__)
        return 2
    if argv[0] == "test":
        return subprocess.call([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                str(ROOT / "tests" / "site")] + argv[1:], cwd=ROOT)
    build(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
