"""The MCP server: the tools of :mod:`kb_mcp.tools` published through the official SDK's ``MCPServer``.

Every successful call returns the versioned JSON document as structured content and, as text,
exactly what the matching ``--json`` command prints (``fetch`` returns the passage's verbatim
text). A mistake is an MCP tool error (``isError: true``) whose text is the CLI's one-line
message, ``kb: error: <message> (<hint>)``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, cast

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE as MAX_BODY_BYTES
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError
from starlette.applications import Starlette

import kb_core
from kb_core.bounds import LIST_LIMIT, Bound, K
from kb_core.commands import error_line, storage_error
from kb_core.plugin.stores import Access, restricted_to
from kb_mcp.folders import PATH_MAX
from kb_mcp.messages import CheckedBodies, answered
from kb_mcp.people import PeopleAuth, Read, Unauthorized, authorization_of, caller
from kb_mcp.tools import TARGET_CHARS, THREAD_ID_CHARS, KbTools, Reply

LIMITS = kb_core.LIMITS


def schema_bounds(bound: Bound) -> dict[str, int | float]:
    """The ``minimum`` and ``maximum`` an argument's JSON Schema states: ``bound``'s (kb_core.bounds). kb_core's
    check enforces them, not pydantic, so that a call out of bounds gets the one line the CLI, the config and
    kb serve give (``k = 5000 is not a whole number from 1 to 1,000``)."""
    low, high = (int(v) if float(v).is_integer() else v for v in (bound.low, bound.high))
    return {"minimum": low, "maximum": high}


K_BOUNDS = schema_bounds(K)
K_WORDS = K.allowed.removeprefix("a whole number ")  # "from 1 to 1,000"
LIMIT_BOUNDS = schema_bounds(LIST_LIMIT)
TEXT_BOUNDS = {"minLength": 1, "maxLength": LIMITS.query_chars}
THREAD_ID_BOUNDS = {"minLength": 1, "maxLength": THREAD_ID_CHARS}
INSTRUCTIONS = (
    "A local knowledge base. Use search to find passages (each hit has a citation path#Lstart-Lend and a score in"
    " [0, 1]), fetch to read a citation's exact text, ask for an answer grounded in the documents with citations"
    " (or a refusal saying why; pass the thread_id it returns to ask a follow-up), threads to see earlier"
    " conversations, list_documents to see what is stored, answers to see stored answers and whether"
    " their citations still hold, and ingest to store text under a name (or files, from folders the user allowed)."
)


class KbServer(MCPServer):
    """``MCPServer`` whose argument validation errors are one kb line, like every other mistake, and whose
    transports answer every message the SDK cannot read (:mod:`kb_mcp.messages`) instead of dropping it.

    Over HTTP, on a knowledge base with people, each request names its person (:mod:`kb_mcp.people`) and each
    tool call runs with their grants; ``read`` runs ``work(kb)`` on the knowledge base to find out who."""

    def __init__(self, read: Read, **options: Any) -> None:
        super().__init__(**options)
        self.read = read
        self.over_http = False

    async def run_stdio_async(self) -> None:
        """Serve over stdin and stdout: each line is checked (:func:`kb_mcp.messages.answered`) before the SDK
        reads it (the SDK's own reader replaces bytes that are not UTF-8 and drops lines it cannot parse)."""
        stdin_lines = anyio.wrap_file(sys.stdin.buffer)
        write_to: list[Any] = []
        ready = anyio.Event()

        async def lines() -> AsyncIterator[str]:
            await ready.wait()
            async for line in answered(stdin_lines, write_to[0]):
                yield line

        async with stdio_server(stdin=cast(Any, lines())) as (read_stream, write_stream):
            write_to.append(write_stream)
            ready.set()
            lowlevel = self._lowlevel_server  # what MCPServer.run_stdio_async runs, with the checked lines
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    def streamable_http_app(self, **options: Any) -> Starlette:
        """The SDK's streamable HTTP app, each POSTed message checked first (:class:`kb_mcp.messages.CheckedBodies`)."""
        app = super().streamable_http_app(**options)
        path = options.get("streamable_http_path", "/mcp").rstrip("/")
        app.add_middleware(CheckedBodies, path=path, max_bytes=options.get("max_request_body_size", MAX_BODY_BYTES))
        app.add_middleware(PeopleAuth, read=self.read)  # (outermost: nobody's body is not even read)
        self.over_http = True
        return app

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool as the person the call's HTTP request names (:mod:`kb_mcp.people`); an unknown tool, or
        arguments of the wrong type or shape, are a one-line tool error worded as the CLI's, not the SDK's or
        pydantic's."""
        try:
            access = await anyio.to_thread.run_sync(lambda: self._caller(context))
        except Unauthorized as refused:
            return _error(refused.line)
        with restricted_to(access):  # (copied into the worker thread the SDK runs the tool on)
            return await self._call_tool(name, arguments, context)

    def _caller(self, context: Context[Any, Any] | None) -> Access | None:
        """Who makes a call: over HTTP the person its request's token names (None: no people), else nobody."""
        if not self.over_http:
            return None
        try:
            headers = context.headers if context is not None else None
        except ValueError:  # (no request: not a call a client made)
            headers = None
        return caller(self.read, authorization_of(headers) or "")

    async def _call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError) and not isinstance(exc, UnexpectedToolError):
                return _error(error_line(invalid_arguments(name, exc.__cause__)))
            known = {tool.name for tool in await self.list_tools()}  # asked only when a call fails
            if name in known:
                raise
            unknown = kb_core.NotFoundError(
                f"no tool named {name[:60]!r}", hint=f"the tools: {', '.join(sorted(known))}"
            )
            return _error(error_line(unknown))


