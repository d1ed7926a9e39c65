"""``/v1``, OpenAI's chat API over kb, at the protocol: the message and its links, the stream, threads, errors.

Requests go to a real server (the conftest's uvicorn) over HTTP with httpx; the model is the scripted one.
``test_openai_clients.py`` drives the same routes with real clients (the ``openai`` package, ``llm``, curl).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kb_serve_chat import FIRST, FOLLOW_UP, OFF_TOPIC, PORT_QUESTION, TOPIC, conversing

from kb_core import LIMITS
from kb_core.plugin import GenerateRequest, hookimpl
from kb_core.service import markdown
from kb_core.testing import ScriptedLanguageModel, extractive
from kb_serve.openai_api import OpenAIApi
from kb_serve.openapi import kb_schema, own_schema

REPO = Path(__file__).resolve().parents[3]
#: A link to cited lines on kb's page, as a definition of a marker's reference link.
DEFINITION = re.compile(r"^\[kb-(c?\d+)\]: (http://[^/\s]+)/#/doc/([^/\s]+)/L(\d+)-L(\d+)$", re.MULTILINE)
LINK = re.compile(r"\[\[\d+\]\]\[kb-\d+\]")


def chat(question: str, *earlier: str, **extra: Any) -> dict[str, Any]:
    """A chat request body: ``earlier`` alternates user and assistant messages before ``question``."""
    roles = ["user", "assistant"] * len(earlier)
    messages = [{"role": r, "content": c} for r, c in zip(roles, earlier, strict=False)]
    return {"model": "kb", "messages": [*messages, {"role": "user", "content": question}], **extra}


def completed(http: httpx.Client, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """A whole completion, checked against its schema, its ``kb`` field against answer.v1."""
    reply = http.post("/v1/chat/completions", json=body, **kwargs)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    jsonschema.validate(data, own_schema("openai_chat_completion"))
    jsonschema.validate(data["kb"], kb_schema("answer.v1"))
    return dict(data)


def chunks_of(http: httpx.Client, body: dict[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
    """Every chunk of a streamed completion (the stream must end with ``data: [DONE]``)."""
    with http.stream("POST", "/v1/chat/completions", json={**body, "stream": True}, **kwargs) as reply:
        assert reply.status_code == 200, reply.read()
        assert reply.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in reply.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    assert all(line.startswith("data: ") for line in lines)
    found = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    for item in found:
        if "error" not in item:
            jsonschema.validate(item, own_schema("openai_chat_chunk"))
    return found


def content_of(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def lines_of(path: str, start: int, end: int) -> list[str]:
    return (REPO / "fixtures" / "corpus" / path).read_text(encoding="utf-8").split("\n")[start - 1 : end]


def test_models_are_kb_and_kb_with_each_installed_backend(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        listed = http.get("/v1/models").json()
    jsonschema.validate(listed, own_schema("openai_model_list"))
    ids = [m["id"] for m in listed["data"]]
    backends = server.app.state.service.registry.names("language_models")
    assert ids == ["kb", *(f"kb:{name}" for name in backends)] and "kb:scripted" in ids


def test_the_reply_is_kbs_answer_with_links_to_the_cited_lines_and_its_sources(
    start_server: Callable[..., Any],
) -> None:
    server = start_server()
    with server.client() as http:
        data = completed(http, chat(PORT_QUESTION))
    answer, content = data["kb"], data["choices"][0]["message"]["content"]
    assert data["object"] == "chat.completion" and data["model"] == "kb"
    assert answer["grounded"] is True and "7341" in content
    assert data["choices"][0]["finish_reason"] == "stop"
    assert content.startswith(markdown.shown(answer["answer"])) and "[[1]][kb-1]" in content and "[#1]" not in content
    assert "\n\nSources:\n\n- [1] [notes/heliograph.md, lines " in content
    (label, base, path, start, end), *_ = DEFINITION.findall(content)
    cited = answer["citations"][0]["citation"]
    assert (label, base, path) == ("1", server.url, "notes%2Fheliograph.md")  # the page's own #/doc/ route
    assert (int(start), int(end)) == (cited["start_line"], cited["end_line"])
    assert any("7341" in line for line in lines_of("notes/heliograph.md", int(start), int(end)))
    assert content == markdown.message(answer, server.url)
    usage = answer["usage"]
    assert data["usage"]["prompt_tokens"] == usage["prompt_tokens"] > 0
    assert data["usage"]["completion_tokens"] == usage["completion_tokens"] > 0
    assert data["usage"]["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_the_stream_is_the_same_message_its_markers_linked_as_they_come(start_server: Callable[..., Any]) -> None:
    def by_character(request: GenerateRequest) -> list[str]:
        return list("".join(extractive(request)))  # "[", "#", "1", "]": a marker split over four tokens

    server = start_server(script=by_character)
    with server.client() as http:
        chunks = chunks_of(http, chat(PORT_QUESTION, stream_options={"include_usage": True}))
        whole = completed(http, chat(PORT_QUESTION))
    first, *middle, final, usage = chunks
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["choices"][0]["finish_reason"] is None and "kb" not in c for c in middle)
    assert final["choices"][0]["finish_reason"] == "stop" and final["choices"][0]["delta"] == {}
    jsonschema.validate(final["kb"], kb_schema("answer.v1"))
    assert final["kb"]["grounded"] is True and final["kb_thread"].startswith("thr_")
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == final["kb"]["usage"]["completion_tokens"]
    assert all(c["usage"] is None for c in chunks[:-1])
    deltas = [c["choices"][0]["delta"]["content"] for c in middle]
    assert any("[[1]][kb-1]" in d for d in deltas) and not any("[#" in d or d.endswith("[") for d in deltas)
    assert content_of(chunks) == whole["choices"][0]["message"]["content"] == markdown.message(final["kb"], server.url)
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")


def test_a_question_kb_cannot_answer_is_refused_in_words_with_the_nearest_passages(
    start_server: Callable[..., Any],
) -> None:
    server = start_server()
    with server.client() as http:
        data = completed(http, chat(OFF_TOPIC))
        streamed = content_of(chunks_of(http, chat(OFF_TOPIC)))
    answer, content = data["kb"], data["choices"][0]["message"]["content"]
    assert answer["grounded"] is False and answer["refusal_reason"] == "score_gate"
    assert content.startswith(answer["answer"])  # kb's own words, listing the nearest passages
    assert answer["candidates"][0]["ref"] in content
    assert f"kb refused to answer (score_gate): {answer['note']}" in content
    assert streamed == content


def test_an_answer_kb_refuses_streams_only_its_refusal(
    start_server: Callable[..., Any],
) -> None:
    """Only checked text is shown (issue 44, deliver 1): the model's claims kb refuses never reach the client."""
    server = start_server(script=["The daemon", " is written in COBOL.", " It runs on the moon [#1]."])
    with server.client() as http:
        chunks = chunks_of(http, chat(PORT_QUESTION))
        whole = completed(http, chat(PORT_QUESTION))
    answer = chunks[-1]["kb"]
    assert answer["grounded"] is False and answer["refusal_reason"] == whole["kb"]["refusal_reason"]
    content = content_of(chunks)
    assert content.startswith("kb refused to answer") and "moon" not in content and markdown.RULE not in content
    assert content == markdown.message(answer, server.url) and content.startswith(
        f"kb refused to answer ({answer['refusal_reason']})"
    )
    assert whole["choices"][0]["message"]["content"] == content  # a refused answer is not shown as if it were one
    assert f"\n\nNearest candidates:\n\n- [{answer['candidates'][0]['citation']['path']}, lines" in content


