"""Which files a walk skips: kb's defaults, ``[ingest] ignore`` and a folder's ``.kbignore`` (gitignore syntax).

The rules come from untrusted places (anyone who can write a file into a folder writes its ``.kbignore``),
so every line is compiled on its own: a line kb cannot use (``!``, a lone trailing ``\\``, ``[z-a]``, more
wildcards than :data:`~kb_core.bounds.IGNORE_WILDCARDS`, past :data:`~kb_core.bounds.IGNORE_RULES` rules or
:data:`~kb_core.bounds.IGNORE_FILE_BYTES` bytes) is an :class:`IgnoreProblem`, skipped, and the other rules
are used. Every front end (``kb ingest``, ``kb watch``, ``kb serve``'s uploads, ``kb mcp``'s inbox) reads the
rules through :func:`ignore_rules`.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pathspec

from kb_core.bounds import IGNORE_FILE_BYTES, IGNORE_RULES, IGNORE_WILDCARDS, shown

DEFAULT_IGNORES = (
    ".git/",
    ".hg/",
    ".svn/",
    ".venv/",
    "venv/",
    "node_modules/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".tox/",
    ".idea/",
    ".vscode/",
    ".DS_Store",
    "Thumbs.db",
    "*.pyc",
    "*.swp",
    "*~",
    ".kbignore",
)
IGNORE_FILE = ".kbignore"


def normalise(relative: str) -> str:
    """The stored form of a relative path: '/' separators, NFC."""
    return unicodedata.normalize("NFC", relative.replace(os.sep, "/"))


def folders_of(relative: str) -> list[str]:
    """The folders the walk enters to reach ``relative``, stored form and ending in '/', outermost first."""
    parts = normalise(relative).split("/")
    return ["/".join(parts[:end]) + "/" for end in range(1, len(parts))]


@attrs.frozen
class IgnoreProblem:
    """A line of an ignore list kb cannot use: skipped (the other rules are used), reported once per ingest.

    ``origin`` is ``.kbignore`` or ``[ingest] ignore``; ``number`` the line (or entry), from 1.
    """

    origin: str
    number: int
    line: str
    why: str

    @property
    def path(self) -> str:
        """What a report names: the ignore file (or the configuration key)."""
        return self.origin

    @property
    def reason(self) -> str:
        """One line: which rule, and why it is skipped."""
        where = "line" if self.origin == IGNORE_FILE else "entry"
        return f"{where} {self.number} {shown(self.line)}: {self.why}"


@attrs.frozen
class IgnoreRules:
    """The ignore rules of a walk as one gitignore spec, where each of its patterns comes from (the group's name
    and the rule as written, by the spec's pattern index), and the lines left out, each with why."""

    spec: pathspec.GitIgnoreSpec
    origins: tuple[tuple[str, str], ...]
    problems: tuple[IgnoreProblem, ...]

    def skipped_part(self, relative: str) -> tuple[str, int] | None:
        """The folder (ending in '/') or file of ``relative`` these rules skip, with the index of the rule
        that does (see ``origins``), or None."""
        for candidate in [*folders_of(relative), normalise(relative)]:
            result = self.spec.check_file(candidate)
            if result.include:
                return candidate, -1 if result.index is None else result.index
        return None


def _single_stars(line: str) -> str:
    """``line`` with each run of '*' inside a part written as one '*', and each whole part of three or more as
    ``***``: the same rule (pathspec reads ``a**b`` as ``a*b``; a part ``***``, unlike ``*``, matches an empty
    one), whose match does not try every way to share a long name among the stars. A whole ``**`` is kept."""
    out: list[str] = []
    position, starts = 0, {0, 1} if line.startswith("!") else {0}
    while position < len(line):
        char = line[position]
        if char == "\\":
            out.append(line[position : position + 2])
            position += 2
            continue
        if char != "*":
            out.append(char)
            position += 1
            continue
        end = position
        while end < len(line) and line[end] == "*":
            end += 1
        # a part alone when a '/' or the end (trailing blanks are dropped) is on both sides: kept as it is read
        whole_part = (position in starts or line[position - 1] == "/") and (
            line[end:].strip() == "" or line[end] == "/"
        )
        out.append(("**" if end - position == 2 else "***") if whole_part and end > position + 1 else "*")
        position = end
    return "".join(out)


def _wildcards(line: str) -> int:
    """The runs of unescaped '*' in ``line`` (``***``, three repeats in pathspec's pattern, counts three times)."""
    count, position, previous = 0, 0, ""
    while position < len(line):
        char = line[position]
        if char == "*" and previous != "*":
            count += 3 if line.startswith("***", position) else 1
        previous = char if char != "\\" else ""
        position += 2 if char == "\\" else 1
    return count


def _why(line: str, exc: Exception) -> str:
    """What is wrong with ``line``, which pathspec refused with ``exc``, in one short phrase."""
    if line.strip() == "!":
        return "a '!' with nothing to un-ignore (write '\\!' for a name that starts with '!')"
    end = line.rstrip()
    if (len(end) - len(end.rstrip("\\"))) % 2 == 1:
        return "ends with a '\\' that escapes nothing (write '\\\\' for a backslash)"
    if isinstance(exc, re.error):
        return f"not a usable pattern ({exc.msg})"
    if isinstance(exc, ValueError):  # pathspec's GitIgnorePatternError
        return "not a gitignore pattern"
    return f"not a gitignore pattern ({type(exc).__name__})"


def _compiled(line: object) -> tuple[pathspec.GitIgnoreSpec | None, str]:
    """The spec of one ignore line, or None and why kb cannot use it."""
    if not isinstance(line, str):
        return None, f"not text but {type(line).__name__}"
    simpler = _single_stars(line)
    wildcards = _wildcards(simpler)
    if not IGNORE_WILDCARDS.holds(wildcards):
        return None, (
            f"{wildcards} wildcards ('*'), over {IGNORE_WILDCARDS.high:.0f}: a long name would take too long to"
            " match; split it into simpler rules"
        )
    try:
        with warnings.catch_warnings():  # re's FutureWarning on '[[' is no news to the person who runs kb
            warnings.simplefilter("ignore")
            spec = pathspec.GitIgnoreSpec.from_lines([simpler])
        spec.check_file("a/b")  # nothing known fails here, but a rule that did would stop every walk
    except Exception as exc:  # pathspec's own errors, re.error, whatever a later version raises
        return None, _why(line, exc)
    return spec, ""


def ignore_line_problem(line: str) -> str:
    """'' when ``line`` is a gitignore rule kb can use, else why not, in one short phrase::

    ignore_line_problem("drafts/")  # ''
    ignore_line_problem("!")        # "a '!' with nothing to un-ignore (...)"
    """
    return _compiled(line)[1]


def compile_ignores(groups: Sequence[tuple[str, Sequence[str]]], problems: Sequence[IgnoreProblem] = ()) -> IgnoreRules:
    """The rules of all ``groups`` (name, lines), in order, as one spec; a line kb cannot use is left out
    and named in ``problems`` (after the ``problems`` given), as are the lines past the bound of one list."""
    found = list(problems)
    patterns: list[Any] = []
    origins: list[tuple[str, str]] = []
    limit = int(IGNORE_RULES.high)
    for origin, lines in groups:
        rules = 0
        for number, line in enumerate(lines, start=1):
            spec, why = _compiled(line)
            if spec is None:
                found.append(IgnoreProblem(origin, number, str(line), f"{why}; the rule is skipped"))
                continue
            kept = [pattern for pattern in spec.patterns if pattern.include is not None]  # not a comment
            if kept and rules == limit:
                found.append(
                    IgnoreProblem(
                        origin, number, line, f"more than {limit:,} rules: this one and those after it are skipped"
                    )
                )
                break
            rules += len(kept)
            patterns.extend(kept)
            origins.extend((origin, line) for _ in kept)
    return IgnoreRules(pathspec.GitIgnoreSpec(patterns), tuple(origins), tuple(found))


def _read_ignore_file(path: Path) -> tuple[list[str], list[IgnoreProblem]] | None:
    """The lines of the ignore file ``path`` (at most :data:`IGNORE_FILE_BYTES`), or None when there is no
    regular file to read (a FIFO is not waited on)."""
    limit = int(IGNORE_FILE_BYTES.high)
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        with os.fdopen(os.dup(handle), "rb") as file:
            data = file.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(handle)
    problems = []
    if len(data) > limit:
        data = data[: data.rfind(b"\n", 0, limit) + 1]
        lines = data.decode("utf-8", errors="replace").splitlines()
        problems.append(
            IgnoreProblem(
                IGNORE_FILE, len(lines) + 1, "", f"the file is over {limit:,} bytes; what follows is not read"
            )
        )
        return lines, problems
    return data.decode("utf-8", errors="replace").splitlines(), problems


def ignore_rules(root: Path, extra: Sequence[str] = ()) -> IgnoreRules:
    """The ignore rules of the walk of ``root``, in its order: kb's defaults, ``[ingest] ignore`` (``extra``)
    and ``root/.kbignore`` (when there is one to read); lines kb cannot use are skipped and named."""
    groups: list[tuple[str, Sequence[str]]] = [("kb's defaults", DEFAULT_IGNORES), ("[ingest] ignore", extra)]
    problems: list[IgnoreProblem] = []
    read = _read_ignore_file(root / IGNORE_FILE)
    if read is not None:
        groups.append((IGNORE_FILE, read[0]))
        problems = read[1]
    rules = compile_ignores(groups)
    return attrs.evolve(rules, problems=(*rules.problems, *problems))
