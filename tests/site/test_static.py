"""The built site, read as files: complete, executed, offline, without solutions, with a landing page.

No browser here; see test_browser.py for what a reader's browser does with the same pages.
"""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest

from sitekit import (HIDDEN_OUTPUT_TAGS, ROOT, cell_tags, chapter_docs, executed_notebook, leaks, lesson_docs,
                     page_of, root_doc, shown_mime, site_tool, solution_fragments, source, toc_docs)


def test_every_toc_page_is_built(site):
    missing = [d for d in toc_docs(site) if not (site / page_of(d)).is_file()]
    assert not missing, f"pages of the TOC missing from {site}: {missing}"


def test_every_chapter_was_executed(site):
    """Every chapter (and solution set, in the instructor edition) ran: each code cell has a count."""
    docs = chapter_docs(site) + [d for d in toc_docs(site) if d.startswith("solutions/")]
    assert docs, "the TOC holds no chapter"
    for doc in docs:
        nb = executed_notebook(site, doc)
        assert nb is not None, f"{doc} was not executed (no jupyter_execute/{doc}.ipynb)"
        unrun = [i for i, c in enumerate(nb["cells"])
                 if c["cell_type"] == "code" and source(c).strip() and c.get("execution_count") is None]
        assert not unrun, f"{doc}: code cells {unrun} did not run"


def _notebooks(site):
    for doc in toc_docs(site):
        nb = executed_notebook(site, doc)
        if nb is not None:
            yield doc, nb


def test_no_figure_is_shown_as_text(site):
    """A matplotlib figure whose only output is its repr means no image formatter was registered."""
    bad = []
    for doc, nb in _notebooks(site):
        for i, cell in enumerate(nb["cells"]):
            for out in cell.get("outputs", []):
                if shown_mime(out) == "text/plain":
                    text = "".join(out["data"]["text/plain"])
                    if re.match(r"<(matplotlib\.figure\.)?Figure size [\d.]+x[\d.]+ with", text):
                        bad.append((doc, i, text.strip()))
    assert not bad, ("figures displayed as text, not drawn (is an IPython PNG formatter registered for "
                     f"matplotlib.figure.Figure?): {bad}")


def test_every_widget_has_its_static_figure(site):
    """A widget's default state is also drawn as an image (its cell or the next code cell), so the page
    is complete without a kernel."""
    missing = []
    for doc, nb in _notebooks(site):
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        for k, cell in enumerate(code):
            if HIDDEN_OUTPUT_TAGS & cell_tags(cell):
                continue
            if not any(shown_mime(o) == "application/vnd.jupyter.widget-view+json" for o in cell.get("outputs", [])):
                continue
            near = [cell] + code[k + 1:k + 2]
            if not any((shown_mime(o) or "").startswith("image/") for c in near for o in c.get("outputs", [])
                       if not HIDDEN_OUTPUT_TAGS & cell_tags(c)):
                missing.append((doc, source(cell).strip()[:60]))
    assert not missing, f"widgets without a static figure of their default state: {missing}"


def test_nothing_is_fetched_from_another_host(site):
    """No page or stylesheet makes the browser load anything from the network (CDNs are unreachable)."""
    found = site_tool().external_fetches(site)
    assert not found, f"off-site fetches: {found}"


def test_fetch_scanner_finds_off_site_urls(tmp_path):
    """Positive control of the scanner above: each kind of off-site fetch is reported, links are not."""
    (tmp_path / "a.html").write_text(
        '<script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="//cdn.example/s.css">'
        '<img src="http://img.example/i.png"><a href="https://docs.example/">a link is not a fetch</a>'
        '<script src="_static/local.js"></script><style>@import "https://fonts.example/f.css";</style>'
        '<script src="x.js" data-jupyter-widgets-cdn="https://cdn.jsdelivr.net/npm/"></script>'
        '<script>const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js"; var docs = "https://x.example/";</script>')
    (tmp_path / "s.css").write_text("body { background: url('https://img.example/bg.png') }")
    found = site_tool().external_fetches(tmp_path)
    assert found["a.html"] == sorted(["https://cdn.example/x.js", "//cdn.example/s.css", "http://img.example/i.png",
                                      "https://fonts.example/f.css", "https://cdn.jsdelivr.net/npm/",
                                      "https://unpkg.com/thebe@0.8.2/lib/index.js"])
    assert found["s.css"] == ["https://img.example/bg.png"]


def _bundled_widget_modules(site) -> set[str]:
    """Widget modules the vendored html-manager serves itself (its loadClass special-cases them);
    any other module it would fetch from a CDN. (From the vendored copy when no page of this site
    needs the widget manager and the build did not publish it.)"""
    path = site / "_static" / "site-vendor" / "html-manager" / "embed-amd.js"
    if not path.is_file():
        path = site_tool().STATIC / "html-manager" / "embed-amd.js"
    bundle = path.read_text(encoding="utf-8")
    return set(re.findall(r'"(@jupyter-widgets/[\w-]+)"===\w', bundle))


