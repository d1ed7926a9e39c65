"""The parsers take untrusted input from a network server: property tests, plus documented examples."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core import ConfigError
from kb_openai.protocol import MalformedResponse, StreamChunk, Usage, error_message, parse_chunk, sse_data
from kb_openai.settings import parse_base_url

relaxed = settings(deadline=None)  # the CPU is shared: judge results, not speed

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=20,
)
chunk_keys = st.sampled_from(["choices", "usage", "error", "id", "object", "delta", "finish_reason", "content"])
chunk_like = st.recursive(
    json_values,
    lambda children: st.dictionaries(chunk_keys, children, max_size=4) | st.lists(children, max_size=3),
    max_leaves=15,
)


@relaxed
@given(st.lists(st.text(max_size=40), max_size=20))
def test_any_lines_give_events_or_one_malformed_error(lines: list[str]) -> None:
    try:
        events = list(sse_data(lines))
    except MalformedResponse as exc:
        assert "\n" not in str(exc)
    else:
        assert all(isinstance(e, str) for e in events)


@relaxed
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=30), min_size=1, max_size=8))
def test_data_lines_round_trip(payloads: list[str]) -> None:
    lines = [line for p in payloads for line in (f"data: {p}", "")]
    assert list(sse_data(lines)) == payloads


@relaxed
@given(chunk_like)
def test_any_json_parses_to_a_chunk_or_one_malformed_line(value: object) -> None:
    try:
        chunk = parse_chunk(json.dumps(value), 4)
    except MalformedResponse as exc:
        assert "stream event 4" in str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(chunk, StreamChunk)
        assert chunk.error is None or "\n" not in chunk.error


@relaxed
@given(st.text(max_size=200))
def test_any_text_parses_or_fails_cleanly(text: str) -> None:
    try:
        parse_chunk(text, 1)
    except MalformedResponse as exc:
        assert "\n" not in str(exc)


@relaxed
@given(
    content=st.text(),
    reason=st.sampled_from([None, "stop", "length"]),
    p=st.integers(0, 10**9),
    c=st.integers(0, 10**9),
    cached=st.integers(0, 10**6),
)
def test_documented_chunks_round_trip(content: str, reason: str | None, p: int, c: int, cached: int) -> None:
    chunk = {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "logprobs": None, "finish_reason": reason}],
    }
    assert parse_chunk(json.dumps(chunk), 1) == StreamChunk(content, reason)
    usage = {
        "choices": [],
        "usage": {
            "prompt_tokens": p,
            "completion_tokens": c,
            "total_tokens": p + c,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }
    assert parse_chunk(json.dumps(usage), 2) == StreamChunk(usage=Usage(p, c, cached))


@relaxed
@given(st.binary(max_size=300))
def test_error_bodies_always_give_one_line(raw: bytes) -> None:
    message = error_message(raw)
    assert message and "\n" not in message and "\r" not in message


def test_error_body_shapes() -> None:
    assert error_message(b'{"error":{"message":"bad key","type":"invalid_request_error"}}') == "bad key"
    assert error_message(b'{"detail":"Not Found"}') == "Not Found"
    assert error_message(b'{"error":"plain"}') == "plain"
    assert error_message(b"") == "(empty body)"


@relaxed
@given(st.text(max_size=60))
def test_any_url_text_parses_or_is_a_config_error(text: str) -> None:
    try:
        url = parse_base_url(text)
    except ConfigError:
        return
    assert url.startswith(("http://", "https://")) and "@" not in url.split("/")[2]
