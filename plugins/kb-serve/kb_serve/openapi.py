"""The OpenAPI 3.1 document of the API (``GET /openapi.json``).

Response bodies are described by the very JSON Schemas kb ships for its ``--json`` output
(read from the ``kb_core.schemas`` package data) plus this plugin's own (``health.v1``, ``error``).
Parameters and bodies state the limits the server enforces (``kb_core.LIMITS``), and every
operation lists the errors it can answer with.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata
from typing import Any

from kb_core.bounds import LIST_LIMIT, SEED, TEMPERATURE
from kb_serve.openapi_parts import (
    ASK_BODY,
    ASK_BODY_DESCRIPTION,
    JSON_BODY,
    KB_SCHEMAS,
    MODES,
    OPENAI_SCHEMAS,
    OWN_SCHEMAS,
    PAGE_IMAGE,
    PATH,
    RECORDING,
    SSE_DESCRIPTION,
    TEXT,
    THREAD_ID,
    TITLE,
    TURN_SSE_DESCRIPTION,
    UPLOAD_DESCRIPTION,
    WRITE,
    K,
    bounded,
    error_responses,
    json_content,
    kb_schema,
    own_schema,
    query_param,
    schema_ref,
    sse_event,
    sse_response,
    standalone_event,
)
from kb_serve.reading import DEFAULT_ANSWERS
from kb_serve.threads import DEFAULT_THREADS


def _paths() -> dict[str, Any]:
    ask_body = {
        "required": True,
        "description": ASK_BODY_DESCRIPTION,
        "content": {"application/json": {"schema": schema_ref("ask_request")}},
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
                    "contentSchema": {"oneOf": [schema_ref("openai_chat_chunk"), schema_ref("openai_error")]},
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
                "responses": {
                    "200": json_content("openai_model_list", "the models"),
                    **error_responses(schema="openai_error"),
                },
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
                    "content": {"application/json": {"schema": schema_ref("openai_chat_request")}},
                },
                "responses": {
                    "200": {
                        "description": completion,
                        "content": {
                            "application/json": {"schema": schema_ref("openai_chat_completion")},
                            "text/event-stream": {"schema": schema_ref("openai_chunk_event")},
                        },
                    },
                    **error_responses(*JSON_BODY, 404, 409, 503, 504, 507, schema="openai_error"),
                },
            }
        },
    }


def _thread_paths(ask_body: dict[str, Any]) -> dict[str, Any]:
    stream = query_param(
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
                    query_param(
                        "limit",
                        f"how many (default {DEFAULT_THREADS})",
                        bounded(LIST_LIMIT),
                    )
                ],
                "responses": {"200": json_content("thread_list.v1", "the threads"), **error_responses(504)},
            },
            "post": {
                "summary": "Start a thread: ask its first question (as kb chat)",
                "operationId": "startThread",
                "parameters": [stream],
                "requestBody": ask_body,
                "responses": {"200": turn, **error_responses(*JSON_BODY, 404, 503, 507)},
            },
        },
        "/threads/{thread_id}": {
            "get": {
                "summary": "One thread: each question as asked, what kb searched for, and the answer",
                "operationId": "showThread",
                "parameters": [THREAD_ID],
                "responses": {
                    "200": json_content("thread.v1", "the thread, its turns in order"),
                    **error_responses(404, 504),
                },
            },
            "delete": {
                "summary": "Delete a thread with its turns and their stored answers",
                "operationId": "deleteThread",
                "parameters": [THREAD_ID],
                "responses": {
                    "200": json_content("thread_deleted.v1", "the thread and how many turns went with it"),
                    **error_responses(*WRITE, 404, 409, 507),
                },
            },
        },
        "/threads/{thread_id}/ask": {
            "post": {
                "summary": "Ask a follow-up in a thread: made standalone, answered with the turns before it in mind",
                "operationId": "askInThread",
                "parameters": [THREAD_ID, stream],
                "requestBody": ask_body,
                "responses": {"200": turn, **error_responses(*JSON_BODY, 404, 503, 504, 507)},
            }
        },
    }


def _main_paths(ask_body: dict[str, Any], upload_schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "/health": {
            "get": {
                "summary": "Server and knowledge base status",
                "operationId": "health",
                "responses": {"200": json_content("health.v1", "status"), **error_responses(504)},
            }
        },
        "/documents": {
            "get": {
                "summary": "List stored documents",
                "operationId": "listDocuments",
                "parameters": [query_param("prefix", "only paths starting with this", PATH)],
                "responses": {"200": json_content("document_list.v1", "the documents"), **error_responses(504)},
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
                    "200": json_content("ingest_report.v1", "what the ingest did (failed files listed)"),
                    **error_responses(*WRITE, 409, 413, 415, 507),
                },
            },
        },
        "/documents/{path}": {
            "get": {
                "summary": "A stored document's text, line by line (put back from its chunks)",
                "operationId": "documentText",
                "parameters": [{"name": "path", "in": "path", "required": True, "schema": PATH}],
                "responses": {"200": json_content("document_text.v1", "the text"), **error_responses(404, 504)},
            },
            "delete": {
                "summary": "Remove a document (a path ending in / removes a folder)",
                "operationId": "deleteDocument",
                "parameters": [{"name": "path", "in": "path", "required": True, "schema": PATH}],
                "responses": {
                    "200": json_content("removed.v1", "the removed paths"),
                    **error_responses(*WRITE, 404, 409, 507),
                },
            },
        },
        "/documents/{path}/pages/{page}.png": {"get": PAGE_IMAGE},
        "/recordings/{path}": {"get": RECORDING},
        "/answers": {
            "get": {
                "summary": "Stored questions, newest first (as kb answers list)",
                "operationId": "listAnswers",
                "parameters": [
                    query_param(
                        "limit",
                        f"how many (default {DEFAULT_ANSWERS})",
                        bounded(LIST_LIMIT),
                    )
                ],
                "responses": {"200": json_content("answer_history.v1", "the stored questions"), **error_responses(504)},
            }
        },
        "/answers/{answer_id}": {
            "get": {
                "summary": "One stored answer with its citations",
                "operationId": "storedAnswer",
                "parameters": [{"name": "answer_id", "in": "path", "required": True, "schema": PATH}],
                "responses": {
                    "200": json_content("stored_answer.v1", "the stored answer"),
                    **error_responses(404, 504),
                },
            }
        },
        "/search": {
            "get": {
                "summary": "Search (as kb search)",
                "operationId": "search",
                "parameters": [
                    query_param("q", "the query (not only blanks)", TEXT, required=True),
                    query_param("mode", "lexical, vector or hybrid", MODES),
                    query_param("k", "how many hits", K),
                    query_param("path", "fnmatch glob on stored paths", PATH),
                ],
                "responses": {"200": json_content("search_response.v1", "the hits"), **error_responses(504)},
            }
        },
        "/ask": {
            "post": {
                "summary": "Answer a question with citations, or refuse (as kb ask)",
                "operationId": "ask",
                "parameters": [
                    query_param("stream", "1: answer with Server-Sent Events (as /ask/stream)", {"type": "string"})
                ],
                "requestBody": ask_body,
                "responses": {
                    "200": sse_response("the answer (or, with stream=1, " + SSE_DESCRIPTION + ")", "answer"),
                    **error_responses(*JSON_BODY, 404, 503, 507),
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
                    **error_responses(*JSON_BODY, 404, 503, 507),
                },
            }
        },
    }


@cache
def document() -> dict[str, Any]:
    """The OpenAPI document (built once)."""
    schemas: dict[str, Any] = {name: kb_schema(name) for name in KB_SCHEMAS}
    schemas.update({name: own_schema(name) for name in (*OWN_SCHEMAS, *OPENAI_SCHEMAS)})
    chat = schemas["openai_chat_request"]["properties"]  # its numbers' ranges are kb_core.bounds', as /ask's
    for name, bound in (("temperature", TEMPERATURE), ("seed", SEED)):
        chat[name] = {**chat[name], **{k: v for k, v in bounded(bound).items() if k != "type"}}
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
