"""Generation and failures against the loopback fake of the protocol (faults a real server cannot be made to show)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kb_core import Config, ConfigError, KbError, KnowledgeBase
from kb_core.plugin import Done, GenerateRequest, LanguageModel, Token
from kb_core.testing import FakeChatServer, load_registry
from kb_openai.client import ApiError, ServerUnreachable, Unauthorized
from kb_openai.model import ModelNotFound, OpenAIModel, make_model, upper_bound_tokens
from kb_openai.settings import Secret, parse_base_url

REQUEST = GenerateRequest(system="Answer from the sources.", user="Why is the sky blue?", max_tokens=64)
Build = Callable[..., OpenAIModel]


def run(model: OpenAIModel, request: GenerateRequest = REQUEST) -> tuple[list[str], Done]:
    """The tokens and the closing Done of one generation, checking the contract's shape."""
    events = list(model.generate_stream(request))
    assert all(isinstance(e, Token) for e in events[:-1]) and isinstance(events[-1], Done)
    return [e.text for e in events[:-1] if isinstance(e, Token)], events[-1]


def sse(value: object) -> bytes:
    return b"data: " + json.dumps(value).encode() + b"\n\n"


def delta(text: str, reason: str | None = None) -> bytes:
    return sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": reason}]})


def test_streams_tokens_then_done_with_the_servers_usage(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    usage = {"prompt_tokens": 31, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 16}}
    fake_chat_server.usage = usage
    tokens, done = run(build_model(fake_chat_server.openai_url))
    assert tokens == ["The", " sky", " is", " blue", "."]
    assert done == Done(finish_reason="stop", prompt_tokens=31, completion_tokens=5, cached_tokens=16)


