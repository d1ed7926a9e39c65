"""Upload, list, search and delete through a real uvicorn; limits; searches while an ingest runs."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

try:
    from pysqlite3 import dbapi2 as sqlite3
except ImportError:  # pragma: no cover
    import sqlite3  # type: ignore[no-redef]

from kb_serve.openapi import kb_schema, own_schema

NOTE = b"# Backups\n\nBackups are verified every night by restoring them onto a scratch machine named quokka.\n"


def check(body: dict[str, Any], name: str) -> None:
    jsonschema.validate(body, kb_schema(name) if name != "error" else own_schema(name))
    if name != "error":
        assert body["schema_version"] == name


def test_upload_list_search_delete_round_trip(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        before = http.get("/documents").json()
        check(before, "document_list.v1")

        reply = http.post("/documents", files={"file": ("ops/backups.md", NOTE, "text/markdown")})
        assert reply.status_code == 200, reply.text
        report = reply.json()
        check(report, "ingest_report.v1")
        assert report["added"] == ["ops/backups.md"] and report["failed"] == []
        assert (server.kb_dir / "uploads" / "ops" / "backups.md").read_bytes() == NOTE

        listed = http.get("/documents", params={"prefix": "ops/"}).json()
        check(listed, "document_list.v1")
        assert [d["path"] for d in listed["documents"]] == ["ops/backups.md"]
        assert len(http.get("/documents").json()["documents"]) == len(before["documents"]) + 1

        found = http.get("/search", params={"q": "scratch machine quokka", "mode": "lexical", "k": 3}).json()
        check(found, "search_response.v1")
        assert found["hits"][0]["doc_path"] == "ops/backups.md" and found["k"] == 3 and found["mode"] == "lexical"
        only = http.get("/search", params={"q": "panels wind", "path": "notes/*"}).json()
        assert only["hits"] and all(h["doc_path"].startswith("notes/") for h in only["hits"])

        gone = http.delete("/documents/ops/backups.md")
        assert gone.status_code == 200
        check(gone.json(), "removed.v1")
        assert gone.json()["removed"] == ["ops/backups.md"]
        assert not (server.kb_dir / "uploads" / "ops").exists()
        after = http.get("/search", params={"q": "quokka", "mode": "lexical"}).json()
        assert all(h["doc_path"] != "ops/backups.md" for h in after["hits"])


def test_a_second_upload_updates_in_place_and_several_files_go_in_one_request(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        first = http.post(
            "/documents", files=[("file", ("a.md", b"# A\n\nalpha one\n")), ("file", ("sub/b.txt", b"bravo two\n"))]
        ).json()
        assert sorted(first["added"]) == ["a.md", "sub/b.txt"]
        second = http.post("/documents", files={"file": ("a.md", b"# A\n\nalpha changed\n")}).json()
        assert second["updated"] == ["a.md"] and second["roots"] == ["uploads/a.md"]  # relative: no local paths
        hits = http.get("/search", params={"q": "alpha changed", "mode": "lexical"}).json()["hits"]
        assert hits[0]["doc_path"] == "a.md"


def test_deleting_a_folder_of_corpus_documents_keeps_their_source_files(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        removed = http.delete("/documents/zh/").json()["removed"]
        assert removed and all(p.startswith("zh/") for p in removed)
        assert http.get("/documents", params={"prefix": "zh/"}).json()["documents"] == []
    corpus = Path(__file__).resolve().parents[3] / "fixtures" / "corpus" / "zh"
    assert any(corpus.iterdir())


@pytest.mark.parametrize(
    ("path", "status", "fragment"),
    [("/documents/no/such.md", 404, "no document at"), ("/nowhere", 404, "Not Found")],
)
def test_unknown_things_are_404_with_the_error_body(
    start_server: Callable[..., Any], path: str, status: int, fragment: str
) -> None:
    server = start_server()
    with server.client() as http:
        reply = http.delete(path) if path.startswith("/documents") else http.get(path)
        assert reply.status_code == status
        check(reply.json(), "error")
        assert fragment in reply.json()["error"]


def test_bad_requests_are_400_or_415_with_one_line(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        cases = [
            (http.get("/search", params={"q": "  "}), 400, "the query is empty"),
            (http.get("/search", params={"q": "x", "k": "ten"}), 400, "k = 'ten' is not a whole number"),
            (http.get("/search", params={"q": "x", "k": "0"}), 400, "k = 0 is not a whole number from 1"),
            (http.get("/search", params={"q": "x", "mode": "fuzzy"}), 400, "unknown search mode"),
            (http.get("/search", params={"q": "x", "path": "notes/[ab"}), 400, "invalid path glob"),
            (http.post("/documents", files={"file": ("../escape.md", b"x")}), 400, "invalid file name"),
            (
                http.post("/documents", files={"file": ("evil.exe", b"x")}),
                415,
                "no parser for 'evil.exe': none reads .exe",
            ),
            (
                http.post("/documents", content=b"{}", headers={"content-type": "application/json"}),
                415,
                "multipart/form-data",
            ),
            (http.post("/documents", data={"note": "no file"}, files={}), 415, "multipart"),
        ]
        for reply, status, fragment in cases:
            assert reply.status_code == status, (fragment, reply.text)
            check(reply.json(), "error")
            assert fragment in reply.json()["error"], reply.json()
            assert "Traceback" not in reply.text
        assert not (server.kb_dir / "escape.md").exists()


def test_uploads_over_the_limits_are_413_and_nothing_is_written(start_server: Callable[..., Any]) -> None:
    server = start_server(max_file_bytes=100, max_upload_bytes=2000)
    with server.client() as http:
        whole = http.post("/documents", files={"file": ("big.md", b"word " * 1000)})
        assert whole.status_code == 413
        check(whole.json(), "error")
        assert "larger than 2000 bytes" in whole.json()["error"]

        one = http.post("/documents", files={"file": ("medium.md", b"word " * 60)})
        assert one.status_code == 413 and "'medium.md' is larger than 100 bytes" in one.json()["error"]

        def chunks() -> Any:  # a well-formed part, sent chunked (no Content-Length), that grows past the limit
            yield b'--zz\r\nContent-Disposition: form-data; name="file"; filename="big.md"\r\n\r\n'
            for _ in range(10):
                yield b"x" * 500
            yield b"\r\n--zz--\r\n"

        streamed = http.post(
            "/documents", content=chunks(), headers={"content-type": "multipart/form-data; boundary=zz"}
        )
        assert streamed.status_code == 413

        assert not any((server.kb_dir / "uploads").rglob("*.md")) if (server.kb_dir / "uploads").exists() else True
        small = http.post("/documents", files={"file": ("small.md", b"# Small\n\nfits\n")})
        assert small.status_code == 200 and small.json()["added"] == ["small.md"]


def test_a_name_taken_by_another_folder_is_409_and_a_failed_file_keeps_the_stored_version(
    start_server: Callable[..., Any],
) -> None:
    server = start_server()
    with server.client() as http:
        taken = http.post("/documents", files={"file": ("notes/heliograph.md", b"# Replaced\n")})
        assert taken.status_code == 409 and "already exists" in taken.json()["error"]

        assert http.post("/documents", files={"file": ("kept.md", b"# Kept\n\nthe good version\n")}).status_code == 200
        bad = http.post("/documents", files={"file": ("kept.md", b"\x00\x01binary")}).json()
        assert [f["path"] for f in bad["failed"]] == ["kept.md"]
        assert (server.kb_dir / "uploads" / "kept.md").read_bytes() == b"# Kept\n\nthe good version\n"
        hits = http.get("/search", params={"q": "good version", "mode": "lexical"}).json()["hits"]
        assert hits and hits[0]["doc_path"] == "kept.md"


def test_searches_and_listings_keep_working_while_an_upload_is_being_ingested(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http, concurrent.futures.ThreadPoolExecutor(2) as pool:
        upload = pool.submit(http.post, "/documents", files={"file": ("held.gated", b"held in the gate\n")})
        assert server.gate.entered.wait(30), "the ingest did not reach the parser"
        queued = pool.submit(http.post, "/documents", files={"file": ("after.md", b"# After\n\nqueued upload\n")})

        for _ in range(3):
            found = http.get("/search", params={"q": "wind stow angle"})
            assert found.status_code == 200 and found.json()["hits"][0]["doc_path"] == "notes/heliograph.md"
        assert http.get("/documents").status_code == 200
        assert http.get("/health").json()["documents"] >= 1

        # a write transaction open on the store of record (as kb's own writes hold): reads still go on
        conn = sqlite3.connect(str(server.kb_dir / "kb.sqlite3"), timeout=5, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO index_outbox(doc_path) VALUES ('nothing')")
        assert http.get("/search", params={"q": "wind stow angle"}).status_code == 200
        conn.execute("ROLLBACK")
        conn.close()

        assert not upload.done() and not queued.done()
        server.gate.opened.set()
        assert upload.result(60).json()["added"] == ["held.gated"]
        assert queued.result(60).json()["added"] == ["after.md"]
    with server.client() as http:
        assert (
            http.get("/search", params={"q": "held gate", "mode": "lexical"}).json()["hits"][0]["doc_path"]
            == "held.gated"
        )
