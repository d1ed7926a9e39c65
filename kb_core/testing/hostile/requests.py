"""Hostile HTTP requests for every operation of an OpenAPI document, and hostile MCP messages for every tool."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import attrs
from hypothesis import strategies as st

from kb_core.testing.hostile.commands import citations
from kb_core.testing.hostile.runs import TIME_LIMIT_S, Outcome, judge_http
from kb_core.testing.hostile.values import ESCAPES, deep, depths, json_values, number_texts, numbers, texts


@attrs.frozen
class Request:
    """One HTTP request: ``target`` is the path and query as sent (already %-encoded, escapes left as they are)."""

    method: str
    target: str
    body: bytes | None = None
    headers: dict[str, str] = attrs.field(factory=dict)

    def __str__(self) -> str:
        body = "" if self.body is None else f" body={self.body[:300]!r}"
        return f"{self.method} {self.target[:300]}{body} headers={self.headers}"


def _in_url(text: str) -> str:
    return quote(text[:3000].encode("utf-8", "surrogatepass"), safe="")


def url_parts(documents: Sequence[str] = ()) -> st.SearchStrategy[str]:
    """A piece of a URL (a path segment or query value): %-encoded text, raw escapes, numbers, stored paths."""
    return st.one_of(
        texts(4).map(_in_url),
        st.lists(st.sampled_from(ESCAPES), min_size=1, max_size=3).map("".join),
        number_texts().map(_in_url),
        st.sampled_from(list(documents) or ["x"]).map(lambda p: quote(p, safe="/")),
        citations(documents or ("a.md",)).map(_in_url),
    )


def _resolve(schema: Any, document: dict[str, Any]) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        node: Any = document
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        schema = node
    return schema


def _value(schema: Any, document: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A JSON value for ``schema``: of its type, out of its bounds, or of another type altogether."""
    schema = _resolve(schema, document)
    kind = schema.get("type") if isinstance(schema, dict) else None
    typed: list[st.SearchStrategy[Any]] = []
    if isinstance(schema, dict) and schema.get("enum"):
        typed.append(st.sampled_from(schema["enum"]))
    if kind in ("integer", "number"):
        typed += [
            numbers(),
            st.sampled_from([v for v in (schema.get("minimum"), schema.get("maximum")) if v is not None] or [0]),
        ]
    elif kind == "string":
        typed.append(texts())
    elif kind == "boolean":
        typed.append(st.booleans())
    elif kind == "array":
        typed.append(st.lists(_value(schema.get("items", {}), document), max_size=3))
    elif kind == "object" and isinstance(schema.get("properties"), dict):
        typed.append(_object(schema, document))
    return st.one_of(*typed, *typed, json_values(4)) if typed else json_values(4)


