"""kb's answer as an OpenAI chat completion: ``answer.v1`` -> the assistant's message, its stream of chunks, usage.

**The message** is the answer in Markdown as kb_core's answer service writes it
(:mod:`kb_core.service.markdown`): a grounded answer's text with every ``[#n]`` a reference link to
the cited lines on kb's page, then its sources and the links' definitions; a refusal is kb's
refusal line with its reason, then the nearest passages. Nothing of the wording is this module's.

**A stream** (:class:`kb_core.service.markdown.LinkedStream`) sends kb's checked text as the service
releases it, markers rewritten; then the rest of the message, so the deltas make the message of
the whole reply (see docs/answers.md, "What a reader sees"). This module writes OpenAI's shapes:
the completion, its chunks, the finish reason and the usage.
"""

from __future__ import annotations

from typing import Any

from kb_core.service import markdown


def finish_reason(answer: dict[str, Any]) -> str:
    """``length`` when the model was cut at kb's token limit, else ``stop``."""
    return "length" if answer.get("finish_reason") == "length" else "stop"


def usage(answer: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's usage from kb's own counts (prompt, completion, cached prompt tokens)."""
    counts = answer.get("usage") or {}
    prompt, completion = int(counts.get("prompt_tokens", 0)), int(counts.get("completion_tokens", 0))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": int(counts.get("cached_prompt_tokens", 0))},
    }


def completion(
    completion_id: str, created: int, model: str, answer: dict[str, Any], thread_id: str | None, base: str
) -> dict[str, Any]:
    """A whole ``chat.completion``: the message, usage, and kb's extras (``kb``: answer.v1, ``kb_thread``)."""
    content = markdown.message(answer, base)
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": content, "refusal": None},
        "logprobs": None,
        "finish_reason": finish_reason(answer),
    }
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": usage(answer),
        "kb": answer,
        "kb_thread": thread_id,
    }


def chunk(
    completion_id: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with one choice (``extra``: top-level fields, as the final chunk's ``kb``)."""
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [choice],
        **extra,
    }