def invalid_arguments(tool: str, error: ValidationError) -> kb_core.KbError:
    """A KbError naming each rejected argument and why (never the values, which are the caller's data)."""
    problems = []
    for problem in error.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        problems.append(" ".join(f"{where[:60]}: {problem['msg']}".split()))  # one line whatever the text
    return kb_core.KbError(f"invalid arguments for {tool}: {'; '.join(problems[:5])}", hint="see the tool's schema")


def _error(line: str) -> CallToolResult:
    """A tool error carrying exactly the line the CLI prints (a ToolError would get an SDK prefix)."""
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def _result(call: Callable[[], Reply]) -> CallToolResult:
    """Run one tool call; a KbError (or a storage failure) becomes a tool error with the CLI's line."""
    try:
        reply = call()
    except kb_core.KbError as exc:
        return _error(error_line(exc))
    except Exception as exc:
        storage = storage_error(exc)
        if storage is None:
            raise  # a bug: the SDK logs it and tells the client only "Error executing tool <name>"
        return _error(error_line(storage))
    return CallToolResult(
        content=[TextContent(type="text", text=reply.content_text())], structured_content=reply.envelope()
    )


def build_server(tools: KbTools) -> MCPServer:
    """An MCP server exposing ``search``, ``ask``, ``fetch``, ``answers``, ``threads``, ``list_documents`` and
    ``ingest`` over ``tools``."""
    server = KbServer(
        tools.service.read, name="kb", instructions=INSTRUCTIONS, version=kb_core.__version__, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    def search(
        query: Annotated[str, Field(description="What to search for.", json_schema_extra=TEXT_BOUNDS)],
        mode: Annotated[
            str | None,
            Field(
                description="lexical, vector or hybrid (default: [search] mode).",
                json_schema_extra={"enum": [*kb_core.SEARCH_MODES, None]},
            ),
        ] = None,
        k: Annotated[
            int | None,
            Field(
                description=f"How many hits, {K_WORDS} (default: [search] default_k).",
                json_schema_extra=K_BOUNDS,
            ),
        ] = None,
        path: Annotated[
            str | None,
            Field(
                description="Only documents whose path matches this fnmatch glob.",
                json_schema_extra={"minLength": 1, "maxLength": LIMITS.path_chars},
            ),
        ] = None,
    ) -> CallToolResult:
        """Search the knowledge base: ranked hits with citations (path#Lstart-Lend), scores and snippets."""
        return _result(lambda: tools.search(query, mode, k, path))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def ask(
        question: Annotated[
            str, Field(description="The question to answer from the documents.", json_schema_extra=TEXT_BOUNDS)
        ],
        mode: Annotated[
            str | None,
            Field(
                description="Retrieval mode: lexical, vector or hybrid (default: [search] mode).",
                json_schema_extra={"enum": [*kb_core.SEARCH_MODES, None]},
            ),
        ] = None,
        k: Annotated[
            int | None,
            Field(
                description=f"Chunks to retrieve, {K_WORDS}.",
                json_schema_extra=K_BOUNDS,
            ),
        ] = None,
        thread_id: Annotated[
            str | None,
            Field(
                description="Ask a follow-up in this thread: the thread_id an earlier ask returned. Leave it out to"
                " start a new thread. A follow-up may lean on the turns before it ('Which port does it listen on?').",
                json_schema_extra=THREAD_ID_BOUNDS,
            ),
        ] = None,
    ) -> CallToolResult:
        """Answer from the documents with citations, or refuse (grounded=false) with the reason; ask.v1.

        Every question is a turn of a thread. The result has answer.v1's fields plus thread_id,
        position (1 for a new thread), asked, and standalone: the question kb searched with, which
        reads on its own (a follow-up is completed from the earlier turns, e.g. "Which port does it
        listen on? (the Heliograph daemon)"). To ask a follow-up, pass thread_id back.
        A yes/no answer opens with Yes/No only when kb is confident (verdict_confidence); otherwise
        it says the passages do not settle it (verdict_withheld=true, verdict: the model's leaning).
        """
        return _result(lambda: tools.ask(question, mode, k, thread_id))

    @server.tool(annotations=read_only)
    def fetch(
        target: Annotated[
            str,
            Field(
                description="A citation (notes/a.md#L12-L34), a chunk id or a document path.",
                json_schema_extra={"minLength": 1, "maxLength": TARGET_CHARS},
            ),
        ],
    ) -> CallToolResult:
        """The verbatim text of a citation, a chunk or a whole document."""
        return _result(lambda: tools.fetch(target))

    @server.tool(annotations=read_only)
    def answers(
        answer_id: Annotated[
            str | None,
            Field(description="A stored answer's id (ans_...): that answer, with its citations as they stand now."),
        ] = None,
        stale: Annotated[bool, Field(description="Only the answers whose citations no longer hold.")] = False,
        limit: Annotated[
            int, Field(description="At most this many (newest first).", json_schema_extra=LIMIT_BOUNDS)
        ] = 20,
    ) -> CallToolResult:
        """Stored answers and whether they still hold: a cited passage that changed or vanished makes one stale."""
        return _result(lambda: tools.answers(answer_id, stale, limit))

    @server.tool(annotations=read_only)
    def threads(
        thread_id: Annotated[
            str | None,
            Field(
                description="A thread's id (thr_...): that thread's turns in order.", json_schema_extra=THREAD_ID_BOUNDS
            ),
        ] = None,
        limit: Annotated[
            int,
            Field(
                description="At most this many threads (most recently continued first).", json_schema_extra=LIMIT_BOUNDS
            ),
        ] = 20,
    ) -> CallToolResult:
        """Threads of follow-up questions (thread_list.v1: id, times, turns, first question), or one thread's
        turns with their answers (thread.v1). Pass a thread's id to ask as thread_id to go on with it."""
        return _result(lambda: tools.threads(thread_id, limit))

    @server.tool(annotations=read_only)
    def list_documents(
        prefix: Annotated[
            str,
            Field(
                description="Only documents whose path starts with this.",
                json_schema_extra={"maxLength": LIMITS.path_chars},
            ),
        ] = "",
    ) -> CallToolResult:
        """The stored documents (path, title, chunk count, ...)."""
        return _result(lambda: tools.list_documents(prefix))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def ingest(
        path: Annotated[
            str | None,
            Field(
                description="A file or folder on the server's machine, inside a folder the user allowed"
                " (kb mcp --ingest-folder; none by default).",
                json_schema_extra={"minLength": 1, "maxLength": PATH_MAX},
            ),
        ] = None,
        text: Annotated[
            str | None,
            Field(description="Text to store as a document (with name).", json_schema_extra={"minLength": 1}),
        ] = None,
        name: Annotated[
            str | None,
            Field(
                description="The stored path for text, e.g. notes/meeting.md (relative, no '..').",
                json_schema_extra={"minLength": 1, "maxLength": LIMITS.path_chars},
            ),
        ] = None,
    ) -> CallToolResult:
        """Store text under a name, or ingest a file or folder inside the folders the user allowed
        (files that disappeared from a folder are removed)."""
        return _result(lambda: tools.ingest(path, text, name))

    return server
