"""What a reader of the site meets, on a desktop (1400 px) and a phone (400 px), beyond "it loads":
navigation that works, explorers that show their own cell's state and respond offline, tables and
margin notes that fit, numbered figures with alt text at high DPI, no build-machine noise, and the
reader features (notebook, PDF and source downloads, licence, citation, edition, math where it teaches).

Pages and widgets come from the built site and the executed notebooks; nothing here names a chapter,
except where the issue this answers names a section (the formulas).
"""
from __future__ import annotations

import base64
import io
import json
import re
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from sitekit import (ROOT, SCREENSHOTS, SETTLE_JS, chapter_docs, executed_notebook, html_pages, page_of, page_text,
                     route_offline, shot_name, site_tool, source, toc_docs)

EXPLORER = re.compile(r'<div class="h100lab-explorer"')
DATA_TAG = re.compile(r'<script type="application/json" class="h100lab-explorer-data">(.*?)</script>', re.S)


def _open(ctx, origin, path):
    """A page of the site, loaded offline and settled; returns (page, errors list)."""
    page = ctx.new_page()
    errors: list[str] = []
    route_offline(page, origin, errors)
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.goto(f"{origin}/{path}", wait_until="load")
    page.wait_for_load_state("networkidle")
    page.evaluate(SETTLE_JS)
    return page, errors


def _visible(page, selector: str) -> bool:
    return page.evaluate("""(sel) => { const e = document.querySelector(sel); if (!e) return false;
        const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
        return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none' &&
               r.right > 0 && r.left < window.innerWidth; }""", selector)


def _wait_visible(page, selector: str, shown: bool, timeout_ms: int = 5000) -> bool:
    """Whether `selector` reaches the wanted visibility within `timeout_ms` (the theme animates the
    sidebar; a fixed sleep raced the transition on a loaded CI machine)."""
    try:
        page.wait_for_function("""([sel, want]) => { const e = document.querySelector(sel);
            const on = !!e && (() => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
              return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none' &&
                     r.right > 0 && r.left < window.innerWidth; })();
            return on === want; }""", arg=[selector, shown], timeout=timeout_ms, polling=50)
        return True
    except Exception:  # playwright's TimeoutError
        return _visible(page, selector) == shown


def _wait_open(page, modal: str, want: bool, timeout_ms: int = 5000) -> bool:
    try:
        page.wait_for_function("([m, want]) => !!document.querySelector(m).open === want",
                               arg=[modal, want], timeout=timeout_ms, polling=50)
        return True
    except Exception:
        return bool(page.evaluate(f"document.querySelector('{modal}').open")) == want


def _lesson_page(site) -> str:
    docs = [d for d in chapter_docs(site) if re.match(r"chapters/\d\d-", d)]
    assert docs, "no lesson chapter in the TOC"
    return page_of(docs[min(1, len(docs) - 1)])


# ---------------------------------------------------------------------------------------------
# 1. Navigation

def test_no_empty_search_bar_across_the_top(crawler, phone_crawler, site):
    """The pydata header bar (a lone search field) is not shown; one sidebar button and one contents
    button remain, in the article header."""
    for c in (crawler, phone_crawler):
        page, errors = _open(c.ctx, c.origin, _lesson_page(site))
        try:
            assert not _visible(page, "#pst-header"), f"{c.width} px: the header bar with the search field is shown"
            assert page.locator(".primary-toggle").count() == 1, "more than one sidebar button (the theme wires the first)"
            assert page.locator(".secondary-toggle").count() == 1
            assert _visible(page, ".bd-header-article .primary-toggle")
            assert not errors, errors
        finally:
            page.close()


def test_sidebar_toggles_on_a_desktop(browser_context, origin, site, screenshots):
    page, errors = _open(browser_context, origin, _lesson_page(site))
    try:
        assert _visible(page, "#pst-primary-sidebar"), "the sidebar is not shown on a desktop"
        page.click(".bd-header-article .primary-toggle")
        assert _wait_visible(page, "#pst-primary-sidebar", False), "the sidebar button did not hide the sidebar"
        page.screenshot(path=str(screenshots / "nav__sidebar-hidden@1400.png"))
        page.click(".bd-header-article .primary-toggle")
        assert _wait_visible(page, "#pst-primary-sidebar", True), "the sidebar button did not bring the sidebar back"
        assert not errors, errors
    finally:
        page.close()


