"""Generation over ``/api/chat`` against the loopback server: streaming, options and failures."""

from __future__ import annotations

import socket

import pytest

from kb_core import KbError, ModelUnavailableError
from kb_core.plugin import Done, GenerateRequest, Token
from kb_ollama.client import OllamaApiError

REQUEST = GenerateRequest(system="Answer from the sources.", user="Why is the sky blue?", max_tokens=64)


def run(model, request=REQUEST):
    """All events of one generation, checking the contract's shape on the way."""
    events = list(model.generate_stream(request))
    assert all(isinstance(e, Token) for e in events[:-1])
    assert isinstance(events[-1], Done)
    return [e.text for e in events[:-1]], events[-1]


def line(content: str, done: bool = False, **extra) -> bytes:
    import json

    message = {"role": "assistant", "content": content}
    body = {"model": "llama3.2:latest", "created_at": "2024-09-12T21:17:29Z", "message": message, "done": done}
    return json.dumps(body | extra, separators=(",", ":")).encode() + b"\n"


def test_streams_tokens_in_order_then_done_with_counts(fake_ollama, build_model):
    tokens, done = run(build_model())
    assert tokens == ["The", " sky", " is", " blue", "."]
    prompt = REQUEST.system + REQUEST.user
    assert done == Done(finish_reason="stop", prompt_tokens=fake_ollama.count(prompt), completion_tokens=5)


