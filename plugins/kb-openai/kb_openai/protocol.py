"""The OpenAI chat-completions protocol as data: request bodies and parsers for what servers send back.

Pure functions (no sockets), so the parsers can be tested against arbitrary input. A streamed
answer is Server-Sent Events: ``data: <json>`` lines, events separated by a blank line, ``:``
comment lines (keep-alive pings) ignored, and a final ``data: [DONE]``. Each JSON chunk carries
``choices[0].delta.content`` and, on the last choice chunk, ``choices[0].finish_reason``. When the
request asks ``stream_options.include_usage``, one more chunk with empty ``choices`` carries
``usage`` (``prompt_tokens``, ``completion_tokens``, ``prompt_tokens_details.cached_tokens``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from kb_core.plugin import GenerateRequest, remote
from kb_core.plugin.remote import chat_messages, count_field, error_body_text, one_line, preview
from kb_openai.settings import OPENAI

MAX_EVENT_BYTES = 8 * 1024 * 1024
DONE_MARK = "[DONE]"


class MalformedResponse(remote.MalformedResponse):
    """The server answered with something that is not the OpenAI chat-completions protocol."""

    server = OPENAI


@attrs.frozen
class Usage:
    """Token counts the server reported."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0


@attrs.frozen
class StreamChunk:
    """One parsed chunk of a streamed chat completion."""

    content: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None


def chat_body(model: str, request: GenerateRequest, *, seed: int) -> dict[str, Any]:
    """The ``POST /chat/completions`` body for one streamed generation."""
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(request),
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "seed": request.seed if request.seed is not None else seed,
    }
    if request.stop:
        body["stop"] = list(request.stop)
    return body


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The ``data`` of each Server-Sent Event in a stream of raw lines (``[DONE]`` included).

    Follows the SSE rules: ``data:`` lines of one event are joined with newlines, one leading
    space after the colon is dropped, comment lines (``:``) and other fields (``event``, ``id``,
    ``retry``) are ignored, a blank line ends an event, and an event still open when the stream
    ends is delivered.
    """
    data: list[str] = []
    size = 0
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
            data, size = [], 0
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field != "data":
            if field not in ("event", "id", "retry"):
                raise MalformedResponse(f"a stream line is not a Server-Sent Event: {preview(line)}")
            continue
        value = value.removeprefix(" ")
        size += len(value)
        if size > MAX_EVENT_BYTES:
            raise MalformedResponse(f"a stream event is longer than {MAX_EVENT_BYTES} bytes")
        data.append(value)
    if data:
        yield "\n".join(data)


def parse_usage(value: Any, where: str) -> Usage | None:
    """The ``usage`` object of a chunk or an answer (None when absent)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MalformedResponse(f"{where} has a 'usage' that is not an object")
    details = value.get("prompt_tokens_details")
    cached = count_field(details, "cached_tokens", where, MalformedResponse) if isinstance(details, dict) else None
    return Usage(
        prompt_tokens=count_field(value, "prompt_tokens", where, MalformedResponse) or 0,
        completion_tokens=count_field(value, "completion_tokens", where, MalformedResponse) or 0,
        cached_tokens=cached or 0,
    )


def error_text(value: Any) -> str:
    """The message of an OpenAI-style ``error`` value (an object with ``message``, or a string)."""
    if isinstance(value, dict):
        message = value.get("message") or value.get("msg") or json.dumps(value, ensure_ascii=False)
        return one_line(str(message)) or "(no message)"
    return one_line(str(value)) or "(no message)"


def parse_chunk(data: str, number: int) -> StreamChunk:
    """Parse the JSON of stream event ``number``; raise MalformedResponse when it is not a chunk."""
    where = f"stream event {number}"
    try:
        value = json.loads(data)
    except ValueError:
        raise MalformedResponse(f"{where} is not JSON: {preview(data)}") from None
    if not isinstance(value, dict):
        raise MalformedResponse(f"{where} is JSON but not an object: {preview(data)}")
    if value.get("error") is not None:
        return StreamChunk(error=error_text(value["error"]))
    usage = parse_usage(value.get("usage"), where)
    choices = value.get("choices")
    if not isinstance(choices, list):
        raise MalformedResponse(f"{where} has no 'choices' list: {preview(data)}")
    if not choices:
        return StreamChunk(usage=usage)
    choice = choices[0]
    if not isinstance(choice, dict):
        raise MalformedResponse(f"{where} has a choice that is not an object: {preview(data)}")
    delta = choice.get("delta") or {}
    if not isinstance(delta, dict):
        raise MalformedResponse(f"{where} has a 'delta' that is not an object: {preview(data)}")
    content = delta.get("content") or ""
    if not isinstance(content, str):
        raise MalformedResponse(f"{where} has a non-text delta.content: {preview(data)}")
    reason = choice.get("finish_reason")
    if reason is not None and not isinstance(reason, str):
        raise MalformedResponse(f"{where} has a non-text finish_reason: {preview(data)}")
    return StreamChunk(content=content, finish_reason=reason or None, usage=usage)


def error_message(raw: bytes) -> str:
    """One line from an error body: OpenAI's ``{"error": {"message": ...}}``, FastAPI's ``{"detail": ...}``, or text."""
    return error_body_text(raw, _error_field)


def _error_field(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    if value.get("error") is not None:
        return error_text(value["error"])
    if value.get("detail") is not None:
        return error_text(value["detail"] if isinstance(value["detail"], str) else json.dumps(value["detail"]))
    if isinstance(value.get("message"), str):
        return one_line(value["message"]) or "(no message)"
    return None


def parse_object(raw: bytes, endpoint: str) -> dict[str, Any]:
    """A whole (non-streamed) JSON object answer of ``endpoint``."""
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise MalformedResponse(
            f"the answer of {endpoint} is not JSON: {preview(raw.decode('utf-8', 'replace'))}"
        ) from None
    if not isinstance(value, dict):
        raise MalformedResponse(f"the answer of {endpoint} is JSON but not an object")
    return value


def model_ids(answer: dict[str, Any]) -> list[str]:
    """The model ids of a ``GET /models`` answer (``{"data": [{"id": ...}, ...]}``)."""
    data = answer.get("data")
    if not isinstance(data, list):
        raise MalformedResponse("the answer of /models has no 'data' list")
    ids = [entry.get("id") for entry in data if isinstance(entry, dict)]
    return [i for i in ids if isinstance(i, str) and i]


def token_count(answer: dict[str, Any], endpoint: str) -> int:
    """The count of a tokenize answer: ``{"count": n}`` or ``{"tokens": [...]}``."""
    count = answer.get("count")
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return count
    tokens = answer.get("tokens")
    if isinstance(tokens, list):
        return len(tokens)
    raise MalformedResponse(f"the answer of {endpoint} has neither 'count' nor a 'tokens' list")