@pytest.mark.parametrize("which, modal, content", [
    ("primary", "#pst-primary-sidebar-modal", "nav.bd-docs-nav a.reference"),
    ("secondary", "#pst-secondary-sidebar-modal", "nav.page-toc a, .bd-toc-nav a"),
])
def test_drawers_open_on_a_phone(phone_context, origin, site, screenshots, which, modal, content):
    """At 400 px the sidebar button opens the site's navigation and the contents button the page's
    contents, each as a drawer holding working links; Escape closes it."""
    page, errors = _open(phone_context, origin, _lesson_page(site))
    try:
        assert not page.evaluate(f"document.querySelector('{modal}').open")
        page.click(f".bd-header-article .{which}-toggle")
        assert _wait_open(page, modal, True), f"the {which} button opened nothing"
        links = page.evaluate("""([modal, sel]) => Array.from(document.querySelector(modal).querySelectorAll(sel))
            .filter(a => { const r = a.getBoundingClientRect(); return r.width > 0 && r.height > 0 &&
                           r.left >= 0 && r.right <= window.innerWidth + 1; }).length""", [modal, content])
        assert links >= 3, f"the {which} drawer shows {links} links"
        page.screenshot(path=str(screenshots / f"nav__{which}-drawer@400.png"))
        page.keyboard.press("Escape")
        assert _wait_open(page, modal, False), "Escape did not close the drawer"
        assert not errors, errors
    finally:
        page.close()


def test_every_toc_page_on_a_phone(phone_crawler, toc_page):
    """At 400 px: loads clean, nothing wider than the screen, a screenshot of the first screen."""
    v = phone_crawler.visit(toc_page)
    assert not (v.blocked or v.failed_requests or v.page_errors or v.console_errors), v
    assert v.info["overflow_x"] <= 1, f"{toc_page}: the page is {v.info['overflow_x']} px wider than a phone"
    assert all(e["ready"] for e in v.info["explorers"]), f"{toc_page}: an explorer was not set up"
    shot = SCREENSHOTS / shot_name(toc_page[:-len(".html")], phone_crawler.width)
    assert shot.is_file() and shot.stat().st_size > 10_000


# ---------------------------------------------------------------------------------------------
# 2. and 3. Explorers: the state of their own cell, and responsive offline

def _explorer_outputs(site):
    """(doc, explorer HTML, the next code cell) for every explorer output of the executed notebooks."""
    for doc in toc_docs(site):
        nb = executed_notebook(site, doc)
        if nb is None:
            continue
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        for k, cell in enumerate(code):
            for out in cell.get("outputs", []):
                html = "".join(out.get("data", {}).get("text/html", ""))
                if EXPLORER.search(html):
                    yield doc, html, (code[k + 1] if k + 1 < len(code) else None)


#: the name endings of the widget factories in h100lab.widgets (explorers, planners, builders, ...)
EXPLORER_SUFFIXES = "explorer|planner|builder|stepper|lab|timeline|number_line|packer"


def _explorer_calls(site) -> int:
    """Explorers the chapters display: cells whose last line is a name bound, earlier in the cell, to a widget
    factory (``*_explorer(...)``, ``W.*_explorer(...)``, ``*_builder(...)``, … — :data:`EXPLORER_SUFFIXES`)."""
    n = 0
    for doc in toc_docs(site):
        nb = executed_notebook(site, doc)
        for cell in (nb or {}).get("cells", []):
            src = source(cell).strip().splitlines()
            if cell["cell_type"] != "code" or not src:
                continue
            last = src[-1].strip()
            if re.fullmatch(r"\w+", last) and any(re.match(rf"{last}\s*=\s*(?:\w+\.)?\w+_({EXPLORER_SUFFIXES})\(", l)
                                                  for l in src):
                n += 1
    return n


def test_every_explorer_is_a_static_page_explorer(site):
    outputs = list(_explorer_outputs(site))
    assert outputs, "no explorer in the executed chapters"
    assert len(outputs) == _explorer_calls(site), "an explorer of a chapter is not shown as a static-page explorer"
    for doc, html, _ in outputs:
        m = json.loads(DATA_TAG.search(html).group(1).replace("<\\/", "</"))
        assert len(m["states"]) >= 2, f"{doc}: explorer {m['id']} has no state to move to"
        assert ",".join(map(str, m["base"])) in m["states"]


