"""Reading kb's Markdown and the repository's distributions, for the docs tests (tests/test_docs*.py)."""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

from kbtest import REPO

from kb_core.extend.registry import CORE_DISTRIBUTION


@cache
def page_text(relative: str) -> str:
    """The text of the page at ``relative`` (from the repository's root), read once."""
    return (REPO / relative).read_text(encoding="utf-8")


def section_of(text: str, heading: str) -> str:
    """The part of ``text`` under the heading line ``heading`` up to the next heading of its level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    assert heading in lines, f"no heading {heading!r}"
    start = lines.index(heading) + 1
    end = next(
        (i for i in range(start, len(lines)) if re.match(rf"#{{1,{level}}} ", lines[i]) and not in_fence(lines, i)),
        len(lines),
    )
    return "\n".join(lines[start:end])


def in_fence(lines: list[str], index: int) -> bool:
    return sum(line.startswith("```") for line in lines[:index]) % 2 == 1


def fences(text: str) -> list[str]:
    """The contents of the fenced code blocks of ``text``."""
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S)


def prose(text: str) -> str:
    """``text`` without its fenced code blocks (examples are not descriptions)."""
    return re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)


@cache
def code_spans(page: str) -> list[str]:
    """The inline code spans of ``page``, outside fenced blocks."""
    return re.findall(r"`([^`]+)`", prose(page_text(page)))


def cells(line: str) -> list[str]:
    """The cells of a table row, splitting on ``|`` outside code spans."""
    cells, cell, in_code = [], "", False
    for char in line.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += char
    return [*cells, cell.strip()]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the tables in ``text`` (header and rule rows left out)."""
    rows: list[list[str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("|") or re.fullmatch(r"[|\s:-]+", line):
            continue
        if i + 1 < len(lines) and re.fullmatch(r"\|[|\s:-]+", lines[i + 1]):
            continue  # a header
        rows.append(cells(line))
    return rows


def names_in(cell: str) -> list[str]:
    """The backticked module and package names of a cell (``store.py``, ``parsers/``)."""
    return [span for span in re.findall(r"`([^`]+)`", cell) if re.fullmatch(r"[a-z_]\w*(\.py|/)", span)]


@cache
def repo_distributions() -> dict[str, Path]:
    """Every distribution of the repository and its folder: kb-core, plugins/*, examples/*."""
    found = {CORE_DISTRIBUTION: REPO}
    for pyproject in sorted([*REPO.glob("plugins/*/pyproject.toml"), *REPO.glob("examples/*/pyproject.toml")]):
        found[tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]] = pyproject.parent
    return found