def test_every_saved_widget_needs_only_the_bundled_modules(site):
    """The widget manager loads a module it does not bundle from a public CDN, which a reader offline
    cannot reach: every model and view in every page's saved widget state must be a bundled one."""
    bundled = _bundled_widget_modules(site)
    assert {"@jupyter-widgets/base", "@jupyter-widgets/controls", "@jupyter-widgets/output"} <= bundled
    state_re = re.compile(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', re.S)
    foreign = set()
    for p in sorted(site.rglob("*.html")):
        for body in state_re.findall(p.read_text(encoding="utf-8")):
            for model in json.loads(body)["state"].values():
                for key in ("model_module", "_view_module"):
                    mod = model.get(key) or model.get("state", {}).get(key)
                    if mod and mod not in bundled:
                        foreign.add((p.relative_to(site).as_posix(), model.get("model_name"), mod))
    assert not foreign, f"widgets whose JavaScript would come from a CDN: {sorted(foreign)}"


def test_math_and_widgets_are_served_by_the_site(site):
    """Every vendored file a page loads (MathJax, the widget manager) is in the site; the pages that
    save widget state load the widget manager from the site."""
    missing = set()
    for p in site.rglob("*.html"):
        t = p.read_text(encoding="utf-8")
        for ref in re.findall(r'(?:src|href)="([^"]*_static/site-vendor/[^"?#]+)', t):
            target = (p.parent / ref).resolve()
            if not target.is_file():
                missing.add((p.relative_to(site).as_posix(), ref))
        if "application/vnd.jupyter.widget-state+json" in t:
            assert "site-vendor/html-manager/embed-amd.js" in t and "site-vendor/requirejs/require.js" in t
    assert not missing, f"pages load vendored files the site does not have: {sorted(missing)[:5]}"


# ---------------------------------------------------------------------------------------------
# Solutions stay out of the student site

def _is_instructor(site) -> bool:
    return any(d.startswith("solutions/") for d in toc_docs(site))


def test_solution_markers_are_found():
    """Every solutions file has regions, and the leak test has text to look for in each."""
    frags = solution_fragments()
    assert frags, "no solutions/*.md"
    empty = [src for src, fs in frags.items() if not fs]
    assert not empty, f"solutions files with no distinctive solution text (markers missing?): {empty}"


def test_no_solution_text_in_the_student_site(site):
    if _is_instructor(site):
        pytest.skip("this is the instructor edition (its TOC has solutions); see the next test")
    found = leaks(site)
    assert not found, f"solutions leak into the student site: {found[:20]}"


def test_leak_detector_finds_planted_solutions(tmp_path, site):
    """Positive control: pages carrying a solution line, or a link to a solution page, are caught —
    and in the instructor edition every solutions file's text is found."""
    src, frags = next((s, f) for s, f in solution_fragments().items() if f)
    (tmp_path / "page.html").write_text(f"<p>{frags[0].replace('<', '&lt;')}</p>", encoding="utf-8")
    (tmp_path / "nav.html").write_text(f'<a href="{Path(src).with_suffix(".html").as_posix()}">x</a>')
    found = leaks(tmp_path)
    assert {f for f, _ in found} == {"page.html", "nav.html"}, found
    if _is_instructor(site):
        seen = {what.split(":")[0] for _, what in leaks(site)}
        for s in solution_fragments():
            assert f"solution text of {s}" in seen, f"{s}'s solutions are not in the instructor edition"


# ---------------------------------------------------------------------------------------------
# The landing page

class _ArticleLinks(HTMLParser):
    """hrefs inside <article> (the page's own content, not the theme's navigation)."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.hrefs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self.depth += 1
        elif self.depth and tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)

    def handle_endtag(self, tag):
        if tag == "article" and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


def _landing(site):
    page = page_of(root_doc(site))
    p = _ArticleLinks()
    p.feed((site / page).read_text(encoding="utf-8"))
    linked = set()
    for h in p.hrefs:
        u = urlparse(urljoin(f"http://site/{page}", h))
        if u.netloc == "site" and u.path.endswith(".html"):
            linked.add(unquote(u.path.lstrip("/"))[: -len(".html")])
    return linked, re.sub(r"\s+", " ", "".join(p.text))


def test_landing_page_links_every_lesson_exercise_set_and_appendix(site):
    linked, _ = _landing(site)
    docs = toc_docs(site)[1:]
    lessons = lesson_docs(site)
    assert lessons, "the TOC holds no lesson chapter (chapters/NN-*)"
    unlinked_lessons = [d for d in lessons if d not in linked]
    assert not unlinked_lessons, f"lesson chapters in the TOC that the landing page does not link: {unlinked_lessons}"
    for kind in ("exercises/", "solutions/"):
        missing = [d for d in docs if d.startswith(kind) and d not in linked]
        assert not missing, f"{kind} pages the landing page does not link: {missing}"
    appendices = [d for d in docs if Path(d).name.startswith("appendix-")]
    assert not [d for d in appendices if d not in linked], f"appendices not linked: {appendices}"
    others = [d for d in docs if d not in linked]
    assert not others, f"pages of the TOC that the landing page does not link: {others}"


def test_landing_page_says_what_for_whom_and_how_to_run(site):
    _, text = _landing(site)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # the README's two commands, as the README gives them
    commands = re.findall(r"^(make \w[\w-]*)\s+#", readme, re.M)
    assert len(commands) >= 2, "README.md no longer shows its two commands as `make X  # ...` lines"
    for cmd in commands:
        assert cmd in text, f"the landing page does not show the README's command `{cmd}`"
    assert "make test-gpu" in text and "H100" in text and "H200" in text, "no way to run it with a GPU"
    assert re.search(r"who it is for", text, re.I), "no 'who it is for' section"
    assert re.search(r"executable textbook", text, re.I), "the landing page does not say what the book is"
    if any("model-vs-silicon" in d for d in toc_docs(site)):
        assert re.search(r"model.vs.silicon", text, re.I)
