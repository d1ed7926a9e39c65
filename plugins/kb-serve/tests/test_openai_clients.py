"""``/v1`` driven by real clients, not an imitation: the ``openai`` Python package, simonw's ``llm`` CLI and curl.

Each talks to a real ``kb serve`` (the conftest's uvicorn on a free loopback port) with the scripted model,
and once (marked ``slow``) with the embedded real model. Nothing leaves the machine: the openai client is
given the server's base URL, and ``llm`` runs with ``LLM_USER_PATH`` in a temporary folder whose
``extra-openai-models.yaml`` points its model ``kb`` at the server.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import openai
import pytest
from kb_serve_chat import FIRST, FOLLOW_UP, OFF_TOPIC, PORT_QUESTION, conversing
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from kb_core.service import markdown
from kb_serve.openapi import kb_schema

CURL = "/usr/bin/curl"
#: A link to lines of notes/heliograph.md on kb's page (a reference link's definition).
HELIOGRAPH_LINK = re.compile(r"^\[kb-1\]: http://127\.0\.0\.1:\d+/#/doc/notes%2Fheliograph\.md/L\d+-L\d+$", re.M)


def client(server: Any, key: str = "any text on loopback") -> openai.OpenAI:
    """The openai package's client for ``server`` (no retries: a refusal is seen as it is)."""
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=120)


def extra(model: Any, name: str) -> Any:
    """A field of kb's own on an openai object (``kb``, ``kb_thread``): the package keeps unknown fields."""
    return (model.model_extra or {})[name]


def streamed(completion_stream: Any) -> tuple[str, list[ChatCompletionChunk]]:
    chunks = list(completion_stream)
    assert all(isinstance(c, ChatCompletionChunk) for c in chunks)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices), chunks