def threads(http: httpx.Client) -> list[dict[str, Any]]:
    return list(http.get("/threads").json()["threads"])


def test_a_conversation_that_goes_on_stays_one_kb_thread_even_after_a_restart(
    start_server: Callable[..., Any],
) -> None:
    server = start_server(script=conversing)
    system = {"role": "system", "content": "You are a helpful assistant."}  # (clients add one; kb ignores it)
    with server.client() as http:
        first = completed(http, chat(FIRST))
        reply = first["choices"][0]["message"]["content"]
        body = chat(FOLLOW_UP, FIRST, reply)
        body["messages"].insert(0, system)
        second = chunks_of(http, body)
        assert second[-1]["kb_thread"] == first["kb_thread"]
        listed = threads(http)
        assert [(t["thread_id"], t["turns"]) for t in listed] == [(first["kb_thread"], 2)]
        turn = http.get(f"/threads/{first['kb_thread']}").json()["turns"][1]
        assert turn["asked"] == FOLLOW_UP and turn["standalone"] == f"{FOLLOW_UP} ({TOPIC})"  # made standalone
    server.stop()

    again = start_server(script=conversing, kb_dir=server.kb_dir)  # nothing kept in memory: the store says it
    streamed_reply = content_of(second)  # as a client keeps a streamed reply
    with httpx.Client(base_url=again.url.replace("127.0.0.1", "localhost"), timeout=60) as http:  # another host
        third = completed(http, chat("Who maintains it?", FIRST, reply, FOLLOW_UP, streamed_reply))
        assert third["kb_thread"] == first["kb_thread"]
        assert threads(http)[0]["turns"] == 3 and len(threads(http)) == 1


