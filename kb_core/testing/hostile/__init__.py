"""Hostile inputs for kb and its plugins (hypothesis strategies), and the harness that judges what they get.

Strategies: command lines of every ``kb`` command and option (:func:`cli_arguments`, walking
:func:`kb_commands`), configuration files and ``KB_*`` environments (:func:`config_files`,
:func:`environments`), ``.kbignore`` lines, citations, HTTP requests for every operation of an OpenAPI
document (:func:`http_requests`) and MCP messages for every tool (:func:`mcp_messages`). The harness runs
one input with a time limit (and, for a process, a 2 GB address-space limit) and gives an
:class:`Outcome`: kb answered or refused it, or it met one of :data:`KINDS` (an internal error, a 5xx, a
JSON-RPC internal error, a hang, unbounded memory, a crash). Needs ``pip install kb-core[test]``.
"""

from kb_core.testing.hostile.commands import (
    Places,
    citations,
    cli_arguments,
    command_tree,
    config_files,
    environments,
    ignore_lines,
    kb_commands,
)
from kb_core.testing.hostile.requests import Request, http_requests, mcp_messages, send
from kb_core.testing.hostile.runs import (
    KINDS,
    MEMORY_LIMIT_BYTES,
    TIME_LIMIT_S,
    McpLines,
    Outcome,
    judge_exit,
    judge_http,
    judge_jsonrpc,
    run_in_process,
    run_process,
    runnable,
)
from kb_core.testing.hostile.values import number_texts, texts

__all__ = [
    "KINDS",
    "MEMORY_LIMIT_BYTES",
    "TIME_LIMIT_S",
    "McpLines",
    "Outcome",
    "Places",
    "Request",
    "citations",
    "cli_arguments",
    "command_tree",
    "config_files",
    "environments",
    "http_requests",
    "ignore_lines",
    "judge_exit",
    "judge_http",
    "judge_jsonrpc",
    "kb_commands",
    "mcp_messages",
    "number_texts",
    "run_in_process",
    "run_process",
    "runnable",
    "send",
    "texts",
]
