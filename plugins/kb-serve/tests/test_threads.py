"""``/threads``: a thread's first question, follow-ups made standalone (whole and streamed), list, show, delete.

The model is scripted (``kb_core.testing.following_up``): asked what a follow-up is about it names the topic;
otherwise it answers with the first evidence entry, as the other tests' model does.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from kb_core import LIMITS
from kb_core.bounds import LIST_LIMIT
from kb_core.plugin import GenerateRequest
from kb_core.service import ThreadInUse, ThreadsInUse
from kb_core.testing import extractive, following_up
from kb_serve.client import iter_sse, parse_sse
from kb_serve.errors import status_of
from kb_serve.openapi import document, kb_schema, own_schema

FIRST = "What does the Heliograph daemon do?"
FOLLOW_UP = "Which port does it listen on?"
TOPIC = "the Heliograph daemon"
REPO = Path(__file__).resolve().parents[3]
#: Bodies /ask refuses (as test_ask.py's BAD_QUESTIONS): /threads must refuse them alike.
BAD_BODIES = [
    b"not json",
    b"[1, 2]",
    b"{}",
    b'{"question": "   "}',
    b'{"question": "x", "k": 0}',
    b'{"question": "x", "k": "5"}',
    b'{"question": "x", "temperature": -1}',
    b'{"question": "x", "mode": "fuzzy"}',
    b'{"question": "x", "colour": "red"}',
    b'{"question": "x", "seed": -1}',
    b'{"question": ["<script>alert(1)</script>"]}',
    json.dumps({"question": "x" * (LIMITS.query_chars + 1)}).encode(),  # too long
    json.dumps({"question": "x", "backend": "b" * 200}).encode(),
    json.dumps({"question": "x" * (LIMITS.json_body_bytes + 1)}).encode(),  # 413
]


#: The topic when asked what a follow-up is about; else the first evidence entry, cited.
conversing = following_up(TOPIC)


def turn_of(reply: httpx.Response) -> dict[str, Any]:
    """The ``turn.v1`` of a whole (JSON) reply, checked against its schema."""
    assert reply.status_code == 200, reply.text
    turn = reply.json()
    jsonschema.validate(turn, kb_schema("turn.v1"))
    return dict(turn)


def streamed_turn(http: httpx.Client, url: str, question: str, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    """(the text of the ``token`` events, the data of the final ``turn`` event) of a streamed question.

    The events come in order: one ``standalone`` (what kb searches with, as the turn then says), tokens, the turn.
    """
    with http.stream("POST", url, json={"question": question}, **kwargs) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        events = list(iter_sse(reply.iter_lines()))
    names = [name for name, _ in events]
    assert names[0] == "standalone" and names[-1] == "turn" and set(names[1:-1]) == {"token"}, names
    searched, turn = events[0][1], events[-1][1]
    jsonschema.validate(searched, document()["components"]["schemas"]["standalone_event"])
    jsonschema.validate(turn, kb_schema("turn.v1"))
    assert searched == {"question": turn["standalone"], "method": turn["method"]}
    return "".join(data["text"] for name, data in events if name == "token"), turn


def test_a_follow_up_is_searched_standalone_and_streamed_like_ask(start_server: Callable[..., Any]) -> None:
    server = start_server(script=conversing)
    with server.client() as http:
        first = turn_of(http.post("/threads", json={"question": FIRST}))
        assert first["position"] == 1 and first["thread_id"].startswith("thr_")
        assert first["asked"] == first["standalone"] == FIRST and first["method"] == "as_asked"
        assert first["answer"]["grounded"] is True
        thread = first["thread_id"]

        text, follow = streamed_turn(http, f"/threads/{thread}/ask", FOLLOW_UP, headers={"Accept": "text/event-stream"})
        assert follow["thread_id"] == thread and follow["position"] == 2
        assert follow["asked"] == FOLLOW_UP and follow["standalone"] != follow["asked"]
        assert follow["standalone"] == f"{FOLLOW_UP} ({TOPIC})" and follow["method"] == "model"
        assert follow["answer"]["question"] == follow["standalone"]
        assert follow["answer"]["grounded"] is True and "7341" in follow["answer"]["answer"] and "7341" in text
        assert follow["answer"]["model"]["path"] is None  # no local paths, as /ask
        answer_prompt = server.llm.models[-1].requests[-1].user
        assert follow["standalone"] in answer_prompt and f"Q: {FIRST}" not in answer_prompt  # no history by default

        _, third = streamed_turn(http, f"/threads/{thread}/ask", "Who maintains it?", params={"stream": "1"})
        assert third["position"] == 3 and third["standalone"] == f"Who maintains it? ({TOPIC})"
        whole = turn_of(http.post(f"/threads/{thread}/ask", json={"question": "What is its default port?"}))
        assert whole["position"] == 4 and whole["thread_id"] == thread

        started = streamed_turn(http, "/threads", FIRST, params={"stream": "1"})[1]  # a new thread, streamed
        assert started["position"] == 1 and started["thread_id"] != thread
        assert started["method"] == "as_asked"  # its standalone event too: every thread ask sends one


def test_threads_are_listed_shown_and_deleted_with_their_answers(start_server: Callable[..., Any]) -> None:
    server = start_server(script=conversing)
    with server.client() as http:
        older = turn_of(http.post("/threads", json={"question": "When was Heliograph 2.3.0 released?"}))
        first = turn_of(http.post("/threads", json={"question": FIRST}))
        follow = turn_of(http.post(f"/threads/{first['thread_id']}/ask", json={"question": FOLLOW_UP}))

        listed = http.get("/threads").json()
        jsonschema.validate(listed, kb_schema("thread_list.v1"))
        assert [(t["thread_id"], t["turns"], t["first_question"]) for t in listed["threads"]] == [
            (first["thread_id"], 2, FIRST),
            (older["thread_id"], 1, "When was Heliograph 2.3.0 released?"),
        ]
        assert [t["thread_id"] for t in http.get("/threads", params={"limit": 1}).json()["threads"]] == [
            first["thread_id"]
        ]
        for limit, fragment in (("0", LIST_LIMIT.allowed), ("1000001", LIST_LIMIT.allowed), ("many", "a whole number")):
            reply = http.get("/threads", params={"limit": limit})
            assert reply.status_code == 400 and fragment in reply.json()["error"], reply.text

        shown = http.get(f"/threads/{first['thread_id']}").json()
        jsonschema.validate(shown, kb_schema("thread.v1"))
        assert [(t["position"], t["asked"], t["standalone"]) for t in shown["turns"]] == [
            (1, FIRST, FIRST),
            (2, FOLLOW_UP, f"{FOLLOW_UP} ({TOPIC})"),
        ]
        assert shown["turns"][1]["answer"]["answer_id"] == follow["answer"]["answer_id"]
        assert all(t["answer"]["model"]["path"] is None for t in shown["turns"])
        for local in {server.kb_dir, server.kb_dir.resolve(), REPO, Path.home()}:
            assert str(local) not in json.dumps(shown)

        deleted = http.delete(f"/threads/{first['thread_id']}")
        assert deleted.status_code == 200, deleted.text
        jsonschema.validate(deleted.json(), kb_schema("thread_deleted.v1"))
        assert deleted.json() == {"schema_version": "thread_deleted.v1", "thread_id": first["thread_id"], "turns": 2}
        assert [t["thread_id"] for t in http.get("/threads").json()["threads"]] == [older["thread_id"]]
        assert http.get(f"/threads/{first['thread_id']}").status_code == 404
        assert http.get(f"/answers/{follow['answer']['answer_id']}").status_code == 404  # its answers went too
        assert http.delete(f"/threads/{first['thread_id']}").status_code == 404


def test_an_unknown_thread_is_a_404_like_any_other(start_server: Callable[..., Any]) -> None:
    server = start_server(script=conversing)
    with server.client() as http:
        replies = [
            http.get("/threads/thr_000000000000"),
            http.delete("/threads/thr_000000000000"),
            http.post("/threads/thr_000000000000/ask", json={"question": FOLLOW_UP}),
            http.post("/threads/nonesuch/ask", params={"stream": "1"}, json={"question": FOLLOW_UP}),
            http.post("/threads/x%20y/ask", headers={"Accept": "text/event-stream"}, json={"question": FOLLOW_UP}),
        ]
        for reply in replies:
            assert reply.status_code == 404, reply.text  # a 404 before any stream starts
            assert reply.headers["content-type"] == "application/json"
            jsonschema.validate(reply.json(), own_schema("error"))
            assert "no thread with id" in reply.json()["error"] and "GET /threads" in reply.json()["hint"]
        assert http.get("/documents/nowhere.md").json().keys() == replies[0].json().keys()
        assert http.get("/threads").json()["threads"] == []  # nothing was asked, nothing kept
        assert server.llm.models == [] or server.llm.models[0].requests == []


def test_hostile_and_oversized_questions_get_the_4xx_of_ask(start_server: Callable[..., Any]) -> None:
    server = start_server(script=conversing)
    with server.client() as http:
        thread = turn_of(http.post("/threads", json={"question": FIRST}))["thread_id"]
        json_type = {"Content-Type": "application/json"}
        bodies = [
            *((body, json_type) for body in BAD_BODIES),
            (json.dumps({"question": FIRST}).encode(), {"Content-Type": "text/plain"}),  # 415
            (json.dumps({"question": FIRST}).encode(), {**json_type, "Origin": "http://attacker.example"}),  # 403
        ]
        for body, headers in bodies:
            expected = http.post("/ask", content=body, headers=headers)
            assert 400 <= expected.status_code < 500, expected.text
            for path in ("/threads", f"/threads/{thread}/ask", "/threads?stream=1"):
                reply = http.post(path, content=body, headers=headers)
                assert (reply.status_code, reply.json()) == (expected.status_code, expected.json()), (path, body[:80])
        assert http.post("/ask", json={"question": FIRST, "backend": "nonesuch"}).status_code == 404
        assert http.post("/threads", json={"question": FIRST, "backend": "nonesuch"}).status_code == 404
        assert [t["turns"] for t in http.get("/threads").json()["threads"]] == [1]  # nothing else was kept


def test_a_thread_a_question_is_being_answered_in_is_not_deleted(start_server: Callable[..., Any]) -> None:
    release = threading.Event()
    release.set()

    def answer_when_released(request: GenerateRequest) -> list[str]:
        release.wait(30)
        return extractive(request)

    held = following_up(TOPIC, answer_when_released)

    server = start_server(script=held)
    with server.client() as http, concurrent.futures.ThreadPoolExecutor(1) as pool:
        thread = turn_of(http.post("/threads", json={"question": FIRST}))["thread_id"]
        release.clear()
        asked = pool.submit(http.post, f"/threads/{thread}/ask", json={"question": FOLLOW_UP})
        _wait_for(lambda: http.get("/health").json()["generation"]["busy"])
        busy = http.delete(f"/threads/{thread}")
        assert busy.status_code == 409 and "being answered" in busy.json()["error"], busy.text
        release.set()
        assert turn_of(asked.result(60))["position"] == 2
        assert http.delete(f"/threads/{thread}").json()["turns"] == 2


def test_a_follow_up_stream_the_client_leaves_keeps_no_turn(start_server: Callable[..., Any], paced_llm: Any) -> None:
    llm = paced_llm(script=conversing, pace_s=0.05)
    server = start_server(llm=llm)
    with server.client() as http:
        thread = turn_of(http.post("/threads", json={"question": FIRST}))["thread_id"]
        with http.stream("POST", f"/threads/{thread}/ask", params={"stream": "1"}, json={"question": FOLLOW_UP}) as r:
            assert [name for name, _ in itertools.islice(iter_sse(r.iter_lines()), 2)] == ["standalone", "token"]
        _wait_for(lambda: not http.get("/health").json()["generation"]["busy"])
        assert [t["position"] for t in http.get(f"/threads/{thread}").json()["turns"]] == [1]
        stopped_at = llm.yielded
        time.sleep(0.3)
        assert llm.yielded == stopped_at  # the generation stopped
        events = parse_sse(http.post(f"/threads/{thread}/ask?stream=1", json={"question": FOLLOW_UP}).text)
        assert events[-1][0] == "turn" and events[-1][1]["position"] == 2


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_an_overlong_thread_id_is_refused_like_a_path(start_server: Callable[..., Any], method: str) -> None:
    server = start_server()
    with server.client() as http:
        reply = http.request(method, "/threads/" + "t" * (LIMITS.path_chars + 1))
        assert reply.status_code == 400 and "longer than" in reply.json()["error"]


def test_a_thread_is_never_asked_in_and_deleted_at_once() -> None:
    in_use = ThreadsInUse()
    with in_use.asking("thr_a"), in_use.asking("thr_a"), in_use.asking(None):
        with pytest.raises(ThreadInUse) as refused, in_use.deleting("thr_a"):
            pass
        assert status_of(refused.value) == 409
        with in_use.deleting("thr_b"):  # another thread
            with pytest.raises(ThreadInUse) as late, in_use.asking("thr_b"):
                pass
            assert status_of(late.value) == 409 and "being deleted" in late.value.message
    with in_use.deleting("thr_a"), in_use.asking("thr_b"):
        pass  # both free again


def _wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)