def test_explorer_shows_the_state_of_its_own_cell(site):
    """The figure an explorer shows first is byte-identical to the ``static()`` figure of the cell
    after it — the state the code above created, not the notebook's final one."""
    compared = 0
    for doc, html, nxt in _explorer_outputs(site):
        m = re.search(r'class="h100lab-explorer-figure"[^>]*src="data:image/png;base64,([^"]+)"', html)
        statics = [o["data"]["image/png"] for o in (nxt or {}).get("outputs", []) if "image/png" in o.get("data", {})]
        if m is None or not statics or "static()" not in source(nxt):
            continue
        assert base64.b64decode(m.group(1)) == base64.b64decode("".join(statics[0])), (
            f"{doc}: the explorer before `{source(nxt).strip()}` shows another state than its own cell's")
        compared += 1
    assert compared >= 1, "no explorer is followed by its static() figure"
    assert compared == len([1 for _, _, n in _explorer_outputs(site) if n and "static()" in source(n)])


def test_pages_save_no_unused_widget_state(site):
    """Explorers are HTML: a page that renders no ipywidget saves no widget state (which would be the
    notebook's final state) and loads no widget manager."""
    for rel in html_pages(site):
        text = (site / rel).read_text(encoding="utf-8")
        if "application/vnd.jupyter.widget-view+json" not in text:
            assert "application/vnd.jupyter.widget-state+json" not in text, f"{rel} saves unused widget state"
            assert "html-manager/embed-amd.js" not in text, f"{rel} loads the widget manager for nothing"


MOVE_JS = """async ([id, ci, vi]) => {
  const root = document.getElementById(id);
  const f = root.querySelector(`[data-control="${ci}"]`);
  const img = root.querySelector('img.h100lab-explorer-figure');
  const before = {state: root.dataset.state, src: img ? img.src : '', text: root.querySelector('.h100lab-explorer-text').innerHTML};
  if (f.type === 'checkbox') f.click();
  else { f.value = String(vi); f.dispatchEvent(new Event(f.type === 'range' ? 'input' : 'change', {bubbles: true})); }
  if (img) { const t0 = Date.now(); while (!img.complete && Date.now() - t0 < 10000) await new Promise(r => setTimeout(r, 50)); }
  return {before, after: {state: root.dataset.state, src: img ? img.src : '', natural: img ? img.naturalWidth : 0,
          shown: img ? img.getBoundingClientRect().width : 0, text: root.querySelector('.h100lab-explorer-text').innerHTML,
          snapped: root.querySelector('.h100lab-explorer-snapped').textContent}};
}"""


def _manifests(page) -> list[dict]:
    return page.evaluate("""() => Array.from(document.querySelectorAll('.h100lab-explorer')).map(e =>
        JSON.parse(e.querySelector('script.h100lab-explorer-data').textContent))""")


def _movable(m) -> list[int]:
    return [i for i, c in enumerate(m["controls"]) if c["kind"] in ("range", "select", "checkbox") and len(c["labels"]) > 1]


def test_moving_a_control_changes_the_figure(browser_context, origin, site, screenshots):
    """In every explorer of every page, one control moved to each value computed for it shows that
    state: a figure drawn for it (loaded from the site, no network) or the model's refusal."""
    pages = [p for p in (page_of(d) for d in toc_docs(site)) if EXPLORER.search((site / p).read_text(encoding="utf-8"))]
    assert pages, "no page has an explorer"
    checked = 0
    for path in pages:
        page, errors = _open(browser_context, origin, path)
        try:
            for m in _manifests(page):
                movable = _movable(m)
                assert movable, f"{path}: explorer {m['id']} has no control a reader can move"
                ci = movable[0]
                changed = 0
                for vi in range(len(m["controls"][ci]["labels"])):
                    if vi == m["base"][ci]:
                        continue
                    want = list(m["base"])
                    want[ci] = vi
                    if ",".join(map(str, want)) not in m["states"]:
                        continue
                    r = page.evaluate(MOVE_JS, [m["id"], ci, vi])
                    st = m["states"][r["after"]["state"]]
                    assert r["after"]["state"] == ",".join(map(str, want)), (path, m["id"], r)
                    if st[0] >= 0:
                        assert r["after"]["src"].endswith("/_static/explorers/" + m["images"][st[0]][0]), r
                        assert r["after"]["natural"] > 0, f"{path}: the state's figure did not load"
                        assert r["after"]["natural"] >= 1.4 * r["after"]["shown"], "state figures are not high-DPI"
                    changed += r["after"]["src"] != r["before"]["src"] or r["after"]["text"] != r["before"]["text"]
                    page.evaluate(MOVE_JS, [m["id"], ci, m["base"][ci]])   # back to the chapter's state
                assert changed, f"{path}: moving {m['controls'][ci]['label']} of {m['id']} changed nothing"
                checked += 1
            if checked and path == pages[0]:
                page.locator(".h100lab-explorer").first.scroll_into_view_if_needed()
                page.screenshot(path=str(screenshots / "explorer__first@1400.png"))
            assert not errors, (path, errors)
        finally:
            page.close()
    assert checked == len(list(_explorer_outputs(site)))


