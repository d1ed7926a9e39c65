"""Errors a user can cause, each with a one-line message and a documented exit code."""

from __future__ import annotations

EXIT_OK = 0
EXIT_NO_RESULT = 1  # no search result, or an answer that was refused
EXIT_USAGE = 2  # bad arguments, bad input, bad configuration
EXIT_UNHEALTHY = 3  # kb doctor found problems
EXIT_PARTIAL = 4  # an ingest finished, but some files failed (each reported on stderr)
EXIT_STORAGE = 5  # the knowledge base cannot be written: disk full, read-only, or busy
EXIT_INTERRUPTED = 130  # Ctrl-C, or a caller that stopped an answer


class KbError(Exception):
    """A failure the user can act on. ``str(error)`` is one line that says what to do."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, hint: str = "", exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConfigError(KbError):
    """The configuration file or an override is invalid."""


class NotFoundError(KbError):
    """A document, chunk, plugin or model that was asked for does not exist."""


class WriterBusyError(KbError):
    """Another kb process is writing to the same knowledge base; try again when it has finished."""


class ModelUnavailableError(KbError):
    """A model file, package or server could not be reached. Never triggers a download."""


class Cancelled(KbError):
    """Raised by a token callback to stop the answer being generated (a client left, Stop, Ctrl-C).

    The model's stream is closed at once and nothing is stored for the question.
    """

    exit_code = EXIT_INTERRUPTED
