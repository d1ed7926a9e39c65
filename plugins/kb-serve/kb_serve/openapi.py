"""The OpenAPI 3.1 document of the API (``GET /openapi.json``).

Response bodies are described by the very JSON Schemas kb ships for its ``--json`` output
(read from the ``kb_core.schemas`` package data) plus this plugin's own (``health.v1``, ``error``).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import kb_core

KB_SCHEMAS = ("document_list.v1", "ingest_report.v1", "removed.v1", "search_response.v1", "answer.v1")
OWN_SCHEMAS = ("health.v1", "error", "serve.v1")


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


def _errors(*codes: int) -> dict[str, Any]:
    reasons = {
        400: "bad input",
        401: "missing or wrong bearer token",
        404: "no such document",
        409: "another writer, or a name taken by another folder",
        413: "too large",
        415: "not multipart, or no parser for the file type",
        503: "the language model is busy or unavailable",
        504: "took longer than the timeout",
    }
    return {str(code): _json("error", reasons[code]) for code in (401, *codes)}


def _query(name: str, description: str, kind: str = "string", required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "description": description, "schema": {"type": kind}}


ASK_BODY = {
    "type": "object",
    "required": ["question"],
    "additionalProperties": False,
    "properties": {
        "question": {"type": "string", "minLength": 1},
        "k": {"type": "integer", "minimum": 1},
        "mode": {"enum": ["lexical", "vector", "hybrid"]},
        "temperature": {"type": "number", "minimum": 0},
        "seed": {"type": "integer"},
        "explain": {"type": "boolean"},
        "constrained": {"type": "boolean"},
        "backend": {"type": "string"},
    },
}

SSE_DESCRIPTION = (
    'Server-Sent Events: `token` events (data `{"text": ...}`) as the answer is generated, then one '
    "`answer` event whose data is the answer.v1 JSON, or one `error` event (data: the error body)."
)


def _paths() -> dict[str, Any]:
    ask_body = {"required": True, "content": {"application/json": {"schema": _ref("ask_request")}}}
    return {
        "/health": {
            "get": {
                "summary": "Server and knowledge base status",
                "operationId": "health",
                "responses": {"200": _json("health.v1", "status"), **_errors()},
            }
        },
        "/documents": {
            "get": {
                "summary": "List stored documents",
                "operationId": "listDocuments",
                "parameters": [_query("prefix", "only paths starting with this")],
                "responses": {"200": _json("document_list.v1", "the documents"), **_errors()},
            },
            "post": {
                "summary": "Upload files and ingest them",
                "operationId": "uploadDocuments",
                "requestBody": {
                    "required": True,
                    "content": {
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "file": {"type": "array", "items": {"type": "string", "format": "binary"}}
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": _json("ingest_report.v1", "what the ingest did (failed files listed)"),
                    **_errors(400, 409, 413, 415),
                },
            },
        },
        "/documents/{path}": {
            "delete": {
                "summary": "Remove a document (a path ending in / removes a folder)",
                "operationId": "deleteDocument",
                "parameters": [{"name": "path", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": _json("removed.v1", "the removed paths"), **_errors(404, 409)},
            }
        },
        "/search": {
            "get": {
                "summary": "Search (as kb search)",
                "operationId": "search",
                "parameters": [
                    _query("q", "the query", required=True),
                    _query("mode", "lexical, vector or hybrid"),
                    _query("k", "how many hits", "integer"),
                    _query("path", "fnmatch glob on stored paths"),
                ],
                "responses": {"200": _json("search_response.v1", "the hits"), **_errors(400, 504)},
            }
        },
        "/ask": {
            "post": {
                "summary": "Answer a question with citations, or refuse (as kb ask)",
                "operationId": "ask",
                "parameters": [_query("stream", "1: answer with Server-Sent Events (as /ask/stream)")],
                "requestBody": ask_body,
                "responses": {
                    "200": {
                        "description": "the answer (or, with stream=1, " + SSE_DESCRIPTION + ")",
                        "content": {
                            "application/json": {"schema": _ref("answer.v1")},
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    **_errors(400, 503),
                },
            }
        },
        "/ask/stream": {
            "post": {
                "summary": "Answer a question, streamed",
                "operationId": "askStream",
                "requestBody": ask_body,
                "responses": {
                    "200": {
                        "description": SSE_DESCRIPTION,
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    },
                    **_errors(400, 503),
                },
            }
        },
    }


@cache
def document() -> dict[str, Any]:
    """The OpenAPI document (built once)."""
    schemas: dict[str, Any] = {name: kb_schema(name) for name in KB_SCHEMAS}
    schemas.update({name: own_schema(name) for name in OWN_SCHEMAS})
    schemas["ask_request"] = ASK_BODY
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "kb-core>=0.2,<0.3",
            "version": kb_core.__version__,
            "description": "A local knowledge base: upload, search, and ask questions answered with citations.",
        },
        "components": {"schemas": schemas, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}, {}],
        "paths": _paths(),
    }