def test_an_uncomputed_combination_moves_to_a_computed_state(browser_context, origin, site):
    """Two controls moved one after the other: what is shown is always a computed state, and when
    the combination was not computed the page says which control it moved."""
    for path in [page_of(d) for d in toc_docs(site)]:
        if not EXPLORER.search((site / path).read_text(encoding="utf-8")):
            continue
        page, errors = _open(browser_context, origin, path)
        try:
            for m in _manifests(page):
                mv = _movable(m)
                if len(mv) < 2:
                    continue
                a, b = mv[0], mv[1]
                va = next(v for v in range(len(m["controls"][a]["labels"])) if v != m["base"][a])
                vb = next(v for v in range(len(m["controls"][b]["labels"])) if v != m["base"][b])
                page.evaluate(MOVE_JS, [m["id"], a, va])
                r = page.evaluate(MOVE_JS, [m["id"], b, vb])
                assert r["after"]["state"] in m["states"], r
                shown = list(map(int, r["after"]["state"].split(",")))
                assert shown[b] == vb, "the control the reader moved last did not keep its value"
                if shown[a] != va:
                    assert m["controls"][a]["label"] in r["after"]["snapped"], "a control moved without a note"
                assert not errors, errors
                return
        finally:
            page.close()
    pytest.skip("no explorer with two controls")


# ---------------------------------------------------------------------------------------------
# 4. Tables, margin notes, figures

TABLES_JS = """() => {
  const art = document.querySelector('article.bd-article');
  const right = Math.min(art.getBoundingClientRect().right, window.innerWidth) + 1;
  return Array.from(art.querySelectorAll('table')).map(t => ({
    heads: Array.from(t.querySelectorAll('thead th')).map(th => th.innerText.trim()),
    cells_off: Array.from(t.querySelectorAll('td, th')).filter(c => { const r = c.getBoundingClientRect();
        const head = c.closest('thead');   // a stacked table's head is visually hidden (clipped to 1 px)
        if (head && getComputedStyle(head).position === 'absolute') return false;
        return r.width > 0 && r.right > right; }).map(c => c.innerText.trim().slice(0, 40))}));
}"""


@pytest.mark.parametrize("width", [1400, 400])
def test_tables_fit_the_text_column(browser_context, phone_context, origin, site, width, screenshots):
    """No table cell lies beyond the text column, so every column (a verdict, a meaning) is readable
    without scrolling sideways — on a desktop and on a phone."""
    ctx = browser_context if width == 1400 else phone_context
    found = 0
    for path in [page_of(d) for d in toc_docs(site)]:
        if "<table" not in (site / path).read_text(encoding="utf-8"):
            continue
        page, errors = _open(ctx, origin, path)
        try:
            for t in page.evaluate(TABLES_JS):
                found += 1
                assert not t["cells_off"], f"{path} at {width} px: cells off-screen in table {t['heads']}: {t['cells_off'][:5]}"
            if "silicon" in path or "glossary" in path:
                page.locator("article table").first.scroll_into_view_if_needed()
                page.screenshot(path=str(screenshots / f"table__{Path(path).stem}@{width}.png"))
        finally:
            page.close()
    assert found, "no table in the site"


