"""MyST markdown renderings of the book's tables (course map, glossary), for the appendix pages."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from . import course_map, glossary
from .seeds import seed_sections, seeds_dir

__all__ = ["course_map_markdown", "glossary_markdown", "pending_lessons"]


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def pending_lessons() -> list[str]:
    """Seed lessons with no row in the course map yet (their chapters have not landed)."""
    mapped = {r.lesson for r in course_map()}
    d = seeds_dir()
    if not d.is_dir():
        return []
    lessons: list[str] = []
    for f in sorted(d.glob("*.txt")):
        for s in seed_sections(f):
            if s.lesson not in mapped and s.lesson not in lessons:
                lessons.append(s.lesson)
    return lessons


def course_map_markdown() -> str:
    """The course map as MyST tables, one per seed lesson, each row linking to its chapter section."""
    by_lesson: dict[str, list] = defaultdict(list)
    for r in course_map():
        by_lesson[r.lesson].append(r)

    def key(lesson: str):
        return (1, 0.0) if lesson == "map" else (0, float(lesson))

    parts = []
    for lesson in sorted(by_lesson, key=key):
        rows = by_lesson[lesson]
        title = ("The chapter-map seed (Hopper microarchitecture map)" if lesson == "map"
                 else f"Seed lesson {lesson}")
        parts.append(f"### {title}\n\n| § | Seed heading | In English | Taught in |\n|---|---|---|---|")
        for r in rows:
            parts.append(f"| {r.section} | {_cell(r.heading)} | {_cell(r.gloss)} | {{ref}}`{r.anchor}` |")
        parts.append("")
    return "\n".join(parts)


def glossary_markdown(chapter: str | None = None) -> str:
    """The glossary (optionally one chapter's entries) as a MyST table: English, Chinese, meaning."""
    rows = ["| Term | 中文 (course term) | Meaning |", "|---|---|---|"]
    for e in glossary():
        if chapter is None or e.chapter == chapter:
            rows.append(f"| **{_cell(e.term)}** | {_cell(e.chinese)} | {_cell(e.meaning)} |")
    return "\n".join(rows)
