"""A stored document's own file, read back only while it is exactly what was ingested.

A front end that shows a document's file (``kb mcp`` a text file's own text, ``kb serve`` a scan's
page image) reads it with :func:`stored_file`: only the file at the stored path inside the folder
it was ingested from (a link leading out of it only when links are followed), opened without
waiting (a FIFO, a device), read no further than the stored size, and returned only when its SHA-256
is the stored one.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path, PurePosixPath

from kb_core.errors import KbError, NotFoundError
from kb_core.types import Document

CHANGED_HINT = "run kb ingest on its folder to read it again"
#: Never waiting (on a FIFO, a device) and never through a link swapped in after the path was resolved.
_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW


def stored_file(document: Document, *, follow_symlinks: bool = False) -> bytes:
    """The bytes of ``document``'s file as they were ingested.

    A :class:`~kb_core.errors.NotFoundError` when the file or its folder is gone, a
    :class:`~kb_core.errors.KbError` when it changed, is not a regular file, cannot be read or
    leads outside its folder (through a link, unless ``follow_symlinks``).
    """
    name = document.path
    relative = PurePosixPath(name)
    if not document.source_root or not Path(document.source_root).is_absolute():
        raise NotFoundError(f"the folder {name!r} was ingested from is not known", hint=CHANGED_HINT)
    if relative.is_absolute() or ".." in relative.parts:
        raise KbError(f"the stored path {name!r} leads outside its folder", hint=CHANGED_HINT)
    try:
        root = Path(document.source_root).resolve()
        file = (root / relative).resolve()
        if not (follow_symlinks or file.is_relative_to(root)):
            raise KbError(f"the file of {name!r} now leads outside its folder", hint=CHANGED_HINT)
        if not stat.S_ISREG(file.stat().st_mode):  # (a device is not even opened)
            raise _changed(name)
        # What is opened may have been swapped since: without blocking (a FIFO), and checked again.
        with os.fdopen(os.open(file, _OPEN), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size != document.size:  # (never read a file grown huge)
                raise _changed(name)
            data = handle.read(document.size + 1)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFoundError(f"the file of {name!r} is gone from its folder", hint=CHANGED_HINT) from None
    except (OSError, RuntimeError) as exc:  # (RuntimeError: a loop of links, before Python 3.13)
        reason = getattr(exc, "strerror", None) or exc
        raise KbError(f"the file of {name!r} cannot be read ({reason})", hint=CHANGED_HINT) from None
    if hashlib.sha256(data).hexdigest() != document.content_hash:
        raise _changed(name)
    return data


def _changed(name: str) -> KbError:
    return KbError(f"{name!r} changed since it was ingested; run kb ingest", hint=CHANGED_HINT)