def test_the_openai_package_gets_kbs_answer_whole_and_streamed(start_server: Callable[..., Any]) -> None:
    server = start_server()
    kb = client(server)
    models = [m.id for m in kb.models.list()]
    assert models[0] == "kb" and "kb:scripted" in models
    messages: list[Any] = [{"role": "user", "content": PORT_QUESTION}]
    whole = kb.chat.completions.create(model="kb", messages=messages)
    assert isinstance(whole, ChatCompletion)
    content = whole.choices[0].message.content or ""
    answer = extra(whole, "kb")
    jsonschema.validate(answer, kb_schema("answer.v1"))
    assert answer["grounded"] is True and "7341" in content and HELIOGRAPH_LINK.search(content)
    assert content == markdown.message(answer, server.url) and whole.choices[0].finish_reason == "stop"
    assert whole.usage is not None and whole.usage.prompt_tokens == answer["usage"]["prompt_tokens"] > 0
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens

    stream = kb.chat.completions.create(
        model="kb:scripted", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    text, chunks = streamed(stream)
    assert text == content  # the same message, token by token
    assert chunks[0].choices[0].delta.role == "assistant"
    final = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    jsonschema.validate(extra(final, "kb"), kb_schema("answer.v1"))
    assert extra(final, "kb")["answer"] == answer["answer"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_with_the_openai_package_a_follow_up_stays_in_one_thread_and_a_refusal_says_why(
    start_server: Callable[..., Any],
) -> None:
    server = start_server(script=conversing)
    kb = client(server)
    messages: list[Any] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": FIRST}]
    first = kb.chat.completions.create(model="kb", messages=messages)
    messages += [{"role": "assistant", "content": first.choices[0].message.content}]
    messages += [{"role": "user", "content": FOLLOW_UP}]
    text, chunks = streamed(kb.chat.completions.create(model="kb", messages=messages, stream=True))
    assert "7341" in text
    with server.client() as http:
        listed = http.get("/threads").json()["threads"]
    assert [(t["thread_id"], t["turns"]) for t in listed] == [(extra(first, "kb_thread"), 2)]
    assert extra(chunks[-1], "kb_thread") == extra(first, "kb_thread")

    refused = kb.chat.completions.create(model="kb", messages=[{"role": "user", "content": OFF_TOPIC}])
    said = refused.choices[0].message.content or ""
    assert extra(refused, "kb")["grounded"] is False
    assert "kb refused to answer (score_gate)" in said and extra(refused, "kb")["candidates"][0]["ref"] in said


@pytest.mark.parametrize(
    ("extra_body", "param"),
    [
        ({"tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]}, "tools"),
        ({"n": 2}, "n"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]},
            "messages[0].content[0]",
        ),
    ],
    ids=["tools", "n=2", "image"],
)
def test_what_kb_cannot_honour_is_the_openai_packages_bad_request(
    start_server: Callable[..., Any], extra_body: dict[str, Any], param: str
) -> None:
    server = start_server()
    body: dict[str, Any] = {"model": "kb", "messages": [{"role": "user", "content": PORT_QUESTION}], **extra_body}
    with pytest.raises(openai.BadRequestError) as raised:
        client(server).chat.completions.create(**body)
    assert raised.value.status_code == 400 and raised.value.param == param
    with pytest.raises(openai.NotFoundError) as missing:
        client(server).chat.completions.create(model="gpt-4o", messages=body["messages"])
    assert missing.value.code == "model_not_found"


def test_a_wrong_key_beyond_loopback_is_the_openai_packages_authentication_error(
    start_server: Callable[..., Any],
) -> None:
    server = start_server(host="0.0.0.0", token="kb-token-for-this-test")  # (a token is a must there)
    messages: list[Any] = [{"role": "user", "content": PORT_QUESTION}]
    with pytest.raises(openai.AuthenticationError) as raised:
        client(server, key="wrong").chat.completions.create(model="kb", messages=messages)
    assert raised.value.status_code == 401 and raised.value.code == "invalid_api_key"
    answered = client(server, key="kb-token-for-this-test").chat.completions.create(model="kb", messages=messages)
    assert extra(answered, "kb")["grounded"] is True  # kb's token is the API key


def run_llm(user_path: Path, *args: str) -> str:
    """``llm ARGS`` in a subprocess with its own user folder (and no OpenAI key, so nothing could go to OpenAI)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LLM_"))}
    env["LLM_USER_PATH"] = str(user_path)
    done = subprocess.run(
        [sys.executable, "-m", "llm", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_simonws_llm_cli_asks_and_follows_up_in_one_thread(start_server: Callable[..., Any], tmp_path: Path) -> None:
    server = start_server(script=conversing)
    (tmp_path / "extra-openai-models.yaml").write_text(
        f'- model_id: kb\n  model_name: kb\n  api_base: "{server.url}/v1"\n', encoding="utf-8"
    )
    assert "kb" in run_llm(tmp_path, "models", "list")
    first = run_llm(tmp_path, "-m", "kb", FIRST)  # streamed, as llm does by default
    follow = run_llm(tmp_path, "-c", FOLLOW_UP)  # the conversation goes on: llm sends it whole
    whole = run_llm(tmp_path, "-m", "kb", "--no-stream", PORT_QUESTION)
    assert "Sources:" in first and HELIOGRAPH_LINK.search(first)
    assert "7341" in follow and HELIOGRAPH_LINK.search(follow)
    assert "7341" in whole and HELIOGRAPH_LINK.search(whole) and "Sources:" in whole
    with server.client() as http:
        turns = sorted(t["turns"] for t in http.get("/threads").json()["threads"])
    assert turns == [1, 2]  # the first question and its follow-up in one thread; the last on its own


def curl(*args: str) -> str:
    done = subprocess.run([CURL, "-sS", *args], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(not Path(CURL).exists(), reason="curl is not installed")
def test_curl_streams_and_gets_whole_completions(start_server: Callable[..., Any]) -> None:
    server = start_server()
    url = f"{server.url}/v1/chat/completions"
    body = {"model": "kb", "messages": [{"role": "user", "content": PORT_QUESTION}]}
    json_type = "Content-Type: application/json"
    lines = curl("-N", url, "-H", json_type, "-d", json.dumps({**body, "stream": True})).split("\n\n")
    events = [line.removeprefix("data: ") for line in lines if line]
    assert events[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate_json(e) for e in events[:-1]]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    whole = ChatCompletion.model_validate_json(curl(url, "-H", json_type, "-d", json.dumps(body)))
    assert text == whole.choices[0].message.content and "7341" in text and HELIOGRAPH_LINK.search(text)
    models = json.loads(curl(f"{server.url}/v1/models"))
    assert models["data"][0]["id"] == "kb"
    refused = json.loads(curl(url, "-H", json_type, "-d", json.dumps({**body, "n": 3})))
    assert refused["error"]["param"] == "n" and refused["error"]["type"] == "invalid_request_error"


@pytest.mark.slow
def test_the_embedded_model_streams_an_answer_to_the_openai_package(
    start_server: Callable[..., Any], embedded_model: None
) -> None:
    server = start_server(backend="llamacpp")
    messages: list[Any] = [{"role": "user", "content": "When was Heliograph 2.3.0 released?"}]
    stream = client(server).chat.completions.create(model="kb:llamacpp", messages=messages, stream=True)
    text, chunks = streamed(stream)
    final = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    answer = extra(final, "kb")
    jsonschema.validate(answer, kb_schema("answer.v1"))
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) >= 1  # checked text, then the rest
    if answer["grounded"]:
        assert text == markdown.message(answer, server.url) or text.endswith(markdown.message(answer, server.url))
        assert "2024" in text and "#/doc/notes%2FCHANGELOG.txt/L" in text
    else:
        assert text.endswith(markdown.message(answer, server.url)) and "kb refused to answer" in text


#: An answer whose first sentence no passage supports: kb refuses it, and the second is never reached.
WITHDRAWN = "The daemon was written by Ada Lovelace in 1843 [#1]. It listens on TCP port 7341 [#1]."


def unsupported_first(request: Any) -> list[str]:
    return [word if index == 0 else f" {word}" for index, word in enumerate(WITHDRAWN.split())]


def test_a_refused_answer_streams_only_its_refusal_to_the_openai_package_and_llm(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    """Issue 44: a chat client keeps what it was streamed; nothing the model wrote reaches it before the refusal."""
    server = start_server(script=unsupported_first)
    messages: list[Any] = [{"role": "user", "content": PORT_QUESTION}]
    text, chunks = streamed(client(server).chat.completions.create(model="kb", messages=messages, stream=True))
    assert extra(chunks[-1], "kb")["refusal_reason"] == "unsupported"
    assert text.startswith("kb refused to answer (unsupported)")
    assert "Lovelace" not in text and "7341" not in text  # neither the refused sentence nor the one after it
    (tmp_path / "extra-openai-models.yaml").write_text(
        f'- model_id: kb\n  model_name: kb\n  api_base: "{server.url}/v1"\n', encoding="utf-8"
    )
    said = run_llm(tmp_path, "-m", "kb", PORT_QUESTION)  # llm streams by default and logs what it was sent
    assert "kb refused to answer (unsupported)" in said and "Lovelace" not in said
    logged = run_llm(tmp_path, "logs", "-n", "1")
    assert "kb refused to answer" in logged and "Lovelace" not in logged
