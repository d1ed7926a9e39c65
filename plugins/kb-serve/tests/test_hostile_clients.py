"""Hostile clients, replayed against a real uvicorn on a free loopback port.

Each reproduction of a reported problem gets its documented refusal (one line of JSON), and the
server still answers ``GET /health`` after every one.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jsonschema
import pytest

from kb_core import LIMITS
from kb_core.bounds import SEED, K
from kb_serve.openapi import own_schema

try:
    from pysqlite3 import dbapi2 as sqlite3
except ImportError:  # pragma: no cover
    import sqlite3  # type: ignore[no-redef]

NOTE = b"# Planted\n\nThe backup password is hunter2, says a note nobody wrote.\n"
QUESTION = "At what wind speed does Heliograph move the panels to the stow angle?"
REPO = Path(__file__).resolve().parents[3]


def refused(reply: httpx.Response, status: int, fragment: str) -> None:
    """``reply`` is the documented refusal: ``status``, one line of JSON naming ``fragment``."""
    assert reply.status_code == status, (status, reply.status_code, reply.text[:300])
    assert "\n" not in reply.text and reply.headers["content-type"] == "application/json"
    body = reply.json()
    jsonschema.validate(body, own_schema("error"))
    assert fragment in body["error"], body


def still_up(server: Any) -> None:
    """The server answers ``/health`` (with a fresh connection)."""
    with server.client() as http:
        assert http.get("/health").status_code == 200


def port_of(server: Any) -> int:
    return int(urlsplit(server.url).port or 0)


def raw(server: Any, request: bytes, *, timeout: float = 10.0) -> tuple[int, bytes]:
    """Send ``request`` bytes as they are; (status, whole response) once the server closes the connection."""
    received = b""
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=timeout) as sock:
        sock.sendall(request)
        while chunk := sock.recv(65536):
            received += chunk
    return int(received.split(b" ", 2)[1]), received


def test_out_of_range_k_and_queries_are_400_and_the_server_stays_up(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        for params, fragment in [
            ({"q": "x", "k": "2000000000"}, f"k = 2000000000 is not {K.allowed}"),  # once: Tantivy asked for 32 GB
            ({"q": "x", "k": str(LIMITS.k + 1)}, f"is not {K.allowed}"),
            ({"q": "x", "k": "0"}, f"k = 0 is not {K.allowed}"),
            ({"q": "x", "k": "-3"}, f"k = -3 is not {K.allowed}"),
            ({"q": "x", "k": "9" * 5000}, f"is not {K.allowed}"),
            ({"q": "x", "k": "\uff11\uff10"}, f"is not {K.allowed}"),  # full-width digits
            ({"q": "x", "k": "1_0"}, f"k = '1_0' is not {K.allowed}"),
            ({}, "the query is empty"),
            ({"q": " \t "}, "the query is empty"),
            ({"q": "x" * (LIMITS.query_chars + 1)}, f"at most {LIMITS.query_chars}"),
            ({"q": "x", "mode": "m" * 5000}, "unknown search mode"),
            ({"q": "x", "path": "*" * (LIMITS.path_chars + 1)}, "longer than"),
        ]:
            refused(http.get("/search", params=params), 400, fragment)
            still_up(server)
        refused(http.get("/documents", params={"prefix": "p" * (LIMITS.path_chars + 1)}), 400, "longer than")
        top = http.get("/search", params={"q": "wind", "k": str(LIMITS.k)})  # the limit itself is fine
        assert top.status_code == 200 and top.json()["k"] == LIMITS.k

        for body, fragment in [
            ({"question": "x", "k": 2_000_000_000}, f"k = 2000000000 is not {K.allowed}"),
            ({"question": "x", "k": 10**30}, f"is not {K.allowed}"),
            ({"question": "x" * (LIMITS.query_chars + 1)}, f"at most {LIMITS.query_chars}"),
            ({"question": "x", "seed": -1}, f"seed = -1 is not {SEED.allowed}"),
            ({"question": "x", "seed": 2**64}, f"is not {SEED.allowed}"),
            ({"question": "x", "backend": "b" * 1000}, "backend is longer than"),
            ({"question": "x", "mode": "m" * 5000}, "unknown search mode"),
        ]:
            for path in ("/ask", "/ask/stream"):
                refused(http.post(path, json=body), 400, fragment)
                still_up(server)


def test_a_host_the_server_does_not_answer_to_is_421(start_server: Callable[..., Any]) -> None:
    server = start_server(allow_hosts=("kb.lan", "proxy.example:8443"))
    port = port_of(server)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for host in [
            "attacker.example",  # DNS rebinding: the page's own name, now resolving to 127.0.0.1
            f"attacker.example:{port}",
            f"127.0.0.1:{port + 1}",
            f"localhost:{port + 1}",
            f"localhost.:{port}",
            f"127.0.0.1.nip.io:{port}",
            f"localhost@attacker.example:{port}",
            f"proxy.example:{port}",
            "proxy.example",
            f"[::1]:{port}x",
        ]:
            refused(http.get("/documents", headers={"Host": host}), 421, "does not answer to the host")
            refused(http.post("/documents", headers={"Host": host}, files={"file": ("a.md", NOTE)}), 421, "host")
            still_up(server)
        for host in [f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}", "kb.lan", "kb.lan:1234"]:
            assert http.get("/documents", headers={"Host": host}).status_code == 200, host
        assert http.get("/documents", headers={"Host": "proxy.example:8443"}).status_code == 200
    hosts = f"Host: 127.0.0.1:{port}\r\nHost: attacker.example\r\n"
    for head in ("", hosts):
        status, body = raw(server, f"GET /documents HTTP/1.1\r\n{head}Connection: close\r\n\r\n".encode())
        assert status == 400 and b"exactly one Host header" in body
    still_up(server)


def test_cross_site_writes_are_403_and_plant_nothing(start_server: Callable[..., Any]) -> None:
    server = start_server()
    port = port_of(server)
    with server.client() as http:
        before = http.get("/documents").json()["documents"]
        thread = http.post("/threads", json={"question": QUESTION}).json()["thread_id"]
        for headers in [
            {"Origin": "http://attacker.example"},  # a form on any web page posting to 127.0.0.1
            {"Origin": f"http://attacker.example:{port}"},
            {"Origin": f"http://localhost:{port + 1}"},  # a page of another local server
            {"Origin": "null"},  # a sandboxed frame or a file:// page
            {"Origin": f"ftp://127.0.0.1:{port}"},
            {"Origin": f"http://127.0.0.1:{port}/path"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "cross-site"},
        ]:
            refused(http.post("/documents", files={"file": ("planted.md", NOTE)}, headers=headers), 403, "may not")
            refused(http.delete("/documents/notes/heliograph.md", headers=headers), 403, "may not change")
            refused(http.post("/ask", json={"question": QUESTION}, headers=headers), 403, "may not change")
            refused(http.post("/ask/stream", json={"question": QUESTION}, headers=headers), 403, "may not")
            refused(http.post("/threads", json={"question": QUESTION}, headers=headers), 403, "may not change")
            refused(http.post(f"/threads/{thread}/ask", json={"question": QUESTION}, headers=headers), 403, "may not")
            refused(http.delete(f"/threads/{thread}", headers=headers), 403, "may not change")
            still_up(server)
        assert http.get("/documents").json()["documents"] == before
        assert not (server.kb_dir / "uploads" / "planted.md").exists()
        assert [t["turns"] for t in http.get("/threads").json()["threads"]] == [1]  # no question asked, none deleted
        # a read from another origin is answered (the browser keeps the answer from the page)
        assert http.get("/documents", headers={"Origin": "http://attacker.example"}).status_code == 200
        # the server's own pages (same origin), and scripts without Origin, may write
        for i, headers in enumerate(
            [
                {"Origin": server.url, "Sec-Fetch-Site": "same-origin"},
                {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},
                {"Origin": f"HTTP://LOCALHOST:{port}"},
                {},
            ]
        ):
            reply = http.post("/documents", files={"file": (f"own{i}.md", b"# Own\n\nmine\n")}, headers=headers)
            assert reply.status_code == 200 and reply.json()["added"] == [f"own{i}.md"], (headers, reply.text)


@pytest.mark.parametrize("path", ["/ask", "/ask/stream", "/threads"])
def test_json_endpoints_take_only_application_json(start_server: Callable[..., Any], path: str) -> None:
    server = start_server()
    body = json.dumps({"question": QUESTION}).encode()
    with server.client() as http:
        for content_type in [
            "text/plain",  # a CORS "simple" request: no preflight, so a page could send it
            "text/plain; charset=utf-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/json; charset=latin-1",
            "application/jsonp",
            "application/json-patch+json",
            None,
        ]:
            headers = {"Content-Type": content_type} if content_type else {}
            refused(http.post(path, content=body, headers=headers), 415, "application/json")
            still_up(server)
        for content_type in ["application/json", "application/json; charset=utf-8", 'Application/JSON;charset="UTF-8"']:
            assert http.post(path, content=body, headers={"Content-Type": content_type}).status_code == 200


def test_json_bodies_are_bounded_before_they_are_read(start_server: Callable[..., Any]) -> None:
    server = start_server()
    host = f"Host: 127.0.0.1:{port_of(server)}\r\nContent-Type: application/json\r\nConnection: close\r\n"
    # a declared 200 MB body: 413 at once, before any of it is sent
    status, body = raw(server, f"POST /ask HTTP/1.1\r\n{host}Content-Length: 200000000\r\n\r\n".encode())
    assert status == 413 and f"larger than {LIMITS.json_body_bytes} bytes".encode() in body
    still_up(server)
    # a chunked body (no Content-Length) is counted as it is read and cut at the limit
    data = json.dumps({"question": "x" * LIMITS.json_body_bytes}).encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (data[i : i + 65536] for i in range(0, len(data), 65536)))
    status, body = raw(server, f"POST /ask HTTP/1.1\r\n{host}Transfer-Encoding: chunked\r\n\r\n".encode() + chunks)
    assert status == 413 and b"the JSON body is larger than" in body
    still_up(server)
    with server.client() as http:
        for hostile in [b"[" * 200_000, b'{"question": "x", "k": 1' + b"0" * 5000 + b"}", b"\xff\xfe{}", b'"\\ud800"']:
            reply = http.post("/ask", content=hostile, headers={"Content-Type": "application/json"})
            assert reply.status_code == 400, (hostile[:30], reply.text)
            still_up(server)
        exact = json.dumps({"question": QUESTION}).encode()
        exact += b" " * (LIMITS.json_body_bytes - len(exact))  # exactly at the limit: accepted
        assert http.post("/ask", content=exact, headers={"Content-Type": "application/json"}).status_code == 200


def test_uploads_are_bounded_by_the_shared_limit_by_default(start_server: Callable[..., Any]) -> None:
    server = start_server()
    assert server.app.state.service.settings.max_upload_bytes == LIMITS.upload_bytes
    head = f"Host: 127.0.0.1:{port_of(server)}\r\nConnection: close\r\n"
    request = (
        f"POST /documents HTTP/1.1\r\n{head}Content-Type: multipart/form-data; boundary=zz\r\n"
        f"Content-Length: {LIMITS.upload_bytes + 1}\r\n\r\n"
    )
    status, body = raw(server, request.encode())
    assert status == 413 and f"larger than {LIMITS.upload_bytes} bytes".encode() in body
    still_up(server)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/documents", {"GET", "POST"}),
        ("DELETE", "/documents", {"GET", "POST"}),
        ("PATCH", "/search", {"GET"}),
        ("POST", "/health", {"GET"}),
        ("POST", "/openapi.json", {"GET"}),
        ("GET", "/ask", {"POST"}),
        ("PUT", "/ask/stream", {"POST"}),
        ("POST", "/documents/notes/heliograph.md", {"GET", "DELETE"}),
        ("DELETE", "/answers", {"GET"}),
        ("PUT", "/threads", {"GET", "POST"}),
        ("POST", "/threads/thr_000000000000", {"GET", "DELETE"}),
        ("GET", "/threads/thr_000000000000/ask", {"POST"}),
    ],
)
def test_405_names_every_allowed_method(
    start_server: Callable[..., Any], method: str, path: str, allowed: set[str]
) -> None:
    server = start_server()
    with server.client() as http:
        reply = http.request(method, path)
        refused(reply, 405, "Method Not Allowed")
        assert {m.strip() for m in reply.headers["allow"].split(",")} - {"HEAD"} == allowed
    still_up(server)


def test_responses_carry_no_absolute_local_paths(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        replies = [
            http.post("/documents", files={"file": ("ops/a.md", b"# A\n\nalpha\n")}),
            http.post("/documents", files={"file": ("ops/a.md", b"# A\n\nalpha changed\n")}),
            http.post("/documents", files={"file": ("ops/b.md", b"\x00\x01binary")}),  # listed in `failed`
            http.post("/documents", files={"file": ("notes/heliograph.md", b"# Taken\n")}),  # 409
            http.get("/documents"),
            http.get("/search", params={"q": "wind stow"}),
            http.post("/ask", json={"question": QUESTION}),
            http.delete("/documents/ops/a.md"),
            http.post("/threads", json={"question": QUESTION}),
            http.get("/threads"),
        ]
        replies.append(http.get(f"/threads/{replies[-2].json()['thread_id']}"))
        assert [r.status_code for r in replies] == [200, 200, 200, 409, 200, 200, 200, 200, 200, 200, 200]
        for reply in replies:
            for local in {server.kb_dir, server.kb_dir.resolve(), REPO, Path.home()}:
                assert str(local) not in reply.text, (reply.request.url, reply.text[:300])
        assert replies[0].json()["roots"] in (["uploads"], ["uploads/ops/a.md"])
        sources = {d["path"]: d["source_root"] for d in replies[4].json()["documents"]}
        assert sources["ops/a.md"] == "uploads" and sources["notes/heliograph.md"] == ""
        assert "already exists" in replies[3].json()["error"]


def test_a_client_that_leaves_mid_body_is_one_info_line(start_server: Callable[..., Any], server_log: Any) -> None:
    server = start_server()
    records = server_log()
    head = f"Host: 127.0.0.1:{port_of(server)}\r\n"
    for request in [
        f"POST /ask HTTP/1.1\r\n{head}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n" + '{"que',
        f"POST /documents HTTP/1.1\r\n{head}Content-Type: multipart/form-data; boundary=zz\r\n"
        "Content-Length: 5000\r\n\r\n--zz\r\nContent-Disposition: form-data; name=file; filename=a.md\r\n\r\nhalf",
    ]:
        with socket.create_connection(("127.0.0.1", port_of(server)), timeout=10) as sock:
            sock.sendall(request.encode())
        still_up(server)
    wait_for(lambda: len([r for r in records if "left before sending" in r.getMessage()]) == 2)
    assert [r for r in records if r.levelno >= logging.WARNING or r.exc_info] == []


def test_an_abandoned_stream_stops_its_generation_and_stores_nothing(
    start_server: Callable[..., Any], paced_llm: Any, server_log: Any
) -> None:
    llm = paced_llm(tokens=4000, pace_s=0.025)  # 100 s of answer, unless it is stopped
    server = start_server(llm=llm)
    records = server_log()
    answers = answer_count(server)
    with server.client() as http:
        with http.stream("POST", "/ask/stream", json={"question": QUESTION}) as reply:
            assert next(reply.iter_lines()).startswith(":")  # the stream is open (a comment line)
            wait_for(lambda: llm.yielded > 0)  # the model is writing; kb holds its text (no sentence has ended)
        assert llm.closed.wait(60)  # the client has closed the connection: the generation ends ...
        stopped_at = llm.yielded
        assert stopped_at < llm.tokens, "the generation went on after the client left"  # ... long before its end
        time.sleep(0.3)
        assert stopped_at == llm.yielded
        wait_for(lambda: http.get("/health").json()["generation"] == {"busy": False, "waiting": 0, "queue": 4})
        assert answer_count(server) == answers  # nothing stored for the abandoned question
        llm.tokens = 3
        assert http.post("/ask", json={"question": QUESTION}).status_code == 200  # the model is free again
    assert any("client left" in r.getMessage() for r in records)
    assert [r for r in records if r.levelno >= logging.WARNING or r.exc_info] == []


def test_a_question_abandoned_while_it_waits_never_generates(start_server: Callable[..., Any], paced_llm: Any) -> None:
    llm = paced_llm(tokens=3, pace_s=0.01)
    llm.hold.clear()
    server = start_server(llm=llm, ask_queue=2)
    with server.client() as http, concurrent.futures.ThreadPoolExecutor(1) as pool:
        first = pool.submit(http.post, "/ask", json={"question": QUESTION})
        assert llm.started.wait(30)
        with http.stream("POST", "/ask/stream", json={"question": QUESTION}) as reply:
            assert next(reply.iter_lines()).startswith(":")  # the stream is open, waiting for the model
            wait_for(lambda: http.get("/health").json()["generation"]["waiting"] == 1)
        wait_for(lambda: http.get("/health").json()["generation"]["waiting"] == 0)
        with pytest.raises(httpx.ReadTimeout):  # a whole-answer client that gives up
            httpx.post(f"{server.url}/ask", json={"question": QUESTION}, timeout=1.0)
        wait_for(lambda: http.get("/health").json()["generation"]["waiting"] == 0)
        llm.hold.set()
        assert first.result(30).status_code == 200
        time.sleep(0.5)
        assert llm.generations == 1  # neither abandoned question reached the model
        assert http.get("/health").json()["generation"] == {"busy": False, "waiting": 0, "queue": 2}


@pytest.mark.slow
def test_kb_serve_allow_host_as_a_process(
    corpus_kb: Path, serve_json: Callable[[subprocess.Popen[str]], dict[str, Any]]
) -> None:
    kb = str(Path(sys.executable).parent / "kb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
    bad = subprocess.run(
        [kb, "--kb", str(corpus_kb), "serve", "--allow-host", "a b"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "is not a host name" in bad.stderr
    command = [kb, "--kb", str(corpus_kb), "serve", "--port", "0", "--json", "--allow-host", "kb.lan"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = serve_json(process)["url"]
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.get("/health", headers={"Host": "kb.lan"}).status_code == 200
            refused(http.get("/health", headers={"Host": "attacker.example"}), 421, "does not answer")
            assert http.get("/health").status_code == 200
    finally:
        process.terminate()
        process.wait(30)


def answer_count(server: Any) -> int:
    with closing(sqlite3.connect(str(server.kb_dir / "kb.sqlite3"))) as conn:
        return int(conn.execute("SELECT count(*) FROM answers").fetchone()[0])


def wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def uploads_tree(server: Any) -> list[str]:
    folder = server.kb_dir / "uploads"
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) if folder.exists() else []


def test_upload_names_that_cannot_be_stored_are_refused_before_anything_is_written(
    start_server: Callable[..., Any],
) -> None:
    """A file where a folder is needed (or the reverse) was a 507 "free some disk space"; a name the
    ingest ignore rules skip (``node_modules/z.md``) was stored, reported added, and dropped from the
    index by the next ``kb ingest`` of the uploads folder while the file stayed on disk."""
    server = start_server()
    with server.client() as http:
        for name in ("a.md", "dir.md/y.md"):
            assert http.post("/documents", files={"file": (name, NOTE)}).status_code == 200
        (server.kb_dir / "uploads" / ".kbignore").write_text("drafts/\n", encoding="utf-8")
        before, documents = uploads_tree(server), http.get("/documents").json()["documents"]
        clashes = {
            "a.md/b.md": "cannot store 'a.md/b.md': 'a.md' is a document, not a folder",
            "dir.md": "cannot store 'dir.md': 'dir.md' is a folder",
            "dir.md/y.md/z.md": "'dir.md/y.md' is a document, not a folder",
        }
        for name, message in clashes.items():
            refused(http.post("/documents", files={"file": (name, NOTE)}), 409, message)
        together = [("file", ("new.md", NOTE)), ("file", ("new.md/c.md", NOTE))]
        refused(http.post("/documents", files=together), 409, "'new.md' is a document of the same request")
        bad = {
            "node_modules/z.md": "the ingest ignore rules skip 'node_modules/' (rule 'node_modules/' of kb's defaults)",
            "a/__pycache__/z.md": "skip 'a/__pycache__/' (rule '__pycache__/' of kb's defaults)",
            "drafts/z.md": "skip 'drafts/' (rule 'drafts/' of .kbignore)",
            "é" * 127 + ".md": "(257 bytes) long, over 255 characters or 255 bytes",
            "d" * 256 + "/a.md": "over 255 characters or 255 bytes",
        }
        for name, message in bad.items():
            refused(http.post("/documents", files={"file": (name, NOTE)}), 400, message)
        assert uploads_tree(server) == before
        assert http.get("/documents").json()["documents"] == documents
        assert http.post("/documents", files={"file": ("dir.md/y.md", NOTE + b"more\n")}).json()["updated"]
    still_up(server)
