"""The pieces the OpenAPI document (:mod:`kb_serve.openapi`) is built of: the schemas it embeds, the
errors an operation can answer with, the limits of parameters and bodies, Server-Sent Events."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from kb_core import LIMITS, SEARCH_MODES
from kb_core.bounds import PAGE, SEED, TEMPERATURE, Bound
from kb_core.bounds import K as K_BOUND
from kb_serve.asking import MAX_NAME_CHARS

KB_SCHEMAS = (
    "document_list.v1",
    "ingest_report.v1",
    "removed.v1",
    "search_response.v1",
    "answer.v1",
    "answer_history.v1",
    "turn.v1",
    "thread.v1",
    "thread_list.v1",
    "thread_deleted.v1",
)
OWN_SCHEMAS = ("health.v1", "error", "serve.v1", "document_text.v1", "stored_answer.v1")
#: The schemas of ``/v1`` (OpenAI's shapes; kb's own fields ``kb`` and ``kb_thread`` in a completion).
OPENAI_SCHEMAS = (
    "openai_error",
    "openai_model_list",
    "openai_chat_request",
    "openai_chat_completion",
    "openai_chat_chunk",
)
TITLE = "kb serve"


def own_schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped in ``kb_serve/schemas``."""
    return json.loads(resources.files("kb_serve.schemas").joinpath(f"{name}.json").read_text(encoding="utf-8"))


def kb_schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped by kb itself."""
    return json.loads(resources.files("kb_core.schemas").joinpath(f"{name}.json").read_text(encoding="utf-8"))


def schema_ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def json_content(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema_ref(name)}}}


TEXT_JSON = json_content("document_text.v1", "")["content"]


def error_responses(*codes: int, schema: str = "error") -> dict[str, Any]:
    """Error responses: ``codes`` plus those any request may get (400 no Host, 401 token, 421 host); each body
    ``schema`` (``/v1``'s: ``openai_error``)."""
    reasons = {
        400: "bad input (or no Host header; for an upload, a file name kb cannot store or ingest would skip)",
        401: "missing or wrong bearer token",
        403: "a write from another origin (Origin not allowed, or Sec-Fetch-Site: cross-site)",
        404: "no such document, stored answer or thread (for a question: no such language-model backend)",
        409: (
            "a name taken by another folder, an uploaded name that clashes with a file or"
            " folder of the uploads (a.md, then a.md/b.md), a thread a question is being answered in, or"
            " (a page image, a recording) a file changed since it was ingested or now outside its folder"
        ),
        413: "the body is larger than its limit",
        415: "wrong Content-Type (or no parser for the file type)",
        416: "the Range asks for none of the file's bytes (Content-Range: bytes */size)",
        421: "the Host header names a host this server does not answer to",
        422: "the page cannot be rendered (damaged, over its parser's limits, its parser not installed)",
        503: (
            "busy, with Retry-After (another process writing the knowledge base, or the language model answering"
            " others), or the language model is unavailable"
        ),
        504: "took longer than the timeout",
        507: "the knowledge base cannot be written (disk full, or read-only storage)",
    }
    return {str(code): json_content(schema, reasons[code]) for code in sorted({400, 401, 421, *codes})}


#: The errors of a write (any state-changing request: the same-origin check).
WRITE = (403,)
#: The errors of a request with a JSON body.
JSON_BODY = (403, 413, 415)
TEXT = {"type": "string", "minLength": 1, "maxLength": LIMITS.query_chars, "pattern": "\\S"}


def bounded(bound: Bound) -> dict[str, Any]:
    """The JSON Schema of a number within ``bound`` (kb_core.bounds: the range the server enforces)."""

    def plain(value: float) -> float:
        return int(value) if float(value).is_integer() else value

    kind = "integer" if bound.kind == "whole" else "number"
    return {"type": kind, "minimum": plain(bound.low), "maximum": plain(bound.high)}


K = bounded(K_BOUND)
PATH = {"type": "string", "maxLength": LIMITS.path_chars}
MODES = {"enum": list(SEARCH_MODES)}

PNG = {"image/png": {"schema": {"type": "string", "format": "binary"}}}
PAGE_IMAGE = {
    "summary": "A page OCR read (a scanned PDF page, an image file) as a PNG, its long side at most 1600 px",
    "description": "Made from the document's file, if still as ingested (SHA-256) and in its folder (README).",
    "operationId": "pageImage",
    "parameters": [
        {"name": "path", "in": "path", "required": True, "schema": PATH},
        {"name": "page", "in": "path", "required": True, "schema": bounded(PAGE)},
    ],
    "responses": {
        "200": {"description": "the page; a document of that whole path: its text", "content": PNG | TEXT_JSON},
        **error_responses(404, 409, 422, 504),
    },
}


RECORDING = {
    "summary": "A recording kb transcribed, its own bytes (a Range of them: 206), for the page to play a moment",
    "description": "Only a transcribed recording a person may read, from its file if still as ingested (README).",
    "operationId": "recording",
    "parameters": [
        {"name": "path", "in": "path", "required": True, "schema": PATH},
        {"name": "Range", "in": "header", "required": False, "schema": {"type": "string", "example": "bytes=0-"}},
    ],
    "responses": {
        "200": {"description": "the whole file", "content": {"audio/*": {}, "video/*": {}}},
        "206": {"description": "the bytes the Range asked for", "content": {"audio/*": {}, "video/*": {}}},
        **error_responses(404, 409, 416, 504),
    },
}


def query_param(name: str, description: str, schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "description": description, "schema": schema}


ASK_BODY = {
    "type": "object",
    "required": ["question"],
    "additionalProperties": False,
    "properties": {
        "question": {**TEXT, "description": "not only blanks"},
        "k": K,
        "mode": MODES,
        "temperature": bounded(TEMPERATURE),
        "seed": bounded(SEED),
        "explain": {"type": "boolean"},
        "constrained": {"type": "boolean"},
        "backend": {"type": "string", "maxLength": MAX_NAME_CHARS},
    },
}

#: The data of a ``token`` event: a piece of the answer's text, as it is generated.
TOKEN_DATA = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string"}},
    "additionalProperties": False,
}


