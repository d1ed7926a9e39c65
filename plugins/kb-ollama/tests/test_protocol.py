"""The protocol parsers take untrusted input: property tests, plus the documented examples."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core import ConfigError
from kb_core.plugin import Done, GenerateRequest, Token
from kb_ollama.client import BaseUrl
from kb_ollama.protocol import (
    ChatLine,
    MalformedResponse,
    context_length,
    error_message,
    find_pulled,
    parse_chat_line,
    parse_tags,
)

relaxed = settings(deadline=None)  # the CPU is shared with other jobs: judge results, not speed

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=20), children, max_size=5),
    max_leaves=20,
)
chat_keys = st.sampled_from(["done", "message", "done_reason", "prompt_eval_count", "eval_count", "error", "model"])
chat_like = st.dictionaries(chat_keys, json_values | st.fixed_dictionaries({"content": json_values}), max_size=6)


@relaxed
@given(st.binary(max_size=300))
def test_any_bytes_parse_to_a_line_or_a_malformed_error(raw):
    try:
        assert isinstance(parse_chat_line(raw, 1), ChatLine)
    except MalformedResponse as exc:
        assert "\n" not in str(exc)


@relaxed
@given(chat_like)
def test_any_json_object_parses_to_a_line_or_a_malformed_error(value):
    try:
        line = parse_chat_line(json.dumps(value).encode(), 3)
    except MalformedResponse as exc:
        assert "stream line 3" in str(exc) and "\n" not in str(exc)
    else:
        assert line.error is not None or isinstance(line.done, bool)
        assert line.error is None or "\n" not in line.error


@relaxed
@given(
    content=st.text(),
    done=st.booleans(),
    reason=st.sampled_from(["", "stop", "length"]),
    prompt=st.integers(0, 10**9),
    completion=st.integers(0, 10**9),
)
def test_documented_fields_round_trip(content, done, reason, prompt, completion):
    body = {
        "model": "llama3.2",
        "created_at": "2023-08-04T08:52:19.385406455-07:00",
        "message": {"role": "assistant", "content": content},
        "done": done,
        "done_reason": reason,
        "prompt_eval_count": prompt,
        "eval_count": completion,
    }
    line = parse_chat_line(json.dumps(body, ensure_ascii=False).encode(), 1)
    assert line == ChatLine(content, done, reason, prompt, completion)


def test_the_documented_final_chat_response_without_a_message_parses():
    raw = (
        b'{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","done":true,"total_duration":4883583458,'
        b'"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,'
        b'"eval_duration":4535599000}'
    )
    assert parse_chat_line(raw, 9) == ChatLine(done=True, prompt_eval_count=26, eval_count=282)


def test_counts_that_are_not_counts_are_malformed():
    for bad in ("-1", "1.5", "true", '"26"'):
        raw = b'{"done":true,"prompt_eval_count":' + bad.encode() + b"}"
        try:
            parse_chat_line(raw, 1)
        except MalformedResponse as exc:
            assert "prompt_eval_count" in str(exc)
        else:
            raise AssertionError(f"accepted prompt_eval_count={bad}")


def test_an_error_line_carries_its_message_on_one_line():
    assert parse_chat_line(b'{"error":"runner crashed:\\n  out of memory"}', 4).error == "runner crashed: out of memory"


@relaxed
@given(json_values)
def test_context_length_never_fails_on_any_show_answer(value):
    show = value if isinstance(value, dict) else {"model_info": value, "parameters": value}
    result = context_length(show)
    assert result is None or (isinstance(result, int) and result > 0)


def test_context_length_reads_the_documented_show_answer():
    show = {
        "parameters": 'num_keep                       24\nstop                           "<|eot_id|>"',
        "model_info": {"general.architecture": "llama", "llama.context_length": 8192, "llama.block_count": 32},
    }
    assert context_length(show) == 8192
    assert context_length({"parameters": "num_ctx                        4096\nnum_keep 24"}) == 4096
    assert context_length({"parameters": "num_keep 24", "model_info": {"general.architecture": "qwen2"}}) is None


@relaxed
@given(json_values)
def test_tags_parse_or_fail_cleanly(value):
    data = value if isinstance(value, dict) else {"models": value}
    try:
        pulled = parse_tags(data)
    except MalformedResponse:
        return
    assert all(m.name for m in pulled)


def test_model_names_match_with_the_default_tag():
    pulled = parse_tags(
        {"models": [{"name": "llama3:latest", "digest": "fe93"}, {"name": "me/coder:7b", "digest": "9f"}]}
    )
    assert find_pulled(pulled, "llama3").digest == "fe93"
    assert find_pulled(pulled, "me/coder:7b").digest == "9f"
    assert find_pulled(pulled, "me/coder") is None
    assert find_pulled(pulled, "llama3:8b") is None


@relaxed
@given(st.binary(max_size=300))
def test_error_bodies_always_give_one_line(raw):
    message = error_message(raw)
    assert message and "\n" not in message and "\r" not in message


@relaxed
@given(st.text(max_size=60))
def test_any_url_text_parses_or_is_a_config_error(text):
    try:
        url = BaseUrl.parse(text)
    except ConfigError:
        return
    assert url.scheme in ("http", "https") and 0 <= url.port <= 65535 and url.host


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=8))
def test_any_token_text_survives_the_wire_in_order(fake_ollama, build_model, pieces):
    fake_ollama.reply = pieces
    events = list(build_model().generate_stream(GenerateRequest(system="", user="q", max_tokens=100)))
    assert [e.text for e in events if isinstance(e, Token)] == pieces
    assert isinstance(events[-1], Done) and events[-1].finish_reason == "stop"
