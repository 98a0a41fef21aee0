"""Small Markdown helpers for the doc tests: headings, anchors, links, code blocks."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def read(path: Path) -> str:
    """The text of a doc file (UTF-8)."""
    return path.read_text(encoding="utf-8")


def split_code(text: str) -> tuple[list[str], list[list[str]]]:
    """(prose lines, code blocks): fenced blocks separated from the rest."""
    prose: list[str] = []
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
            continue
        if current is None:
            prose.append(line)
        else:
            current.append(line)
    return prose, blocks


def code_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Fenced code blocks as (language, lines); the language is "" when not given."""
    blocks: list[tuple[str, list[str]]] = []
    lang: str | None = None
    current: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if _FENCE.match(stripped):
            if lang is None:
                lang, current = stripped[3:].strip().lower(), []
            else:
                blocks.append((lang, current))
                lang = None
            continue
        if lang is not None:
            current.append(line)
    return blocks


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return "".join(
        "-" if ch == " " else ch for ch in text if ch.isalnum() or ch in " -_"
    )


def anchors(text: str) -> set[str]:
    """Every anchor a Markdown file defines (duplicates get GitHub's -1, -2 suffixes)."""
    prose, _ = split_code(text)
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose:
        match = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = github_anchor(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[str]:
    """Targets of the inline links outside code blocks."""
    prose, _ = split_code(text)
    targets: list[str] = []
    for line in prose:
        line = re.sub(r"`[^`]*`", "", line)
        targets.extend(_LINK.findall(line))
    return targets


def section(text: str, title: str) -> str:
    """The body of the ``##`` section called ``title`` (up to the next heading of its level)."""
    lines = text.splitlines()
    start = None
    level = 0
    for number, line in enumerate(lines):
        match = re.match(r"^(#{1,6})\s+(.*?)\s*$", line)
        if match is None:
            continue
        if start is None and match.group(2).strip() == title:
            start, level = number + 1, len(match.group(1))
        elif start is not None and len(match.group(1)) <= level:
            return "\n".join(lines[start:number])
    if start is None:
        raise AssertionError(f"no section titled {title!r}")
    return "\n".join(lines[start:])
