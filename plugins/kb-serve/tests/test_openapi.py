"""``GET /openapi.json`` describes every route, and its schemas are the ones the responses follow."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

import jsonschema

from kb_core import LIMITS
from kb_serve.openapi import document

ROUTES = {
    ("/health", "get"),
    ("/documents", "get"),
    ("/documents", "post"),
    ("/documents/{path}", "get"),
    ("/documents/{path}", "delete"),
    ("/documents/{path}/pages/{page}.png", "get"),
    ("/recordings/{path}", "get"),
    ("/answers", "get"),
    ("/answers/{answer_id}", "get"),
    ("/search", "get"),
    ("/ask", "post"),
    ("/ask/stream", "post"),
    ("/threads", "get"),
    ("/threads", "post"),
    ("/threads/{thread_id}", "get"),
    ("/threads/{thread_id}", "delete"),
    ("/threads/{thread_id}/ask", "post"),
    ("/v1/models", "get"),
    ("/v1/chat/completions", "post"),
}


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def test_the_openapi_document_describes_every_route_and_its_schemas_hold(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        doc = http.get("/openapi.json").json()
        assert doc["openapi"] == "3.1.0"
        described = {(path, method) for path, methods in doc["paths"].items() for method in methods}
        assert described == ROUTES
        schemas = doc["components"]["schemas"]
        for ref in set(refs(doc["paths"])):
            assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref
        for name, schema in schemas.items():
            jsonschema.Draft202012Validator.check_schema(schema)
            assert name

        jsonschema.validate(http.get("/health").json(), schemas["health.v1"])
        jsonschema.validate(http.get("/search", params={"q": "wind"}).json(), schemas["search_response.v1"])
        jsonschema.validate(http.get("/documents").json(), schemas["document_list.v1"])
        jsonschema.validate(http.get("/search").json(), schemas["error"])
        body = {"question": "When does Heliograph stow the panels?", "k": 4}
        jsonschema.validate(body, schemas["ask_request"])
        jsonschema.validate(http.post("/ask", json=body).json(), schemas["answer.v1"])
        turn = http.post("/threads", json=body).json()
        jsonschema.validate(turn, schemas["turn.v1"])
        jsonschema.validate(http.get("/threads").json(), schemas["thread_list.v1"])
        jsonschema.validate(http.get(f"/threads/{turn['thread_id']}").json(), schemas["thread.v1"])
        jsonschema.validate(http.get("/threads/thr_nonesuch").json(), schemas["error"])
        jsonschema.validate(http.delete(f"/threads/{turn['thread_id']}").json(), schemas["thread_deleted.v1"])


def test_the_title_is_the_apis_and_the_version_is_kb_serves() -> None:
    info = document()["info"]  # the title was once "kb-core>=0.2,<0.3", a dependency specifier
    assert info["title"] == "kb serve"
    assert info["version"] == metadata.version("kb-serve")


def test_the_openapi_document_states_the_limits() -> None:
    doc = document()
    search = {p["name"]: p for p in doc["paths"]["/search"]["get"]["parameters"]}
    assert search["q"]["required"] is True
    assert search["q"]["schema"] | {"pattern": None} == {
        "type": "string",
        "minLength": 1,
        "maxLength": LIMITS.query_chars,
        "pattern": None,
    }
    assert search["k"]["schema"] == {"type": "integer", "minimum": 1, "maximum": LIMITS.k}
    assert search["path"]["schema"]["maxLength"] == LIMITS.path_chars
    ask = doc["components"]["schemas"]["ask_request"]
    assert ask["properties"]["question"]["minLength"] == 1
    assert ask["properties"]["question"]["maxLength"] == LIMITS.query_chars
    assert ask["properties"]["k"] == search["k"]["schema"]
    upload = doc["paths"]["/documents"]["post"]["requestBody"]
    assert upload["content"]["multipart/form-data"]["schema"]["required"] == ["file"]
    assert str(LIMITS.upload_bytes) in upload["description"]
    for path in ("/ask", "/ask/stream", "/threads", "/threads/{thread_id}/ask"):
        operation = doc["paths"][path]["post"]
        assert str(LIMITS.json_body_bytes) in operation["requestBody"]["description"]
        assert {"400", "401", "403", "413", "415", "421", "503"} <= set(operation["responses"])
    for path, methods in doc["paths"].items():
        for method, operation in methods.items():
            codes = set(operation["responses"])
            assert {"400", "401", "421"} <= codes, (path, method)
            assert ("403" in codes) == (method != "get"), (path, method)  # every write may be cross-site
    assert {"413", "415"} <= set(doc["paths"]["/documents"]["post"]["responses"])
