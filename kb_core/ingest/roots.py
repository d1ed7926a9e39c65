"""Which folder an ingested path belongs to, and which stored documents a walk may remove.

A document is keyed by its path relative to the folder it came from (its *source root*). A file
or subfolder inside a folder that is already a source root is ingested relative to that root,
so ``kb ingest notes/sub/a.md`` after ``kb ingest notes`` updates ``sub/a.md`` instead of
storing a second copy as ``a.md``; and ``kb ingest notes`` after ``kb ingest notes/sub`` takes
the documents of ``notes/sub`` in under ``sub/`` (:func:`absorb_inner_roots`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from kb_core.errors import KbError
from kb_core.extend.record_store import RecordStore
from kb_core.ingest.chunker import chunk_id
from kb_core.ingest.source import SourceProblem, normalise
from kb_core.limits import as_typed, check_unicode


@attrs.frozen
class Root:
    """Where documents' paths start (``base``), and which part of it to walk."""

    base: Path  # an absolute, resolved folder: the documents' source root
    start: str  # '' (all of it), a relative folder ending in '/', or a relative file path
    single: bool  # one file, not a folder
    given: Path  # the path as the user gave it (for messages)

    def covers(self, path: str) -> bool:
        """Whether a stored path lies in the part of the root this run walks."""
        start = normalise(self.start)  # stored paths are NFC; ``start`` is spelled as on disk
        return path == start if self.single else path.startswith(start)


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
    shown_base = as_typed(str(base))
    check_unicode(str(base), f"folder name '{shown_base}'", hint="rename it: kb stores paths as UTF-8 text")
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


def absorb_inner_roots(store: RecordStore, root: Root) -> list[tuple[str, str]]:
    """Re-key the documents of stored roots inside ``root`` under it (``a.md`` of ``notes/sub`` becomes
    ``sub/a.md`` of ``notes``), chunks and all, in one transaction; returns (old root, note) pairs.

    A document whose new path is already taken stays where it was.
    """
    notes: list[tuple[str, str]] = []
    if root.single:
        return notes
    for inner in store.source_roots():
        folder = Path(inner)
        if root.base not in folder.parents:
            continue
        prefix = folder.relative_to(root.base).as_posix() + "/"
        if not normalise(prefix).startswith(normalise(root.start)):
            continue
        moved = 0
        with store.transaction():
            for document in [d for d in store.list_documents() if d.source_root == inner]:
                new_path = normalise(prefix) + document.path
                if store.get_document(new_path) is not None:
                    continue
                chunks = [
                    attrs.evolve(c, doc_path=new_path, chunk_id=chunk_id(new_path, c.ordinal, c.content_hash))
                    for c in store.chunks_of([document.path])
                ]
                store.delete_documents([document.path])
                store.replace_document(attrs.evolve(document, path=new_path, source_root=str(root.base)), chunks)
                moved += 1
        notes.append((inner, f"{inner} is inside {root.base}: its {moved} document(s) are now stored under {prefix}"))
    return notes
