"""The uploads folder: safe names for uploaded files, atomic writes, and undoing a failed upload.

Uploaded files live in ``<kb dir>/uploads/``, a folder kb-serve owns; their stored document
paths are relative to it (``notes/a.md``). A name from a client is untrusted, and is checked before
anything is written with the rules of ``kb_core.commands.check_new_file`` (the ones ``kb mcp``'s
inbox uses too): a plain relative path with no control or invisible characters, within kb's length
limits (255 bytes a part, as file systems count), with an extension some parser reads, that the
ingest ignore rules do not skip (``node_modules/``, ``[ingest] ignore``, ...) and that does not
clash with the files already there (``a.md`` cannot become a folder). kb-serve adds rules of its
own for names that travel between systems: no hidden parts, no ``: * ? " < > |``, no blanks around
a part.
"""

from __future__ import annotations

import errno
import os
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from kb_core.commands import NameRefused, check_new_file, clash_between, clean_name
from kb_serve.settings import ApiError

UPLOADS_DIR = "uploads"
_FORBIDDEN = {":", "*", "?", '"', "<", ">", "|"}
#: The status of each kind of refused name: a bad name is 400, one no parser reads 415, a clash 409.
_STATUS = {"invalid": 400, "ignored": 400, "no_parser": 415, "clash": 409}


def uploads_folder(kb_dir: Path) -> Path:
    """The folder inside the knowledge base directory where uploaded files are kept."""
    return kb_dir / UPLOADS_DIR


def _bad(name: str, why: str) -> ApiError:
    shown = name if len(name) <= 80 else name[:77] + "..."
    return ApiError(
        400, f"invalid file name {shown!r}: {why}", hint="use a relative path of plain names, like notes/backups.md"
    )


def _refused(exc: NameRefused) -> ApiError:
    message = f"invalid file name: {exc.message}" if exc.kind == "invalid" else exc.message
    return ApiError(_STATUS[exc.kind], message, hint=exc.hint)


def safe_name(name: str, extensions: Iterable[str]) -> str:
    """``name`` as a stored relative path (NFC, '/'-separated), or an ApiError saying why it cannot be one.

    The name alone: :func:`check_names` adds the ingest ignore rules and what the folder holds.
    """
    clean = unicodedata.normalize("NFC", name.strip())
    if _FORBIDDEN & set(clean):
        raise _bad(name, 'it contains one of : * ? " < > |')
    for part in clean.split("/"):
        if part != part.strip():
            raise _bad(name, "a part has surrounding blanks")
        if part.startswith(".") and part not in (".", ".."):
            raise _bad(name, "a part starts with '.' (hidden names are refused)")
    try:
        return clean_name(clean, extensions)
    except NameRefused as exc:
        raise _refused(exc) from None


def check_names(folder: Path, names: Sequence[str], extensions: Iterable[str], ignores: Sequence[str]) -> list[str]:
    """The stored paths of ``names`` (each once, as :func:`safe_name` returns them) uploaded together into
    ``folder``, checked against the ingest ignore rules and what the folder holds before anything is written:
    a 400 for an ignored name, 409 for one that clashes with a file or folder already there or with another
    name of the upload (``a.md`` and ``a.md/b.md``)."""
    known = list(extensions)
    try:
        checked = [check_new_file(folder, name, known, ignores) for name in names]
    except NameRefused as exc:
        raise _refused(exc) from None
    clash = clash_between(checked)
    if clash is not None:
        raise ApiError(409, clash, hint="upload the file and the folder under different names")
    return checked


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
        raise _write_error(exc) from None
    return written


def _write_error(exc: OSError) -> ApiError:
    """The status of a write that failed after the names were checked (a race, or a file system's own limits)."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in (errno.ENOTDIR, errno.EISDIR, errno.EEXIST):
        return ApiError(409, f"cannot write the upload: {reason}", hint="a file and a folder share this name")
    if exc.errno in (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL):
        return ApiError(400, f"cannot write the upload: {reason}", hint="use a shorter or plainer file name")
    return ApiError(
        507,
        f"cannot write the upload: {reason}",
        hint="free some disk space, or check the knowledge base folder's permissions",
    )


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
