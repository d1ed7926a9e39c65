"""Reading the server's Server-Sent Events: for clients, the tests and the bench."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


def iter_sse(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """(event, JSON data) pairs from the lines of an event stream, as they arrive (comments skipped)."""
    name, data = "message", list[str]()
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if data:
        yield name, json.loads("\n".join(data))


def parse_sse(text: str) -> list[tuple[str, Any]]:
    """Every (event, JSON data) pair of a whole event-stream body."""
    return list(iter_sse(text.replace("\r\n", "\n").split("\n")))