def sse_event(last: str, first: dict[str, str] | None = None) -> dict[str, Any]:
    """One event of an answer's Server-Sent Events stream (as OpenAPI 3.1 reads an event-stream schema: one
    event, not the whole stream): the ``first`` events (name: the schema of its data), ``token`` events, then
    one ``last`` event (data: the ``last``.v1 JSON) or one ``error`` event (data: the error body)."""
    first = first or {}
    data = [TOKEN_DATA, *(schema_ref(name) for name in first.values()), schema_ref(f"{last}.v1"), schema_ref("error")]
    return {
        "type": "object",
        "required": ["event", "data"],
        "properties": {
            "event": {"enum": [*first, "token", last, "error"]},
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": {"oneOf": data}},
        },
    }


def sse_description(last: str, first: str = "", last_note: str = "") -> str:
    """What :func:`sse_event`'s stream sends, in words (``first``: the events before the tokens)."""
    opening = f"first {first}, then " if first else ""
    return (
        f'Server-Sent Events: {opening}`token` events (data `{{"text": ...}}`) as the answer is generated, then one '
        f"`{last}` event whose data is the {last}.v1 JSON{last_note}, or one `error` event (data: the error body)."
    )


def sse_response(description: str, last: str, *, json_too: bool = True) -> dict[str, Any]:
    """A 200 response of a question: the ``last``.v1 JSON (with ``json_too``) or, streamed, the events of the
    schema ``last``_event (:func:`sse_event`)."""
    json_body = {"application/json": {"schema": schema_ref(f"{last}.v1")}} if json_too else {}
    streamed = {"text/event-stream": {"schema": schema_ref(f"{last}_event")}}
    return {"description": description, "content": {**json_body, **streamed}}


SSE_DESCRIPTION = sse_description("answer")
TURN_SSE_DESCRIPTION = sse_description(
    "turn",
    'one `standalone` event (data `{"question": ..., "method": ...}`: the question kb searches with and how it '
    "was made, sent as soon as kb knows it, before any `token`; for every question, `as_asked` included)",
    " (with `standalone`, the question kb searched with)",
)


def standalone_event() -> dict[str, Any]:
    """The data of a thread stream's ``standalone`` event (its ``method`` as turn.v1's)."""
    return {
        "type": "object",
        "description": "What kb searches with (sent before retrieval and any token): the question, how it was made.",
        "required": ["question", "method"],
        "properties": {"question": {"type": "string"}, "method": kb_schema("turn.v1")["properties"]["method"]},
        "additionalProperties": False,
    }


THREAD_ID = {"name": "thread_id", "in": "path", "required": True, "schema": PATH}
ASK_BODY_DESCRIPTION = (
    f"the question, as Content-Type application/json (optionally charset=utf-8), at most {LIMITS.json_body_bytes} bytes"
)
UPLOAD_DESCRIPTION = (
    "one or more `file` parts, each named by its file name (a relative path); at most --max-upload-bytes "
    f"(default {LIMITS.upload_bytes}) bytes in all and --max-file-bytes per file"
)
