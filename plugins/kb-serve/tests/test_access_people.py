"""People, groups and grants on a real server (uvicorn), on SQLite and on PostgreSQL: two people with different
folders each see only theirs in search results, answers' citations, document lists, documents and page
images; one's thread and answer are a 404 for the other; a write without a write grant is a 403."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from kb_serve_people import add_people, as_person, cited

from kb_core import KnowledgeBase, ingest_paths, load_config

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
QUESTION = "What does the heliograph or the tomato or the runbook say?"


def _people(kb_dir: Path, overrides: dict[str, Any]) -> dict[str, str]:
    """ann reads web/; bob reads and writes notes/; returns each one's token."""
    with KnowledgeBase(load_config(kb_dir=kb_dir, overrides=overrides, environ={})) as kb:
        groups = {"ann": ["gardeners"], "bob": ["writers"]}
        return add_people(kb.store, groups, {"gardeners": [("web/", False)], "writers": [("notes/", True)]})


def check_people(url: str, tokens: dict[str, str]) -> None:
    """The scenario, on a server whose store holds ann (web/, read) and bob (notes/, write)."""
    ann, bob = as_person(url, tokens["ann"]), as_person(url, tokens["bob"])
    assert as_person(url, None).get("/search", params={"q": "heliograph"}).status_code == 401  # people: loopback too
    assert as_person(url, "nobody").get("/documents").status_code == 401
    own = {"ann": "web/", "bob": "notes/"}
    for name, client in (("ann", ann), ("bob", bob)):
        listed = client.get("/documents").json()["documents"]
        assert listed and all(d["path"].startswith(own[name]) for d in listed), name
        for query in ("heliograph", "tomatoes", "runbook release", "kimchi seoul tea"):
            hits = client.get("/search", params={"q": query, "k": 5}).json()["hits"]
            assert all(h["doc_path"].startswith(own[name]) for h in hits), (name, query)
        shown = cited(client.post("/ask", json={"question": QUESTION}).json())
        assert shown and all(p.startswith(own[name]) for p in shown), (name, shown)
    assert len(bob.get("/search", params={"q": "heliograph release", "k": 3}).json()["hits"]) == 3  # k allowed hits
    assert ann.get("/documents/notes/heliograph.md").status_code == 404
    assert bob.get("/documents/notes/heliograph.md").status_code == 200
    assert ann.get("/documents/notes/heliograph.md/pages/1.png").status_code == 404
    assert ann.get("/documents", params={"prefix": "notes/"}).json()["documents"] == []
    # threads and answers are their asker's
    turn = bob.post("/threads", json={"question": "What is the heliograph?"}).json()
    thread, answer_id = turn["thread_id"], turn["answer"]["answer_id"]
    assert ann.get(f"/threads/{thread}").status_code == 404
    assert ann.post(f"/threads/{thread}/ask", json={"question": "and then?"}).status_code == 404
    assert ann.delete(f"/threads/{thread}").status_code == 404
    assert thread not in {t["thread_id"] for t in ann.get("/threads").json()["threads"]}
    assert thread in {t["thread_id"] for t in bob.get("/threads").json()["threads"]}
    assert ann.get(f"/answers/{answer_id}").status_code == 404
    assert bob.get(f"/answers/{answer_id}").status_code == 200
    assert answer_id not in {a["answer_id"] for a in ann.get("/answers").json()["answers"]}
    chat = {"model": "kb", "messages": [{"role": "user", "content": "and the heliograph?"}], "kb_thread": thread}
    assert ann.post("/v1/chat/completions", json=chat).status_code == 404
    assert bob.post("/v1/chat/completions", json=chat).status_code == 200
    # writes need a write grant
    upload = {"file": ("mine.md", b"# Mine\n\nA note.\n", "text/markdown")}
    assert ann.post("/documents", files=upload).status_code == 403
    assert ann.delete("/documents/web/tomatoes.html").status_code == 403
    assert ann.delete("/documents/notes/heliograph.md").status_code == 404  # not even readable: absent for ann
    assert bob.delete("/documents/notes/heliograph.md").status_code == 200


def test_two_people_on_sqlite(start_server: Callable[..., Any]) -> None:
    server = start_server()
    check_people(server.url, _people(server.kb_dir, {}))


def test_without_people_nothing_changes(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as client:
        assert client.get("/search", params={"q": "heliograph"}).status_code == 200  # loopback, no token
        paths = {d["path"] for d in client.get("/documents").json()["documents"]}
        assert any(p.startswith("notes/") for p in paths) and any(p.startswith("web/") for p in paths)


def test_the_operator_token_still_opens_everything(start_server: Callable[..., Any]) -> None:
    server = start_server(token="operator-token")
    tokens = _people(server.kb_dir, {})
    assert as_person(server.url, tokens["ann"]).get("/documents/notes/heliograph.md").status_code == 404
    assert as_person(server.url, "operator-token").get("/documents/notes/heliograph.md").status_code == 200


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server from pgserver (as kb-postgres's tests start it), for this module; skipped without
    kb-postgres or pgserver."""
    testing = pytest.importorskip("kb_postgres.testing")
    with ExitStack() as stack:
        try:
            url = stack.enter_context(testing.postgres_server(prefix="kb-serve-access-pg-"))
        except ImportError as exc:
            pytest.skip(f"could not import 'pgserver': {exc}")
        yield url


def test_two_people_on_postgres(start_server: Callable[..., Any], postgres_url: str, tmp_path: Path) -> None:
    overrides = {
        "store.backend": "postgres",
        "backends.postgres.url": postgres_url,
        "backends.postgres.schema": f"kb_access_{uuid.uuid4().hex[:10]}",
    }
    kb_dir = tmp_path / "pg-kb"
    with KnowledgeBase(load_config(kb_dir=kb_dir, overrides=overrides, environ={})) as kb:
        ingest_paths(kb, [CORPUS])
    tokens = _people(kb_dir, overrides)
    server = start_server(kb_dir=kb_dir, overrides=overrides)
    check_people(server.url, tokens)
