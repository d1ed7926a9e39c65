"""The OpenAPI 3.1 document of the API (``GET /openapi.json``).

Response bodies are described by the very JSON Schemas kb ships for its ``--json`` output
(read from the ``kb_core.schemas`` package data) plus this plugin's own (``health.v1``, ``error``).
Parameters and bodies state the limits the server enforces (``kb_core.LIMITS``), and every
operation lists the errors it can answer with.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import metadata, resources
from typing import Any

from kb_core import LIMITS, SEARCH_MODES
from kb_serve.asking import MAX_NAME_CHARS, MAX_SEED, MAX_TEMPERATURE
from kb_serve.reading import DEFAULT_ANSWERS, MAX_ANSWERS
from kb_serve.threads import DEFAULT_THREADS, MAX_THREADS

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


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(name)}}}


TEXT_JSON = _json("document_text.v1", "")["content"]


def _errors(*codes: int, schema: str = "error") -> dict[str, Any]:
    """Error responses: ``codes`` plus those any request may get (400 no Host, 401 token, 421 host); each body
    ``schema`` (``/v1``'s: ``openai_error``)."""
    reasons = {
        400: "bad input (or no Host header; for an upload, a file name kb cannot store or ingest would skip)",
        401: "missing or wrong bearer token",
        403: "a write from another origin (Origin not allowed, or Sec-Fetch-Site: cross-site)",
        404: "no such document, stored answer or thread (for a question: no such language-model backend)",
        409: (
            "another writer, a name taken by another folder, an uploaded name that clashes with a file or"
            " folder of the uploads (a.md, then a.md/b.md), a thread a question is being answered in, or"
            " (a page image) a file changed since it was ingested or now outside its folder"
        ),
        413: "the body is larger than its limit",
        415: "wrong Content-Type (or no parser for the file type)",
        421: "the Host header names a host this server does not answer to",
        422: "the page cannot be rendered (damaged, over kb-documents' max_ocr_pixels, no renderer installed)",
        503: "the language model is busy or unavailable",
        504: "took longer than the timeout",
        507: "the knowledge base cannot be written (disk full)",
    }
    return {str(code): _json(schema, reasons[code]) for code in sorted({400, 401, 421, *codes})}


#: The errors of a write (any state-changing request: the same-origin check).
WRITE = (403,)
#: The errors of a request with a JSON body.
JSON_BODY = (403, 413, 415)
TEXT = {"type": "string", "minLength": 1, "maxLength": LIMITS.query_chars, "pattern": "\\S"}
K = {"type": "integer", "minimum": 1, "maximum": LIMITS.k}
PATH = {"type": "string", "maxLength": LIMITS.path_chars}
MODES = {"enum": list(SEARCH_MODES)}

PNG = {"image/png": {"schema": {"type": "string", "format": "binary"}}}
PAGE_IMAGE = {
    "summary": "A page OCR read (a scanned PDF page, an image file) as a PNG, its long side at most 1600 px",
    "description": "Made from the document's file, if still as ingested (SHA-256) and in its folder (README).",
    "operationId": "pageImage",
    "parameters": [
        {"name": "path", "in": "path", "required": True, "schema": PATH},
        {"name": "page", "in": "path", "required": True, "schema": {"type": "integer", "minimum": 1}},
    ],
    "responses": {
        "200": {"description": "the page; a document of that whole path: its text", "content": PNG | TEXT_JSON},
        **_errors(404, 409, 422, 504),
    },
}


def _query(name: str, description: str, schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "description": description, "schema": schema}


ASK_BODY = {
    "type": "object",
    "required": ["question"],
    "additionalProperties": False,
    "properties": {
        "question": {**TEXT, "description": "not only blanks"},
        "k": K,
        "mode": MODES,
        "temperature": {"type": "number", "minimum": 0, "maximum": MAX_TEMPERATURE},
        "seed": {"type": "integer", "minimum": 0, "maximum": MAX_SEED},
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
    data = [TOKEN_DATA, *(_ref(name) for name in first.values()), _ref(f"{last}.v1"), _ref("error")]
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
    json_body = {"application/json": {"schema": _ref(f"{last}.v1")}} if json_too else {}
    streamed = {"text/event-stream": {"schema": _ref(f"{last}_event")}}
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


def _paths() -> dict[str, Any]:
    ask_body = {
        "required": True,
        "description": ASK_BODY_DESCRIPTION,
        "content": {"application/json": {"schema": _ref("ask_request")}},
    }
    upload_schema = {
        "type": "object",
        "required": ["file"],
        "properties": {"file": {"type": "array", "minItems": 1, "items": {"type": "string", "format": "binary"}}},
    }
    return {**_main_paths(ask_body, upload_schema), **_thread_paths(ask_body), **_openai_paths()}


CHUNK_EVENT = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "type": "string",
            "description": "a chat.completion.chunk, or an error; the last event's data is [DONE]",
            "anyOf": [
                {"const": "[DONE]"},
                {
                    "contentMediaType": "application/json",
                    "contentSchema": {"oneOf": [_ref("openai_chat_chunk"), _ref("openai_error")]},
                },
            ],
        }
    },
}