def test_a_conversation_kb_does_not_recognise_starts_a_thread_asked_as_it_stands(
    start_server: Callable[..., Any],
) -> None:
    server = start_server(script=conversing)
    with server.client() as http:
        first = completed(http, chat(FIRST))
        edited = first["choices"][0]["message"]["content"] + "\n\n(edited by the user)"
        for history in ([FIRST, edited], ["What did I ask before?", "Something else entirely."], [FIRST]):
            turn = completed(http, chat(FOLLOW_UP, *history))
            assert turn["kb_thread"] != first["kb_thread"]
            assert http.get(f"/threads/{turn['kb_thread']}").json()["turns"][0]["standalone"] == FOLLOW_UP
        assert len(threads(http)) == 4


def test_a_client_that_knows_kb_names_the_thread(start_server: Callable[..., Any]) -> None:
    server = start_server(script=conversing)
    with server.client() as http:
        first = completed(http, chat(FIRST))
        thread = first["kb_thread"]
        by_header = completed(http, chat(FOLLOW_UP), headers={"X-Kb-Thread": thread})
        by_body = completed(http, chat("Who maintains it?", "an edited", "history", kb_thread=thread))
        assert by_header["kb_thread"] == by_body["kb_thread"] == thread
        assert [t["turns"] for t in threads(http)] == [3]
        missing = http.post("/v1/chat/completions", json=chat(FOLLOW_UP, kb_thread="thr_nonesuch"))
        assert missing.status_code == 404
        assert missing.json()["error"] | {"message": ""} == {
            "message": "",
            "type": "invalid_request_error",
            "param": "kb_thread",
            "code": "thread_not_found",
        }
        both = http.post("/v1/chat/completions", json=chat(FOLLOW_UP, kb_thread=thread), headers={"X-Kb-Thread": "x"})
        assert both.status_code == 400 and both.json()["error"]["param"] == "kb_thread"


