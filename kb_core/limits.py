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
kb_core.errors.KbError: k = 5000 is not a whole number from 1 to 1,000
"""

from __future__ import annotations

import os
from typing import Any, NewType, TypeVar

import attrs

from kb_core.bounds import K
from kb_core.errors import KbError
from kb_core.types import SEARCH_MODES

T = TypeVar("T")


@attrs.frozen
class Limits:
    """The bounds of one request.

    ``k``: hits one search or question may ask for. ``query_chars``: characters of a query or question.
    ``json_body_bytes``: bytes of a JSON request body. ``upload_bytes``: bytes of one upload request
    (all its files). ``path_chars`` / ``path_part_chars``: characters of a stored document path and of
    one of its parts (a folder or file name).
    """

    k: int = int(K.high)
    query_chars: int = 4000
    json_body_bytes: int = 1_000_000
    upload_bytes: int = 64_000_000
    path_chars: int = 1024
    path_part_chars: int = 255


#: The limits in force.
LIMITS = Limits()


def check_k(k: int | None) -> None:
    """Raise a one-line KbError for a ``k`` outside :data:`kb_core.bounds.K` (None: not given, fine)."""
    if k is not None:
        K.check(k)


def check_mode(mode: str | None) -> None:
    """Raise a one-line KbError for a search mode kb does not know (None: not given, fine)."""
    if mode is not None and mode not in SEARCH_MODES:
        *others, last = SEARCH_MODES
        raise KbError(f"unknown search mode {mode[:40]!r}", hint=f"use {', '.join(others)} or {last}")


#: The hint of every refusal of text that is not valid Unicode.
UNICODE_HINT = "send it as UTF-8 text: a byte that is not UTF-8, or a lone \\ud800-\\udfff escape, makes one"


def check_unicode(value: T, what: str = "text", *, nul: bool = True, hint: str = UNICODE_HINT) -> T:
    """``value`` unchanged when every string in it is valid Unicode; else a one-line KbError naming the first
    character that is not, and where it is.

    ``value``: a string, or parsed JSON (lists and objects are searched, names of fields too: "the body's
    field 'a[1].b'"). Every interface calls it where text comes in: the CLI on each argument, ``kb serve`` on
    a JSON body and on paths, ``kb mcp`` on every message, and :func:`check_text` on every query and
    question (a line of ``kb chat`` is one). Invalid is a lone surrogate (U+D800 to U+DFFF): what a JSON
    ``\\ud800`` escape without its pair, or a byte that is not UTF-8 in an argument, a file name or a line
    (Python's surrogateescape), decodes to; it cannot be encoded, stored or shown. ``nul=False`` refuses NUL
    (U+0000) too, as :func:`check_text` does for queries and questions: nobody types one (it comes from
    binary data or a mangled request), and a question of NULs alone is not blank to ``strip()`` yet says
    nothing. ``what`` names the text; ``hint`` says what to do (the default: send UTF-8).

    >>> check_unicode("caf\\udce9", "query")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    kb_core.errors.KbError: the query is not valid Unicode: character 4 is U+DCE9, half of a surrogate pair (...)
    """
    if isinstance(value, str):
        _check_string(value, what, nul, hint)
        return value
    # Parsed JSON, walked without recursion (it may be as deep as the parser allowed). Each item's place is
    # (its parent's place, its field name or index), spelt out only for a message.
    stack: list[tuple[Any, _Place]] = [(value, None)]
    while stack:
        item, place = stack.pop()
        if isinstance(item, str):
            fault = _fault(item, nul)
            if fault is not None:
                raise _refusal(f"{what}'s field '{_spelt(place)}'" if place else what, fault, hint)
        elif isinstance(item, list):
            stack.extend((v, (place, i)) for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, dict):
            for name, v in reversed(item.items()):
                fault = _fault(name, nul) if isinstance(name, str) else None
                if fault is not None:
                    where = f" in '{_spelt(place)}'" if place else ""
                    raise _refusal(f"{what}'s field name '{as_typed(name)[:40]}'{where}", fault, hint)
                stack.append((v, (place, name)))
    return value


#: Where a value is in parsed JSON: None (the top), or (its parent's place, a field name or an index).
_Place = tuple[Any, "str | int"] | None


def _spelt(place: _Place, limit: int = 80) -> str:
    """``place`` as ``question`` or ``a[1].b`` (a name that is not valid Unicode escaped), cut to ``limit``."""
    parts: list[str] = []
    while place is not None:
        place, key = place
        parts.append(f"[{key}]" if isinstance(key, int) else f".{as_typed(key)}")
    return "".join(reversed(parts)).removeprefix(".")[:limit]


def _check_string(text: str, what: str, nul: bool, hint: str) -> None:
    fault = _fault(text, nul)
    if fault is not None:
        raise _refusal(what, fault, hint)


def _fault(text: str, nul: bool) -> tuple[str, str | None] | None:
    """What is wrong with ``text``, as (what it is, its own hint or None), or None when nothing is.

    Only this runs on every string of a body: what names the text is made for a refusal alone.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # the only characters UTF-8 cannot encode are the surrogates
        where = f"character {exc.start + 1} is U+{ord(text[exc.start]):04X}"
        return f"is not valid Unicode: {where}, half of a surrogate pair", None
    if not nul and "\x00" in text:
        return f"contains a NUL character (U+0000) at character {text.index(chr(0)) + 1}", "remove it"
    return None


def _refusal(what: str, fault: tuple[str, str | None], hint: str) -> KbError:
    """The one-line error for the text ``what`` with ``fault`` (:func:`_fault`); ``hint`` unless it has its own."""
    said, own_hint = fault
    return KbError(f"the {what} {said}", hint=own_hint or hint)


def as_typed(text: str) -> str:
    """``text`` printable whatever it holds: a lone surrogate that stands for a byte that is not UTF-8 (an
    argument, a file name) shown as that byte, ``\\xff``, any other as its escape, ``\\ud800``."""
    try:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    except UnicodeError:  # a surrogate no byte decodes to (a JSON escape, not a POSIX name)
        return text.encode("utf-8", "backslashreplace").decode()


#: A query or question that :func:`check_text` passed: stripped, not empty, within ``LIMITS.query_chars``, valid
#: Unicode without NUL. The library checks a question once, where it comes in (``kb_core.ask``,
#: ``kb_core.ask_in_thread``; ``kb_core.search`` its query): what they call takes a CheckedText and trusts it.
CheckedText = NewType("CheckedText", str)


def check_text(text: str, what: str = "query") -> CheckedText:
    """``text`` stripped; a one-line KbError when it is not valid Unicode or holds a NUL (:func:`check_unicode`),
    is empty, or is longer than ``LIMITS.query_chars``.

    ``what`` names it in the message: "query" or "question".
    """
    check_unicode(text, what, nul=False)
    stripped = text.strip()
    if not stripped:
        verb = "ask" if what == "question" else "search for"
        raise KbError(f"the {what} is empty", hint=f"give some words to {verb}")
    if len(stripped) > LIMITS.query_chars:
        raise KbError(
            f"the {what} is {len(stripped)} characters long; at most {LIMITS.query_chars} are accepted",
            hint=f"shorten the {what}",
        )
    return CheckedText(stripped)


#: The hint of a path, prefix or id refused for a NUL or a character that is not valid Unicode.
PATH_HINT = "send the path as UTF-8 text without NUL: no stored path, prefix or id holds one"


def check_path(value: str, what: str = "path", *, chars: int | None = None) -> str:
    """``value`` unchanged: a stored path, a prefix, a citation, an id (thread, answer, chunk) or a name that a
    request or a command hands to a store's query; a one-line KbError when it is longer than
    ``LIMITS.path_chars``, is not valid Unicode, or holds a NUL (no stored path or id has one, and PostgreSQL's
    text cannot hold it: the query would fail instead of finding nothing). ``what`` names it in the message;
    ``chars``: another length limit (a citation: a path and a line span).

    >>> check_path("web/x.html\\x00", "path")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    kb_core.errors.KbError: the path contains a NUL character (U+0000) at character 11 (remove it)
    """
    limit = LIMITS.path_chars if chars is None else chars
    if len(value) > limit:
        raise KbError(f"the {what} is longer than {limit} characters", hint="shorten it")
    return check_unicode(value, what, nul=False, hint=PATH_HINT)


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
    """Raise a one-line KbError for a ``path_glob`` that is not valid Unicode, holds a NUL, is malformed or longer
    than ``LIMITS.path_chars`` (:func:`check_path`)."""
    if pattern is None:
        return
    check_path(pattern, "path glob")  # (a NUL too: a glob matches stored paths, which hold none)
    problem = glob_problem(pattern)
    if problem:
        raise KbError(f"invalid path glob {pattern[:80]!r}: {problem}", hint=GLOB_HELP)
