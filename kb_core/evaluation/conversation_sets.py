"""Conversation sets of ``kb eval conversations``: JSONL, one conversation a line.

Each line: ``{"id": "...", "turns": [TURN, ...]}``, the turns in the order they are asked. A
turn: ``question`` (as the user asked it, required); ``answerable`` (true, false, or null for a
turn that is not scored, such as "thanks"); ``expected_docs`` (the ids of its relevant
documents: file stems, as in golden sets); ``reference_answer`` (what the turns after it see
as its answer); ``reference_rewrite`` (a standalone form of the question written by someone
else, the yardstick of kb's own).

>>> [c] = parse_conversation_line('{"id": "c1", "turns": [{"question": "Why?", "answerable": true}]}', 1)
>>> c.turns[0].question, c.turns[0].answerable
('Why?', True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from kb_core.errors import KbError
from kb_core.evaluation.golden import json_object
from kb_core.limits import LIMITS


@attrs.frozen
class SetTurn:
    """One turn of a conversation set and what a right answer looks like."""

    question: str
    answerable: bool | None = None  # None: a turn that is not scored
    expected_docs: tuple[str, ...] = ()
    reference_answer: str = ""
    reference_rewrite: str = ""


@attrs.frozen
class SetConversation:
    """A conversation of a set: its id and its turns, in order."""

    id: str
    turns: tuple[SetTurn, ...]


def _text(data: dict[str, Any], field: str, where: str, required: bool = False, searched: bool = True) -> str:
    """The string ``field``; a ``searched`` one (asked or searched with) is held to the question limit now."""
    value = data.get(field, "")
    if value is None:
        value = ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise KbError(f"{where}: {field} must be a {'non-empty ' if required else ''}string")
    if searched and len(value.strip()) > LIMITS.query_chars:
        raise KbError(f"{where}: {field} is longer than {LIMITS.query_chars} characters")
    return value


def _turn(data: Any, where: str) -> SetTurn:
    if not isinstance(data, dict):
        raise KbError(f"{where} is not a JSON object")
    answerable = data.get("answerable")
    if answerable is not None and not isinstance(answerable, bool):
        raise KbError(f"{where}: answerable must be true, false or null")
    docs = data.get("expected_docs") or []
    if not isinstance(docs, list) or not all(isinstance(d, str) for d in docs):
        raise KbError(f"{where}: expected_docs must be a list of strings")
    return SetTurn(
        _text(data, "question", where, required=True),
        answerable,
        tuple(docs),
        _text(data, "reference_answer", where, searched=False),
        _text(data, "reference_rewrite", where),
    )


def parse_conversation_line(line: str, number: int, source: str = "conversation set") -> list[SetConversation]:
    """The conversation of one JSONL line (a list of one); KbError naming the line when it is malformed."""
    where = f"{source} line {number}"
    data = json_object(line, where)
    turns = data.get("turns")
    if not isinstance(turns, list) or not turns:
        raise KbError(f"{where}: turns must be a non-empty list")
    return [
        SetConversation(
            str(data.get("id", f"c{number}")),
            tuple(_turn(t, f"{where}, turn {i}") for i, t in enumerate(turns, start=1)),
        )
    ]


def load_conversation_set(path: Path) -> list[SetConversation]:
    """The conversations of a JSONL set file (blank lines skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")  # not splitlines(): U+2028 may sit inside a string
    except (OSError, UnicodeDecodeError) as exc:
        raise KbError(f"cannot read conversation set {path}: {exc}") from None
    conversations = [
        c for n, line in enumerate(lines, 1) if line.strip() for c in parse_conversation_line(line, n, str(path))
    ]
    if not conversations:
        raise KbError(f"conversation set {path} has no conversations")
    return conversations
