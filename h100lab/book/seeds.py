"""Read the numbered section outline of the course's seed notes (../shared/seeds).

The course map must name every numbered section of every seed lesson. The seeds are plain text:
lessons start at a line naming the lecture PDF (``《3. Asynchronicity and barriers.pdf》``), an
optional ``目录`` (contents) block repeats the top-level headings, and headings are lines such as
``9.4 统一 Shared Memory + L1（每 SM）``. Numbered list items look like headings too, so a line
counts as a heading only if its number is the outline successor of the previous heading (first
child, or the next sibling at some level) and it reads like a title (short, no full stop); where the
lesson has a contents block, a top-level heading must also be the contents' entry of that number (a
numbered list under section 2 that runs "3. … 4. …" is not sections 3 and 4).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SeedSection", "seed_sections", "seeds_dir", "CHAPTER_MAP_SEED"]

CHAPTER_MAP_SEED = "003_865b75af134b1d9e.txt"  # the "Hopper microarchitecture map" chapter, lesson "map"
_LESSON = re.compile(r"《(\d+(?:\.\d+)?)\.?\s[^》]*\.pdf》")
_HEADING = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+(\S.*)$")
_MAX_TITLE = 48


@dataclass(frozen=True)
class SeedSection:
    seed: str
    lesson: str
    section: str
    heading: str


def seeds_dir() -> Path:
    """``../shared/seeds`` beside the repository (present for developers and CI)."""
    return Path(__file__).resolve().parents[3] / "shared" / "seeds"


def _successor(prev: tuple[int, ...], num: tuple[int, ...]) -> bool:
    if not prev:
        return num[-1] == 1
    if num == prev + (1,):
        return True
    k = len(num) - 1
    return k < len(prev) and num[:k] == prev[:k] and num[k] == prev[k] + 1


def _looks_like_title(text: str) -> bool:
    return len(text) <= _MAX_TITLE and not text.rstrip().endswith(("。", "：", ":", "；", "，"))


def seed_sections(path: Path) -> list[SeedSection]:
    """Every numbered section heading of a seed file, in order, with its lesson label."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[SeedSection] = []
    lesson = "map" if path.name == CHAPTER_MAP_SEED else None
    prev: tuple[int, ...] = ()
    toc_first: str | None = None
    in_toc = False
    toc: dict[int, str] = {}
    for raw in lines:
        line = raw.strip()
        m = _LESSON.search(line)
        if m and line.startswith("本文档基于"):
            lesson, prev, in_toc, toc_first, toc = m.group(1), (), False, None, {}
            continue
        if line == "目录":
            in_toc, toc_first = True, None
            continue
        h = _HEADING.match(line)
        if not h or lesson is None:
            continue
        if in_toc:
            if toc_first is None:
                toc_first = line
            elif line == toc_first:
                in_toc = False  # the body starts by repeating the first contents entry
            if in_toc:
                if "." not in h.group(1).rstrip("."):
                    toc[int(h.group(1).rstrip("."))] = h.group(2).strip()
                continue
        num = tuple(int(p) for p in h.group(1).split("."))
        if len(num) == 1 and toc and toc.get(num[0]) != h.group(2).strip():
            continue  # a numbered list item, not the contents' top-level heading of that number
        if _successor(prev, num) and _looks_like_title(h.group(2)):
            out.append(SeedSection(path.name, lesson, h.group(1), h.group(2).strip()))
            prev = num
    return out