def test_options_reach_the_server_as_sent(fake_ollama, build_model):
    request = GenerateRequest(system="S", user="U", stop=("[END]", "\n\n"), max_tokens=77, temperature=0.2, seed=7)
    run(build_model(context_tokens=3000), request)
    (body,) = fake_ollama.bodies("/api/chat")
    assert body["model"] == "llama3.2:latest"
    assert body["stream"] is True
    assert body["messages"] == [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert body["options"] == {
        "temperature": 0.2,
        "seed": 7,
        "num_ctx": 3000,
        "num_predict": 77,
        "stop": ["[END]", "\n\n"],
    }
    chat = [r for r in fake_ollama.requests if r.path == "/api/chat"][0]
    assert chat.method == "POST" and chat.headers["Content-Type"] == "application/json"


def test_seed_defaults_to_the_configured_seed_and_empty_system_is_left_out(fake_ollama, build_model):
    run(build_model(seed=1234), GenerateRequest(system="", user="hi"))
    (body,) = fake_ollama.bodies("/api/chat")
    assert body["options"]["seed"] == 1234
    assert "stop" not in body["options"]
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_num_predict_limit_is_reported_as_length(fake_ollama, build_model):
    tokens, done = run(build_model(), GenerateRequest(system="", user="q", max_tokens=2))
    assert tokens == ["The", " sky"]
    assert (done.finish_reason, done.completion_tokens) == ("length", 2)


def test_content_on_the_final_line_is_not_lost(fake_ollama, build_model):
    fake_ollama.stream = [line("Hello"), line(" world", done=True, done_reason="stop", eval_count=2)]
    tokens, done = run(build_model())
    assert tokens == ["Hello", " world"] and done.completion_tokens == 2


def test_server_not_running_raises_one_clear_line(fake_ollama, build_model, closed_port):
    model = build_model(url=f"http://127.0.0.1:{closed_port}")
    with pytest.raises(ModelUnavailableError) as caught:
        list(model.generate_stream(REQUEST))
    text = str(caught.value)
    assert f"127.0.0.1:{closed_port}" in text and "connection refused" in text
    assert "ollama serve" in text and "KB_OLLAMA_URL" in text and "\n" not in text


def test_model_not_pulled_names_the_pull_command(fake_ollama, build_model):
    with pytest.raises(ModelUnavailableError) as caught:
        list(build_model(model="qwen2.5:0.5b").generate_stream(REQUEST))
    assert "ollama pull qwen2.5:0.5b" in str(caught.value)
    assert "llama3.2:latest" in str(caught.value)  # what is pulled instead
    assert fake_ollama.bodies("/api/chat") == []


def test_model_removed_after_the_first_check_is_reported_from_the_chat_404(fake_ollama, build_model):
    model = build_model()
    run(model)
    fake_ollama.models.clear()
    with pytest.raises(ModelUnavailableError, match="ollama pull llama3.2:latest"):
        list(model.generate_stream(REQUEST))


def test_short_model_name_matches_the_latest_tag(fake_ollama, build_model):
    tokens, _ = run(build_model(model="llama3.2"))
    assert tokens and fake_ollama.bodies("/api/chat")[0]["model"] == "llama3.2"


def test_server_error_before_the_stream_raises_with_its_message(fake_ollama, build_model):
    fake_ollama.chat_error = (500, "model requires more system memory (5.6 GiB) than is available (2.0 GiB)")
    with pytest.raises(OllamaApiError, match=r"HTTP 500\): model requires more system memory") as caught:
        list(build_model().generate_stream(REQUEST))
    assert caught.value.status == 500


def test_read_timeout_mid_stream_keeps_the_tokens_and_names_the_setting(fake_ollama, build_model):
    fake_ollama.stall_after = 2
    tokens, done = run(build_model(read_timeout_s=2.5))  # (the two tokens before the stall come within it)
    assert tokens == ["The", " sky"]
    assert done.finish_reason == "error"
    assert "read timeout" in done.error and "2.5 s" in done.error
    assert "read_timeout_s" in done.error and "KB_MODELS__LLM__READ_TIMEOUT_S" in done.error


def test_read_timeout_before_the_first_byte_ends_the_stream_with_an_error(fake_ollama, build_model):
    fake_ollama.stall_before_headers = True
    tokens, done = run(build_model(read_timeout_s=0.3))
    assert tokens == [] and done.finish_reason == "error" and "read timeout" in done.error


def test_total_timeout_stops_a_slow_but_steady_stream(fake_ollama, build_model):
    fake_ollama.delay_s = 0.5  # the whole answer takes at least 2 s, however fast this machine
    tokens, done = run(build_model(read_timeout_s=60.0, total_timeout_s=1.5))
    assert len(tokens) < 5 and tokens == ["The", " sky", " is", " blue", "."][: len(tokens)]
    assert done.finish_reason == "error"
    assert "total timeout" in done.error and "1.5 s" in done.error and "total_timeout_s" in done.error


def test_slow_stream_within_the_limits_completes(fake_ollama, build_model):
    fake_ollama.delay_s = 0.05
    tokens, done = run(build_model(read_timeout_s=30.0, total_timeout_s=120.0))
    assert len(tokens) == 5 and done.finish_reason == "stop"


def test_non_json_line_ends_the_stream_with_what_was_malformed(fake_ollama, build_model):
    fake_ollama.stream = [line("Hi"), b"<html>502 Bad Gateway</html>\n", line("", done=True)]
    tokens, done = run(build_model())
    assert tokens == ["Hi"]
    assert done.finish_reason == "error"
    assert "stream line 2 is not JSON" in done.error and "502 Bad Gateway" in done.error


def test_stream_without_a_done_line_is_malformed(fake_ollama, build_model):
    fake_ollama.stream = [line("Hi"), line(" there")]
    tokens, done = run(build_model())
    assert tokens == ["Hi", " there"]
    assert done.finish_reason == "error" and "without a final 'done: true' line" in done.error


def test_line_without_a_done_field_is_malformed(fake_ollama, build_model):
    fake_ollama.stream = [b'{"message":{"role":"assistant","content":"Hi"}}\n']
    tokens, done = run(build_model())
    assert tokens == [] and "no boolean 'done' field" in done.error


def test_error_line_mid_stream_ends_it_with_the_servers_message(fake_ollama, build_model):
    fake_ollama.stream = [line("Hi"), b'{"error":"an error was encountered while running the model"}\n']
    tokens, done = run(build_model())
    assert tokens == ["Hi"]
    assert done.finish_reason == "error" and "error was encountered while running the model" in done.error


def test_connection_dropped_mid_stream_is_an_error_event(fake_ollama, build_model):
    fake_ollama.drop_after = 2
    tokens, done = run(build_model())
    assert tokens == ["The", " sky"]
    assert done.finish_reason == "error" and "broke during /api/chat: the server closed it mid-answer" in done.error


def test_grammar_is_refused_before_anything_is_sent(fake_ollama, build_model):
    with pytest.raises(KbError, match="cannot constrain output with a grammar"):
        list(build_model().generate_stream(GenerateRequest(system="", user="q", grammar='root ::= "x"')))
    assert fake_ollama.requests == []


def test_connect_timeout_names_its_value_and_setting(build_model, unanswered_port):
    model = build_model(url=f"http://127.0.0.1:{unanswered_port}", connect_timeout_s=0.25)
    with pytest.raises(KbError) as caught:
        model.count_tokens("hello")
    text = str(caught.value)
    assert text.startswith("connect timeout:") and "0.25 s" in text and "connect_timeout_s" in text
    (problem,) = model.check()
    assert problem.message.startswith("connect timeout:")


def test_an_unknown_host_is_named(build_model, monkeypatch):
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host == "kb-test.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    (problem,) = build_model(url="http://kb-test.invalid:11434").check()
    assert problem.message == (
        "cannot reach the Ollama server at http://kb-test.invalid:11434: cannot resolve host 'kb-test.invalid'"
    )


def test_a_malformed_answer_names_the_server_and_where_its_url_is_set(fake_ollama, build_model):
    fake_ollama.stream = [b"<html>\n"]
    _, done = run(build_model())
    assert done.error == (
        "the Ollama server sent a malformed response: stream line 1 is not JSON: '<html>'"
        " (check that [backends.ollama] url (or KB_OLLAMA_URL) points at an Ollama server)"
    )