def _openai_paths() -> dict[str, Any]:
    """``/v1``: OpenAI's chat API (README: "Use kb from your chat client"); its errors in OpenAI's shape."""
    completion = "the answer as the assistant's message (or, with stream true, chat.completion.chunk events)"
    thread = {"name": "X-Kb-Thread", "in": "header", "required": False, "schema": PATH}
    return {
        "/v1/models": {
            "get": {
                "summary": "The models: kb, and kb:NAME per installed language-model backend (OpenAI's list)",
                "operationId": "listModels",
                "responses": {"200": _json("openai_model_list", "the models"), **_errors(schema="openai_error")},
            }
        },
        "/v1/chat/completions": {
            "post": {
                "summary": "Ask the last user message in the conversation's kb thread, as OpenAI's chat API",
                "operationId": "chatCompletion",
                "parameters": [{**thread, "description": "the kb thread to ask in (as the body's kb_thread)"}],
                "requestBody": {
                    "required": True,
                    "description": ASK_BODY_DESCRIPTION.replace("the question", "the conversation"),
                    "content": {"application/json": {"schema": _ref("openai_chat_request")}},
                },
                "responses": {
                    "200": {
                        "description": completion,
                        "content": {
                            "application/json": {"schema": _ref("openai_chat_completion")},
                            "text/event-stream": {"schema": _ref("openai_chunk_event")},
                        },
                    },
                    **_errors(*JSON_BODY, 404, 409, 503, 504, 507, schema="openai_error"),
                },
            }
        },
    }


def _thread_paths(ask_body: dict[str, Any]) -> dict[str, Any]:
    stream = _query(
        "stream", "1: answer with Server-Sent Events (as does Accept: text/event-stream)", {"type": "string"}
    )
    described = "the turn (or, with stream=1 or Accept: text/event-stream, " + TURN_SSE_DESCRIPTION + ")"
    turn = sse_response(described, "turn")
    return {
        "/threads": {
            "get": {
                "summary": "Threads of follow-up questions, the most recently continued first (as kb threads list)",
                "operationId": "listThreads",
                "parameters": [
                    _query(
                        "limit",
                        f"how many (default {DEFAULT_THREADS})",
                        {"type": "integer", "minimum": 1, "maximum": MAX_THREADS},
                    )
                ],
                "responses": {"200": _json("thread_list.v1", "the threads"), **_errors(504)},
            },
            "post": {
                "summary": "Start a thread: ask its first question (as kb chat)",
                "operationId": "startThread",
                "parameters": [stream],
                "requestBody": ask_body,
                "responses": {"200": turn, **_errors(*JSON_BODY, 404, 503, 507)},
            },
        },
        "/threads/{thread_id}": {
            "get": {
                "summary": "One thread: each question as asked, what kb searched for, and the answer",
                "operationId": "showThread",
                "parameters": [THREAD_ID],
                "responses": {"200": _json("thread.v1", "the thread, its turns in order"), **_errors(404, 504)},
            },
            "delete": {
                "summary": "Delete a thread with its turns and their stored answers",
                "operationId": "deleteThread",
                "parameters": [THREAD_ID],
                "responses": {
                    "200": _json("thread_deleted.v1", "the thread and how many turns went with it"),
                    **_errors(*WRITE, 404, 409, 507),
                },
            },
        },
        "/threads/{thread_id}/ask": {
            "post": {
                "summary": "Ask a follow-up in a thread: made standalone, answered with the turns before it in mind",
                "operationId": "askInThread",
                "parameters": [THREAD_ID, stream],
                "requestBody": ask_body,
                "responses": {"200": turn, **_errors(*JSON_BODY, 404, 503, 504, 507)},
            }
        },
    }


