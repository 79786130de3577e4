"""The book's structure: course map, glossary, table of contents, notebook format."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from h100lab.book import course_map, glossary
from h100lab.book.seeds import CHAPTER_MAP_SEED, _successor, seed_sections, seeds_dir

ROOT = Path(__file__).resolve().parent.parent
LABEL = re.compile(r"^\(([A-Za-z0-9_.:-]+)\)=\s*$", re.M)


def labels(chapter: str) -> set[str]:
    p = ROOT / "chapters" / f"{chapter}.md"
    return set(LABEL.findall(p.read_text(encoding="utf-8"))) if p.is_file() else set()


def test_every_mapped_anchor_exists():
    missing = [(r.lesson, r.section, r.chapter, r.anchor) for r in course_map() if r.anchor not in labels(r.chapter)]
    assert not missing, f"course-map anchors that do not exist in their chapter: {missing[:10]}"


def test_mapped_chapters_are_in_the_toc():
    toc = (ROOT / "_toc.yml").read_text()
    for ch in {r.chapter for r in course_map()}:
        assert f"chapters/{ch}" in toc, f"{ch} is mapped but not in _toc.yml"


@pytest.mark.skipif(not seeds_dir().is_dir(), reason="../shared/seeds is not present")
def test_every_seed_section_of_a_landed_lesson_is_mapped():
    rows = course_map()
    mapped = {(r.seed, r.lesson, r.section): r.heading for r in rows}
    landed = {(r.seed, r.lesson) for r in rows}
    missing, wrong = [], []
    for f in sorted(seeds_dir().glob("*.txt")):
        for s in seed_sections(f):
            if (s.seed, s.lesson) not in landed:
                continue
            key = (s.seed, s.lesson, s.section)
            if key not in mapped:
                missing.append(key)
            elif mapped[key] != s.heading:
                wrong.append((key, mapped[key], s.heading))
    assert not missing, f"seed sections missing from the course map: {missing}"
    assert not wrong, f"course-map headings differ from the seed: {wrong}"


@pytest.mark.skipif(not seeds_dir().is_dir(), reason="../shared/seeds is not present")
def test_seed_outline_parser_finds_all_lessons():
    secs = seed_sections(seeds_dir() / "000_bd6a01cf99e1f861.txt")
    lessons = []
    for s in secs:
        if s.lesson not in lessons:
            lessons.append(s.lesson)
    assert lessons == ["1", "2", "3", "4", "5", "6", "7", "8", "8.1", "8.2", "9", "10"]
    assert all(s.section.split(".")[0].isdigit() for s in secs)
    mp = seed_sections(seeds_dir() / CHAPTER_MAP_SEED)
    assert {s.lesson for s in mp} == {"map"} and mp[0].section == "2.1"


@pytest.mark.parametrize("prev,num,ok", [
    ((), (1,), True), ((), (2, 1), True), ((), (2,), False),
    ((3,), (3, 1), True), ((3, 1), (3, 2), True), ((3, 2), (4,), True),
    ((14, 1), (1,), False), ((3, 1), (3, 3), False), ((2, 2, 4), (2, 3), True),
])
def test_outline_successor(prev, num, ok):
    assert _successor(prev, num) is ok


def test_glossary_is_bilingual_and_unique():
    entries = glossary()
    assert entries
    cjk = re.compile(r"[\u4e00-\u9fff]")
    for e in entries:
        assert e.term and e.meaning, e
        assert cjk.search(e.chinese), f"{e.term!r} has no Chinese term"
        assert (ROOT / "chapters" / f"{e.chapter}.md").is_file(), f"{e.term!r}: no chapter {e.chapter}"
    terms = [e.term.lower() for e in entries]
    assert len(terms) == len(set(terms)), "duplicate glossary terms"


def _toc_files() -> list[str]:
    """Every document of _toc.yml, root first, a chapter's sections after it."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            files.append(e["file"])
            walk(e.get("sections"))
    for part in toc["parts"]:
        walk(part["chapters"])
    return files


def test_toc_files_exist_and_chapters_are_jupytext_myst():
    for f in _toc_files():
        p = ROOT / f"{f}.md"
        assert p.is_file(), f"_toc.yml lists {f}, which does not exist"
        if f.startswith(("chapters/", "exercises/")):
            head = p.read_text(encoding="utf-8")[:400]
            assert "format_name: myst" in head and "jupytext:" in head, f"{f} is not a jupytext MyST notebook"


def test_every_chapter_is_in_the_toc():
    listed = set(_toc_files())
    for p in sorted((ROOT / "chapters").glob("*.md")):
        assert f"chapters/{p.stem}" in listed, f"{p.name} exists but is not in _toc.yml"


LESSON_PARTS = ("## Learning goals", "## Summary", "On real hardware")


