"""What a command a plugin adds to ``kb`` needs: the session, ``--json`` and printing (public).

A command is a ``click`` command registered with the ``register_commands`` hook (``hookimpl`` and
``RegisterCommand`` come from :mod:`kb_core.plugin`, like every hook's, and only from there)::

    import click
    from kb_core.commands import Session, emit, json_option, pass_session
    from kb_core.plugin import RegisterCommand, hookimpl

    @click.command()
    @json_option
    @pass_session
    def hello(session: Session, as_json: bool) -> None:
        \"\"\"Say how many documents the knowledge base holds.\"\"\"
        count = session.kb().store.count_documents()
        emit(as_json, "hello.v1", {"documents": count}, lambda: click.echo(f"{count} documents"))

    @hookimpl
    def register_commands(register: RegisterCommand) -> None:
        register("hello", hello)

- :class:`Session` and :data:`pass_session`: the global options (``--kb``, ``--config``, ``--backend``);
  ``session.kb()`` opens the knowledge base they name.
- :func:`json_option` adds ``--json``; :func:`emit` prints the versioned JSON document (the same
  :func:`envelope` / :func:`dumps` that ``kb serve`` and ``kb mcp`` answer with) or the human text.
- :func:`terminal_progress` shows long work; :func:`shown` makes any text inert on a terminal.
- :func:`error_line` is the one line ``kb`` prints for a :class:`kb_core.KbError`;
  :func:`storage_error` turns a full disk or read-only storage into one.
- :func:`check_new_file` (with :func:`clean_name`, :func:`clash_between` and :class:`NameRefused`):
  whether a command that writes a client's file into a folder and ingests it (``kb serve``'s uploads,
  ``kb mcp``'s inbox) may use the client's name, checked before anything is written.
- :class:`Bounded`: the click type of an option whose range is a :mod:`kb_core.bounds` bound.
- :func:`check_unicode`: the one check of text a command takes in (arguments, lines, request bodies,
  messages) that is not valid Unicode, a one-line :class:`kb_core.KbError`; queries and questions get it
  from :func:`kb_core.check_text` too; :func:`check_path` the one check of a path, prefix, citation or id a
  request hands to a store (not too long, valid Unicode, no NUL).
- A front end that shows documents: :func:`stored_lines` puts a document's text back, line by line,
  from its chunks; :func:`stored_file` reads a document's own file while it is exactly what was
  ingested (a document parsed by one of :data:`TEXT_PARSERS` is that file's text);
  :func:`ocr_lines` gives the page, box and confidence of each line OCR read (from
  ``Document.metadata``), :func:`region_of` the region of a span of them, and lines under
  :data:`LOW_CONFIDENCE` are marked low.
"""

from kb_core.builtin.parsers import TEXT_PARSERS
from kb_core.cli.base import Session, emit, error_line, json_option, pass_session, terminal_progress
from kb_core.cli.options import Bounded
from kb_core.ingest.names import NameRefused, check_new_file, clash_between, clean_name
from kb_core.limits import check_path, check_unicode
from kb_core.output import dumps, envelope
from kb_core.storage.lines import stored_lines
from kb_core.storage.regions import LOW_CONFIDENCE, ocr_lines, region_of
from kb_core.storage.source_files import stored_file
from kb_core.storage.sqlite_files import storage_error
from kb_core.terminal import shown

__all__ = [
    "LOW_CONFIDENCE",
    "NameRefused",
    "TEXT_PARSERS",
    "Bounded",
    "Session",
    "check_new_file",
    "check_path",
    "check_unicode",
    "clash_between",
    "clean_name",
    "dumps",
    "emit",
    "envelope",
    "error_line",
    "json_option",
    "ocr_lines",
    "pass_session",
    "region_of",
    "shown",
    "storage_error",
    "stored_file",
    "stored_lines",
    "terminal_progress",
]
