"""Opening SQLite files safely: owner-only creation, read-only fallbacks, and storage errors
(disk full, read-only, busy) as one-line :class:`~kb_core.errors.KbError` values: a busy database is a
:class:`~kb_core.errors.WriterBusyError` (try again later), never the disk-full or read-only error."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3 as stdlib_sqlite3
import urllib.parse
from pathlib import Path

try:
    from pysqlite3 import dbapi2 as sqlite3
except ImportError:  # pragma: no cover - the interpreter's own module is a fallback
    import sqlite3

from kb_core.errors import EXIT_STORAGE, KbError, WriterBusyError

#: SQLite's primary result codes of a write that could not happen: the lock is held, the disk is full, the
#: database is read-only (https://sqlite.org/rescode.html).
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_FULL = 5, 6, 8, 13


def writable(path: Path) -> bool:
    """Whether the database and its folder can be written (immutable files and read-only media cannot)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open a database that cannot be written: ``mode=ro``, or ``immutable=1`` when even the WAL
    index cannot be created next to it (read-only media)."""
    uri = "file:" + urllib.parse.quote(str(path.resolve()))
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30.0, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.Error:
        conn.close()
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)


def make_private_dir(path: Path) -> None:
    """Make ``path`` a folder only its owner can enter (0700), creating it and missing parents so.

    An existing folder of ours that others may read or enter (``mkdir -m 755``) is made 0700 too:
    the files kb and the index engines write inside are then private whatever their own modes.
    """
    for folder in reversed([path, *path.parents]):
        if not folder.is_dir():
            folder.mkdir(mode=0o700, exist_ok=True)
    status = path.stat()
    if status.st_mode & 0o077 and status.st_uid == os.getuid():
        with contextlib.suppress(OSError):  # read-only media: nothing is written there either
            os.chmod(path, 0o700)


def create_private_file(path: Path) -> None:
    """Create an empty file readable by its owner only (0600), unless it exists."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def storage_error(exc: BaseException, kb_dir: Path | str = "") -> KbError | None:
    """A full disk or read-only storage, met anywhere (SQLite, an index engine, a plain write), as a
    one-line :class:`KbError`; None for anything else."""
    text = str(exc)
    sqlite_errors = (sqlite3.OperationalError, stdlib_sqlite3.OperationalError)  # (kb's, or an engine's own)
    if isinstance(exc, sqlite_errors) and sqlite_kind(exc) is not None:
        return storage_error_for(kb_dir, exc)
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return storage_error_for(kb_dir, sqlite3.OperationalError("disk is full"))
    if isinstance(exc, OSError) and exc.errno == errno.EROFS:
        return storage_error_for(kb_dir, sqlite3.OperationalError("read-only file system"))
    if "No space left on device" in text or "os error 28" in text:  # e.g. an index engine's own error type
        return storage_error_for(kb_dir, sqlite3.OperationalError("disk is full"))
    return None


def sqlite_kind(exc: BaseException) -> str | None:
    """``"busy"``, ``"full"`` or ``"read-only"`` for an SQLite error of that kind, by its result code (its text
    when the driver gives none); None for any other."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        primary = code & 0xFF  # (an extended code's low byte is its primary code)
        kinds = {SQLITE_BUSY: "busy", SQLITE_LOCKED: "busy", SQLITE_FULL: "full", SQLITE_READONLY: "read-only"}
        return kinds.get(primary)
    text = str(exc)
    if text.startswith("database is locked") or "table is locked" in text or "database is busy" in text:
        return "busy"
    if "disk is full" in text:
        return "full"
    if "readonly" in text or "read-only" in text:
        return "read-only"
    return None


def storage_error_for(kb_dir: Path | str, exc: Exception) -> KbError:
    """The one-line error for an SQLite failure to write (disk full, read-only, busy, other); busy is a
    :class:`WriterBusyError`, exit code 5 as the others."""
    text, where = str(exc), f" at {kb_dir}" if kb_dir else ""
    kind = sqlite_kind(exc)
    if kind == "busy":
        return WriterBusyError(
            f"the knowledge base{where} is busy: another process holds its write lock ({text})",
            hint="wait for the other kb process to finish, then try again",
            exit_code=EXIT_STORAGE,
        )
    if kind == "full":
        return KbError(
            f"the disk is full: kb stopped writing the knowledge base{where}; what was stored before is intact",
            hint="free some space and run the command again; the next 'kb ingest' completes an interrupted one",
            exit_code=EXIT_STORAGE,
        )
    if kind == "read-only":
        return KbError(
            f"the knowledge base{where} is read-only", hint="copy it somewhere writable", exit_code=EXIT_STORAGE
        )
    return KbError(f"cannot write the knowledge base{where}: {text}", exit_code=EXIT_STORAGE)
