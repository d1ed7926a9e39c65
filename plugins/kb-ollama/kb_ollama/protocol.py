"""Ollama's HTTP API as data: request bodies and parsers for what the server sends back.

Everything here is pure (no sockets), so the parsers can be tested against arbitrary input.
The field names follow Ollama's ``docs/api.md``: ``/api/chat`` streams NDJSON objects with
``message.content`` pieces and closes with ``done: true`` plus ``done_reason``,
``prompt_eval_count`` and ``eval_count``; an error after streaming began arrives as one
``{"error": "..."}`` line.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from kb_core.bounds import digits_value
from kb_core.plugin import GenerateRequest, remote
from kb_core.plugin.remote import RemoteServer, chat_messages, count_field, error_body_text, one_line, preview

MAX_LINE_BYTES = 8 * 1024 * 1024
#: How messages name the server, and where its URL is set.
OLLAMA = RemoteServer(
    backend="ollama",
    name="the Ollama server",
    speaker="Ollama",
    url_env="KB_OLLAMA_URL",
    start="start it with 'ollama serve'",
    expected="an Ollama server",
)


class MalformedResponse(remote.MalformedResponse):
    """The server answered with something that is not Ollama's documented protocol."""

    server = OLLAMA


@attrs.frozen
class ChatLine:
    """One parsed line of an ``/api/chat`` stream."""

    content: str = ""
    done: bool = False
    done_reason: str = ""
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    error: str | None = None


def normalize_model_name(name: str) -> str:
    """``llama3.2`` -> ``llama3.2:latest``: Ollama's default tag, as ``/api/tags`` lists it."""
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def chat_body(model: str, request: GenerateRequest, *, num_ctx: int, seed: int) -> dict[str, Any]:
    """The ``POST /api/chat`` body for one generation, streamed."""
    options: dict[str, Any] = {
        "temperature": request.temperature,
        "seed": request.seed if request.seed is not None else seed,
        "num_ctx": num_ctx,
        "num_predict": request.max_tokens,
    }
    if request.stop:
        options["stop"] = list(request.stop)
    return {"model": model, "messages": chat_messages(request), "stream": True, "options": options}


def count_body(model: str, text: str, *, num_ctx: int) -> dict[str, Any]:
    """The ``POST /api/generate`` body that makes the server tokenize ``text`` and report the count.

    ``raw`` skips the chat template, so only the text (plus the BOS token the model adds) is
    counted. ``num_predict`` is 1 because Ollama treats 0 as "no limit". ``num_ctx`` matches
    generation so the server does not reload the model with another context size.
    """
    return {
        "model": model,
        "prompt": text,
        "raw": True,
        "stream": False,
        "options": {"num_predict": 1, "num_ctx": num_ctx, "temperature": 0.0, "seed": 0},
    }


def _decode_object(raw: bytes, where: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise MalformedResponse(f"{where} is not JSON: {_preview(raw)}") from None
    if not isinstance(value, dict):
        raise MalformedResponse(f"{where} is JSON but not an object: {_preview(raw)}")
    return value


def _preview(raw: bytes) -> str:
    return preview(raw.decode("utf-8", errors="replace"))


def parse_chat_line(raw: bytes, lineno: int) -> ChatLine:
    """Parse one NDJSON line of an ``/api/chat`` stream; raise MalformedResponse if it is not one."""
    where = f"stream line {lineno}"
    data = _decode_object(raw, where)
    if "error" in data:
        return ChatLine(error=one_line(str(data["error"])) or "(no message)")
    done = data.get("done")
    if not isinstance(done, bool):
        raise MalformedResponse(f"{where} has no boolean 'done' field: {_preview(raw)}")
    message = data.get("message", {} if done else None)
    if not isinstance(message, dict):
        raise MalformedResponse(f"{where} has no 'message' object: {_preview(raw)}")
    content = message.get("content", "")
    if not isinstance(content, str):
        raise MalformedResponse(f"{where} has a non-text message.content: {_preview(raw)}")
    reason = data.get("done_reason") or ""
    if not isinstance(reason, str):
        raise MalformedResponse(f"{where} has a non-text done_reason: {_preview(raw)}")
    return ChatLine(
        content=content,
        done=done,
        done_reason=reason,
        prompt_eval_count=count_field(data, "prompt_eval_count", where, MalformedResponse),
        eval_count=count_field(data, "eval_count", where, MalformedResponse),
    )


def parse_object(raw: bytes, endpoint: str) -> dict[str, Any]:
    """Parse a whole (non-streamed) JSON object answer of ``endpoint``."""
    return _decode_object(raw, f"the answer of {endpoint}")


def error_message(raw: bytes) -> str:
    """The ``error`` text of an Ollama error body, or the body itself when it has another form."""
    return error_body_text(raw, _error_field)


def _error_field(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("error"), str):
        return one_line(value["error"]) or "(no message)"
    return None


@attrs.frozen
class PulledModel:
    """A model ``/api/tags`` lists."""

    name: str
    digest: str


def parse_tags(data: dict[str, Any]) -> list[PulledModel]:
    """The pulled models of an ``/api/tags`` answer."""
    models = data.get("models")
    if models is None:
        return []
    if not isinstance(models, list):
        raise MalformedResponse("the answer of /api/tags has no 'models' list")
    pulled = []
    for entry in models:
        if not isinstance(entry, dict):
            raise MalformedResponse("the answer of /api/tags lists a model that is not an object")
        name = entry.get("name") or entry.get("model")
        if not isinstance(name, str) or not name:
            raise MalformedResponse("the answer of /api/tags lists a model without a name")
        digest = entry.get("digest")
        pulled.append(PulledModel(name, digest if isinstance(digest, str) else ""))
    return pulled


def find_pulled(pulled: list[PulledModel], name: str) -> PulledModel | None:
    """The pulled model ``name`` (``llama3.2`` matches ``llama3.2:latest``), if any."""
    wanted = normalize_model_name(name)
    for model in pulled:
        if normalize_model_name(model.name) == wanted:
            return model
    return None


def context_length(show: dict[str, Any]) -> int | None:
    """The model's context length from an ``/api/show`` answer, or None when it does not say.

    ``model_info["<arch>.context_length"]`` (what the model was trained for) wins; else a
    ``num_ctx`` line in ``parameters`` (the Modelfile's default).
    """
    info = show.get("model_info")
    if isinstance(info, dict):
        arch = info.get("general.architecture")
        value = info.get(f"{arch}.context_length") if isinstance(arch, str) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    parameters = show.get("parameters")
    if isinstance(parameters, str):
        for line in parameters.splitlines():
            key, _, rest = line.strip().partition(" ")
            value_text = rest.strip()
            number = digits_value(value_text)
            if key == "num_ctx" and number:
                return number
    return None
