"""Text sent over MCP, stored as a file in the knowledge base's ``inbox/`` folder and ingested from there.

Why a file and not a document row written directly: the store of record is keyed by source
files (path, content hash, source root), and everything kb promises follows from that
(incremental re-ingest, ``kb reindex``, "what cannot be read is never deleted"). A file in
``<kb>/inbox/`` makes text from a client an ordinary document: ``name`` is its stored path,
sending the same name again updates it, and ``kb ingest <kb>/inbox`` reproduces it. The folder
lives inside the knowledge base directory, so it moves, backs up and is deleted with it.

A name that cannot be stored is refused before anything is written: one that is not a plain
relative path, has an invisible or control character, is too long, has no parser, uses a stored
document as a folder, or that the ignore rules would skip (``.git/``, ``[ingest] ignore``, the
inbox's ``.kbignore``). If the new text is refused all the same (an empty document, a name
another folder already uses), the file's earlier content is put back and the folders made for it
removed, so what was stored before stays as it was. A call never reports success for a text that
was not stored.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import unicodedata
from pathlib import Path, PurePosixPath

import kb_core

FOLDER = "inbox"
NAME_MAX_BYTES = 255  # a file or folder name's limit on common file systems (NAME_MAX), in UTF-8 bytes
HINT = "use a relative name such as notes/meeting.md (letters, digits, '/', no '..')"
# Unicode categories a name may not use: controls, format characters (bidi overrides, zero-width
# spaces), surrogates, private use, unassigned, line and paragraph separators.
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
_ALLOWED_FORMAT = {"\u200c", "\u200d"}  # ZWNJ and ZWJ spell words in several scripts (and emoji)


def parser_extensions(kb: kb_core.KnowledgeBase) -> set[str]:
    """The file extensions some installed parser reads (lower case, with the dot)."""
    found: set[str] = set()
    for registration in kb.registry.items["parsers"].values():
        found.update(str(e).lower() for e in registration.info.get("extensions", ()))
    return found


def _refused_character(text: str) -> str | None:
    for char in text:
        if char == "\\" or (unicodedata.category(char) in _REFUSED_CATEGORIES and char not in _ALLOWED_FORMAT):
            return char
    return None


def check_name(name: str, extensions: set[str]) -> str:
    """``name`` as a safe relative path inside the inbox (NFC, '/' separators), or a KbError saying why not."""
    clean = unicodedata.normalize("NFC", name.strip())
    if not clean:
        raise kb_core.KbError("the name is empty", hint=HINT)
    if len(clean) > kb_core.LIMITS.path_chars:
        raise kb_core.KbError(
            f"the name is {len(clean)} characters long, over {kb_core.LIMITS.path_chars}", hint="use a shorter name"
        )
    bad = _refused_character(clean)
    if bad is not None:
        what = "a backslash" if bad == "\\" else f"the invisible or control character U+{ord(bad):04X}"
        raise kb_core.KbError(f"the name contains {what}", hint=HINT)
    parts = clean.split("/")
    if clean.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise kb_core.KbError(f"the name {clean!r} must be a relative path without '.' or '..' parts", hint=HINT)
    for part in parts:
        size = len(part.encode("utf-8"))
        if len(part) > kb_core.LIMITS.path_part_chars or size > NAME_MAX_BYTES:
            raise kb_core.KbError(
                f"the part {part[:40]!r}... of the name is {len(part)} characters ({size} bytes) long,"
                f" over {kb_core.LIMITS.path_part_chars} characters or {NAME_MAX_BYTES} bytes",
                hint="use shorter folder and file names",
            )
    if PurePosixPath(parts[-1]).suffix.lower() not in extensions:  # as the ingest walk tells
        raise kb_core.KbError(
            f"no parser for {parts[-1]!r}", hint=f"end the name with one of: {', '.join(sorted(extensions))}"
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
        """Write ``text`` to ``inbox/<name>`` and ingest the inbox; undo the write if it was not stored."""
        relative = check_name(name, parser_extensions(self.kb))
        data = self._check_text(text)
        skipped = kb_core.ignored_part(self.folder, relative, self.kb.config.ingest.ignore)
        if skipped is not None:
            raise kb_core.KbError(
                f"the name {relative!r} would not be stored: the ingest ignore rules skip {skipped!r}",
                hint="choose another name (no .git/, node_modules/, ... folders)",
            )
        target = self.folder / relative
        previous = _check_place(self.folder, relative)
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
            raise kb_core.KbError(f"{relative}: {refused[0].reason}", hint="nothing stored was changed")
        if self.kb.store.get_document(relative) is None:  # never report success for a text not stored
            _undo(target, previous, created)
            raise kb_core.KbError(f"{relative!r} was not stored", hint="choose another name")
        return report

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


def _check_place(folder: Path, relative: str) -> bytes | None:
    """The file's current content (None if new); a KbError when a folder of the name is a file, or the name a folder."""
    parts = relative.split("/")
    current = folder
    for index, part in enumerate(parts):
        current = current / part
        so_far = "/".join(parts[: index + 1])
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise kb_core.KbError(f"cannot store {relative!r}: {exc.strerror}", hint="choose another name") from None
        last = index == len(parts) - 1
        if stat.S_ISLNK(mode):
            problem = f"{so_far!r} is a symbolic link in the inbox"
        elif not last and not stat.S_ISDIR(mode):
            problem = f"{so_far!r} is a document, not a folder"
        elif last and not stat.S_ISREG(mode):
            problem = f"{so_far!r} is a folder"
        else:
            continue
        raise kb_core.KbError(f"cannot store {relative!r}: {problem}", hint="choose another name")
    return current.read_bytes()


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
