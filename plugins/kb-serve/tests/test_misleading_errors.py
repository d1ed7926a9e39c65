"""Errors that said the wrong thing (issue 42): each now names its cause, with the status that fits it.

* A busy knowledge base (SQLite's write lock held by another process) was ``507 ... disk full``: it is a
  503 with ``Retry-After`` and a line saying the knowledge base is busy. SQLite's errors are told apart by
  their result code: busy or locked, full, read-only.
* An error inside a ``/v1`` stream (a thread deleted mid-answer) was ``type: server_error, code: null``.
* Invalid UTF-8 %-escapes in a path or a query (``/documents/%FF``, ``/search?q=%ED%A0%80``) became U+FFFD
  and a 404 or a 200: they are a 400 on every route.
* A multipart file name in invalid UTF-8 was stored as mojibake: it is a 400 asking to rename the file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes

import httpx
import jsonschema
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from kb_serve_chat import FIRST, FOLLOW_UP, conversing

import kb_core
from kb_core import KnowledgeBase, WriterBusyError, load_config
from kb_core.commands import storage_error
from kb_serve.errors import headers_of, status_of
from kb_serve.guards import undecodable_target
from kb_serve.openapi import own_schema

NOTE = b"# A note\n\nThe wind was calm.\n"


def one_line_error(reply: httpx.Response, status: int, *fragments: str, shape: str = "error") -> str:
    """The error line of ``reply``: ``status``, one line of JSON in ``shape``, holding every fragment."""
    assert reply.status_code == status, (status, reply.status_code, reply.text[:300])
    assert "\n" not in reply.text
    body = reply.json()
    jsonschema.validate(body, own_schema(shape))
    line = body["error"]["message"] if shape == "openai_error" else f"{body['error']} ({body['hint']})"
    for fragment in fragments:
        assert fragment in line, line
    return line


# -- SQLite's errors, by kind ----------------------------------------------------------------------------


def _failure(tmp_path: Path, kind: str) -> sqlite3.OperationalError:
    """A real SQLite error of ``kind``: busy (another connection holds the write lock), full, read-only."""
    path = tmp_path / f"{kind}.sqlite3"
    with closing(sqlite3.connect(path, isolation_level=None)) as setup:
        setup.execute("CREATE TABLE t (x TEXT)")
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        if kind == "busy":
            holder.execute("BEGIN IMMEDIATE")
            conn = sqlite3.connect(path, timeout=0, isolation_level=None)
            statement = "BEGIN IMMEDIATE"
        elif kind == "full":
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("PRAGMA max_page_count = 3")
            statement = "INSERT INTO t VALUES (zeroblob(100000))"
        else:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
            statement = "INSERT INTO t VALUES ('x')"
        with closing(conn), pytest.raises(sqlite3.OperationalError) as failed:
            conn.execute(statement)
        return failed.value
    finally:
        holder.close()


@pytest.mark.parametrize(
    ("kind", "status", "said"),
    [("busy", 503, "is busy"), ("full", 507, "the disk is full"), ("read-only", 507, "is read-only")],
)
def test_sqlite_errors_are_told_apart_busy_is_503_with_retry_after(
    tmp_path: Path, kind: str, status: int, said: str
) -> None:
    error = storage_error(_failure(tmp_path, kind), "kb")
    assert error is not None and said in error.message and error.exit_code == 5  # the CLI's code is unchanged
    assert isinstance(error, WriterBusyError) == (kind == "busy")
    assert status_of(error) == status
    assert ("Retry-After" in headers_of(error)) == (kind == "busy")
    if kind != "full":
        assert "full" not in str(error)


@contextmanager
def write_lock_held(kb_dir: Path) -> Iterator[None]:
    """Another writer's transaction on the knowledge base (SQLite's write lock held) for the block: a connection
    of kb's own SQLite library (two copies of SQLite in one process do not see each other's locks)."""
    with KnowledgeBase(load_config(kb_dir=kb_dir, environ={}), create=False) as other:
        other.store.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            other.store.conn.execute("ROLLBACK")


def test_a_busy_knowledge_base_is_503_with_retry_after_not_507_disk_full(start_server: Callable[..., Any]) -> None:
    server = start_server(script=conversing)
    service = server.app.state.service
    with server.client() as http:
        thread = http.post("/threads", json={"question": FIRST}).json()["thread_id"]
        for handle in (service.answers.handles.writer, service.answers.handles.asker):  # (SQLite waits 30 s first)
            handle.store.conn.execute("PRAGMA busy_timeout = 0")
        with write_lock_held(server.kb_dir):
            for reply in (
                http.delete(f"/threads/{thread}"),
                http.post(f"/threads/{thread}/ask", json={"question": FOLLOW_UP}),
                http.post("/documents", files={"file": ("busy.md", NOTE)}),
            ):
                line = one_line_error(reply, 503, "the knowledge base", "is busy", "try again")
                assert "disk" not in line and reply.headers["retry-after"].isdigit()
            chat = {"model": "kb", "kb_thread": thread, "messages": [{"role": "user", "content": FOLLOW_UP}]}
            reply = http.post("/v1/chat/completions", json=chat)
            one_line_error(reply, 503, "is busy", shape="openai_error")
            assert reply.json()["error"]["code"] == "knowledge_base_busy" and "retry-after" in reply.headers
        assert http.delete(f"/threads/{thread}").status_code == 200  # once the lock is free, it works


# -- an error inside a /v1 stream --------------------------------------------------------------------------


def test_a_thread_deleted_during_a_v1_stream_is_an_openai_not_found_error(
    start_server: Callable[..., Any], paced_llm: Callable[..., Any]
) -> None:
    llm = paced_llm(script=conversing, pace_s=0.001)
    server = start_server(llm=llm)
    with server.client() as http:
        thread = http.post("/threads", json={"question": FIRST}).json()["thread_id"]
        llm.pause_after = 2  # the follow-up's generation waits, after two tokens, for the test
        body = {
            "model": "kb",
            "stream": True,
            "kb_thread": thread,
            "messages": [{"role": "user", "content": FOLLOW_UP}],
        }
        with http.stream("POST", "/v1/chat/completions", json=body) as reply:
            assert reply.status_code == 200
            assert llm.paused.wait(60)
            with KnowledgeBase(load_config(kb_dir=server.kb_dir, environ={}), create=False) as other:
                kb_core.delete_thread(other.store, thread)  # another process deletes it (kb threads delete)
            llm.resume.set()
            lines = reply.read().decode().splitlines()
    data = [json.loads(line[6:]) for line in lines if line.startswith("data: ") and line != "data: [DONE]"]
    errors = [d for d in data if "error" in d]
    assert len(errors) == 1, data
    jsonschema.validate(errors[0], own_schema("openai_error"))
    assert errors[0]["error"] | {"message": ""} == {
        "message": "",
        "type": "invalid_request_error",
        "param": "kb_thread",
        "code": "thread_not_found",
    }
    assert thread in errors[0]["error"]["message"]


# -- invalid UTF-8 in paths and queries, on every route ----------------------------------------------------

UNDECODABLE = [
    ("GET", "/documents/%FF"),
    ("DELETE", "/documents/notes/%C3"),
    ("GET", "/search?q=%ED%A0%80"),  # an escaped surrogate
    ("GET", "/search?q=wind&mode=%FE"),
    ("GET", "/documents?prefix=%80"),
    ("GET", "/answers/%F0%28%8C%28"),
    ("GET", "/threads/thr_%FF"),
    ("POST", "/threads/%E2%82/ask"),
    ("GET", "/documents/scan.pdf/pages/1.png?x=%FF"),
    ("GET", "/nowhere/%FF"),
    ("GET", "/health?%FF=1"),
]


def test_invalid_utf8_escapes_in_a_path_or_query_are_a_400_on_every_route(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        for method, target in UNDECODABLE:
            reply = http.request(method, target)
            one_line_error(reply, 400, "is not UTF-8 text", "%")
        for target in ("/v1/models?x=%FF", "/v1/chat/%FF"):
            reply = http.get(target)
            one_line_error(reply, 400, "is not UTF-8 text", shape="openai_error")
        assert http.get("/search", params={"q": "café ☂"}).status_code == 200  # UTF-8 escapes are fine


@given(
    raw=st.binary(max_size=16),
    escaped=st.booleans(),
    where=st.sampled_from(["raw_path", "query_string"]),
    text=st.text(max_size=8),
)
def test_any_bytes_in_a_target_are_read_as_utf8_or_refused(raw: bytes, escaped: bool, where: str, text: str) -> None:
    # a raw '?' in a raw path starts its query string, which the guard reads from query_string
    assume(escaped or where != "raw_path" or b"?" not in raw)
    sent = quote_from_bytes(raw, safe="/=&").encode() if escaped else raw
    sent = quote_from_bytes(text.encode("utf-8", "surrogatepass"), safe="").encode() + sent
    scope = {"type": "http", "path": "/x", "raw_path": b"/x", "query_string": b"", where: b"/x" + sent}
    refusal = undecodable_target(scope)
    try:
        (text.encode("utf-8", "surrogatepass") + raw).decode("utf-8")
    except UnicodeDecodeError:
        assert refusal is not None and refusal.status == 400 and "is not UTF-8 text" in refusal.message
        assert "\n" not in str(refusal)
    else:
        assert refusal is None


# -- a multipart file name that is not UTF-8 ------------------------------------------------------------------


def test_a_file_name_that_is_not_utf8_is_refused_with_a_line_saying_to_rename_it(
    start_server: Callable[..., Any],
) -> None:
    server = start_server()
    boundary = "kbtestboundary"
    body = (
        f"--{boundary}\r\n".encode()
        + b'Content-Disposition: form-data; name="file"; filename="caf\xe9 notes.md"\r\n'
        + b"Content-Type: text/markdown\r\n\r\n"
        + NOTE
        + f"\r\n--{boundary}--\r\n".encode()
    )
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    with server.client() as http:
        before = http.get("/documents").json()["documents"]
        reply = http.post("/documents", content=body, headers=headers)
        one_line_error(reply, 400, "file name", "is not UTF-8 text", "rename the file")
        assert http.get("/documents").json()["documents"] == before
        good = body.replace(b"caf\xe9", "café".encode())
        assert http.post("/documents", content=good, headers=headers).status_code == 200
        assert any(d["path"] == "café notes.md" for d in http.get("/documents").json()["documents"])
    uploads = server.kb_dir / "uploads"
    assert sorted(p.name for p in uploads.iterdir()) == ["café notes.md"]


@pytest.mark.parametrize("length", ["9" * 5000, "1" * 19, "²"])
def test_a_content_length_no_integer_can_hold_is_413_or_read_as_no_length(length: str) -> None:
    from starlette.requests import Request

    from kb_serve.bodies import bounded

    request = Request({"type": "http", "method": "POST", "headers": [(b"content-length", length.encode())]})
    if length.isascii():
        with pytest.raises(Exception, match="larger than 10 bytes"):
            bounded(request, 10, "the body", "send less")
    else:  # not digits: the body is counted as it comes
        assert bounded(request, 10, "the body", "send less") is not None
