"""Tables the book is built from: the course map (seed section → chapter section) and the glossary.

Each lesson keeps its rows in its own CSV files, ``coursemap/LNN.csv`` and ``glossary/LNN.csv``
(``L00`` for chapter 0), so lessons can land independently; these loaders merge them.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CourseMapRow", "GlossaryEntry", "course_map", "glossary", "COURSEMAP_FIELDS", "GLOSSARY_FIELDS"]

_HERE = Path(__file__).resolve().parent
COURSEMAP_FIELDS = ("seed", "lesson", "section", "heading", "gloss", "chapter", "anchor")
GLOSSARY_FIELDS = ("term", "chinese", "meaning", "chapter")


@dataclass(frozen=True)
class CourseMapRow:
    seed: str      # seed file name, e.g. 000_bd6a01cf99e1f861.txt
    lesson: str    # seed lesson label, e.g. "1" or "8.1" ("map" for the chapter-map seed)
    section: str   # the section number as the seed writes it, e.g. "9" or "3.1"
    heading: str   # the heading as the seed writes it (Chinese)
    gloss: str     # an English gloss of the heading
    chapter: str   # chapter file stem, e.g. 01-architecture
    anchor: str    # MyST label in that chapter, e.g. l1-tma


@dataclass(frozen=True)
class GlossaryEntry:
    term: str
    chinese: str
    meaning: str
    chapter: str


def _rows(folder: str, fields: tuple[str, ...]) -> list[dict[str, str]]:
    out = []
    for p in sorted((_HERE / folder).glob("*.csv")):
        with p.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != fields:
                raise ValueError(f"{p.name}: columns must be {fields}, got {reader.fieldnames}")
            out.extend(dict(r) for r in reader)
    return out


def course_map() -> list[CourseMapRow]:
    return [CourseMapRow(**r) for r in _rows("coursemap", COURSEMAP_FIELDS)]


def glossary() -> list[GlossaryEntry]:
    entries = [GlossaryEntry(**r) for r in _rows("glossary", GLOSSARY_FIELDS)]
    return sorted(entries, key=lambda e: e.term.lower())
