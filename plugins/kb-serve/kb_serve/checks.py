"""Checks of query parameters that kb's CLI makes in its own option callbacks."""

from __future__ import annotations

GLOB_HELP = (
    "fnmatch syntax on stored paths: * any characters (including /), ? one character, [abc] or [!abc] one of a set"
)


def glob_problem(pattern: str) -> str:
    """Why ``pattern`` is not a usable ``fnmatch`` glob ('' when it is), as `kb search --path` says it."""
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
