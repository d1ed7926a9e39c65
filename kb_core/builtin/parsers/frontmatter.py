"""YAML (``---``) and TOML (``+++``) frontmatter at the top of a Markdown file, kept as metadata."""

from __future__ import annotations

import datetime
import tomllib
from collections.abc import Sequence
from typing import Any

import attrs
import yaml

from kb_core.builtin.parsers.blocks import (
    MAX_TITLE_CHARS,
    clip,
)


class _TooLarge(Exception):
    """Frontmatter nested too deeply or holding too many values to keep as metadata."""


@attrs.define
class _JsonConverter:
    """Turns parsed YAML/TOML values into JSON-ready ones, within a size budget."""

    max_nodes: int = 10_000
    max_depth: int = 32
    nodes: int = 0

    def convert(self, value: Any, depth: int = 0) -> Any:
        """A JSON-ready copy of ``value``; dates become ISO strings, other odd types strings."""
        self.nodes += 1
        if self.nodes > self.max_nodes or depth > self.max_depth:
            raise _TooLarge
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if value == value and abs(value) != float("inf") else str(value)
        if isinstance(value, (datetime.date, datetime.time)):
            return value.isoformat()
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, dict):
            return {self._key(k): self.convert(v, depth + 1) for k, v in value.items()}
        if isinstance(value, (set, frozenset)):
            return sorted((self.convert(v, depth + 1) for v in value), key=repr)
        if isinstance(value, (list, tuple)):
            return [self.convert(v, depth + 1) for v in value]
        return str(value)

    def _key(self, key: Any) -> str:
        return key if isinstance(key, str) else str(self.convert(key))


@attrs.frozen
class Frontmatter:
    """What a document's frontmatter gave: metadata, how many leading lines it used, a warning."""

    metadata: dict[str, Any] = attrs.field(factory=dict)
    line_count: int = 0
    warning: str | None = None


_FRONTMATTER_KINDS = {"---": ("YAML", ("---", "..."), yaml.safe_load), "+++": ("TOML", ("+++",), tomllib.loads)}


def read_frontmatter(lines: Sequence[str]) -> Frontmatter:
    """Read YAML (``---``) or TOML (``+++``) frontmatter from the first lines of a document.

    Frontmatter that is closed but invalid is skipped with a warning; frontmatter that is
    never closed is left to be parsed as ordinary text, with a warning.
    """
    opener = lines[0].lstrip("\ufeff").rstrip() if lines else ""
    if opener not in _FRONTMATTER_KINDS:
        return Frontmatter()
    fmt, closers, load = _FRONTMATTER_KINDS[opener]
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in closers), None)
    if end is None:
        return Frontmatter(warning=f"{fmt} frontmatter opened on line 1 is never closed; parsed as text")
    where = f"{fmt} frontmatter (lines 1-{end + 1})"
    try:
        data = load("\n".join(lines[1:end]))
    except Exception as exc:  # noqa: BLE001 - YAML/TOML errors, bad dates (ValueError), deep nesting (RecursionError)
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Frontmatter(line_count=end + 1, warning=f"invalid {where} skipped: {reason}")
    if data is None:
        return Frontmatter(line_count=end + 1)
    if not isinstance(data, dict):
        return Frontmatter(line_count=end + 1, warning=f"{where} is not a mapping; skipped")
    try:
        return Frontmatter(_JsonConverter().convert(data), end + 1)
    except _TooLarge:
        return Frontmatter(line_count=end + 1, warning=f"{where} is too large or too deeply nested; skipped")


def frontmatter_title(metadata: dict[str, Any]) -> str:
    value = metadata.get("title")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return clip(str(value), MAX_TITLE_CHARS)
    return ""