@pytest.mark.parametrize("chapter", sorted(p.stem for p in (ROOT / "chapters").glob("[0-9][0-9]-*.md")))
def test_lesson_chapter_has_the_required_parts(chapter):
    text = (ROOT / "chapters" / f"{chapter}.md").read_text(encoding="utf-8")
    for part in LESSON_PARTS:
        assert part in text, f"{chapter} lacks '{part}'"
    assert "Explorer" in text or "explorer(" in text or "widgets" in text, f"{chapter} shows no widget"
    assert ".static()" in text, f"{chapter} shows no static figure of its widget"
    assert re.search(r"^assert ", text, re.M), f"{chapter} carries no checks (asserts)"
    if not chapter.startswith("00"):
        assert "../exercises/" in text, f"{chapter} does not link to its exercises"


# Issue 12: every number in prose comes from a cell. A measured or derived quantity in a chapter's markdown is
# a MyST-NB glue role ({glue:text}`name:.1f` unit), glued by the cell that computes it; a number typed
# directly before a unit of time, rate or ratio is a number nobody recomputes.
UNITS = r"(?:%|ns\b|µs|us\b|ms\b|cycles|GHz|MHz|TFLOP/s|TB/s|GB/s|B/ns)"
NUMBER_WITH_UNIT = re.compile(r"(?<![\w.§])\d[\d,.]*\s?" + UNITS)
# Directives whose body is code or math, not prose (a fence's body is prose unless it is one of these).
NOT_PROSE = {"code-block", "code", "code-cell", "sourcecode", "math", "raw", "eval-rst", "glue:math", "glue:any"}
FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})\s*(\{([\w:.-]+)\})?\s*(.*)$")


def _chapter_cells(chapter: str):
    import jupytext

    return jupytext.read(ROOT / "chapters" / f"{chapter}.md").cells


def markdown_prose(source: str) -> str:
    """The prose of one markdown cell: fenced code and math dropped (directive bodies such as margins kept),
    then roles (glue included), inline code, math and HTML comments removed."""
    kept, stack = [], []                      # stack of (fence marker, is the body prose?)
    for line in source.splitlines():
        m = FENCE.match(line)
        if m and stack and m.group(1)[0] == stack[-1][0][0] and len(m.group(1)) >= len(stack[-1][0]) \
                and not m.group(2) and not m.group(4):
            stack.pop()
            continue
        if m and (m.group(2) or m.group(1)[0] in "`~"):
            body_is_prose = bool(m.group(2)) and m.group(3) not in NOT_PROSE and all(p for _, p in stack)
            stack.append((m.group(1), body_is_prose))
            if body_is_prose and m.group(4):
                kept.append(m.group(4))       # a directive's argument (a margin's title) is prose too
            continue
        if all(p for _, p in stack):
            kept.append(line)
    text = "\n".join(kept)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"\{[\w:.-]+\}`[^`]*`", "", text)           # roles: {glue:text}`name:.1f`, {doc}`...`, {math}`...`
    text = re.sub(r"``.*?``|`[^`]*`", "", text, flags=re.S)   # inline code
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)       # display math
    return re.sub(r"\$[^$]*\$", "", text)                      # inline math


def test_markdown_prose_helper():
    md = ("At 4.8 TB/s and {glue:text}`bw:.1f` TB/s, `5 ns`, $3\\,\\%$, 3 cycles\n"
          "```{margin} Title 2 GHz\nmargin 7 %\n```\n```cuda\nint x = 9 %2;\n```\n$$\n5 ns\n$$\n")
    assert NUMBER_WITH_UNIT.findall(markdown_prose(md)) == ["4.8 TB/s", "3 cycles", "2 GHz", "7 %"]


# Chapters whose prose still types a number before a unit, with why; strict, so a fixed chapter must leave the list.
TYPED_NUMBERS: dict[str, str] = {}   # chapter stem -> why it may still type a number before a unit (none today)


@pytest.mark.parametrize("chapter", [
    pytest.param(p.stem, marks=pytest.mark.xfail(strict=True, reason=TYPED_NUMBERS[p.stem])) if p.stem in TYPED_NUMBERS
    else p.stem for p in sorted((ROOT / "chapters").glob("*.md"))])
def test_no_typed_number_before_a_unit_in_prose(chapter):
    hits = [h for c in _chapter_cells(chapter) if c.cell_type == "markdown"
            for h in NUMBER_WITH_UNIT.findall(markdown_prose(c.source))]
    assert not hits, (f"{chapter}: numbers typed before a unit in the prose: {hits}; glue them from the cell that "
                      "computes them (myst_nb.glue + {glue:text}`name:.1f`)")


GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`]*)`")


@pytest.mark.parametrize("chapter", sorted(p.stem for p in (ROOT / "chapters").glob("*.md")))
def test_every_glued_name_is_glued_in_its_chapter(chapter):
    """A {glue} role naming a key no cell of the same chapter glues is a build warning (an error in the book
    build): every name in the prose must appear as a string literal in a code cell that calls glue()."""
    cells = _chapter_cells(chapter)
    used = {role.split("::")[-1].split(":")[0] for c in cells if c.cell_type == "markdown"
            for role in GLUE_ROLE.findall(c.source)}
    code = "\n".join(c.source for c in cells if c.cell_type == "code" and "glue(" in c.source)
    missing = sorted(n for n in used if not re.search(r"""["']%s["']""" % re.escape(n), code))
    assert not missing, f"{chapter}: glue roles without a glue() of that name in the chapter: {missing}"