def test_margin_notes_are_inline_on_a_phone(phone_context, browser_context, origin, site, screenshots):
    pages = [page_of(d) for d in toc_docs(site) if 'class="margin' in (site / page_of(d)).read_text(encoding="utf-8")]
    assert pages, "no margin note in the site"
    page, errors = _open(phone_context, origin, pages[0])
    try:
        widths = page.evaluate("""() => { const a = document.querySelector('article.bd-article').getBoundingClientRect();
            return Array.from(document.querySelectorAll('article aside.margin')).map(m => m.getBoundingClientRect().width / a.width); }""")
        assert widths and min(widths) >= 0.9, f"{pages[0]}: margin notes squeeze the text on a phone ({widths})"
        page.locator("article aside.margin").first.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / "margin-note@400.png"))
    finally:
        page.close()
    page, _ = _open(browser_context, origin, pages[0])
    try:
        assert page.evaluate("""() => { const m = document.querySelector('article aside.margin');
            return getComputedStyle(m).float !== 'none'; }"""), "margin notes left the margin on a desktop"
    finally:
        page.close()


FIGURES_JS = """() => Array.from(document.querySelectorAll('article .cell_output img'))
  .filter(img => !img.closest('.h100lab-explorer')).map(img => {
    const fig = img.closest('figure');
    return {src: img.getAttribute('src'), alt: img.getAttribute('alt') || '', natural: img.naturalWidth,
            shown: img.getBoundingClientRect().width,
            number: fig ? (fig.querySelector('figcaption .caption-number') || {}).textContent || '' : '',
            caption: fig ? (fig.querySelector('figcaption') || {}).textContent || '' : ''};
  })"""


def test_figures_are_numbered_described_and_sharp(browser_context, origin, site):
    """Every figure a chapter draws has a numbered caption, alt text that says what it shows (not a
    file name), and at least twice the pixels it is shown with."""
    n = 0
    for doc in chapter_docs(site):
        page, errors = _open(browser_context, origin, page_of(doc))
        try:
            for f in page.evaluate(FIGURES_JS):
                n += 1
                assert re.match(r"Fig\. ?[\d.]+", f["number"].strip()), f"{doc}: figure {f['src']} has no number"
                assert len(f["caption"]) > len(f["number"]) + 3, f"{doc}: figure {f['src']} has no caption"
                assert f["alt"].startswith("Figure") and ".png" not in f["alt"] and len(f["alt"]) >= 20, \
                    f"{doc}: figure {f['src']} alt text {f['alt']!r}"
                assert f["natural"] >= 1.9 * f["shown"], f"{doc}: figure {f['src']} is not high-DPI ({f})"
        finally:
            page.close()
    assert n >= 10, f"only {n} figures in the chapters"


# ---------------------------------------------------------------------------------------------
# 5. No build-machine noise

EMOJI = re.compile("[\u231a\u231b\u23e9-\u23ec\u23f0\u23f3\u25fd\u25fe\u2614\u2615\u2648-\u2653\u267f\u2693\u26a1"
                   "\u26aa\u26ab\u26bd\u26be\u26c4\u26c5\u26ce\u26d4\u26ea\u26f2\u26f3\u26f5\u26fa\u26fd\u2705\u270a"
                   "\u270b\u2728\u274c\u274e\u2753-\u2755\u2757\u2795-\u2797\u27b0\u27bf\u2b1b\u2b1c\u2b50\u2b55"
                   "\U0001f000-\U0001faff]")
ABS_PATH = re.compile(r"(?<![\w.:/~-])/(?:[\w.+-]+/)+[\w.+-]*")


def _sources_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for folder in ("chapters", "exercises", "solutions")
                     for p in sorted((ROOT / folder).glob("*.md"))) + (ROOT / "intro.md").read_text(encoding="utf-8")


def test_no_build_machine_noise(crawler, site):
    """No raw driver error, no absolute folder of the machine that built or measured (unless the book's
    own text writes it), no emoji that needs an emoji font."""
    sources = _sources_text()
    for doc in toc_docs(site):
        text = crawler.visit(page_of(doc)).info["text"]
        assert "DynamicLibNotFoundError" not in text and "Traceback" not in text, f"{doc}: a raw error is shown"
        paths = sorted({p for p in ABS_PATH.findall(text) if p not in sources and len(p) > 4})
        assert not paths, f"{doc}: absolute paths of a build or measuring machine: {paths[:5]}"
        emoji = sorted(set(EMOJI.findall(text)))
        assert not emoji, f"{doc}: emoji a reader without an emoji font sees as boxes: {emoji}"


# ---------------------------------------------------------------------------------------------
# 6. Reader features

