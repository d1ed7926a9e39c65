"""Errors as the API shows them: one line of JSON ``{"error", "hint"}``, with no absolute local path in it."""

from __future__ import annotations

import re

from starlette.responses import JSONResponse

from kb_core import KbError, ModelUnavailableError, NotFoundError

EXIT_STORAGE = 5
#: Characters of an error message or hint kept in a response (a client's input may be echoed in it).
MAX_TEXT_CHARS = 400
# An absolute path of two or more parts (POSIX, or a Windows drive): a slash that does not follow a
# word, a URL or another path; its last part is kept, the folders before it are not shown.
_POSIX_PATH = re.compile(r"(?<![\w.~:/>\\-])/(?:[^\s/'\"`]+/)+(?=[^\s/'\"`]+)")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\(?:[^\s\\'\"`]+\\)+(?=[^\s\\'\"`]+)")


class ApiError(KbError):
    """A KbError that names its HTTP status (413 too large, 415 unsupported, 503 busy, ...)."""

    def __init__(self, status: int, message: str, *, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.status = status


def status_of(exc: KbError) -> int:
    """The HTTP status of a kb error."""
    if isinstance(exc, ApiError):
        return exc.status
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ModelUnavailableError):
        return 503
    if exc.exit_code == EXIT_STORAGE:
        return 507
    return 400


def cut_paths(text: str) -> str:
    """``text`` with every absolute path of two or more parts cut to its last part.

    >>> cut_paths("cannot open /home/ann/kb/kb.sqlite3: locked")
    'cannot open …/kb.sqlite3: locked'
    """
    return _WINDOWS_PATH.sub("…\\\\", _POSIX_PATH.sub("…/", text))


def public_text(text: str) -> str:
    """``text`` as an error may carry it: one line, at most MAX_TEXT_CHARS, with :func:`cut_paths`."""
    line = cut_paths(" ".join(text.split()))
    return line if len(line) <= MAX_TEXT_CHARS else line[: MAX_TEXT_CHARS - 1] + "…"


def error_body(message: str, hint: str = "") -> dict[str, str]:
    """The error object every failure uses (also the data of an ``error`` event)."""
    return {"error": public_text(message) or "error", "hint": public_text(hint)}


def error_response(status: int, message: str, hint: str = "", headers: dict[str, str] | None = None) -> JSONResponse:
    """The error response every failure uses."""
    extra = dict(headers or {})
    if status == 401:
        extra["WWW-Authenticate"] = "Bearer"
    return JSONResponse(error_body(message, hint), status_code=status, headers=extra or None)
