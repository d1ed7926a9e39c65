"""``/v1``: kb behind OpenAI's chat API, for the chat tools people already use (Open WebUI, LibreChat, Continue, llm).

* ``GET /v1/models`` lists ``kb`` (the configured language model) and ``kb:NAME`` for every installed
  backend (``/ask``'s ``backend`` option).
* ``POST /v1/chat/completions`` asks the last user message in a kb thread, whole or streamed
  (``"stream": true``: ``chat.completion.chunk`` events, then ``data: [DONE]``), through the service's
  ``ask_in_thread`` and :func:`kb_serve.asking.respond`, as ``POST /threads/{id}/ask`` does: the same
  checks, limits, queue and stop on disconnect. The reply is kb_core's Markdown (:mod:`kb_core.service.markdown`)
  in OpenAI's shapes (:mod:`kb_serve.openai_format`).

**Which thread.** A client that knows kb names it: the ``kb_thread`` body field or the ``X-Kb-Thread``
header (a 404 when there is no such thread; the earlier messages are then not read). Other clients
send the whole conversation each time and no id, so kb recognises it: the messages before the
question, system ones left out, must be user/assistant pairs matching, in order, every turn of a
stored thread (the question as asked, and a reply that ends with kb's message for that turn; blanks
and the hosts of links do not count). A match continues that thread; anything else (a first
question, history edited or begun elsewhere, a reply regenerated) starts a new one, in which the
question is asked as it stands: the core makes a follow-up standalone only from a stored thread's
turns. The thread's id comes back as ``kb_thread``.

``system`` and ``developer`` messages are accepted and ignored (kb has its own prompt); parameters kb
does not use are ignored, as OpenAI's servers do; what kb cannot honour (tools, ``n`` > 1, images or
audio, JSON output, logprobs) is a 400 naming the parameter.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import kb_core
from kb_core import AskOptions, KbError, KnowledgeBase
from kb_core.bounds import SEED, TEMPERATURE, Bound
from kb_core.service import Showing, markdown
from kb_serve import openai_format as fmt
from kb_serve.access import check_owner, own_threads
from kb_serve.asking import KEEP_ALIVE, Emit, respond, tokens
from kb_serve.bodies import field_within, off_loop, path_param, read_json
from kb_serve.client import parse_sse
from kb_serve.errors import OpenAIError, openai_error_of, openai_error_response
from kb_serve.service import KbService

__all__ = ["ChatRequest", "OpenAIApi", "chat_request", "recognised_thread"]

MODEL = "kb"
#: Stored threads (the most recently continued first) a conversation is looked for among.
MAX_THREADS_SEARCHED = 10_000
PART_TYPES = {"text": "text", "refusal": "refusal"}
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
Pair = tuple[str, str]


@attrs.frozen
class ChatRequest:
    """What a chat request asks: the question, the turns before it (None: not user/assistant pairs), options."""

    model: str
    question: str
    earlier: tuple[Pair, ...] | None
    options: AskOptions
    stream: bool = False
    include_usage: bool = False
    thread_id: str | None = None


def _bad(message: str, param: str | None, code: str = "invalid_value") -> OpenAIError:
    return OpenAIError(400, message, param=param, code=code)


def _unsupported(message: str, param: str) -> OpenAIError:
    return OpenAIError(400, message, param=param, code="unsupported_parameter")


def _text(content: Any, param: str) -> str:
    """A message's text: a string, or its text parts joined (null: empty); images, audio and files are a 400."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise _bad("a message's content must be a string or a list of content parts", param)
    texts = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        kind = kind if isinstance(kind, str) else None
        if kind in PART_TYPES and isinstance(part.get(PART_TYPES[kind]), str):
            texts.append(part[PART_TYPES[kind]])
        elif kind is not None and kind not in PART_TYPES:
            raise _unsupported(f"kb reads text only, not {kind[:40]!r} content", f"{param}[{i}]")
        else:
            raise _bad('a content part must be {"type": "text", "text": "..."}', f"{param}[{i}]")
    return "\n".join(texts)