def test_system_messages_and_parameters_kb_does_not_use_are_ignored_temperature_and_seed_are_kbs(
    start_server: Callable[..., Any],
) -> None:
    server = start_server()
    ignored = {
        "top_p": 0.5,
        "presence_penalty": 1.0,
        "frequency_penalty": -1.0,
        "logit_bias": {"42": 10},
        "user": "ann",
        "max_tokens": 5,
        "max_completion_tokens": 5,
        "stop": ["\n"],
        "response_format": {"type": "text"},
        "metadata": {"a": "b"},
        "n": 1,
        "tool_choice": "none",
        "tools": [],
        "logprobs": False,
        "store": False,
        "parallel_tool_calls": False,
        "reasoning_effort": "low",
        "some_future_parameter": {"x": 1},
    }
    body = chat(PORT_QUESTION, temperature=0.25, seed=7, **ignored)
    body["messages"][:0] = [
        {"role": "system", "content": "Answer only in pirate speech."},
        {"role": "developer", "content": [{"type": "text", "text": "Ignore the notes."}]},
    ]
    halves = ["What TCP port does", "the Heliograph daemon listen on?"]
    body["messages"][-1]["content"] = [{"type": "text", "text": half} for half in halves]
    with server.client() as http:
        data = completed(http, body)
    assert data["kb"]["grounded"] is True and "7341" in data["choices"][0]["message"]["content"]
    assert data["kb"]["question"].split() == PORT_QUESTION.split()  # the text parts, joined
    request = server.llm.models[-1].requests[-1]
    assert (request.temperature, request.seed) == (0.25, 7) and request.max_tokens != 5
    assert "pirate" not in request.system + request.user and "Ignore the notes" not in request.user


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}, "tools"),
        ({"functions": [{"name": "f"}]}, "functions"),
        ({"tool_choice": "auto"}, "tool_choice"),
        ({"n": 2}, "n"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}}, "response_format"),
        ({"logprobs": True}, "logprobs"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ({"temperature": -1}, "temperature"),
        ({"temperature": 10**400}, "temperature"),  # (too large for a float)
        (
            {"messages": [{"role": "user", "content": [{"type": ["text"], "text": "Which port?"}]}]},
            "messages[0].content[0]",
        ),
        ({"seed": -1}, "seed"),
        ({"model": "gpt-4o"}, "model"),
        ({"model": "kb:nonesuch"}, "model"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "user", "content": "   "}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": "x" * (LIMITS.query_chars + 1)}]}, "messages[0].content"),
        ({"messages": [{"role": "assistant", "content": "Hello"}]}, "messages"),
        ({"messages": [{"role": "tool", "content": "42", "tool_call_id": "c1"}]}, "messages[0]"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]},
            "messages[0].content[0]",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "What?"}, {"type": "input_audio"}]}]},
            "messages[0].content[1]",
        ),
    ],
)
def test_what_kb_cannot_honour_is_a_400_naming_the_parameter(
    start_server: Callable[..., Any], extra: dict[str, Any], param: str
) -> None:
    server = start_server()
    with server.client() as http:
        reply = http.post("/v1/chat/completions", json=chat(PORT_QUESTION) | extra)
    error = reply.json()
    jsonschema.validate(error, own_schema("openai_error"))
    assert reply.status_code == (404 if param == "model" else 400), error
    assert error["error"]["param"] == param and error["error"]["type"] == "invalid_request_error"
    assert server.llm.models == [] or server.llm.models[0].requests == []  # refused before any generation


def test_numbers_json_does_not_have_are_a_400_not_a_crash(start_server: Callable[..., Any]) -> None:
    server = start_server()
    question = json.dumps(chat(PORT_QUESTION))[:-1]  # (Python's JSON reader takes NaN and Infinity)
    with server.client() as http:
        for field, value in [("seed", "Infinity"), ("seed", "NaN"), ("temperature", "Infinity"), ("seed", "1e400")]:
            body = f'{question}, "{field}": {value}}}'.encode()
            reply = http.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
            assert reply.status_code == 400 and reply.json()["error"]["param"] == field, (field, value, reply.text)


