"""kb-mcp: ``kb mcp``, a Model Context Protocol server over a knowledge base.

Registers the command ``mcp``. Its tools (``search``, ``ask``, ``fetch``, ``list_documents``,
``ingest``) return the same versioned JSON documents as the matching ``kb ... --json`` commands
(``search_response.v1``, ``answer.v1``, ``document_list.v1``, ``ingest_report.v1``) plus
``fetch.v1``, whose JSON Schema ships in ``kb_mcp/schemas/``.
"""

from __future__ import annotations

import kb_core

__all__ = ["register_commands"]


@kb_core.hookimpl
def register_commands(register: kb_core.RegisterCommand) -> None:
    """The ``mcp`` command (imported only when the CLI starts, like every plugin command)."""
    from kb_mcp.command import mcp_command

    register("mcp", mcp_command)
