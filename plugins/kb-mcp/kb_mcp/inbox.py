"""Text sent over MCP, stored as a file in the knowledge base's ``inbox/`` folder and ingested from there.

Why a file and not a document row written directly: the store of record is keyed by source
files (path, content hash, source root), and everything kb promises follows from that
(incremental re-ingest, ``kb reindex``, "what cannot be read is never deleted"). A file in
``<kb>/inbox/`` makes text from a client an ordinary document: ``name`` is its stored path,
sending the same name again updates it, and ``kb ingest <kb>/inbox`` reproduces it. The folder
lives inside the knowledge base directory, so it moves, backs up and is deleted with it.

A name that cannot be stored is refused before anything is written, by the checks ``kb serve``'s
uploads use too (``kb_core.commands.check_new_file``): one that is not a plain relative path, has
an invisible or control character, is too long (a part over 255 bytes), has no parser, uses a
stored document as a folder (or a folder as a document), or that the ignore rules would skip
(``.git/``, ``[ingest] ignore``, the inbox's ``.kbignore``; the refusal names the rule). If the new
text is refused all the same (an empty document, a name another folder already uses), the file's
earlier content is put back and the folders made for it removed, so what was stored before stays
as it was. A call never reports success for a text that was not stored, and its report names the
inbox as ``inbox`` (relative to the knowledge base folder), never by its absolute path.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path

import attrs

import kb_core
from kb_core.commands import check_new_file
from kb_core.plugin.stores import current_access
from kb_core.service import people

FOLDER = "inbox"


def parser_extensions(kb: kb_core.KnowledgeBase) -> set[str]:
    """The file extensions some installed parser reads (lower case, with the dot)."""
    found: set[str] = set()
    for registration in kb.registry.items["parsers"].values():
        found.update(str(e).lower() for e in registration.info.get("extensions", ()))
    return found


class Inbox:
    """The ``inbox/`` folder of one knowledge base."""

    def __init__(self, kb: kb_core.KnowledgeBase) -> None:
        self.kb = kb

    @property
    def folder(self) -> Path:
        """Where stored text lives: ``<kb>/inbox``."""
        return self.kb.directory / FOLDER

    def store(self, name: str, text: str) -> kb_core.IngestReport:
        """Write ``text`` to ``inbox/<name>`` and ingest the inbox; undo the write if it was not stored."""
        check_writable(name)  # (a person's: before a refusal could say what exists outside their grants)
        relative = check_new_file(self.folder, name, parser_extensions(self.kb), self.kb.config.ingest.ignore)
        check_writable(relative)
        data = self._check_text(text)
        target = self.folder / relative
        try:
            previous = target.read_bytes() if target.exists() else None
        except OSError as exc:
            raise kb_core.KbError(f"cannot store {relative!r}: {exc.strerror}", hint="choose another name") from None
        _ = self.kb.store  # opened first: it makes the knowledge base directory (the inbox's parent) as kb does
        created = _make_folders(self.folder, relative)
        try:
            _write_atomically(target, data)
        except (OSError, UnicodeError) as exc:
            _remove_folders(created)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise kb_core.KbError(f"cannot store {relative!r}: {reason}", hint="choose another name") from None
        try:
            report = kb_core.ingest_paths(self.kb, [self.folder])
        except BaseException:
            _undo(target, previous, created)
            raise
        refused = [problem for problem in report.failed if problem.path == relative]
        if refused:
            _undo(target, previous, created)
            reason = self._relative()(refused[0].reason)
            raise kb_core.KbError(f"{relative}: {reason}", hint="nothing stored was changed")
        if self.kb.store.get_document(relative) is None:  # never report success for a text not stored
            _undo(target, previous, created)
            raise kb_core.KbError(f"{relative!r} was not stored", hint="choose another name")
        return self._public(report)

    def _relative(self) -> Callable[[str], str]:
        """What writes the inbox's absolute path ``inbox`` (relative to the knowledge base folder) in a text
        (the path resolved once, for a whole report)."""
        spellings = sorted({str(self.folder.resolve()), str(self.folder.absolute())}, key=len, reverse=True)

        def relative(text: str) -> str:
            for spelling in spellings:
                text = text.replace(spelling, FOLDER)
            return text

        return relative

    def _public(self, report: kb_core.IngestReport) -> kb_core.IngestReport:
        """``report`` without the server's absolute paths: the inbox is ``inbox``, document paths are as stored."""
        relative = self._relative()

        def warning(item: kb_core.IngestWarning) -> kb_core.IngestWarning:
            return kb_core.IngestWarning(relative(item.path), relative(item.reason))

        return attrs.evolve(
            report,
            roots=[relative(root) for root in report.roots],
            failed=[warning(w) for w in report.failed],
            warnings=[warning(w) for w in report.warnings],
        )

    def _check_text(self, text: str) -> bytes:
        """The text as UTF-8, if it has something in it and fits the size a document may have."""
        if not text.strip():
            raise kb_core.KbError("the text is empty", hint="send the document's text")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise kb_core.KbError("the text is not valid Unicode (a lone surrogate)", hint="send UTF-8 text") from None
        limit = min(self.kb.config.ingest.max_file_bytes, kb_core.LIMITS.upload_bytes)
        if len(data) > limit:
            raise kb_core.KbError(
                f"the text is {len(data)} bytes long, over {limit}", hint="split it, or raise [ingest] max_file_bytes"
            )
        return data


def _make_folders(folder: Path, relative: str) -> list[Path]:
    """Make the inbox and the name's folders; the ones made here, outermost first."""
    created: list[Path] = []
    for path in [folder, *(folder / part for part in _prefixes(relative))]:
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        except OSError as exc:
            _remove_folders(created)
            raise kb_core.KbError(f"cannot store {relative!r}: {exc.strerror}", hint="choose another name") from None
        created.append(path)
    return created


def _prefixes(relative: str) -> list[str]:
    parts = relative.split("/")[:-1]
    return ["/".join(parts[: end + 1]) for end in range(len(parts))]


def _remove_folders(created: list[Path]) -> None:
    for folder in reversed(created):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _write_atomically(target: Path, data: bytes) -> None:
    """Replace ``target`` by ``data`` at once (a hidden ``.tmp`` file, which no parser reads, until then)."""
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".kb-mcp-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _undo(target: Path, previous: bytes | None, created: list[Path]) -> None:
    """Put ``target`` back as it was and remove the folders made for it."""
    if previous is None:
        target.unlink(missing_ok=True)
    else:
        _write_atomically(target, previous)
    _remove_folders(created)


def check_writable(name: str) -> None:
    """A one-line KbError when the asker is a person without a write grant of ``name`` (its NFC form)."""
    wanted = unicodedata.normalize("NFC", name.strip())
    access = current_access()
    if access is not None and not people.may_write(wanted):
        raise kb_core.KbError(
            f"{access.person!r} may not write {wanted[:200]!r}",
            hint="ask for a write grant: kb access grant GROUP PREFIX --write",
        )