def test_every_error_under_v1_is_openais_shape_and_kbs_own_routes_keep_theirs(
    start_server: Callable[..., Any], paced_llm: Callable[..., Any]
) -> None:
    llm = paced_llm(tokens=50, pace_s=0.01)
    llm.hold.clear()  # the first question holds the model
    server = start_server(llm=llm, token="s3cret", ask_queue=0)
    body = json.dumps(chat(PORT_QUESTION)).encode()
    url = f"{server.url}/v1/chat/completions"
    json_type = {"Content-Type": "application/json"}
    cases = {
        "no token": (401, httpx.post(url, content=body, headers=json_type)),
        "wrong token": (401, httpx.post(url, content=body, headers={**json_type, "Authorization": "Bearer x"})),
    }
    with server.client() as http:
        plain = {"Content-Type": "text/plain"}
        cases |= {
            "no route": (404, http.get("/v1/nonesuch")),
            "wrong method": (405, http.get("/v1/chat/completions")),
            "not JSON": (400, http.post("/v1/chat/completions", content=b"{", headers=json_type)),
            "text/plain": (415, http.post("/v1/chat/completions", content=body, headers=plain)),
            "too large": (413, http.post("/v1/chat/completions", json=chat("x" * LIMITS.json_body_bytes))),
            "foreign host": (421, http.get("/v1/models", headers={"Host": "attacker.example"})),
            "cross-site": (
                403,
                http.post("/v1/chat/completions", content=body, headers={**json_type, "Origin": "http://evil.example"}),
            ),
        }
        with http.stream("POST", "/v1/chat/completions", json=chat(PORT_QUESTION, stream=True)) as held:
            assert held.status_code == 200
            llm.started.wait(30)
            cases["busy"] = (503, http.post("/v1/chat/completions", json=chat(PORT_QUESTION)))
            llm.hold.set()
            held.read()
        kb_own = http.get("/nonesuch")
    for name, (status, reply) in cases.items():
        assert reply.status_code == status, (name, reply.text)
        jsonschema.validate(reply.json(), own_schema("openai_error"))
        assert reply.json()["error"]["type"] == "invalid_request_error" or status >= 500, name
    assert cases["no token"][1].headers["www-authenticate"] == "Bearer"
    assert cases["wrong method"][1].headers["allow"] == "POST"
    assert cases["busy"][1].json()["error"]["code"] == "model_busy"
    jsonschema.validate(kb_own.json(), own_schema("error"))  # {"error", "hint"} outside /v1
    assert kb_own.status_code == 404


