"""``kb mcp --transport http`` on a knowledge base with people (issue 45): a real server process over the fixture
corpus, driven by the SDK's own client as two people. ann reads web/; bob reads and writes notes/. Each sees only
their folders in every tool, another's thread or answer is absent exactly as one that does not exist, and a
request without a person's token is a 401."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_helpers import Call, http_server, http_session, text_of

import kb_core
from kb_core.testing.access_store import add_people

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
OWN = {"ann": "web/", "bob": "notes/"}
QUESTION = "What does the heliograph or the tomato or the runbook say?"


@pytest.fixture(scope="module")
def corpus_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture corpus ingested once per module with the real default engines."""
    base = tmp_path_factory.mktemp("mcp-people")
    with kb_core.open_kb(kb_dir=base / "kb", overrides={}) as kb:
        report = kb_core.ingest_paths(kb, [CORPUS])
    assert not report.failed
    return base / "kb"


@pytest.fixture
def served(corpus_kb: Path, tmp_path: Path, scripted_pythonpath: str) -> Iterator[tuple[int, dict[str, str]]]:
    """A copy of the corpus's knowledge base with ann and bob, served by ``kb mcp --transport http`` (the
    scripted model); the port and each person's token."""
    kb_dir = tmp_path / "kb"
    shutil.copytree(corpus_kb, kb_dir)
    with kb_core.open_kb(kb_dir=kb_dir, overrides={}) as kb:
        groups = {"ann": ["gardeners"], "bob": ["writers"]}
        tokens = add_people(kb.store, groups, {"gardeners": [("web/", False)], "writers": [("notes/", True)]})
    env = {"PYTHONPATH": scripted_pythonpath}
    with http_server(kb_dir, kb_args=("--backend", "scripted"), env=env) as (process, port):
        assert process.poll() is None, process.communicate()
        yield port, tokens


def _ok(call: Call, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = call(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


def _error(call: Call, tool: str, arguments: dict[str, Any]) -> str:
    result = call(tool, arguments)
    assert result.is_error, (tool, arguments, result.structured_content)
    return text_of(result)


def test_a_request_without_a_persons_token_is_a_401(served: tuple[int, dict[str, str]]) -> None:
    port, _tokens = served
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    for given in ({}, {"Authorization": "Bearer nobody"}, {"Authorization": "Basic YW5uOng="}):
        reply = httpx.post(f"http://127.0.0.1:{port}/mcp", json=hello, headers={**headers, **given}, timeout=60)
        assert reply.status_code == 401, given
        assert reply.headers["www-authenticate"].startswith("Bearer")
        line = reply.json()["error"]["message"]
        assert line.startswith("kb: error: ") and "Authorization: Bearer" in line and "\n" not in line


def test_each_person_sees_only_their_folders(served: tuple[int, dict[str, str]]) -> None:
    port, tokens = served
    with http_session(port, tokens["ann"]) as ann, http_session(port, tokens["bob"]) as bob:
        for name, call in (("ann", ann), ("bob", bob)):
            listed = _ok(call, "list_documents", {})["documents"]
            assert listed and all(d["path"].startswith(OWN[name]) for d in listed), name
            for query in ("heliograph", "tomatoes", "runbook release", "kimchi seoul tea"):
                for mode in ("lexical", "hybrid"):
                    hits = _ok(call, "search", {"query": query, "mode": mode, "k": 5})["hits"]
                    assert all(h["doc_path"].startswith(OWN[name]) for h in hits), (name, query, mode)
            answer = _ok(call, "ask", {"question": QUESTION})
            shown = {c["citation"]["path"] for c in [*answer["citations"], *answer.get("candidates", [])]}
            assert shown and all(p.startswith(OWN[name]) for p in shown), (name, shown)
        assert _ok(ann, "list_documents", {"prefix": "notes/"})["documents"] == []
        assert len(_ok(bob, "search", {"query": "heliograph release", "k": 3})["hits"]) == 3  # k readable hits

        # a document, a chunk or a citation outside the grants is absent, word for word
        chunk = _ok(bob, "search", {"query": "heliograph", "k": 1})["hits"][0]
        hidden = {
            "notes/heliograph.md": "notes/absent.md",
            chunk["chunk_id"]: "c" * len(chunk["chunk_id"]),
            "{path}#L{start_line}-L{end_line}".format(**chunk["citation"]): "notes/absent.md#L1-L2",
        }
        for target, absent in hidden.items():
            assert _ok(bob, "fetch", {"target": target})["path"] == chunk["doc_path"]
            refused = _error(ann, "fetch", {"target": target})
            assert refused.replace(repr(target), repr(absent)) == _error(ann, "fetch", {"target": absent})

        # threads and answers are their asker's: another's is absent, word for word
        turn = _ok(bob, "ask", {"question": "What is the heliograph?"})
        thread, answer_id = turn["thread_id"], turn["answer_id"]
        absent_thread, absent_answer = "thr_000000000000", "ans_0000000000000000"
        for tool, arguments, nobodys in (
            ("threads", {"thread_id": thread}, {"thread_id": absent_thread}),
            (
                "ask",
                {"question": "And then?", "thread_id": thread},
                {"question": "And then?", "thread_id": absent_thread},
            ),
            ("answers", {"answer_id": answer_id}, {"answer_id": absent_answer}),
        ):
            refused = _error(ann, tool, arguments).replace(thread, absent_thread).replace(answer_id, absent_answer)
            assert refused == _error(ann, tool, nobodys), tool
        assert _ok(bob, "threads", {"thread_id": thread})["thread_id"] == thread
        assert _ok(bob, "answers", {"answer_id": answer_id})["answer_id"] == answer_id
        assert _ok(bob, "ask", {"question": "And then?", "thread_id": thread})["position"] == 2
        assert thread not in {t["thread_id"] for t in _ok(ann, "threads", {})["threads"]}
        assert thread in {t["thread_id"] for t in _ok(bob, "threads", {})["threads"]}
        assert answer_id not in {a["answer_id"] for a in _ok(ann, "answers", {})["answers"]}
        assert answer_id in {a["answer_id"] for a in _ok(bob, "answers", {})["answers"]}

        # writes need a write grant; files on the server's machine are the operator's
        refused = _error(ann, "ingest", {"text": "# Mine\n\nA note.\n", "name": "web/mine.md"})
        assert "'ann' may not write 'web/mine.md'" in refused and "kb access grant" in refused
        assert "may not ingest files" in _error(ann, "ingest", {"path": str(CORPUS)})
        report = _ok(bob, "ingest", {"text": "# Mine\n\nThe heliograph note of bob.\n", "name": "notes/mine.md"})
        assert report["added"] == ["notes/mine.md"]
        assert "notes/mine.md" not in {d["path"] for d in _ok(ann, "list_documents", {})["documents"]}
        assert "notes/mine.md" in {d["path"] for d in _ok(bob, "list_documents", {})["documents"]}