def _object(schema: dict[str, Any], document: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties", {})
    required = list(schema.get("required", []))
    fields = {name: _value(sub, document) for name, sub in properties.items()}
    optional = st.fixed_dictionaries({}, optional=fields) if fields else st.just({})
    base = st.fixed_dictionaries({k: fields[k] for k in required if k in fields}) if required else st.just({})
    return st.tuples(base, optional, st.dictionaries(texts(2), json_values(2), max_size=1)).map(
        lambda parts: {**parts[1], **parts[0], **parts[2]}
    )


def _json_body(schema: Any, document: dict[str, Any]) -> st.SearchStrategy[bytes]:
    as_json = _value(schema, document).map(lambda v: json.dumps(v, allow_nan=True).encode("utf-8", "surrogatepass"))
    broken = st.one_of(
        st.binary(max_size=40),
        depths().map(lambda d: deep(d, "json").encode()),
        depths().map(lambda d: deep(d).encode()),
        st.sampled_from([b"", b"{", b'{"question": "\xff\xfe"}', b'{"question": "\\ud800"}', b"null", b"[]", b"1e999"]),
    )
    return st.one_of(as_json, as_json, as_json, broken)


def _multipart(field: str) -> st.SearchStrategy[tuple[bytes, str]]:
    boundary = "kbhostile"
    name = st.one_of(
        texts(3).map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.binary(min_size=1, max_size=20),
        st.sampled_from([b"a.md", b"\xff.md", b"../a.md", b"a.svg", b"", b"a\x00.md", b'a".md', b"CON"]),
    )
    content = st.one_of(texts(4).map(lambda s: s.encode("utf-8", "surrogatepass")), st.binary(max_size=60))

    def build(pair: tuple[bytes, bytes]) -> tuple[bytes, str]:
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="'.encode()
        body = (
            head + pair[0] + b'"\r\nContent-Type: text/markdown\r\n\r\n' + pair[1] + f"\r\n--{boundary}--\r\n".encode()
        )
        return body, f"multipart/form-data; boundary={boundary}"

    return st.tuples(name, content).map(build)


def _operation(
    path: str, method: str, spec: dict[str, Any], document: dict[str, Any], documents: Sequence[str]
) -> st.SearchStrategy[Request]:
    parameters = [_resolve(p, document) for p in spec.get("parameters", [])]
    segments = {p["name"]: url_parts(documents) for p in parameters if p.get("in") == "path"}
    queries = [p for p in parameters if p.get("in") == "query"]

    def query_value(parameter: dict[str, Any]) -> st.SearchStrategy[str]:
        typed = _value(parameter.get("schema", {}), document).map(
            lambda v: _in_url(v if isinstance(v, str) else json.dumps(v))
        )
        return st.one_of(typed, url_parts(documents))

    pairs = st.lists(
        st.one_of(
            *(st.tuples(st.just(q["name"]), query_value(q)) for q in queries),
            st.tuples(texts(1).map(_in_url), url_parts()),
        )
        if queries
        else st.tuples(texts(1).map(_in_url), url_parts()),
        max_size=4,
    )
    content = spec.get("requestBody", {}).get("content", {})
    bodies: st.SearchStrategy[tuple[bytes | None, str | None]] = st.just((None, None))
    if "application/json" in content:
        bodies = _json_body(content["application/json"].get("schema", {}), document).map(
            lambda b: (b, "application/json")
        )
    elif "multipart/form-data" in content:
        bodies = _multipart("file").map(lambda pair: (pair[0], pair[1]))
    bodies = st.one_of(
        bodies,
        bodies,
        bodies,
        st.tuples(st.binary(max_size=30), st.sampled_from(["text/plain", "application/json", "multipart/form-data"])),
    )

    def build(parts: tuple[dict[str, str], list[tuple[str, str]], tuple[bytes | None, str | None]]) -> Request:
        filled, query, (body, content_type) = parts
        target = path
        for name, value in filled.items():
            target = target.replace("{" + name + "}", value or "x")
        if query:
            target += "?" + "&".join(f"{k}={v}" for k, v in query)
        return Request(method.upper(), target, body, {"Content-Type": content_type} if content_type else {})

    return st.tuples(st.fixed_dictionaries(segments), pairs, bodies).map(build)


def http_requests(document: dict[str, Any], documents: Sequence[str] = ()) -> st.SearchStrategy[Request]:
    """A request to an operation of the OpenAPI ``document`` (every path and method in it): hostile path
    segments, query values by their schemas and beside them, JSON bodies by their schemas, uploads."""
    operations = [
        _operation(path, method, spec, document, documents)
        for path, item in sorted(document.get("paths", {}).items())
        for method, spec in sorted(item.items())
        if method in ("get", "post", "put", "delete", "patch")
    ]
    return st.one_of(*operations)


def mcp_messages(
    tools: Sequence[dict[str, Any]], documents: Sequence[str] = ()
) -> st.SearchStrategy[dict[str, Any] | bytes]:
    """A JSON-RPC ``tools/call`` of one of ``tools`` (as ``tools/list`` describes them) with arguments drawn from
    its ``inputSchema``, or a message of another shape, or a line that is not JSON (bytes)."""
    calls = [
        st.fixed_dictionaries(
            {"name": st.just(str(tool["name"])), "arguments": _object(tool.get("inputSchema", {}), {})}
        )
        for tool in tools
    ]
    call = st.one_of(*calls) if calls else st.just({"name": "search", "arguments": {}})
    unknown = st.builds(lambda name, args: {"name": name, "arguments": args}, texts(2), json_values(3))
    params = st.one_of(call, call, call, unknown, json_values(3))
    message = params.map(lambda p: {"jsonrpc": "2.0", "method": "tools/call", "params": p})
    other = st.builds(
        lambda m, p: {"jsonrpc": "2.0", "method": m, "params": p},
        st.sampled_from(["tools/list", "resources/list", "nope", "initialize"]),
        json_values(2),
    )
    junk = st.one_of(
        st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ")), depths().map(lambda d: deep(d, "json").encode())
    )
    return st.one_of(message, message, message, other, junk)


def send(base_url: str, request: Request, time_limit: float = TIME_LIMIT_S) -> Outcome:
    """Send ``request`` to the server at ``base_url`` exactly as generated (no client normalises its URL) and
    judge the reply (:func:`~kb_core.testing.hostile.runs.judge_http`); no whole reply within ``time_limit``
    seconds is a hang, a refused connection (the server is gone) a crash."""
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=time_limit)
    deadline = time.monotonic() + time_limit
    try:
        connection.putrequest(request.method, request.target, skip_accept_encoding=True)
        headers = {"Content-Length": str(len(request.body or b"")), **request.headers}
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(request.body)
        reply = connection.getresponse()
        chunks: list[bytes] = []
        while chunk := reply.read1(1 << 16):
            chunks.append(chunk)
            if time.monotonic() > deadline:
                return Outcome("hang", f"{request}: still sending after {time_limit:g} s")
        text = b"".join(chunks).decode("utf-8", "replace")
        return judge_http(reply.status, reply.getheader("Content-Type") or "", text)
    except TimeoutError:
        return Outcome("hang", f"{request}: no reply within {time_limit:g} s")
    except ConnectionRefusedError as exc:
        return Outcome("crash", f"{request}: {exc}")
    except (OSError, http.client.HTTPException) as exc:  # the server closed a request it would not read
        return Outcome(None, f"connection closed: {type(exc).__name__}")
    finally:
        connection.close()
