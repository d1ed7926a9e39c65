"""The uploads folder: safe names for uploaded files, atomic writes, and undoing a failed upload.

Uploaded files live in ``<kb dir>/uploads/``, a folder kb-serve owns; their stored document
paths are relative to it (``notes/a.md``). A name from a client is untrusted: it must be a plain
relative path (no ``..``, no absolute path, no control characters, no hidden parts) with an
extension some parser reads.
"""

from __future__ import annotations

import os
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from kb_serve.settings import ApiError

UPLOADS_DIR = "uploads"
MAX_NAME_CHARS = 1024
MAX_PART_CHARS = 255
_FORBIDDEN = {"\\", ":", "*", "?", '"', "<", ">", "|"}


def uploads_folder(kb_dir: Path) -> Path:
    """The folder inside the knowledge base directory where uploaded files are kept."""
    return kb_dir / UPLOADS_DIR


def _bad(name: str, why: str) -> ApiError:
    shown = name if len(name) <= 80 else name[:77] + "..."
    return ApiError(
        400, f"invalid file name {shown!r}: {why}", hint="use a relative path of plain names, like notes/backups.md"
    )


def safe_name(name: str, extensions: Iterable[str]) -> str:
    """``name`` as a stored relative path (NFC, '/'-separated), or an ApiError saying why it cannot be one."""
    clean = unicodedata.normalize("NFC", name.strip())
    if not clean:
        raise _bad(name, "it is empty")
    if len(clean) > MAX_NAME_CHARS:
        raise _bad(name, f"longer than {MAX_NAME_CHARS} characters")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") for c in clean):
        raise _bad(name, "it contains control or invisible characters")
    if _FORBIDDEN & set(clean):
        raise _bad(name, 'it contains one of \\ : * ? " < > |')
    if clean.startswith("/"):
        raise _bad(name, "it is an absolute path")
    parts = clean.split("/")
    for part in parts:
        if not part or part != part.strip():
            raise _bad(name, "it has an empty path part or one with surrounding blanks")
        if part.startswith("."):
            raise _bad(name, "a part starts with '.' ('..', '.', hidden names are refused)")
        if len(part) > MAX_PART_CHARS:
            raise _bad(name, f"a part is longer than {MAX_PART_CHARS} characters")
    suffix = Path(parts[-1]).suffix.lower()
    known = sorted({e.lower() for e in extensions})
    if suffix not in known:
        raise ApiError(
            415,
            f"no parser reads {suffix or 'files without an extension'} ({clean})",
            hint=f"upload one of: {', '.join(known)}",
        )
    return clean


@attrs.frozen
class Written:
    """One file written into the uploads folder, and what was there before (None: nothing)."""

    name: str
    path: Path
    previous: bytes | None


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".upload-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_files(folder: Path, files: Sequence[tuple[str, bytes]]) -> list[Written]:
    """Write each (safe name, bytes) into ``folder`` atomically; what each replaced is kept for :func:`undo`."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    written: list[Written] = []
    try:
        for name, data in files:
            path = folder / name
            previous = path.read_bytes() if path.is_file() else None
            _write_atomic(path, data)
            written.append(Written(name, path, previous))
    except OSError as exc:
        undo(written)
        raise ApiError(
            507,
            f"cannot write the upload: {exc.strerror}",
            hint="free some disk space, or check the knowledge base folder's permissions",
        ) from None
    return written


def undo(written: Iterable[Written]) -> None:
    """Put back what each written file replaced (or remove it if it was new)."""
    for item in written:
        try:
            if item.previous is None:
                item.path.unlink(missing_ok=True)
            else:
                _write_atomic(item.path, item.previous)
        except OSError:
            pass  # best effort: the store of record still holds the earlier version


def remove_files(folder: Path, names: Iterable[str]) -> None:
    """Delete the files of removed documents from the uploads folder (and folders left empty)."""
    root = folder.resolve()
    for name in names:
        path = folder / name
        try:
            path.unlink(missing_ok=True)
            parent = path.parent
            while parent.resolve() != root and parent.resolve().is_relative_to(root) and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        except OSError:
            pass