def test_an_internal_error_under_v1_is_a_logged_openai_500(
    start_server: Callable[..., Any], server_log: Callable[[], list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_server()
    records = server_log()
    monkeypatch.setattr(OpenAIApi, "backends", lambda self: 1 / 0)  # a bug: GET /v1/models fails
    with server.client() as http:
        reply = http.get("/v1/models")
    assert reply.status_code == 500
    assert reply.json() == {
        "error": {
            "message": "internal error (see the server log; rerun with KB_DEBUG=1 and report it)",
            "type": "server_error",
            "param": None,
            "code": "internal_error",
        }
    }
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in records)


def test_a_client_that_leaves_the_stream_stops_the_generation(
    start_server: Callable[..., Any], paced_llm: Callable[..., Any]
) -> None:
    llm = paced_llm(tokens=400, pace_s=0.01, pause_after=3)
    server = start_server(llm=llm)
    with server.client() as http:
        with http.stream("POST", "/v1/chat/completions", json=chat(PORT_QUESTION, stream=True)) as reply:
            lines = reply.iter_lines()
            while '"role":"assistant"' not in next(lines):  # the stream opened (its text is held until checked)
                pass
            llm.paused.wait(30)
        llm.resume.set()  # the client has left; the model goes on to its next token and stops
        assert llm.closed.wait(30)
        assert llm.yielded < 400
        assert threads(http) == []  # nothing kept for a stream the client left


class CutModel:
    """Registers ``scripted``: the extractive answer, its Done saying the model was cut at its token limit."""

    @hookimpl
    def register_language_models(self, register: Callable[..., None]) -> None:
        """Register ``scripted``."""
        register("scripted", lambda _ctx: ScriptedLanguageModel(extractive, finish_reason="length"))


def test_an_answer_cut_at_kbs_token_limit_finishes_with_length(start_server: Callable[..., Any]) -> None:
    server = start_server(llm=CutModel())
    with server.client() as http:
        whole = completed(http, chat(PORT_QUESTION))
        streamed = chunks_of(http, chat(PORT_QUESTION))
    assert whole["kb"]["finish_reason"] == "length" and whole["choices"][0]["finish_reason"] == "length"
    assert streamed[-1]["choices"][0]["finish_reason"] == "length"


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.characters(blacklist_characters="`~"), max_size=40),  # (no code: a marker in code is not linked)
    st.lists(st.integers(min_value=1, max_value=6), max_size=20),
)
def test_a_stream_cut_anywhere_links_the_markers_of_the_whole_text(words: str, cuts: list[int]) -> None:
    text = f"  {words} [#1] and [#22][#3 [#] [# 4] x[#12]{words}[#"
    pieces, at = [], 0
    for size in cuts:
        pieces.append(text[at : at + size])
        at += size
    pieces.append(text[at:])
    stream = markdown.LinkedStream()
    sent = [stream.feed(piece) for piece in pieces]
    sent = [piece for piece in sent if piece]
    assert not sent or not sent[0][0].isspace() and not any(piece[-1].isspace() for piece in sent)  # blanks held
    whole = "".join(sent)
    assert (
        sum(len(LINK.findall(piece)) for piece in sent)
        == len(LINK.findall(whole))
        == len(markdown.MARKER_PATTERN.findall(text))
    )
    answer = {"grounded": True, "answer": text.strip(), "citations": [], "note": ""}
    assert "".join(sent) + stream.rest(answer, "http://h") == markdown.message(answer, "http://h")
    assert markdown.fingerprint(markdown.message(answer, "http://h")) == markdown.fingerprint(
        markdown.message(answer, "http://other:1")
    )


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
MESSAGES = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "role": st.sampled_from(["user", "assistant", "system", "developer", "tool"]) | JSON,
            "content": st.text(max_size=30)
            | st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url"]) | JSON, "text": JSON}))
            | JSON,
        },
    ),
    max_size=4,
)
OPTIONAL = {
    "stream": st.booleans() | JSON,
    "stream_options": st.fixed_dictionaries({"include_usage": st.booleans() | JSON}) | JSON,
    "temperature": st.floats(min_value=0, max_value=2) | JSON,
    "seed": st.integers() | JSON,
    "n": JSON,
    "tools": JSON,
    "tool_choice": JSON,
    "response_format": JSON,
    "logprobs": JSON,
    "kb_thread": JSON,
    "top_p": JSON,
}
#: Bodies near a right one (kb's model, a question it answers, any other field), and any JSON at all.
BODIES = (
    st.fixed_dictionaries(
        {
            "model": st.sampled_from(["kb", "kb:scripted"]),
            "messages": st.just([{"role": "user", "content": PORT_QUESTION}]),
        },
        optional=OPTIONAL,
    )
    | st.fixed_dictionaries(
        {}, optional={"model": st.sampled_from(["kb", "kb:", "gpt-4o"]) | JSON, "messages": MESSAGES | JSON, **OPTIONAL}
    )
    | JSON
)


def test_any_json_body_gets_no_500_and_every_error_is_openai_shaped(start_server: Callable[..., Any]) -> None:
    server = start_server()
    seen: set[int] = set()

    @settings(max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(BODIES)
    def check(body: Any) -> None:
        sent = json.dumps(body).encode()  # (NaN and Infinity too: not JSON, a 400)
        headers = {"Content-Type": "application/json"}
        with (
            server.client() as http,
            http.stream("POST", "/v1/chat/completions", content=sent, headers=headers) as reply,
        ):
            text = reply.read().decode()
        seen.add(reply.status_code)
        assert reply.status_code < 500, text
        if reply.status_code >= 400:
            jsonschema.validate(json.loads(text), own_schema("openai_error"))
        elif reply.headers["content-type"].startswith("text/event-stream"):
            assert text.endswith("data: [DONE]\n\n")
        else:
            jsonschema.validate(json.loads(text), own_schema("openai_chat_completion"))

    check()
    assert {200, 400} <= seen, seen
