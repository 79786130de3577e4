"""Fixtures of the built-site tests: a local HTTP server for the site and headless Chromium.

Run through `python tools/site.py test` (make test-site), which sets H100LAB_SITE_TESTS=1 (without it
tests/conftest.py does not collect this folder), installs Debian's chromium when it is missing and
points H100LAB_SITE_DIR at the site (default: the student edition, _build/html).

The browser is Debian's /usr/bin/chromium driven by Playwright (never `playwright install`). Every
request that does not go to the local server is blocked and recorded as a failure: the site must work
with no network.
"""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sitekit import SCREENSHOTS, html_pages, site_dir, toc_docs

CHROMIUM = os.environ.get("H100LAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}


def pytest_configure(config):
    site = site_dir()
    if not (site / "index.html").is_file():
        raise pytest.UsageError(f"no built site at {site}: run `make book` first")


@pytest.fixture(scope="session")
def site() -> Path:
    return site_dir()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the tests record what matters
        pass


@pytest.fixture(scope="session")
def origin(site):
    """http://127.0.0.1:<free port> serving the built site."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory):
    """A persistent Chromium context with a fresh user-data-dir (no cache, no stored theme mode)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run the tests through `python tools/site.py test`")
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport=VIEWPORT, locale="en-US", service_workers="block")
        ctx.set_default_timeout(30_000)
        yield ctx
        ctx.close()


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
    math_source: document.querySelectorAll('.math').length,
    math_errors: document.querySelectorAll('mjx-merror, [data-mjx-error]').length,
    table_rows: Array.from(article.querySelectorAll('table tr')).map(tr =>
      Array.from(tr.querySelectorAll('th,td')).map(c => c.innerText.trim())),
    text: article.innerText,
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
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(r => { img.onload = img.onerror = r; })));
}"""


class Crawler:
    """Visits each page once (memoized) and keeps what it saw; screenshots the TOC's pages."""

    def __init__(self, ctx, origin: str, site: Path):
        self.ctx, self.origin, self.site = ctx, origin, site
        self.visits: dict[str, Visit] = {}
        self.shots = {f"{d}.html": d.replace("/", "__") for d in toc_docs(site)}

    def visit(self, path: str, wait_js: str | None = None, extra_js: str | None = None) -> Visit:
        """Load ``path`` (memoized); ``wait_js`` is awaited before collecting, ``extra_js``'s result
        is kept as ``info["extra"]``."""
        if path in self.visits:
            return self.visits[path]
        v = Visit(path)
        page = self.ctx.new_page()
        origin = self.origin

        def route(r):
            url = r.request.url
            if url.startswith(origin + "/") or url.startswith(("data:", "blob:")):
                r.continue_()
            else:
                v.blocked.append(url)
                r.abort("blockedbyclient")

        page.route("**/*", route)
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
                page.screenshot(path=str(SCREENSHOTS / f"{self.shots[path]}.png"), full_page=False)
        finally:
            page.close()
        self.visits[path] = v
        return v


@pytest.fixture(scope="session")
def crawler(browser_context, origin, site):
    if SCREENSHOTS.is_dir():
        shutil.rmtree(SCREENSHOTS)
    return Crawler(browser_context, origin, site)


def pytest_generate_tests(metafunc):
    site = site_dir()
    if "page" in metafunc.fixturenames:
        metafunc.parametrize("page", html_pages(site))
    if "toc_page" in metafunc.fixturenames:
        metafunc.parametrize("toc_page", [f"{d}.html" for d in toc_docs(site)])
    if "chapter_doc" in metafunc.fixturenames:
        metafunc.parametrize("chapter_doc", [d for d in toc_docs(site) if d.startswith("chapters/")])
