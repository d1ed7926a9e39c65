"""Issue 45's access probe, briefly: generated requests on every route of one real ``kb serve`` (uvicorn)
as four people with different grants (one with none) and as nobody; after each, nothing in the response
crosses the asker's grants (kb_serve_probe.py says what is checked). bench/access_probe.py runs it at length."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kb_serve_calls import NOBODY, ROUTES, WRONG, Call, Known, draw
from kb_serve_leaks import EXTRA, GROUPS
from kb_serve_probe import OPERATOR, SCRIPT, SERVER_OVERRIDES, Probe, prepare, server_plugins

from kb_core.plugin.stores import Access
from kb_serve import access

pytest.importorskip("kb_documents", reason="kb-documents (the scans' pages) is not installed")

#: Calls per generated sequence, and sequences: about 100 requests in all.
CALLS, SEQUENCES = 10, 10
QUESTION = "When does the zebrafinch quarry open?"


@pytest.fixture
def probed(start_server: Callable[..., Any], tmp_path: Path) -> Probe:
    server = start_server(script=SCRIPT, token=OPERATOR, plugins=server_plugins(), overrides=SERVER_OVERRIDES)
    tokens = prepare(server.app.state.service, tmp_path / "extra")
    return Probe(server.url, tokens, server.kb_dir / "uploads")


def test_no_request_crosses_the_grants(probed: Probe) -> None:
    @settings(
        max_examples=SEQUENCES,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.randoms(use_true_random=True))  # (a seed: what a call draws depends on the server, kept across examples)
    def sequence(rnd: random.Random) -> None:
        before = len(probed.violations)
        probed.run(rnd, CALLS)
        assert probed.violations[before:] == []
        assert probed.server_errors == []

    try:
        sequence()
    finally:
        probed.close()
    assert sum(probed.requests.values()) >= CALLS * SEQUENCES


def test_every_route_is_probed() -> None:
    """The generator reaches every route, as every person and as nobody, and disguises paths every way."""
    known = Known(dict(EXTRA), uploads=["notes/inbox/a.md"], answers={"ans_" + "0" * 16: "ann"})
    known.threads["thr_" + "0" * 12] = "bob"
    rnd = random.Random(3)
    calls = [draw(rnd, known, sorted(GROUPS)) for _ in range(600)]
    assert {c.route for c in calls} == set(ROUTES)
    assert {c.person for c in calls} == {*GROUPS, NOBODY, WRONG}
    assert any(c.target is None for c in calls) and any(c.target is not None for c in calls)


def test_an_upload_reports_only_the_uploaders_own_answers(probed: Probe) -> None:
    """A new version of a document re-checks the answers citing it; its uploader is told of their own only
    (the probe found bob's upload report naming cho's answer and question)."""

    def upload(text: str) -> dict[str, Any]:
        files = [("file", ("notes/inbox/plan.md", text.encode(), "text/markdown"))]
        call = Call("POST /documents", "bob", "POST", "/documents", files=files, target="notes/inbox/plan.md")
        reply = probed.send(call)
        assert reply.status_code == 200, reply.text
        return dict(reply.json())

    def ask(person: str) -> str:
        reply = probed.send(Call("POST /ask", person, "POST", "/ask", json={"question": QUESTION}))
        assert reply.status_code == 200 and reply.json()["grounded"], reply.text
        return str(reply.json()["answer_id"])

    upload("# Plan\n\nThe zebrafinch quarry opens on Monday at nine.\n")
    theirs, own = ask("cho"), ask("bob")
    report = upload("# Plan\n\nThe zebrafinch quarry opens on Friday at ten instead.\n")["answers"]
    probed.close()
    assert [a["answer_id"] for a in report["stale_answers"]] == [own]
    assert (report["answers_checked"], report["stale"]) == (1, 1)
    assert theirs not in json.dumps(report) and "zebrafinch" in json.dumps(report)
    assert probed.violations == []


def test_the_probe_sees_a_server_that_ignores_the_grants(probed: Probe, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks can fail: on a server that lets every person read everything, the probe finds paths named
    and passages quoted outside the grants."""
    monkeypatch.setattr(access.people, "access_of", lambda _store, person: Access(person, ("",), ()))  # (the policy)
    try:
        probed.run(random.Random(5), 40)
    finally:
        probed.close()
    found = " ".join(w for v in probed.violations for w in v.what)
    assert "names " in found and "quotes " in found
