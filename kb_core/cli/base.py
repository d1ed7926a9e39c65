"""What every ``kb`` command is built from: the session, ``--json`` output, progress bars, error lines.

Command modules (and plugins' commands) import this module; :mod:`kb_core.cli.main` assembles
them into the ``kb`` group. Exit codes: 0 ok; 1 no result or a refused answer; 2 usage or input error; 3 unhealthy
(``kb doctor``); 4 an ingest finished but some files failed; 5 the knowledge base cannot be
written (disk full, read-only); 130 interrupted. Errors a user can cause print one line on
stderr, with control characters escaped (see :mod:`kb_core.terminal`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from kb_core.app import KnowledgeBase
from kb_core.config import Config, load_config
from kb_core.errors import KbError
from kb_core.extend.options import check_declared
from kb_core.extend.registry import registry
from kb_core.output import dumps
from kb_core.terminal import raw_stream, shown
from kb_core.types import Progress

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Session:
    """What every command receives: the global options, and the knowledge base opened on demand."""

    def __init__(self, config_path: str | None, kb_dir: str | None, backend: str | None) -> None:
        self.config_path = config_path
        self.kb_dir = kb_dir
        self.overrides: dict[str, Any] = {"models.llm.backend": backend}
        self._config: Config | None = None
        self._kb: KnowledgeBase | None = None

    @property
    def config(self) -> Config:
        """The effective configuration (loaded once)."""
        if self._config is None:
            config = load_config(self.config_path, self.kb_dir, self.overrides)
            check_declared(config, registry().options)  # the plugins' [backends.NAME] tables, at start
            self._config = config
        return self._config

    def kb(self, *, create: bool = False) -> KnowledgeBase:
        """The knowledge base; ``create=False`` refuses to make one where none exists."""
        if self._kb is None:
            self._kb = KnowledgeBase(self.config, create=create)
        return self._kb

    def close(self) -> None:
        """Release the knowledge base."""
        if self._kb is not None:
            self._kb.close()


pass_session = click.make_pass_decorator(Session)


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--json`` (machine-readable output with a schema_version) to a command."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (versioned schema) instead of text.")(func)


def emit(as_json: bool, schema_version: str, payload: Any, human: Callable[[], None]) -> None:
    """Print ``payload`` as versioned JSON, or call ``human`` to print it for people."""
    if as_json:
        click.echo(dumps(schema_version, payload))
    else:
        human()


@contextmanager
def terminal_progress(enabled: bool = True) -> Iterator[Progress | None]:
    """A progress callback drawing one bar per stage on stderr; None when not a terminal or disabled."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    bars: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            for other in bars.values():
                other.render_finish()
            bar = bars[stage] = click.progressbar(
                length=max(total, 1), label=stage.ljust(18), file=raw_stream(sys.stderr)
            )
            bar.render_progress()
        bar.update(done - bar.pos)
        if done >= total:  # a finished stage ends its line before anything else is printed
            bar.render_finish()
            del bars[stage]

    try:
        yield update
    finally:
        for bar in bars.values():
            bar.render_finish()


MAX_ERROR_CHARS = 300


def error_line(exc: KbError) -> str:
    """One inert line for an error: control characters escaped, a long message (a query) shortened."""
    message = shown(exc.message)
    if len(message) > MAX_ERROR_CHARS:
        message = f"{message[:MAX_ERROR_CHARS]}… ({len(message) - MAX_ERROR_CHARS} more characters)"
    return f"kb: error: {message}" + (f" ({shown(exc.hint)})" if exc.hint else "")
