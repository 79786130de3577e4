"""Shared helpers of the built-site tests: where the site is, what its TOC holds, what it must not show.

Everything is derived from the built site and the sources (the edition's TOC, the executed notebooks,
solutions/*.md); no chapter is named here.
"""
from __future__ import annotations

import html
import importlib.util
import json
import os
import functools
import http.server
import re
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"   # every TOC page at 1400 and 400 px, and more (ignored by git)


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
    """Normalized text of every source the student site may legitimately show (not solutions/): chapters,
    exercise stubs, the landing page and the book's kernel sources."""
    parts = []
    for folder in ("chapters", "exercises"):
        for p in sorted((ROOT / folder).glob("*.md")):
            parts.append(p.read_text(encoding="utf-8"))
    parts.append((ROOT / "intro.md").read_text(encoding="utf-8"))
    # the book's own kernels and headers: chapters list them and the site's source download holds them, so a
    # kernel exercise whose fix is a line of a book kernel (the fence the chapter teaches) is not a leak
    for pattern in ("h100lab/cuda/kernels/*.cu", "h100lab/cuda/include/**/*.cuh"):
        for p in sorted(ROOT.glob(pattern)):
            parts.append(p.read_text(encoding="utf-8"))
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


# ---------------------------------------------------------------------------------------------
# A local server and a browser crawler (the fixtures are in conftest.py)

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the tests record what matters
        pass

@contextmanager
def serve(directory: Path):
    """Serve ``directory`` on http://127.0.0.1:<free port> (yields that origin) until the block ends."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


@dataclass(repr=False)
class Visit:
    """What one page did in the browser, and what it holds once rendered."""

    path: str
    url: str = ""
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def __repr__(self) -> str:  # short, for assertion messages
        return (f"Visit({self.path!r}, console_errors={self.console_errors}, page_errors={self.page_errors}, "
                f"failed_requests={self.failed_requests}, blocked={self.blocked})")


# Collected in the page once it has rendered (widgets drawn, MathJax typeset, fonts loaded).
COLLECT_JS = """() => {
  const article = document.querySelector('article.bd-article') || document.body;
  const rect = (e) => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  const visible = (e) => !!(e.offsetParent || e.getClientRects().length);
  const views = Array.from(document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]'));
  return {
    title: document.title,
    location: location.href,
    ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
    names: Array.from(document.querySelectorAll('a[name]')).map(e => e.getAttribute('name')),
    links: Array.from(document.querySelectorAll('a[href]')).map(a => ({
      href: a.href, raw: a.getAttribute('href'), text: a.innerText.trim().slice(0, 80),
      in_article: article.contains(a)})),
    images: Array.from(article.querySelectorAll('img')).map(img => ({
      src: (img.currentSrc || img.src).slice(0, 200), complete: img.complete,
      natural: [img.naturalWidth, img.naturalHeight], size: rect(img), visible: visible(img),
      in_widget: !!img.closest('.widget-subarea, .jupyter-widgets'),
      in_cell_output: !!img.closest('.cell_output')})),
    widgets: views.map(s => {
      const box = s.parentElement.querySelector('.widget-subarea');
      return {rendered: !!(box && box.children.length), size: box ? rect(box) : [0, 0],
              error: !!s.parentElement.querySelector('.jupyter-widgets-error-widget, .widget-error')};
    }),
    unresolved_xrefs: Array.from(document.querySelectorAll('.xref')).filter(e => !e.closest('a'))
      .map(e => e.innerText.trim()),
    math: document.querySelectorAll('mjx-container').length,
    math_in_widgets: document.querySelectorAll('.widget-subarea mjx-container').length,
    math_source: document.querySelectorAll('.math').length,
    math_errors: document.querySelectorAll('mjx-merror, [data-mjx-error]').length,
    table_rows: Array.from(article.querySelectorAll('table tr')).map(tr =>
      Array.from(tr.querySelectorAll('th,td')).map(c => c.innerText.trim())),
    text: article.innerText,
    explorers: Array.from(document.querySelectorAll('.h100lab-explorer')).map(e => ({
      id: e.id, ready: e.dataset.ready === '1', state: e.dataset.state || ''})),
    overflow_x: document.scrollingElement.scrollWidth - window.innerWidth,
  };
}"""

SETTLE_JS = """async () => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  const t0 = Date.now();
  while (views.length && Date.now() - t0 < 20000) {
    const done = Array.from(views).every(s => {
      const box = s.parentElement.querySelector('.widget-subarea');
      return box && box.children.length;
    });
    if (done) break;
    await new Promise(r => setTimeout(r, 100));
  }
  while (document.querySelector('.h100lab-explorer:not([data-ready])') && Date.now() - t0 < 20000)
    await new Promise(r => setTimeout(r, 100));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(r => { img.onload = img.onerror = r; })));
}"""


def shot_name(doc: str, width: int) -> str:
    """The screenshot file of a TOC page's first screen at a window width."""
    return f"{doc.replace('/', '__')}@{width}.png"


def route_offline(page, origin: str, blocked: list[str]) -> None:
    """Let a page load only from ``origin`` (and data:/blob: URLs); record everything else in ``blocked``."""
    def route(r):
        url = r.request.url
        if url.startswith(origin + "/") or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            blocked.append(url)
            r.abort("blockedbyclient")
    page.route("**/*", route)


class Crawler:
    """Visits each page once (memoized) and keeps what it saw; screenshots the TOC's pages."""

    def __init__(self, ctx, origin: str, site: Path, screenshots: bool = True, width: int = 1400):
        self.ctx, self.origin, self.site, self.width = ctx, origin, site, width
        self.visits: dict[str, Visit] = {}
        self.shots = {f"{d}.html": shot_name(d, width) for d in toc_docs(site)} if screenshots else {}

    def visit(self, path: str, wait_js: str | None = None, extra_js: str | None = None) -> Visit:
        """Load ``path`` (memoized); ``wait_js`` is awaited before collecting, ``extra_js``'s result
        is kept as ``info["extra"]``."""
        if path in self.visits:
            return self.visits[path]
        v = Visit(path)
        page = self.ctx.new_page()
        origin = self.origin
        route_offline(page, origin, v.blocked)
        page.on("console", lambda m: v.console_errors.append(f"{m.text} @ {m.location.get('url', '')}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: v.page_errors.append(str(e)))
        page.on("requestfailed", lambda r: v.failed_requests.append(f"{r.url}: {r.failure}")
                if r.url not in v.blocked else None)
        page.on("response", lambda r: v.failed_requests.append(f"{r.url}: HTTP {r.status}")
                if r.status >= 400 else None)
        try:
            resp = page.goto(f"{origin}/{path}", wait_until="load")
            if resp is not None and resp.status >= 400:
                v.failed_requests.append(f"{path}: HTTP {resp.status}")
            page.wait_for_load_state("networkidle")
            page.evaluate(SETTLE_JS)
            if wait_js:
                page.wait_for_function(wait_js, timeout=30_000)
            v.url = page.url
            v.info = page.evaluate(COLLECT_JS)
            if extra_js:
                v.info["extra"] = page.evaluate(extra_js)
            if path in self.shots:
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                page.evaluate("window.scrollTo(0, 0)")
                page.screenshot(path=str(SCREENSHOTS / self.shots[path]), full_page=False)
        finally:
            page.close()
        self.visits[path] = v
        return v
