"""Who owns an answer or a thread, on a real server (uvicorn) over SQLite and PostgreSQL: the asker, recorded in
the transaction that stores it (so neither an upload holding the writer nor anything after the answer can leave it
owned by nobody), removed with the person (a name given again inherits nothing); and a person's ``/health``
counts only the documents they may read."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from kb_serve_people import add_people, as_person

from kb_core import KnowledgeBase, WriterBusyError, ingest_paths, load_config
from kb_core.plugin.stores import AccessStore
from kb_core.service import people

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
OPERATOR = "operator-token"


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server from pgserver, for this module; skipped without kb-postgres or pgserver."""
    testing = pytest.importorskip("kb_postgres.testing")
    with ExitStack() as stack:
        try:
            url = stack.enter_context(testing.postgres_server(prefix="kb-serve-owners-pg-"))
        except ImportError as exc:
            pytest.skip(f"could not import 'pgserver': {exc}")
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, start_server: Callable[..., Any], tmp_path: Path) -> Any:
    """A server with a person of each kind: ann reads web/, bob reads and writes notes/."""
    overrides: dict[str, Any] = {}
    kb_dir = None
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        overrides = {
            "store.backend": "postgres",
            "backends.postgres.url": url,
            "backends.postgres.schema": f"kb_owners_{uuid.uuid4().hex[:10]}",
        }
        kb_dir = tmp_path / "pg-kb"
        with KnowledgeBase(load_config(kb_dir=kb_dir, overrides=overrides, environ={})) as kb:
            ingest_paths(kb, [CORPUS])
    running = start_server(kb_dir=kb_dir, overrides=overrides, token=OPERATOR)
    groups = {"ann": ["gardeners"], "bob": ["writers"]}
    grants = {"gardeners": [("web/", False)], "writers": [("notes/", True)]}
    running.app.state.service.write(lambda kb: add_people(kb.store, groups, grants))
    return running


def test_an_answer_and_a_new_thread_are_their_askers_while_the_writer_is_busy(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bob = as_person(server.url, "token-bob")

    def busy(_work: Any) -> Any:  # an upload holding the writer (or another process's writer lock)
        raise WriterBusyError("the knowledge base is being written by another process")

    monkeypatch.setattr(server.app.state.service.answers, "write", busy)
    asked = bob.post("/ask", json={"question": "What is the heliograph?"})
    assert asked.status_code == 200, asked.text
    answer_id = asked.json()["answer_id"]
    assert bob.get(f"/answers/{answer_id}").status_code == 200
    assert answer_id in {a["answer_id"] for a in bob.get("/answers").json()["answers"]}
    turn = bob.post("/threads", json={"question": "What is the heliograph?"})
    assert turn.status_code == 200, turn.text
    thread = turn.json()["thread_id"]
    assert bob.get(f"/threads/{thread}").status_code == 200
    assert bob.post(f"/threads/{thread}/ask", json={"question": "and then?"}).status_code == 200
    assert [t["thread_id"] for t in bob.get("/threads").json()["threads"]] == [thread]


def test_a_name_given_again_inherits_nothing(server: Any) -> None:
    bob = as_person(server.url, "token-bob")
    answer_id = bob.post("/ask", json={"question": "What is the heliograph?"}).json()["answer_id"]
    thread = bob.post("/threads", json={"question": "What is the heliograph?"}).json()["thread_id"]

    def again(kb: KnowledgeBase) -> None:  # bob leaves; someone else is given the name
        store = kb.store
        assert isinstance(store, AccessStore)
        assert store.remove_person("bob")
        store.add_person("bob", people.hash_token("token-new-bob"), "2026-01-01T00:00:00Z")
        store.add_member("writers", "bob")

    server.app.state.service.write(again)
    new_bob = as_person(server.url, "token-new-bob")
    assert new_bob.get(f"/answers/{answer_id}").status_code == 404
    assert new_bob.get(f"/threads/{thread}").status_code == 404
    assert new_bob.get("/answers").json()["answers"] == [] and new_bob.get("/threads").json()["threads"] == []
    chat = {"model": "kb", "messages": [{"role": "user", "content": "and then?"}], "kb_thread": thread}
    assert new_bob.post("/v1/chat/completions", json=chat).status_code == 404
    operator = as_person(server.url, OPERATOR)
    assert operator.get(f"/answers/{answer_id}").status_code == 200  # what was asked stays stored


def test_a_persons_health_counts_only_what_they_may_read(server: Any) -> None:
    every = as_person(server.url, OPERATOR).get("/health").json()
    ann = as_person(server.url, "token-ann").get("/health").json()
    web = as_person(server.url, "token-ann").get("/documents").json()["documents"]
    assert web and all(d["path"].startswith("web/") for d in web)
    assert ann["documents"] == len(web) < every["documents"]
    assert 0 < ann["chunks"] < every["chunks"]
    assert ann["chunks"] == sum(d["chunk_count"] for d in web)
