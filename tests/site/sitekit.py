"""Shared helpers of the built-site tests: where the site is, what its TOC holds, what it must not show.

Everything is derived from the built site and the sources (the edition's TOC, the executed notebooks,
solutions/*.md); no chapter is named here.
"""
from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import sys
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"   # the first screen of every TOC page (ignored by git)


@lru_cache(maxsize=1)
def site_tool():
    """tools/site.py as a module (its name would shadow the standard library's `site`)."""
    spec = importlib.util.spec_from_file_location("h100lab_site_tool", ROOT / "tools" / "site.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod   # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def site_dir() -> Path:
    """The built site under test: $H100LAB_SITE_DIR, else the student edition in _build/html."""
    return Path(os.environ.get("H100LAB_SITE_DIR", ROOT / "_build" / "html")).resolve()


def build_dir(site: Path) -> Path:
    """The Jupyter Book build folder around a site (_build), holding jupyter_execute/ and the TOC used."""
    return site.parent


@lru_cache(maxsize=4)
def toc_docs(site: Path) -> tuple[str, ...]:
    """Docnames of the edition's TOC (the one tools/site.py wrote next to the site), root first."""
    tocs = sorted(build_dir(site).glob("_toc-*.yml"))
    path = tocs[0] if len(tocs) == 1 else ROOT / "_toc.yml"
    return tuple(site_tool().toc_files(yaml.safe_load(path.read_text(encoding="utf-8"))))


def root_doc(site: Path) -> str:
    return toc_docs(site)[0]


LESSON = re.compile(r"^chapters/(\d\d)-")


def chapter_docs(site: Path) -> list[str]:
    """Every chapter of the TOC (lessons and appendices): the docs under chapters/."""
    return [d for d in toc_docs(site) if d.startswith("chapters/")]


def lesson_docs(site: Path) -> list[str]:
    """The numbered lesson chapters (chapters/NN-*), in TOC order."""
    return [d for d in toc_docs(site) if LESSON.match(d)]


def page_of(doc: str) -> str:
    return f"{doc}.html"


def html_pages(site: Path) -> list[str]:
    """Every HTML page of the site (not the theme's or Sphinx's internal folders), relative paths."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not any(part.startswith("_") for part in p.relative_to(site).parts[:-1]))


def executed_notebook(site: Path, doc: str) -> dict | None:
    p = build_dir(site) / "jupyter_execute" / f"{doc}.ipynb"
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None


# myst-nb's default mime priority for HTML output (myst_nb.core.render: NbElementRenderer)
MIME_PRIORITY = ("application/vnd.jupyter.widget-view+json", "application/javascript", "text/html",
                 "image/svg+xml", "image/png", "image/jpeg", "text/markdown", "text/latex", "text/plain")
HIDDEN_OUTPUT_TAGS = {"remove-output", "remove-cell"}


def shown_mime(output: dict) -> str | None:
    """The mime type myst-nb renders for one display/execute_result output."""
    data = output.get("data", {})
    return next((m for m in MIME_PRIORITY if m in data), None)


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def cell_tags(cell: dict) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


# ---------------------------------------------------------------------------------------------
# Text of a page, and the solutions that must not be in it

class _Text(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("style",):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("style",) and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def normalize(text: str) -> str:
    """Whitespace collapsed, so that the same words match across HTML markup and source files."""
    return re.sub(r"\s+", " ", text).strip()


def page_text(raw_html: str) -> str:
    """Visible text of an HTML page plus its script bodies (search index, widget state) — normalized."""
    p = _Text()
    p.feed(raw_html)
    return normalize(html.unescape("".join(p.parts)))


CODE_REGION = re.compile(r"^[ \t]*# BEGIN SOLUTION[ \t]*\n(.*?)^[ \t]*# END SOLUTION[ \t]*$", re.M | re.S)
MD_REGION = re.compile(r"<!--\s*BEGIN SOLUTION\s*-->(.*?)<!--\s*END SOLUTION\s*-->", re.S)


def solution_regions(path: Path) -> list[str]:
    """The text of every solution region (code and prose) of one solutions/*.md file."""
    text = path.read_text(encoding="utf-8")
    return [m.group(1) for m in CODE_REGION.finditer(text)] + [m.group(1) for m in MD_REGION.finditer(text)]


def _published_sources() -> str:
    """Normalized text of every source the student site may legitimately show (not solutions/)."""
    parts = []
    for folder in ("chapters", "exercises"):
        for p in sorted((ROOT / folder).glob("*.md")):
            parts.append(p.read_text(encoding="utf-8"))
    parts.append((ROOT / "intro.md").read_text(encoding="utf-8"))
    return normalize("\n".join(parts))


MIN_FRAGMENT = 12   # shorter lines ("x = 1", ")") are not evidence of a leak


def solution_fragments() -> dict[str, list[str]]:
    """Per solutions file, the solution lines a leak would show: every line of a solution region
    (whitespace-normalized, at least MIN_FRAGMENT characters) that the chapters, the exercise stubs
    and the landing page do not contain themselves; plus each whole region."""
    published = _published_sources()
    out: dict[str, list[str]] = {}
    for p in sorted((ROOT / "solutions").glob("*.md")):
        frags = []
        for region in solution_regions(p):
            whole = normalize(region)
            if len(whole) >= MIN_FRAGMENT and whole not in published:
                frags.append(whole)
            for line in region.splitlines():
                line = normalize(line)
                if len(line) >= MIN_FRAGMENT and line not in published and line not in frags:
                    frags.append(line)
        out[p.relative_to(ROOT).as_posix()] = frags
    return out


def leaks(site: Path) -> list[tuple[str, str]]:
    """(file of the site, what leaked) for every solution fragment or solutions/ page in a built site."""
    frags = [(src, f) for src, fs in solution_fragments().items() for f in fs]
    found = []
    sol_pages = [f"solutions/{p.stem}" for p in sorted((ROOT / "solutions").glob("*.md"))]
    for p in sorted(site.rglob("*")):
        if not p.is_file() or p.suffix not in (".html", ".js", ".txt", ".md", ".ipynb", ".json", ".inv"):
            continue
        rel = p.relative_to(site).as_posix()
        if rel.startswith("solutions/") or rel.startswith("_sources/solutions/"):
            found.append((rel, "a solutions page is published"))
        if rel.startswith("_static/"):
            continue
        raw = p.read_bytes().decode("utf-8", errors="replace")
        text = page_text(raw) if p.suffix == ".html" else normalize(raw)
        for doc in sol_pages:   # a URL of a solutions page (a source path named in a comment is not one)
            if re.search(rf"(?<![\w-]){re.escape(doc)}\.(html|ipynb)|_sources/{re.escape(doc)}", raw):
                found.append((rel, f"a link to the solutions page {doc}"))
        for src, frag in frags:
            if frag in text:
                found.append((rel, f"solution text of {src}: {frag[:80]!r}"))
    return found
