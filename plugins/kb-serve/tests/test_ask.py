"""``POST /ask`` and its Server-Sent Events stream, the one-generation-at-a-time gate and its 503."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

import jsonschema

from kb_core.plugin import GenerateRequest, Preloadable, hookimpl
from kb_core.testing import ScriptedLanguageModel, ScriptedPlugin
from kb_serve.client import iter_sse, parse_sse
from kb_serve.openapi import kb_schema, own_schema

QUESTION = "At what wind speed does Heliograph move the panels to the stow angle?"


def test_ask_returns_the_answer_v1_json_of_the_cli(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        reply = http.post("/ask", json={"question": QUESTION, "mode": "hybrid", "k": 5})
        assert reply.status_code == 200, reply.text
        answer = reply.json()
        jsonschema.validate(answer, kb_schema("answer.v1"))
        assert answer["schema_version"] == "answer.v1"
        assert answer["grounded"] is True, answer
        assert "62 km/h" in answer["answer"]
        assert answer["citations"][0]["citation"]["path"] == "notes/heliograph.md"
        assert len(server.llm.models[0].requests) == 1


def test_a_question_the_corpus_cannot_answer_is_refused_with_candidates(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        answer = http.post("/ask", json={"question": "What is the capital of Mongolia's oldest bakery?"}).json()
        jsonschema.validate(answer, kb_schema("answer.v1"))
        assert answer["grounded"] is False and answer["refusal_reason"] in ("score_gate", "no_chunks")
        assert server.llm.models == [] or server.llm.models[0].requests == []  # the gate refused: no generation


def test_the_stream_sends_checked_text_as_it_comes_then_one_answer(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        for url, params in (("/ask/stream", {}), ("/ask", {"stream": "1"})):
            with http.stream("POST", url, params=params, json={"question": QUESTION}) as reply:
                assert reply.status_code == 200
                assert reply.headers["content-type"].startswith("text/event-stream")
                events = list(iter_sse(reply.iter_lines()))
            names = [name for name, _ in events]
            assert names[-1] == "answer" and set(names[:-1]) == {"token"} and len(names) >= 2
            final = events[-1][1]
            jsonschema.validate(final, kb_schema("answer.v1"))
            text = "".join(data["text"] for name, data in events if name == "token")
            assert final["grounded"] is True and "62 km/h" in text
            assert text.strip().startswith(final["answer"].split("[#")[0].strip()[:20])


def test_stream_tokens_arrive_before_the_generation_ends(start_server: Callable[..., Any]) -> None:
    release = threading.Event()

    def slow(request: GenerateRequest) -> Any:
        yield "Heliograph stows the panels above 62 km/h [#1]."
        yield " The"  # the next sentence began: the first is complete, checked and sent
        release.wait(20)  # the stream must already have carried it to the client
        yield " panels stow above 62 km/h [#1]."

    class Script:
        def __call__(self, request: GenerateRequest) -> Any:
            return slow(request)

    server = start_server(script=Script())
    with server.client() as http, http.stream("POST", "/ask/stream", json={"question": QUESTION}) as reply:
        events = iter_sse(reply.iter_lines())
        first = next(events)
        assert first == ("token", {"text": "Heliograph stows the panels above 62 km/h [#1]."})
        release.set()
        rest = list(events)
    assert rest[-1][0] == "answer"


def test_errors_in_the_stream_end_with_one_error_event(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        reply = http.post("/ask/stream", json={"question": QUESTION, "backend": "nonesuch"})
        events = parse_sse(reply.text)
        assert [name for name, _ in events] == ["error"]
        jsonschema.validate(events[0][1], own_schema("error"))
        assert "nonesuch" in events[0][1]["error"]


BAD_QUESTIONS = [
    (b"not json", "the body must be JSON"),
    (b"[1, 2]", "a JSON object"),
    (b"{}", "the question is empty"),
    (b'{"question": "   "}', "the question is empty"),
    (b'{"question": "x", "k": 0}', "k = 0 is not a whole number from 1 to"),
    (b'{"question": "x", "k": "5"}', "k = '5' is not a whole number"),
    (b'{"question": "x", "k": true}', "k = true is not a whole number"),
    (b'{"question": "x", "temperature": -1}', "temperature = -1 is not a number from 0 to 2"),
    (b'{"question": "x", "temperature": 1' + b"0" * 400 + b"}", "is not a number from 0 to 2"),  # was a 500
    (b'{"question": "x", "temperature": 3}', "temperature = 3 is not a number from 0 to 2"),  # /ask took up to 100
    (b'{"question": "x", "mode": "fuzzy"}', "unknown search mode"),
    (b'{"question": "x", "colour": "red"}', 'unknown field(s): "colour"'),
]


def test_bad_questions_are_400(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        for body, fragment in BAD_QUESTIONS:
            reply = http.post("/ask", content=body, headers={"content-type": "application/json"})
            assert reply.status_code == 400, reply.text
            jsonschema.validate(reply.json(), own_schema("error"))
            assert fragment in reply.json()["error"], (body, reply.json())


def test_one_generation_at_a_time_and_a_full_queue_is_503(start_server: Callable[..., Any]) -> None:
    release = threading.Event()
    running = {"now": 0, "most": 0}
    lock = threading.Lock()

    def held(request: GenerateRequest) -> list[str]:
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
        release.wait(30)
        with lock:
            running["now"] -= 1
        return ["Wind above 62 km/h stows the panels", " [#1]"]

    server = start_server(script=held, ask_queue=1)
    with server.client() as http, concurrent.futures.ThreadPoolExecutor(2) as pool:
        first = pool.submit(http.post, "/ask", json={"question": QUESTION})
        _wait_for(lambda: http.get("/health").json()["generation"]["busy"])
        second = pool.submit(http.post, "/ask", json={"question": QUESTION})
        _wait_for(lambda: http.get("/health").json()["generation"]["waiting"] == 1)
        full = http.post("/ask", json={"question": QUESTION})
        assert full.status_code == 503 and "busy" in full.json()["error"]
        streamed = http.post("/ask/stream", json={"question": QUESTION})
        assert streamed.status_code == 503
        search = http.get("/search", params={"q": "stow angle"})
        assert search.status_code == 200  # searches do not wait for the model
        release.set()
        assert first.result(60).json()["grounded"] is True
        assert second.result(60).status_code == 200
    assert running["most"] == 1


def test_a_question_that_waits_too_long_is_503(start_server: Callable[..., Any]) -> None:
    release = threading.Event()

    def held(request: GenerateRequest) -> list[str]:
        release.wait(30)
        return ["Wind above 62 km/h stows the panels", " [#1]"]

    server = start_server(script=held, ask_wait_s=0.5)
    with server.client() as http, concurrent.futures.ThreadPoolExecutor(1) as pool:
        first = pool.submit(http.post, "/ask", json={"question": QUESTION})
        _wait_for(lambda: http.get("/health").json()["generation"]["busy"])
        late = http.post("/ask", json={"question": QUESTION})
        assert late.status_code == 503 and "waited 0.5 s" in late.json()["error"]
        release.set()
        assert first.result(60).status_code == 200


def _wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


class PreloadingPlugin(ScriptedPlugin):
    """The scripted backend, its models Preloadable: each counts the times it was told to preload."""

    @hookimpl
    def register_language_models(self, register: Callable[..., None]) -> None:
        """Register ``scripted`` as a model that can preload."""

        def make(_ctx: object) -> ScriptedLanguageModel:
            model = PreloadingModel(self.script)
            self.models.append(model)
            return model

        register("scripted", make)


class PreloadingModel(ScriptedLanguageModel):
    preloads = 0

    def preload(self) -> None:
        self.preloads += 1


def test_the_server_starts_loading_the_language_model_as_it_starts(start_server: Callable[..., Any]) -> None:
    plugin = PreloadingPlugin()
    server = start_server(llm=plugin)  # returns once uvicorn has started (after the app's start-up)
    (model,) = plugin.models
    assert isinstance(model, Preloadable) and model.preloads == 1 and model.requests == []
    with server.client() as http:
        assert http.post("/ask", json={"question": "What did the Heliograph panels measure?"}).status_code == 200
    assert model.preloads == 1 and len(model.requests) >= 1  # the same model answers
