"""The limits every interface shares: the library, the CLI, ``kb serve`` and ``kb mcp`` refuse the same
requests with the same one-line message (CLI exit 2, HTTP 400 or 413, an MCP tool error).

Each limit is far above what a person asks for and far below what would hurt the process: a ``k`` of
two billion made Tantivy ask for 32 GB at once.

>>> from kb_core import LIMITS, check_k
>>> LIMITS.k
1000
>>> check_k(5000)
Traceback (most recent call last):
    ...
kb_core.errors.KbError: k must be at most 1000 (got 5000) (ask for fewer hits)
"""

from __future__ import annotations

import attrs

from kb_core.errors import KbError
from kb_core.types import SEARCH_MODES


@attrs.frozen
class Limits:
    """The bounds of one request.

    ``k``: hits one search or question may ask for. ``query_chars``: characters of a query or question.
    ``json_body_bytes``: bytes of a JSON request body. ``upload_bytes``: bytes of one upload request
    (all its files). ``path_chars`` / ``path_part_chars``: characters of a stored document path and of
    one of its parts (a folder or file name).
    """

    k: int = 1000
    query_chars: int = 4000
    json_body_bytes: int = 1_000_000
    upload_bytes: int = 64_000_000
    path_chars: int = 1024
    path_part_chars: int = 255


#: The limits in force.
LIMITS = Limits()


def check_k(k: int | None) -> None:
    """Raise a one-line KbError for a ``k`` below 1 or above ``LIMITS.k`` (None: not given, fine)."""
    if k is None:
        return
    if k < 1:
        raise KbError(f"k must be at least 1 (got {k})")
    if k > LIMITS.k:
        raise KbError(f"k must be at most {LIMITS.k} (got {str(k)[:24]})", hint="ask for fewer hits")


def check_mode(mode: str | None) -> None:
    """Raise a one-line KbError for a search mode kb does not know (None: not given, fine)."""
    if mode is not None and mode not in SEARCH_MODES:
        *others, last = SEARCH_MODES
        raise KbError(f"unknown search mode {mode[:40]!r}", hint=f"use {', '.join(others)} or {last}")


def check_text(text: str, what: str = "query") -> str:
    """``text`` stripped; a one-line KbError when it is empty or longer than ``LIMITS.query_chars``.

    ``what`` names it in the message: "query" or "question".
    """
    stripped = text.strip()
    if not stripped:
        verb = "ask" if what == "question" else "search for"
        raise KbError(f"the {what} is empty", hint=f"give some words to {verb}")
    if len(stripped) > LIMITS.query_chars:
        raise KbError(
            f"the {what} is {len(stripped)} characters long; at most {LIMITS.query_chars} are accepted",
            hint=f"shorten the {what}",
        )
    return stripped


GLOB_HELP = (
    "fnmatch syntax on stored paths: * any characters (including /), ? one character, [abc] or [!abc] one of a set"
)


def glob_problem(pattern: str) -> str:
    """Why ``pattern`` is not a usable ``path_glob`` ('' when it is): every front end checks with it."""
    if not pattern.strip():
        return "it is empty"
    position = 0
    while position < len(pattern):
        if pattern[position] == "[":
            end = position + 1
            if end < len(pattern) and pattern[end] == "!":
                end += 1
            if end < len(pattern) and pattern[end] == "]":
                end += 1
            end = pattern.find("]", end)
            if end < 0:
                return f"the '[' at character {position + 1} has no closing ']'"
            position = end
        position += 1
    return ""


def check_path_glob(pattern: str | None) -> None:
    """Raise a one-line KbError for a ``path_glob`` that is malformed or longer than ``LIMITS.path_chars``."""
    if pattern is None:
        return
    if len(pattern) > LIMITS.path_chars:
        raise KbError(f"the path glob is longer than {LIMITS.path_chars} characters", hint="shorten it")
    problem = glob_problem(pattern)
    if problem:
        raise KbError(f"invalid path glob {pattern[:80]!r}: {problem}", hint=GLOB_HELP)
