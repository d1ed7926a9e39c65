"""Text that is not valid Unicode, against a real uvicorn: one 400 in the server's error shape, never a 5xx.

Reproduction: ``{"question": "\\ud800 x"}`` (a lone surrogate, valid JSON, no valid Unicode) gave a 500 on
``POST /ask``, ``/threads`` and ``/threads/{id}/ask``, and an "internal error" event on ``/ask/stream``.
The body is checked where it is read (``kb_serve.bodies.read_json`` with ``kb_core.commands.check_unicode``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.testing import following_up
from kb_serve.client import parse_sse
from kb_serve.openapi import own_schema

QUESTION = "At what wind speed does Heliograph move the panels to the stow angle?"
JSON = {"Content-Type": "application/json"}
ERROR_SCHEMA = own_schema("error")


def refused(reply: httpx.Response, status: int, fragment: str) -> None:
    """``reply`` is the documented refusal: ``status``, one line of JSON naming ``fragment``."""
    assert reply.status_code == status, (status, reply.status_code, reply.text[:300])
    assert "\n" not in reply.text and reply.headers["content-type"] == "application/json"
    body = reply.json()
    jsonschema.validate(body, ERROR_SCHEMA)
    assert fragment in body["error"], body


def ask_paths(thread_id: str) -> list[str]:
    """Every route a question is posted to, whole and streamed."""
    follow_up = f"/threads/{thread_id}/ask"
    return ["/ask", "/ask?stream=1", "/ask/stream", "/threads", "/threads?stream=1", follow_up, f"{follow_up}?stream=1"]


def turns(http: httpx.Client, thread_id: str) -> int:
    return len(http.get(f"/threads/{thread_id}").json()["turns"])


def test_a_question_that_is_not_valid_unicode_is_a_400_on_every_route(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        first = http.post("/threads", json={"question": QUESTION})
        assert first.status_code == 200, first.text
        thread_id = first.json()["thread_id"]
        for body, status, fragment in [
            (b'{"question": "\\ud800 x"}', 400, "the body's field 'question' is not valid Unicode: character 1"),
            (b'{"question": "x \\udfff"}', 400, "is U+DFFF, half of a surrogate pair"),
            (b'{"question": "ok", "mode": "\\udc80"}', 400, "the body's field 'mode' is not valid Unicode"),
            (b'{"\\ud800": 1}', 400, "the body's field name '\\ud800' is not valid Unicode"),
            (b'{"question": "\xff x"}', 400, "the body is not valid UTF-8 (byte 15 is 0xff)"),
            (b'{"question": "\xed\xa0\x80 x"}', 400, "the body's field 'question' is not valid Unicode"),
            (b'{"question": "wind\\u0000speed"}', 400, "the question contains a NUL character (U+0000)"),
        ]:
            for path in ask_paths(thread_id):
                refused(http.post(path, content=body, headers=JSON), status, fragment)
        assert turns(http, thread_id) == 1  # nothing was asked, nothing kept
        assert http.post(f"/threads/{thread_id}/ask", json={"question": QUESTION}).status_code == 200
        assert turns(http, thread_id) == 2  # and the server answers as before
        refused(http.get("/search", params={"q": "wind\x00speed"}), 400, "the query contains a NUL character")


# -- any text, through every entry point that takes text -------------------------------------------

TEXT = st.one_of(
    st.text(st.characters(exclude_categories=[]), max_size=40),  # any code point, lone surrogates too
    st.text(st.sampled_from(["\ud800", "\udcff", "\x00", "\u202e", "\u2066", "a", " ", "é", "한", "😀"]), max_size=40),
    st.builds(lambda c, n: c * n, st.sampled_from(["x", "\udc80", "é", " ", "\x00"]), st.integers(1, 10**6)),
)
ROUTES = [
    "search",
    "glob",
    "mode",
    "prefix",
    "document",
    "thread",
    "answer",
    *(f"post {p}" for p in ask_paths("{thread}")),
]
MAX_URL_TEXT = 5_000  # characters of text in a URL (httpx refuses URLs past 65,536 bytes; one is up to 12)


def in_url(text: str) -> str:
    """``text`` percent-encoded as the bytes a client would send (a lone surrogate as its 3 UTF-8-like bytes)."""
    return quote(text[:MAX_URL_TEXT].encode("utf-8", "surrogatepass"), safe="")


def check_reply(reply: httpx.Response) -> None:
    """Never a 5xx; a refusal is one line of ``{"error", "hint"}``; a stream's error event has the same shape."""
    assert reply.status_code < 500, (reply.status_code, reply.text[:300])
    if 300 <= reply.status_code < 400:  # "/threads/." is "/threads/" to a client: redirected to "/threads"
        assert reply.headers["location"].startswith("http://"), reply.headers
    elif reply.status_code >= 400:
        assert "\n" not in reply.text and reply.headers["content-type"] == "application/json", reply.text[:300]
        jsonschema.validate(reply.json(), ERROR_SCHEMA)
    elif reply.headers["content-type"].startswith("text/event-stream"):
        events = parse_sse(reply.text)
        assert events and events[-1][0] in ("answer", "turn", "error"), events[-3:]
        for name, data in events:
            if name == "error":
                jsonschema.validate(data, ERROR_SCHEMA)
                assert data["error"] != "internal error", data


def test_any_text_anywhere_is_an_answer_or_a_documented_refusal(start_server: Callable[..., Any]) -> None:
    server = start_server(script=following_up("the Heliograph panels"))  # follow-ups lean on the first turn
    with server.client() as http:  # (a 60 s timeout: a hang fails the test)
        thread_id = http.post("/threads", json={"question": QUESTION}).json()["thread_id"]

        @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
        @given(text=TEXT, route=st.sampled_from(ROUTES))
        def any_text(text: str, route: str) -> None:
            if route.startswith("post "):
                body = json.dumps({"question": text})  # a lone surrogate as its \\ud800 escape
                path = route.removeprefix("post ").replace("{thread}", thread_id)
                reply = http.post(path, content=body.encode(), headers=JSON)
            else:
                reply = http.get(
                    {
                        "search": f"/search?q={in_url(text)}",
                        "glob": f"/search?q=wind&path={in_url(text)}",
                        "mode": f"/search?q=wind&mode={in_url(text)}",
                        "prefix": f"/documents?prefix={in_url(text)}",
                        "document": f"/documents/{in_url(text) or 'x'}",
                        "thread": f"/threads/{in_url(text) or 'x'}",
                        "answer": f"/answers/{in_url(text) or 'x'}",
                    }[route]
                )
            check_reply(reply)

        any_text()
        assert http.get("/health").status_code == 200