def test_the_request_carries_every_option(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    request = GenerateRequest(
        system="S", user="U", stop=("[END]", "\n\n"), max_tokens=77, temperature=0.2, seed=7, examples=(("Q1", "A1"),)
    )
    run(build_model(fake_chat_server.openai_url), request)
    (body,) = fake_chat_server.bodies("/v1/chat/completions")
    assert body["model"] == "fake-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert (body["max_tokens"], body["temperature"], body["seed"], body["stop"]) == (77, 0.2, 7, ["[END]", "\n\n"])
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    run(build_model(fake_chat_server.openai_url), GenerateRequest(system="", user="U"))
    second = fake_chat_server.bodies("/v1/chat/completions")[1]
    assert second["seed"] == 0  # [models.llm] seed when the request has none
    assert "stop" not in second


def test_without_usage_completion_counts_deltas_and_prompt_is_tokenized(
    fake_chat_server: FakeChatServer, build_model: Build
) -> None:
    fake_chat_server.usage = None
    _, done = run(build_model(fake_chat_server.openai_url))
    words = len(REQUEST.system.split()) + len(REQUEST.user.split())  # the fake's tokenizer counts words
    assert done == Done(finish_reason="stop", prompt_tokens=words, completion_tokens=5)


def test_the_key_goes_only_into_the_authorization_header(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    run(build_model(fake_chat_server.openai_url, api_key="sk-abc123"))
    headers = [r.headers for r in fake_chat_server.requests]
    assert headers and all(h["Authorization"] == "Bearer sk-abc123" for h in headers)
    assert all("sk-abc123" not in json.dumps(r.body) for r in fake_chat_server.requests)
    fake_chat_server.requests.clear()
    run(build_model(fake_chat_server.openai_url))
    assert all("Authorization" not in r.headers for r in fake_chat_server.requests)


def test_the_key_comes_from_the_environment_variable_the_config_names() -> None:
    model = make_model(Config(), {"api_key_env": "MY_KEY"}, environ={"MY_KEY": "k1", "KB_OPENAI_API_KEY": "k2"})
    assert model.settings.api_key == Secret("k1")
    assert make_model(Config(), {}, environ={"KB_OPENAI_API_KEY": "k2"}).settings.api_key.reveal() == "k2"
    assert "k2" not in repr(make_model(Config(), {}, environ={"KB_OPENAI_API_KEY": "k2"}).settings)
    assert str(Secret("k2")) == repr(Secret("k2")) == "Secret('***')"


def test_401_is_one_line_and_a_key_the_server_echoes_is_scrubbed(
    fake_chat_server: FakeChatServer, build_model: Build
) -> None:
    fake_chat_server.models_status = 401
    model = build_model(fake_chat_server.openai_url, api_key="sk-secret-42")
    with pytest.raises(Unauthorized) as caught:
        model.facts()
    assert "refused the API key (HTTP 401)" in str(caught.value) and "\n" not in str(caught.value)
    fake_chat_server.models_status = 200
    fake_chat_server.chat_error = (
        401,
        b'{"error":{"message":"Incorrect API key provided: sk-secret-42","code":"invalid_api_key"}}',
    )
    with pytest.raises(Unauthorized) as caught:
        list(build_model(fake_chat_server.openai_url, api_key="sk-secret-42").generate_stream(REQUEST))
    assert "Incorrect API key provided: ***" in str(caught.value) and "sk-secret-42" not in str(caught.value)


def test_a_404_about_the_model_is_model_not_found(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    fake_chat_server.chat_error = (404, b'{"error":{"message":"The model `fake-model` does not exist.","code":404}}')
    with pytest.raises(ModelNotFound, match="does not serve the model 'fake-model'"):
        list(build_model(fake_chat_server.openai_url).generate_stream(REQUEST))


def test_other_http_errors_raise_before_the_stream(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    fake_chat_server.chat_error = (500, b"Internal Server Error\n<traceback>")
    with pytest.raises(ApiError, match=r"refused /chat/completions \(HTTP 500\): Internal Server Error <traceback>"):
        list(build_model(fake_chat_server.openai_url).generate_stream(REQUEST))


def test_connection_refused(build_model: Build, closed_port: int) -> None:
    model = build_model(f"http://127.0.0.1:{closed_port}/v1")
    (problem,) = model.check()
    assert problem.component == "openai" and problem.message.endswith(": connection refused")
    assert "KB_OPENAI_URL" in problem.fix
    with pytest.raises(ServerUnreachable):
        list(model.generate_stream(REQUEST))


def test_an_unknown_host_is_named(build_model: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "kb-test.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    (problem,) = build_model("http://kb-test.invalid:8080/v1").check()
    assert problem.message == (
        "cannot reach the OpenAI-compatible server at http://kb-test.invalid:8080/v1:"
        " cannot resolve host 'kb-test.invalid'"
    )


@pytest.fixture
def plain_http_port() -> Iterator[int]:
    """A port that answers a TLS handshake with a line of plain HTTP."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    threading.Thread(target=answer, daemon=True).start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


def test_a_failed_tls_handshake_is_one_line(build_model: Build, plain_http_port: int) -> None:
    url = f"https://127.0.0.1:{plain_http_port}/v1"
    (problem,) = build_model(url).check()
    assert problem.message.startswith(f"cannot reach the OpenAI-compatible server at {url}: [SSL")
    assert "\n" not in problem.message and "KB_OPENAI_URL" in problem.fix


def test_a_cut_connection_names_the_server(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    fake_chat_server.drop_after = 2
    _, done = run(build_model(fake_chat_server.openai_url))
    assert done.error is not None and done.error.startswith(
        f"the connection to the server at {fake_chat_server.openai_url} broke"
    )
    assert done.error.endswith(
        "(check the OpenAI-compatible server's log (the model may have crashed or run out of memory))"
    )


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        ([b"data: <html>oops</html>\n\n"], "stream event 1 is not JSON: '<html>oops</html>'"),
        ([b"<html>\n\n"], "a stream line is not a Server-Sent Event: '<html>'"),
        ([sse({"object": "chunk"})], "stream event 1 has no 'choices' list"),
        ([delta("a"), delta("b")], "the stream ended before '[DONE]' after 2 events without a finish_reason"),
        ([delta("a"), b"data: [DONE]\n\n"], "the stream ended at '[DONE]' after 1 events without a finish_reason"),
        ([delta("a"), sse({"choices": [], "usage": {"prompt_tokens": "12"}})], "has prompt_tokens='12', not a count"),
    ],
)
def test_malformed_streams_end_in_done_with_one_line(
    fake_chat_server: FakeChatServer, build_model: Build, stream: list[bytes], expected: str
) -> None:
    fake_chat_server.stream = stream
    _tokens, done = run(build_model(fake_chat_server.openai_url))
    assert done.finish_reason == "error" and done.error is not None
    assert expected in done.error and "\n" not in done.error
    assert done.error.startswith("the OpenAI-compatible server sent a malformed response")


def test_an_error_event_mid_stream_keeps_the_tokens_before_it(
    fake_chat_server: FakeChatServer, build_model: Build
) -> None:
    fake_chat_server.stream = [delta("Partial"), sse({"error": {"message": "CUDA out of\nmemory"}})]
    tokens, done = run(build_model(fake_chat_server.openai_url))
    assert tokens == ["Partial"]
    assert done == Done(finish_reason="error", error="the server reported an error mid-stream: CUDA out of memory")


def test_comments_other_fields_and_multiline_data_follow_the_sse_rules(
    fake_chat_server: FakeChatServer, build_model: Build
) -> None:
    first = json.dumps({"choices": [{"delta": {"content": "x"}, "finish_reason": None}]})
    fake_chat_server.stream = [
        b": ping - 2024-01-01\n\n",
        b"event: message\nid: 1\ndata: " + first[:10].encode() + b"\ndata: " + first[10:].encode() + b"\n\n",
        delta("y", "length"),
        b"data: [DONE]\n\n",
    ]
    tokens, done = run(build_model(fake_chat_server.openai_url))
    assert tokens == ["x", "y"] and done.finish_reason == "length"


def test_read_timeout_before_the_answer(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    fake_chat_server.stall_before_headers = True
    model = build_model(fake_chat_server.openai_url, read_timeout_s=0.5)
    model.facts()
    tokens, done = run(model)
    assert tokens == [] and done.finish_reason == "error"
    assert done.error is not None and done.error.startswith("read timeout: the server at")
    assert "within 0.5 s" in done.error and "read_timeout_s" in done.error


def test_read_timeout_mid_stream_keeps_the_tokens(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    fake_chat_server.stall_after = 3
    tokens, done = run(
        build_model(fake_chat_server.openai_url, read_timeout_s=2.5)
    )  # (the pieces before come within it)
    assert tokens == ["The", " sky"] and done.error is not None and done.error.startswith("read timeout")


def test_total_timeout_over_a_slow_stream(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    fake_chat_server.delay_s = 0.6  # the whole answer takes at least 2.4 s, however fast this machine
    tokens, done = run(build_model(fake_chat_server.openai_url, read_timeout_s=60, total_timeout_s=1.5))
    assert len(tokens) < 5 and done.error is not None and done.error.startswith("total timeout")
    assert "total_timeout_s" in done.error


def test_a_connection_cut_mid_stream(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    fake_chat_server.drop_after = 2
    tokens, done = run(build_model(fake_chat_server.openai_url))
    assert tokens == ["The"] and done.finish_reason == "error"
    assert done.error is not None and "broke during /chat/completions" in done.error


def test_the_only_served_model_is_used_when_none_is_named(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    model = build_model(fake_chat_server.openai_url)
    assert model.check() == [] and model.model_ref.id == "fake-model"
    fake_chat_server.models = {"a": {}, "b": {}}
    (problem,) = build_model(fake_chat_server.openai_url).check()
    assert "(none configured)" in problem.message and "it serves: a, b" in problem.message
    assert build_model(fake_chat_server.openai_url, model="b").check() == []
    (absent,) = build_model(fake_chat_server.openai_url, model="c").check()
    assert "does not serve the model 'c'" in absent.message


def test_a_server_without_models_endpoint_works_when_the_model_is_named(
    fake_chat_server: FakeChatServer, build_model: Build
) -> None:
    fake_chat_server.models_status = 404
    assert build_model(fake_chat_server.openai_url, model="m").check() == []
    (problem,) = build_model(fake_chat_server.openai_url).check()
    assert "HTTP 404" in problem.message


def test_token_counts_use_the_tokenize_endpoint_else_the_upper_bound(
    fake_chat_server: FakeChatServer, build_model: Build
) -> None:
    model = build_model(fake_chat_server.openai_url)
    assert model.count_tokens("") == 0
    assert model.count_tokens("three small words") == model.count_tokens("three small words") == 3
    assert len(fake_chat_server.bodies("/extras/tokenize/count")) == 2  # the probe, then one count: cached
    off = build_model(fake_chat_server.openai_url, tokenize="off")
    assert off.count_tokens("three small words") == upper_bound_tokens("three small words")
    fake_chat_server.tokenize = False
    text = "天空为什么是蓝色的"
    assert build_model(fake_chat_server.openai_url).count_tokens(text) == len(text.encode()) + 2
    with pytest.raises(ConfigError, match="tokenize"):
        build_model(fake_chat_server.openai_url, tokenize="maybe")


def test_a_grammar_is_refused(fake_chat_server: FakeChatServer, build_model: Build) -> None:
    model = build_model(fake_chat_server.openai_url)
    with pytest.raises(KbError, match="cannot constrain output with a grammar"):
        list(model.generate_stream(GenerateRequest(system="", user="u", grammar='root ::= "x"')))


def test_settings_and_environment() -> None:
    config = Config()
    config.models.llm.model = "from-llm"
    model = make_model(config, {}, environ={})
    assert model.settings.base_url == "http://127.0.0.1:8080/v1" and model.settings.model == "from-llm"
    model = make_model(config, {"url": "http://h:1/v1", "model": "m"}, environ={"KB_OPENAI_URL": "127.0.0.2:9"})
    assert model.settings.base_url == "http://127.0.0.2:9/v1" and model.settings.root_url == "http://127.0.0.2:9"
    assert parse_base_url("https://user:pw@api.example.com/openai/v1/") == "https://api.example.com/openai/v1"
    with pytest.raises(ConfigError, match="invalid OpenAI-compatible server URL"):
        parse_base_url("ftp://x")


def test_the_entry_point_registers_the_backend_and_the_app_builds_it(fake_chat_server: FakeChatServer) -> None:
    registry = load_registry()
    assert registry.get("language_models", "openai").plugin == "openai"
    assert any(p.distribution == "kb-openai" for p in registry.plugins)
    config = Config(backends={"openai": {"url": fake_chat_server.openai_url}})
    model = KnowledgeBase(config, registry).language_model("openai")
    assert isinstance(model, LanguageModel) and model.check() == []