def test_downloads_notebook_pdf_and_source(browser_context, origin, site):
    """The download menu of a chapter offers its executed notebook (valid, outputs kept, no widget
    state), the whole book as a PDF and the source code as a zip; every link resolves."""
    path = _lesson_page(site)
    page, errors = _open(browser_context, origin, path)
    try:
        links = page.evaluate("""() => Array.from(document.querySelectorAll('.dropdown-download-buttons a'))
            .map(a => [a.innerText.trim(), a.href])""")
    finally:
        page.close()
    by = {t: urlparse(h).path.lstrip("/") for t, h in links}
    assert ".ipynb" in by and "book .pdf" in by and "source .zip" in by, links
    nb = json.loads((site / unquote(by[".ipynb"])).read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4 and "widgets" not in nb["metadata"]
    assert any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), "the notebook has no outputs"
    pdf = (site / unquote(by["book .pdf"])).read_bytes()
    assert pdf.startswith(b"%PDF-") and len(pdf) > 200_000
    pages = len(re.findall(rb"/Type\s*/Page\b", pdf))
    assert pages >= 2 * len(toc_docs(site)), f"the book's PDF has {pages} pages"
    with zipfile.ZipFile(io.BytesIO((site / unquote(by["source .zip"])).read_bytes())) as z:
        names = set(z.namelist())
    assert {"h100lab/pyproject.toml", "h100lab/Makefile", "h100lab/README.md"} <= names
    assert any(n.startswith("h100lab/chapters/") for n in names)


def test_licence_citation_and_edition_on_every_page(crawler, phone_crawler, site, origin):
    edition = "Instructor" if any(d.startswith("solutions/") for d in toc_docs(site)) else "Student"
    for doc in toc_docs(site):
        raw = (site / page_of(doc)).read_text(encoding="utf-8")
        assert "Apache License 2.0" in raw and "#licence-and-citation" in raw, f"{doc}: no licence or citation link"
        assert f"{edition} edition" in raw, f"{doc}: no marker of the {edition.lower()} edition"
    for c in (crawler, phone_crawler):
        page, _ = _open(c.ctx, c.origin, _lesson_page(site))
        try:
            assert _visible(page, ".h100lab-edition"), f"the edition marker is not visible at {c.width} px"
        finally:
            page.close()
    intro = (site / page_of(toc_docs(site)[0])).read_text(encoding="utf-8")
    assert 'id="licence-and-citation"' in intro and "@book{" in page_text(intro), "the landing page has no citation"


def test_repository_link(site):
    """The repository is linked where its URL is known (tools/site.py: $H100LAB_REPOSITORY_URL or the
    git remote); its code is always in the site as a zip (see the download test)."""
    url = site_tool().repository_url()
    raw = (site / _lesson_page(site)).read_text(encoding="utf-8")
    if url:
        assert f'href="{url}"' in raw, f"no link to the repository {url}"
    assert (site / site_tool().SOURCE_ZIP).is_file()


def test_math_only_where_used_and_where_it_teaches(site):
    """MathJax is loaded by the pages with math and no other, shipped only if one uses it; the occupancy
    bound, the roofline and Little's law are written as formulas."""
    with_math = []
    for rel in html_pages(site):
        raw = (site / rel).read_text(encoding="utf-8")
        has = 'class="math' in raw
        loads = "site-vendor/mathjax/" in raw
        assert has == loads, f"{rel}: {'math without MathJax' if has else 'MathJax without math'}"
        if has:
            with_math.append(rel)
    assert (site / "_static" / "site-vendor" / "mathjax").is_dir() == bool(with_math)
    for folder in (site / "_static" / "site-vendor").iterdir():
        marker = f"site-vendor/{folder.name}"
        assert any(marker in (site / r).read_text(encoding="utf-8") for r in html_pages(site)), \
            f"_static/site-vendor/{folder.name} is shipped but no page uses it"
    sections = {"the occupancy bound": r'id="l1-occupancy"', "the roofline": r'id="l1-roofline"',
                "Little's law": r"Little’s law|Little's law"}
    for what, marker in sections.items():
        hits = [r for r in html_pages(site) if re.search(marker, (site / r).read_text(encoding="utf-8"))]
        if not hits:
            continue
        raw = (site / hits[0]).read_text(encoding="utf-8")
        body = max(raw.find('<article'), 0)          # the page itself, not the sidebars' tables of contents
        starts = [m.start() for m in re.finditer(marker, raw) if m.start() >= body]
        assert starts, f"{hits[0]}: {what} is named only outside the page's article"
        assert any('class="math' in raw[st:st + 6000] for st in starts), \
            f"{hits[0]}: {what} is not written as a formula"
