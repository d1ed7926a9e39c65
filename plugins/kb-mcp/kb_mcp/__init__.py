"""kb-mcp: ``kb mcp``, a Model Context Protocol server over a knowledge base.

Registers the command ``mcp``. Its tools (``search``, ``ask``, ``fetch``, ``answers``, ``threads``,
``list_documents``, ``ingest``) return the same versioned JSON documents as the matching ``kb ... --json``
commands (``search_response.v1``, ``stored_answer.v1``, ``answer_history.v1``, ``thread.v1``,
``thread_list.v1``, ``document_list.v1``, ``ingest_report.v1``) plus two whose JSON Schemas ship in
``kb_mcp/schemas/``: ``fetch.v1`` and ``ask.v1`` (``answer.v1``'s fields and the thread turn's: every
question is asked in a thread, and the ``thread_id`` it returns asks a follow-up).
"""

from __future__ import annotations

from kb_core.plugin import RegisterCommand, hookimpl
from kb_core.plugin.options import RegisterOptions

__all__ = ["register_commands", "register_options"]


@hookimpl
def register_commands(register: RegisterCommand) -> None:
    """The ``mcp`` command (imported only when the CLI starts, like every plugin command)."""
    from kb_mcp.command import mcp_command

    register("mcp", mcp_command)


@hookimpl
def register_options(register: RegisterOptions) -> None:
    """The options of ``[backends.mcp]`` (the folders ``ingest`` may read), checked by kb at start."""
    from kb_mcp.folders import BACKEND, OPTIONS

    register(BACKEND, OPTIONS)