def _conversation(messages: Any) -> tuple[str, tuple[Pair, ...] | None]:
    """The question (the last message, the user's) and the user/assistant pairs before it (None when they are not)."""
    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list", "messages")
    said: list[tuple[str, str]] = []
    for i, item in enumerate(messages):
        where = f"messages[{i}]"
        role = item.get("role") if isinstance(item, dict) else None
        calls = isinstance(item, dict) and (item.get("tool_calls") or item.get("function_call"))
        if role in ("tool", "function") or calls:
            raise _unsupported("kb calls no tools: tool messages and tool calls are not supported", where)
        if role not in ("system", "developer", "user", "assistant"):
            raise _bad("a message's role must be system, developer, user or assistant", f"{where}.role")
        text = _text(item.get("content"), f"{where}.content")
        if role in ("user", "assistant"):  # system and developer messages are ignored: kb has its own prompt
            said.append((role, text))
    if not said or said[-1][0] != "user":
        raise _bad("the last message must be the user's question", "messages")
    last = max(i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user")
    try:
        question = kb_core.check_text(said[-1][1], "question")
    except KbError as exc:
        raise _bad(exc.message, f"messages[{last}].content") from None
    before = said[:-1]
    roles = [role for role, _ in before]
    if roles != ["user", "assistant"] * (len(before) // 2):
        return question, None
    return question, tuple((before[i][1], before[i + 1][1]) for i in range(0, len(before), 2))


def _refuse_unsupported(body: dict[str, Any]) -> None:
    """A 400 for what kb cannot honour: tools, n > 1, JSON output, logprobs, audio."""
    if body.get("tools") or body.get("functions"):
        raise _unsupported("kb calls no tools", "tools" if body.get("tools") else "functions")
    for name in ("tool_choice", "function_call"):
        if body.get(name) not in (None, "none"):
            raise _unsupported(f"kb calls no tools: {name} may only be none", name)
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise _unsupported("kb writes one answer: n must be 1", "n")
    wanted = body.get("response_format")
    if wanted is not None and not (isinstance(wanted, dict) and wanted.get("type") == "text"):
        raise _unsupported("kb answers in text with citations: response_format may only be text", "response_format")
    if body.get("logprobs") not in (None, False):
        raise _unsupported("kb does not return logprobs", "logprobs")
    modalities = body.get("modalities")
    if body.get("audio") is not None or (modalities is not None and modalities != ["text"]):
        raise _unsupported("kb answers in text only", "modalities" if body.get("audio") is None else "audio")


def _within(body: dict[str, Any], name: str, bound: Bound) -> Any:
    """The body's ``name`` within ``bound`` (None: not given), or a 400 naming it, its value and what is allowed."""
    try:
        return field_within(body, name, bound)
    except KbError as exc:
        raise _bad(exc.message, name) from None


def chat_request(body: Any, header_thread: str | None, backends: list[str]) -> ChatRequest:
    """The chat request of a JSON body (and the ``X-Kb-Thread`` header), or an OpenAIError naming what is wrong."""
    if not isinstance(body, dict):
        raise _bad("the body must be a JSON object", None)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("model must be a string: kb, or kb:BACKEND (GET /v1/models lists them)", "model")
    name, colon, backend = model.partition(":")
    if name != MODEL or (colon and backend not in backends):
        listed = ", ".join([MODEL, *(f"{MODEL}:{b}" for b in backends)])
        raise OpenAIError(404, f"no model {model[:80]!r} (available: {listed})", param="model", code="model_not_found")
    _refuse_unsupported(body)
    question, earlier = _conversation(body.get("messages"))
    seed = _within(body, "seed", SEED)
    temperature = _within(body, "temperature", TEMPERATURE)
    stream, options_ = body.get("stream"), body.get("stream_options")
    if stream is not None and not isinstance(stream, bool):
        raise _bad("stream must be true or false", "stream")
    usage = options_.get("include_usage") if isinstance(options_, dict) else None
    options = AskOptions(
        temperature=None if temperature is None else float(temperature), seed=seed, backend=backend or None
    )
    named = _thread_named(body, header_thread)
    return ChatRequest(model, question, earlier, options, stream is True, usage is True, named)


def _thread_named(body: dict[str, Any], header: str | None) -> str | None:
    """The thread a client named (``kb_thread`` in the body, or the ``X-Kb-Thread`` header); both must agree."""
    given = body.get("kb_thread")
    if given is not None and not isinstance(given, str):
        raise _bad("kb_thread must be a thread id (a string)", "kb_thread")
    if given is not None and header is not None and given.strip() != header.strip():
        raise _bad("kb_thread and the X-Kb-Thread header name different threads", "kb_thread")
    chosen = given if given is not None else header
    return path_param(chosen.strip(), "the thread id") if chosen and chosen.strip() else None


def recognised_thread(kb: KnowledgeBase, earlier: tuple[Pair, ...], showing: Showing) -> str | None:
    """The stored thread whose turns are ``earlier`` (user message, assistant reply), the most recent first; or None.
    ``showing``: how the replies showed answers."""
    if not earlier:
        return None
    first = markdown.fingerprint(earlier[0][0])
    for summary in own_threads(kb, MAX_THREADS_SEARCHED):  # (a person's: only among their own threads)
        if summary.turns != len(earlier) or markdown.fingerprint(summary.first_question) != first:
            continue
        turns = kb_core.stored_thread(kb.store, summary.thread_id).turns
        if all(_same_turn(turn, pair, showing) for turn, pair in zip(turns, earlier, strict=True)):
            return summary.thread_id
    return None


def _same_turn(turn: Any, pair: Pair, showing: Showing) -> bool:
    """Whether a stored turn is the user message and the reply of ``pair``."""
    if markdown.fingerprint(turn.asked) != markdown.fingerprint(pair[0]):
        return False
    return markdown.is_reply(pair[1], showing.answer_json(turn.answer))  # (as the reply showed it)


class OpenAIApi:
    """The route handlers of ``/v1`` over one :class:`KbService`."""

    def __init__(self, service: KbService) -> None:
        self.service = service

    def routes(self) -> list[Route]:
        """``GET /v1/models`` and ``POST /v1/chat/completions``."""
        return [
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
        ]

    def backends(self) -> list[str]:
        """The installed language-model backends (a model ``kb:NAME`` each)."""
        return list(self.service.registry.names("language_models"))

    async def models(self, request: Request) -> Response:
        """``GET /v1/models``: ``kb`` and ``kb:NAME`` per backend, as OpenAI's model list."""
        created = int(self.service.started)
        ids = [MODEL, *(f"{MODEL}:{name}" for name in self.backends())]
        data = [{"id": i, "object": "model", "created": created, "owned_by": "kb"} for i in ids]
        return JSONResponse({"object": "list", "data": data})

    async def chat(self, request: Request) -> Response:
        """``POST /v1/chat/completions``: the last user message asked in its kb thread, whole or streamed."""

        def work(emit: Emit, gone: threading.Event) -> kb_core.Turn:
            return self.service.ask_in_thread(chat.question, thread_id, chat.options, tokens(emit), gone)

        def error_data(exc: KbError) -> dict[str, Any]:
            """An error in the stream, as OpenAI's error object (a thread deleted under the answer: its 404)."""
            if isinstance(exc, kb_core.NotFoundError) and thread_id is not None:
                exc = OpenAIError(404, exc.message, param="kb_thread", code="thread_not_found")
            return openai_error_of(exc)

        try:
            chat = chat_request(await read_json(request), request.headers.get("x-kb-thread"), self.backends())
            thread_id = await self._thread(chat)
            reply = await respond(
                self.service, work, "turn.v1", chat.stream, request.receive, label=chat.question, error_data=error_data
            )
        except KbError as exc:  # (here, not in the app's handler: a /v1 error's code says what kind it is)
            return openai_error_response(exc)
        made = Made(f"chatcmpl-{secrets.token_hex(12)}", int(time.time()), chat.model, _base(request))
        if not chat.stream:
            if reply.status_code != 200:
                return reply  # the client left (nobody reads it)
            turn = json.loads(bytes(reply.body))
            answer = {"schema_version": "answer.v1", **turn["answer"]}
            body = fmt.completion(made.id, made.created, made.model, answer, turn["thread_id"], made.base)
            return JSONResponse(body)
        events = cast(StreamingResponse, reply).body_iterator
        return StreamingResponse(
            made.chunks(cast(AsyncIterator[bytes], events), chat.include_usage),
            media_type="text/event-stream",
            headers=STREAM_HEADERS,
        )

    async def _thread(self, chat: ChatRequest) -> str | None:
        """The thread to ask in: the one named (a 404 when there is none), the one recognised, or None (a new one)."""
        named, earlier = chat.thread_id, chat.earlier

        def find(kb: KnowledgeBase) -> str | None:
            if named is None:
                return recognised_thread(kb, earlier, self.service.answers.showing) if earlier else None
            try:
                check_owner(kb, "thread", named, lambda: kb_core.NotFoundError(f"no thread {named[:40]!r}"))
                return kb_core.stored_thread(kb.store, named).thread_id
            except kb_core.NotFoundError as exc:
                raise OpenAIError(404, exc.message, param="kb_thread", code="thread_not_found") from None

        return await off_loop(lambda: self.service.read(find), self.service.settings.search_timeout_s)


def _base(request: Request) -> str:
    """The server's address as the client reached it (its Host, already allowed), for links to kb's page."""
    return f"{request.url.scheme}://{request.headers.get('host', 'localhost')}"


def _data(payload: Any) -> bytes:
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


@attrs.frozen
class Made:
    """One completion being written: its id, time, model and the base of its links."""

    id: str
    created: int
    model: str
    base: str

    async def chunks(self, events: AsyncIterator[bytes], include_usage: bool) -> AsyncIterator[bytes]:
        """kb's answer stream (``token`` events, then ``turn`` or ``error``) as OpenAI's chunks, then ``[DONE]``."""
        extra: dict[str, Any] = {"usage": None} if include_usage else {}
        linked = markdown.LinkedStream()
        try:
            yield _data(self._chunk({"role": "assistant", "content": ""}, **extra))
            async for raw in events:
                if bytes(raw).startswith(KEEP_ALIVE):  # kb is checking the answer: the client hears it is alive
                    yield KEEP_ALIVE
                for name, data in parse_sse(bytes(raw).decode()):
                    if name == "token":
                        piece = linked.feed(data["text"])
                        if piece:
                            yield _data(self._chunk({"content": piece}, **extra))
                    elif name == "turn":
                        for item in self._last(linked, data, include_usage):
                            yield _data(item)
                    elif name == "error":  # (its data is OpenAI's error object: the chat's error_data)
                        yield _data(data)
            yield b"data: [DONE]\n\n"
        finally:  # the client left: closing kb's stream stops the generation
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return fmt.chunk(self.id, self.created, self.model, delta, finish, **extra)

    def _last(self, linked: markdown.LinkedStream, turn: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
        """The chunks after the model's text: the rest of the message, the finish (with ``kb``), the usage."""
        answer = {"schema_version": "answer.v1", **turn["answer"]}
        extra: dict[str, Any] = {"usage": None} if include_usage else {}
        rest = linked.rest(answer, self.base)
        made = [self._chunk({"content": rest}, **extra)] if rest else []
        made.append(self._chunk({}, fmt.finish_reason(answer), kb=answer, kb_thread=turn["thread_id"], **extra))
        if include_usage:
            made.append({**self._chunk({}), "choices": [], "usage": fmt.usage(answer)})
        return made
