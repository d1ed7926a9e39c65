"""Hostile values: the numbers, texts, names and JSON an attacker gives where kb expects a value."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

#: Numbers as typed on a command line, in a query string or an environment variable: out of every range,
#: not numbers, numbers Python spells differently, and integers past Python's 4,300-digit limit.
NUMBER_TEXTS: tuple[str, ...] = (
    "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "-1", "0", "-0", "1", "2", "3",
    "100", "0.0", "-0.0", "0.5", "2.0000001", "4294967295", "4294967296", "18446744073709551615",
    "18446744073709551616", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1_000", "0x10",
    "1e3", " 5", "5 ", "", "+1", "\u0663", "\uff11\uff12", "1" * 4301, "9" * 5000, "0b1", "1.5e308", "5e-324",
)  # fmt: skip
#: Numbers as a parsed document gives them (TOML, JSON): the same traps, already typed.
NUMBERS: tuple[Any, ...] = (
    math.nan, math.inf, -math.inf, 0, -1, 1, 3, 100, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64, 10**30,
    -(2**63) - 1, 1e308, 5e-324, -0.0, 0.5, 2.0000001, True, False,
)  # fmt: skip
#: Pieces of text that have broken parsers: lone surrogates, NUL, bidirectional controls, glob and
#: citation syntax, quotes, escapes, and the corpus's own words.
PIECES: tuple[str, ...] = (
    "\ud800", "\udfff", "\udc80", "\x00", "\u202e", "\u2066", "\u200b", "\ufeff", "\ufffe", "\u2028", "\x1b[31m",
    "wind", "tomatoes", "backups", " ", "\n", "\r\n", "\t", "é", "e\u0301", "한국어", "中文", "😀", "*", "?", "[",
    "]", "[!", "!", "/", "..", "#", "#L1-L2", "#page=1", "&", "=", "\\", '"', "'", "%", "%FF", "{", "}", ".md", "-",
    "--", "$(id)", "~", "𝟘", "\U000e0001",
)  # fmt: skip
#: %-escapes that are not UTF-8, or decode to something a path must not hold.
ESCAPES: tuple[str, ...] = (
    "%FF", "%ED%A0%80", "%C0%AF", "%00", "%2F..%2F", "%2e%2e", "%", "%G1", "%E2%80%AE", "%F4%90%80%80", "%5C",
    "%0A", "%0D%0A", "%20", "%25", "%23",
)  # fmt: skip


def texts(max_pieces: int = 8) -> st.SearchStrategy[str]:
    """Generated text: :data:`PIECES` run together, any code point, now and then 4,001 to 200,000 characters."""
    joined = st.lists(st.sampled_from(PIECES), max_size=max_pieces).map("".join)
    anything = st.text(st.characters(codec=None, exclude_categories=()), max_size=24)
    long = st.tuples(st.sampled_from(["x", "é", " ", "wind ", "\x00", "*"]), st.sampled_from([4001, 20_000, 200_000]))
    return st.one_of(joined, joined, anything, long.map(lambda pair: pair[0] * pair[1]))


def number_texts() -> st.SearchStrategy[str]:
    """A number as text: :data:`NUMBER_TEXTS`, any integer or float spelt by Python."""
    return st.one_of(
        st.sampled_from(NUMBER_TEXTS),
        st.sampled_from(NUMBER_TEXTS),
        st.integers().map(str),
        st.floats().map(repr),
    )


def numbers() -> st.SearchStrategy[Any]:
    """A number as a document parses it: :data:`NUMBERS`, any integer or float."""
    return st.one_of(st.sampled_from(NUMBERS), st.integers(), st.floats())


def names() -> st.SearchStrategy[str]:
    """A file or folder name (no ``/``, never ``..`` or ``.``, at most 200 bytes): what a hostile folder holds."""
    alphabet = st.characters(codec="utf-8", exclude_characters="/\x00")
    raw = st.one_of(
        st.text(alphabet, min_size=1, max_size=30), st.lists(st.sampled_from(PIECES), min_size=1).map("".join)
    )
    cleaned = raw.map(lambda s: s.replace("/", "_").replace("\x00", "_").encode("utf-8", "surrogatepass")[:200])
    return cleaned.map(lambda b: b.decode("utf-8", "ignore")).filter(lambda s: s not in ("", ".", ".."))


def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Any JSON-shaped value with hostile leaves (numbers, text, null), nested."""
    leaves = st.one_of(st.none(), numbers(), texts(4), st.booleans())
    return st.recursive(
        leaves,
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts(2), inner, max_size=3)),
        max_leaves=max_leaves,
    )


def deep(depth: int, kind: str = "array") -> str:
    """Text nesting ``depth`` arrays (``[[[1]]]``) or inline tables/objects (``{a={a=1}}``, JSON ``{"a":{...}}``)."""
    if kind == "array":
        return "[" * depth + "1" + "]" * depth
    if kind == "toml-table":
        return "{a=" * depth + "1" + "}" * depth
    return '{"a":' * depth + "1" + "}" * depth


def depths() -> st.SearchStrategy[int]:
    """How deep a nested value goes: a little, past Python's recursion limit, or far past it."""
    return st.sampled_from([2, 30, 999, 1001, 5000, 100_000])
