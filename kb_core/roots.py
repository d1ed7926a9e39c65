"""Which folder an ingested path belongs to, and which stored documents a walk may remove.

A document is keyed by its path relative to the folder it came from (its *source root*). A file
or subfolder inside a folder that is already a source root is ingested relative to that root,
so ``kb ingest notes/sub/a.md`` after ``kb ingest notes`` updates ``sub/a.md`` instead of
storing a second copy as ``a.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from kb_core.errors import KbError
from kb_core.source import SourceProblem


@attrs.frozen
class Root:
    """Where documents' paths start (``base``), and which part of it to walk."""

    base: Path  # an absolute, resolved folder: the documents' source root
    start: str  # '' (all of it), a relative folder ending in '/', or a relative file path
    single: bool  # one file, not a folder
    given: Path  # the path as the user gave it (for messages)

    def covers(self, path: str) -> bool:
        """Whether a stored path lies in the part of the root this run walks."""
        return path == self.start if self.single else path.startswith(self.start)


def resolve_root(given: Path, stored_roots: Sequence[str]) -> Root:
    """The root a path given to ``kb ingest`` belongs to (the deepest stored root holding it, else itself)."""
    target = given.expanduser()
    if not os.path.lexists(target):
        raise KbError(f"no such file or folder: {target}", hint="check the path")
    try:
        resolved = target.resolve(strict=True)
    except (OSError, RuntimeError):
        raise KbError(f"cannot use {target}: a broken symbolic link or a link loop", hint="check the path") from None
    single = resolved.is_file()
    folder = target.absolute().parent.resolve() if single else resolved
    holders = [Path(r) for r in stored_roots if Path(r) == folder or Path(r) in folder.parents]
    base = max(holders, key=lambda p: len(p.parts)) if holders else folder
    inner = folder.relative_to(base).as_posix()
    prefix = "" if inner == "." else inner + "/"
    start = prefix + target.name if single else prefix
    return Root(base=base, start=start, single=single, given=target)


def protected(problems: Iterable[SourceProblem]) -> list[str]:
    """Path prefixes whose stored documents must be kept (what could not be read was not deleted)."""
    return [problem.path for problem in problems if problem.keep]


def is_protected(path: str, prefixes: Sequence[str]) -> bool:
    """Whether ``path`` is at or under one of ``prefixes``."""
    for prefix in prefixes:
        if prefix == "" or (prefix.endswith("/") and path.startswith(prefix)):
            return True
        if path == prefix or path.startswith(prefix + "/"):
            return True
    return False
