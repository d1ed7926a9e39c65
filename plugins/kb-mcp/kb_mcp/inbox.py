"""Text sent over MCP, stored as a file in the knowledge base's ``inbox/`` folder and ingested from there.

Why a file and not a document row written directly: the store of record is keyed by source
files (path, content hash, source root), and everything kb promises follows from that
(incremental re-ingest, ``kb reindex``, "what cannot be read is never deleted"). A file in
``<kb>/inbox/`` makes text from a client an ordinary document: ``name`` is its stored path,
sending the same name again updates it, and ``kb ingest <kb>/inbox`` reproduces it. The folder
lives inside the knowledge base directory, so it moves, backs up and is deleted with it.

If the new text cannot be stored (an empty document, a name another folder already uses), the
file's earlier content is put back, so what was stored before stays as it was.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path, PurePosixPath

import kb_core

FOLDER = "inbox"
MAX_NAME_CHARS = 255
_FORBIDDEN = {chr(c) for c in range(0x20)} | {"\x7f", "\\"}


def parser_extensions(kb: kb_core.KnowledgeBase) -> set[str]:
    """The file extensions some installed parser reads (lower case, with the dot)."""
    found: set[str] = set()
    for registration in kb.registry.items["parsers"].values():
        found.update(str(e).lower() for e in registration.info.get("extensions", ()))
    return found


def check_name(name: str, extensions: set[str]) -> str:
    """``name`` as a safe relative path inside the inbox (NFC, '/' separators), or a KbError saying why not."""
    clean = unicodedata.normalize("NFC", name.strip())
    hint = "use a relative name such as notes/meeting.md (letters, digits, '/', no '..')"
    if not clean:
        raise kb_core.KbError("the name is empty", hint=hint)
    if len(clean) > MAX_NAME_CHARS:
        raise kb_core.KbError(f"the name is {len(clean)} characters long, over {MAX_NAME_CHARS}", hint=hint)
    if any(c in _FORBIDDEN for c in clean):
        raise kb_core.KbError(f"the name {clean!r} contains a control character or a backslash", hint=hint)
    pure = PurePosixPath(clean)
    if pure.is_absolute() or any(part in ("", ".", "..") for part in clean.split("/")):
        raise kb_core.KbError(f"the name {clean!r} must be a relative path without '.' or '..' parts", hint=hint)
    if pure.suffix.lower() not in extensions:
        raise kb_core.KbError(
            f"no parser for {pure.name!r}", hint=f"end the name with one of: {', '.join(sorted(extensions))}"
        )
    return clean


class Inbox:
    """The ``inbox/`` folder of one knowledge base."""

    def __init__(self, kb: kb_core.KnowledgeBase) -> None:
        self.kb = kb

    @property
    def folder(self) -> Path:
        """Where stored text lives: ``<kb>/inbox``."""
        return self.kb.directory / FOLDER

    def store(self, name: str, text: str) -> kb_core.IngestReport:
        """Write ``text`` to ``inbox/<name>`` and ingest the inbox; restore the old file if it was refused."""
        relative = check_name(name, parser_extensions(self.kb))
        if not text.strip():
            raise kb_core.KbError("the text is empty", hint="send the document's text")
        target = self.folder / relative
        previous = target.read_bytes() if target.is_file() else None
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _write_atomically(target, text.encode("utf-8"))
        try:
            report = kb_core.ingest_paths(self.kb, [self.folder])
        except BaseException:
            _restore(target, previous)
            raise
        refused = [problem for problem in report.failed if problem.path == relative]
        if refused:
            _restore(target, previous)
            raise kb_core.KbError(f"{relative}: {refused[0].reason}", hint="nothing stored was changed")
        return report


def _write_atomically(target: Path, data: bytes) -> None:
    temporary = target.with_name(f".{target.name}.kb-mcp-tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target)


def _restore(target: Path, previous: bytes | None) -> None:
    if previous is None:
        target.unlink(missing_ok=True)
    else:
        _write_atomically(target, previous)
