"""What a command a plugin adds to ``kb`` needs: the session, ``--json`` and printing (public).

A command is a ``click`` command registered with the ``register_commands`` hook::

    import click
    import kb_core
    from kb_core.commands import Session, emit, json_option, pass_session

    @click.command()
    @json_option
    @pass_session
    def hello(session: Session, as_json: bool) -> None:
        \"\"\"Say how many documents the knowledge base holds.\"\"\"
        count = session.kb().store.count_documents()
        emit(as_json, "hello.v1", {"documents": count}, lambda: click.echo(f"{count} documents"))

    @kb_core.hookimpl
    def register_commands(register: kb_core.RegisterCommand) -> None:
        register("hello", hello)

- :class:`Session` and :data:`pass_session`: the global options (``--kb``, ``--config``, ``--backend``);
  ``session.kb()`` opens the knowledge base they name.
- :func:`json_option` adds ``--json``; :func:`emit` prints the versioned JSON document (the same
  :func:`envelope` / :func:`dumps` that ``kb serve`` and ``kb mcp`` answer with) or the human text.
- :func:`terminal_progress` shows long work; :func:`shown` makes any text inert on a terminal.
- :func:`error_line` is the one line ``kb`` prints for a :class:`kb_core.KbError`;
  :func:`storage_error` turns a full disk or read-only storage into one.
"""

from kb_core.cli.base import Session, emit, error_line, json_option, pass_session, terminal_progress
from kb_core.output import dumps, envelope
from kb_core.storage.sqlite_files import storage_error
from kb_core.terminal import shown

__all__ = [
    "Session",
    "dumps",
    "emit",
    "envelope",
    "error_line",
    "json_option",
    "pass_session",
    "shown",
    "storage_error",
    "terminal_progress",
]