def _main_paths(ask_body: dict[str, Any], upload_schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "/health": {
            "get": {
                "summary": "Server and knowledge base status",
                "operationId": "health",
                "responses": {"200": _json("health.v1", "status"), **_errors(504)},
            }
        },
        "/documents": {
            "get": {
                "summary": "List stored documents",
                "operationId": "listDocuments",
                "parameters": [_query("prefix", "only paths starting with this", PATH)],
                "responses": {"200": _json("document_list.v1", "the documents"), **_errors(504)},
            },
            "post": {
                "summary": "Upload files and ingest them",
                "operationId": "uploadDocuments",
                "requestBody": {
                    "required": True,
                    "description": UPLOAD_DESCRIPTION,
                    "content": {"multipart/form-data": {"schema": upload_schema}},
                },
                "responses": {
                    "200": _json("ingest_report.v1", "what the ingest did (failed files listed)"),
                    **_errors(*WRITE, 409, 413, 415, 507),
                },
            },
        },
        "/documents/{path}": {
            "get": {
                "summary": "A stored document's text, line by line (put back from its chunks)",
                "operationId": "documentText",
                "parameters": [{"name": "path", "in": "path", "required": True, "schema": PATH}],
                "responses": {"200": _json("document_text.v1", "the text"), **_errors(404, 504)},
            },
            "delete": {
                "summary": "Remove a document (a path ending in / removes a folder)",
                "operationId": "deleteDocument",
                "parameters": [{"name": "path", "in": "path", "required": True, "schema": PATH}],
                "responses": {"200": _json("removed.v1", "the removed paths"), **_errors(*WRITE, 404, 409, 507)},
            },
        },
        "/documents/{path}/pages/{page}.png": {"get": PAGE_IMAGE},
        "/answers": {
            "get": {
                "summary": "Stored questions, newest first (as kb answers list)",
                "operationId": "listAnswers",
                "parameters": [
                    _query(
                        "limit",
                        f"how many (default {DEFAULT_ANSWERS})",
                        {"type": "integer", "minimum": 1, "maximum": MAX_ANSWERS},
                    )
                ],
                "responses": {"200": _json("answer_history.v1", "the stored questions"), **_errors(504)},
            }
        },
        "/answers/{answer_id}": {
            "get": {
                "summary": "One stored answer with its citations",
                "operationId": "storedAnswer",
                "parameters": [{"name": "answer_id", "in": "path", "required": True, "schema": PATH}],
                "responses": {"200": _json("stored_answer.v1", "the stored answer"), **_errors(404, 504)},
            }
        },
        "/search": {
            "get": {
                "summary": "Search (as kb search)",
                "operationId": "search",
                "parameters": [
                    _query("q", "the query (not only blanks)", TEXT, required=True),
                    _query("mode", "lexical, vector or hybrid", MODES),
                    _query("k", "how many hits", K),
                    _query("path", "fnmatch glob on stored paths", PATH),
                ],
                "responses": {"200": _json("search_response.v1", "the hits"), **_errors(504)},
            }
        },
        "/ask": {
            "post": {
                "summary": "Answer a question with citations, or refuse (as kb ask)",
                "operationId": "ask",
                "parameters": [
                    _query("stream", "1: answer with Server-Sent Events (as /ask/stream)", {"type": "string"})
                ],
                "requestBody": ask_body,
                "responses": {
                    "200": sse_response("the answer (or, with stream=1, " + SSE_DESCRIPTION + ")", "answer"),
                    **_errors(*JSON_BODY, 404, 503, 507),
                },
            }
        },
        "/ask/stream": {
            "post": {
                "summary": "Answer a question, streamed",
                "operationId": "askStream",
                "requestBody": ask_body,
                "responses": {
                    "200": sse_response(SSE_DESCRIPTION, "answer", json_too=False),
                    **_errors(*JSON_BODY, 404, 503, 507),
                },
            }
        },
    }


@cache
def document() -> dict[str, Any]:
    """The OpenAPI document (built once)."""
    schemas: dict[str, Any] = {name: kb_schema(name) for name in KB_SCHEMAS}
    schemas.update({name: own_schema(name) for name in (*OWN_SCHEMAS, *OPENAI_SCHEMAS)})
    schemas["openai_chunk_event"] = CHUNK_EVENT
    schemas["ask_request"] = ASK_BODY
    schemas["answer_event"] = sse_event("answer")  # the stream of sse_response(..., "answer")
    schemas["turn_event"] = sse_event("turn", {"standalone": "standalone_event"})
    schemas["standalone_event"] = standalone_event()
    return {
        "openapi": "3.1.0",
        "info": {
            "title": TITLE,
            "version": metadata.version("kb-serve"),  # this plugin's version (GET /health says kb's)
            "description": "A local knowledge base: upload, search, ask (and follow up) with citations.",
        },
        "components": {"schemas": schemas, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}, {}],
        "paths": _paths(),
    }
