"""The MCP server: the tools of :mod:`kb_mcp.tools` published through the official SDK's ``MCPServer``.

Every successful call returns the versioned JSON document as structured content and, as text,
exactly what the matching ``--json`` command prints (``fetch`` returns the passage's verbatim
text). A mistake is an MCP tool error (``isError: true``) whose text is the CLI's one-line
message, ``kb: error: <message> (<hint>)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

import kb_core
from kb_mcp.tools import KbTools, Reply

MODES = ["lexical", "vector", "hybrid"]
INSTRUCTIONS = (
    "A local knowledge base. Use search to find passages (each hit has a citation path#Lstart-Lend and a score in"
    " [0, 1]), fetch to read a citation's exact text, ask for an answer grounded in the documents with citations"
    " (or a refusal saying why), list_documents to see what is stored, and ingest to add files or text."
)


def _error(line: str) -> CallToolResult:
    """A tool error carrying exactly the line the CLI prints (a ToolError would get an SDK prefix)."""
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def _result(call: Callable[[], Reply]) -> CallToolResult:
    """Run one tool call; a KbError (or a storage failure) becomes a tool error with the CLI's line."""
    try:
        reply = call()
    except kb_core.KbError as exc:
        return _error(kb_core.error_line(exc))
    except Exception as exc:
        storage = kb_core.storage_error(exc)
        if storage is None:
            raise  # a bug: the SDK logs it and tells the client only "Error executing tool <name>"
        return _error(kb_core.error_line(storage))
    return CallToolResult(
        content=[TextContent(type="text", text=reply.content_text())], structured_content=reply.envelope()
    )


def build_server(tools: KbTools) -> MCPServer:
    """An MCP server exposing ``search``, ``ask``, ``fetch``, ``list_documents`` and ``ingest`` over ``tools``."""
    server: MCPServer = MCPServer(
        name="kb", instructions=INSTRUCTIONS, version=kb_core.__version__, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    def search(
        query: Annotated[str, Field(description="What to search for.")],
        mode: Annotated[
            str | None,
            Field(
                description="lexical, vector or hybrid (default: [search] mode).",
                json_schema_extra={"enum": [*MODES, None]},
            ),
        ] = None,
        k: Annotated[int | None, Field(description="How many hits, at least 1 (default: [search] default_k).")] = None,
        path: Annotated[str | None, Field(description="Only documents whose path matches this fnmatch glob.")] = None,
    ) -> CallToolResult:
        """Search the knowledge base: ranked hits with citations (path#Lstart-Lend), scores and snippets."""
        return _result(lambda: tools.search(query, mode, k, path))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def ask(
        question: Annotated[str, Field(description="The question to answer from the documents.")],
        mode: Annotated[
            str | None,
            Field(
                description="Retrieval mode: lexical, vector or hybrid (default: [search] mode).",
                json_schema_extra={"enum": [*MODES, None]},
            ),
        ] = None,
        k: Annotated[int | None, Field(description="Chunks to retrieve, at least 1.")] = None,
    ) -> CallToolResult:
        """Answer from the documents with citations, or refuse (grounded=false) with the reason; answer.v1."""
        return _result(lambda: tools.ask(question, mode, k))

    @server.tool(annotations=read_only)
    def fetch(
        target: Annotated[str, Field(description="A citation (notes/a.md#L12-L34), a chunk id or a document path.")],
    ) -> CallToolResult:
        """The verbatim text of a citation, a chunk or a whole document."""
        return _result(lambda: tools.fetch(target))

    @server.tool(annotations=read_only)
    def list_documents(
        prefix: Annotated[str, Field(description="Only documents whose path starts with this.")] = "",
    ) -> CallToolResult:
        """The stored documents (path, title, chunk count, ...)."""
        return _result(lambda: tools.list_documents(prefix))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def ingest(
        path: Annotated[str | None, Field(description="A file or folder on the server's machine to ingest.")] = None,
        text: Annotated[str | None, Field(description="Text to store as a document (with name).")] = None,
        name: Annotated[str | None, Field(description="The stored path for text, e.g. notes/meeting.md.")] = None,
    ) -> CallToolResult:
        """Ingest a file or folder (files that disappeared from a folder are removed), or store text under a name."""
        return _result(lambda: tools.ingest(path, text, name))

    return server
