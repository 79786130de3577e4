"""The built site as a reader meets it: every page in headless Chromium, with no network.

Pages come from the built site and the edition's TOC; nothing here names a chapter.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

import pytest

from sitekit import (HIDDEN_OUTPUT_TAGS, LESSON, SCREENSHOTS, cell_tags, executed_notebook, lesson_docs, page_of,
                     page_text, shot_name, shown_mime, toc_docs)


def test_page_loads_clean(crawler, page):
    """No console error, no uncaught exception, no failed or off-site request."""
    v = crawler.visit(page)
    assert not v.blocked, f"{page} tried to load from other hosts (the site must work offline): {v.blocked}"
    assert not v.failed_requests, f"{page}: failed requests: {v.failed_requests}"
    assert not v.page_errors, f"{page}: uncaught errors: {v.page_errors}"
    assert not v.console_errors, f"{page}: console errors: {v.console_errors}"


def test_toc_page_renders_completely(crawler, toc_page):
    """Widgets drawn from their saved state, math typeset, a screenshot of the first screen saved."""
    v = crawler.visit(toc_page)
    for i, w in enumerate(v.info["widgets"]):
        assert w["rendered"] and not w["error"], f"{toc_page}: widget {i} was not rendered from its saved state"
        assert w["size"][0] > 0 and w["size"][1] > 0, f"{toc_page}: widget {i} has zero size"
    if v.info["math_source"]:
        assert v.info["math"] > 0, f"{toc_page}: has math but MathJax typeset none of it"
    assert not v.info["math_errors"], f"{toc_page}: MathJax errors"
    assert not v.info["unresolved_xrefs"], f"{toc_page}: unresolved cross-references {v.info['unresolved_xrefs']}"
    shot = SCREENSHOTS / shot_name(toc_page[:-len(".html")], crawler.width)
    assert shot.is_file() and shot.stat().st_size > 10_000, f"no useful screenshot of {toc_page}"


def _expected_images(nb: dict) -> int:
    """Image outputs myst-nb renders for an executed notebook (hidden-by-tag cells excluded)."""
    n = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or HIDDEN_OUTPUT_TAGS & cell_tags(cell):
            continue
        n += sum(1 for o in cell.get("outputs", []) if (shown_mime(o) or "").startswith("image/"))
    return n


def test_chapter_figures_are_present_and_drawn(crawler, site, chapter_doc):
    """Every figure the executed chapter produced is on the page, loaded, and has a non-zero size."""
    v = crawler.visit(page_of(chapter_doc))
    images = v.info["images"]
    broken = [i["src"] for i in images if not (i["complete"] and i["natural"][0] > 0 and i["natural"][1] > 0)]
    assert not broken, f"{chapter_doc}: images that did not load: {broken}"
    flat = [i["src"] for i in images if i["visible"] and not (i["size"][0] > 0 and i["size"][1] > 0)]
    assert not flat, f"{chapter_doc}: images drawn with zero size: {flat}"
    nb = executed_notebook(site, chapter_doc)
    if nb is not None:
        expected = _expected_images(nb)
        shown = sum(1 for i in images if i["in_cell_output"] and not i["in_widget"])
        assert shown >= expected, f"{chapter_doc}: {expected} figures were produced, {shown} are on the page"


def _ids_of(site: Path, crawler, page: str) -> set[str]:
    """Element ids of a page: as rendered when the crawler saw it, plus those in the file."""
    v = crawler.visits.get(page)
    ids = set(v.info["ids"]) | set(v.info["names"]) if v else set()
    raw = (site / page).read_text(encoding="utf-8", errors="replace")
    return ids | set(re.findall(r'\s(?:id|name)="([^"]+)"', raw))


def test_internal_links_and_cross_references_resolve(crawler, site, origin, page):
    v = crawler.visit(page)
    bad = []
    for link in v.info["links"]:
        u = urlparse(link["href"])
        if u.scheme not in ("http", "https") or f"{u.scheme}://{u.netloc}" != origin:
            continue  # a link to another site is clicked by the reader, never fetched by the page
        path = unquote(u.path).lstrip("/")
        if path == "" or path.endswith("/"):
            path += "index.html"
        target = site / path
        if not target.is_file():
            bad.append(f"{link['raw']!r} ({link['text']!r}): no {path}")
            continue
        frag = unquote(u.fragment)
        if frag and path.endswith(".html") and frag not in _ids_of(site, crawler, path):
            bad.append(f"{link['raw']!r} ({link['text']!r}): {path} has no #{frag}")
    assert not bad, f"{page}: broken internal links: {bad}"


# ---------------------------------------------------------------------------------------------
# Search

STOP = {"the", "and", "for", "with", "that", "this", "from", "are", "not"}


def _search_target(site):
    """The chapter whose term the search must find: lesson 1 if present, else the lowest-numbered
    lesson in the TOC; the term: the first of that chapter's glossary terms the page itself contains."""
    from h100lab.book import glossary

    lessons = sorted(lesson_docs(site), key=lambda d: int(LESSON.match(d).group(1)))
    assert lessons, "the TOC holds no lesson chapter"
    doc = next((d for d in lessons if int(LESSON.match(d).group(1)) >= 1), lessons[0])
    text = page_text((site / page_of(doc)).read_text(encoding="utf-8")).lower()
    stem = doc.split("/", 1)[1]
    for e in glossary():
        words = re.findall(r"[A-Za-z][A-Za-z0-9]*", e.term)
        if (e.chapter == stem and words and all(len(w) >= 3 and w.lower() not in STOP for w in words)
                and e.term.lower() in text):
            return doc, e.term
    pytest.fail(f"{doc}: none of its glossary terms (h100lab/book/glossary) appears on its page")


def test_search_finds_a_term_of_the_first_lesson(crawler, site):
    doc, term = _search_target(site)
    v = crawler.visit(
        f"search.html?q={quote(term)}",
        wait_js="""() => { const s = document.querySelector('#search-results .search-summary');
                           return s && s.innerText.trim().length > 0; }""",
        extra_js="""() => ({summary: document.querySelector('#search-results .search-summary').innerText,
                           hits: Array.from(document.querySelectorAll('#search-results ul.search li a'))
                                      .map(a => a.href)})""")
    assert not (v.console_errors or v.page_errors or v.failed_requests or v.blocked), v
    found = {unquote(urlparse(h).path).lstrip("/") for h in v.info["extra"]["hits"]}
    assert page_of(doc) in found, (f"searching {term!r} did not find {doc} "
                                   f"({v.info['extra']['summary']!r}; hits {sorted(found)})")


# ---------------------------------------------------------------------------------------------
# Glossary

def test_glossary_lists_the_terms_in_english_and_chinese(crawler, site):
    from h100lab.book import glossary

    pages = [d for d in toc_docs(site) if "glossary" in Path(d).name]
    assert len(pages) == 1, f"expected one glossary page in the TOC, found {pages}"
    v = crawler.visit(page_of(pages[0]))
    rows = [r for r in v.info["table_rows"] if r]
    cjk = re.compile(r"[\u4e00-\u9fff]")
    entries = glossary()
    assert entries, "the glossary is empty"
    def plain(text):   # the page typesets straight quotes as curly ones (MyST smart quotes)
        return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')

    missing = [(e.term, e.chinese) for e in entries
               if not any(e.term in plain(r[0]) and any(e.chinese in plain(c) for c in r[1:]) for r in rows)]
    assert not missing, f"{pages[0]}: glossary terms not listed with their Chinese term: {missing}"
    assert all(cjk.search(e.chinese) for e in entries)
