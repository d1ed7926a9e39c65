"""The ``openai`` language model: streamed chat completions, token counts and health checks."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from kb_core import Config, KbError, ModelUnavailableError
from kb_core.plugin import Done, GenerateRequest, ModelRef, Problem, StreamEvent, Token
from kb_core.plugin.remote import ApiError, chat_messages, first_or_done, upper_bound_tokens
from kb_openai.client import OpenAIClient
from kb_openai.protocol import (
    DONE_MARK,
    MalformedResponse,
    Usage,
    chat_body,
    model_ids,
    parse_chunk,
    sse_data,
    token_count,
)
from kb_openai.settings import MODEL_ENV, OPENAI, OpenAISettings

COMPONENT = "openai"
COUNT_CACHE_SIZE = 4096
#: Tokenize endpoints tried in order: llama-cpp-python's server, then llama.cpp's own server.
TOKENIZERS: tuple[tuple[str, str], ...] = (("/extras/tokenize/count", "input"), ("/tokenize", "content"))


class ModelNotFound(ModelUnavailableError):
    """The server runs but does not serve the configured model."""

    def __init__(self, model: str, url: str, served: list[str] | None = None) -> None:
        known = f" (it serves: {', '.join(served)})" if served else ""
        super().__init__(
            f"{OPENAI.at(url)} does not serve the model {model!r}{known}",
            hint=f"set [backends.openai] model (or {MODEL_ENV}) to one of the served ids",
        )


@attrs.define
class ServerFacts:
    """What was learnt from the server once: the model id to send, and how to count tokens."""

    model: str
    served: list[str]
    tokenizer: tuple[str, str] | None | bool = False  # False: not probed yet; None: the server has none


class OpenAIModel:
    """A :class:`kb_core.plugin.LanguageModel` served by any OpenAI-compatible server.

    Creating it does not touch the network; the first ``count_tokens``, ``generate_stream`` or
    ``check`` asks ``GET /models`` once (to confirm the model, or pick the server's only one).
    """

    def __init__(self, settings: OpenAISettings, client: OpenAIClient | None = None) -> None:
        self.settings = settings
        self.client = client or OpenAIClient(settings)
        self.context_tokens = settings.context_tokens
        self.model_ref = ModelRef(id=settings.model or "(server default)", provider="openai")
        self._facts: ServerFacts | None = None
        self._count_cached = functools.lru_cache(maxsize=COUNT_CACHE_SIZE)(self._count_on_server)

    def __repr__(self) -> str:
        return f"OpenAIModel({self.settings.base_url!r}, model={self.model_ref.id!r})"

    # -- facts --------------------------------------------------------------------------------

    def facts(self) -> ServerFacts:
        """Ask the server (once) which models it serves; settle the model id."""
        if self._facts is not None:
            return self._facts
        wanted = self.settings.model
        try:
            served = model_ids(self.client.get_json("/models"))
        except ApiError as exc:
            if exc.status != 404 or not wanted:  # a server without /models is fine when the model is named
                raise
            served = []
        if not wanted:
            if len(served) != 1:
                raise ModelNotFound("(none configured)", self.settings.base_url, served)
            wanted = served[0]
        elif served and wanted not in served:
            raise ModelNotFound(wanted, self.settings.base_url, served)
        self._facts = ServerFacts(wanted, served)
        self.model_ref = attrs.evolve(self.model_ref, id=wanted)
        return self._facts

    def _call(self, request: Any) -> Any:
        """Run a request, turning a 404 about the model into ModelNotFound."""
        try:
            return request()
        except ApiError as exc:
            if exc.status == 404 and "model" in exc.server_message.lower():
                facts = self._facts
                raise ModelNotFound(facts.model if facts else self.settings.model, self.settings.base_url) from None
            raise

    # -- tokens -------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes, from the server's tokenize endpoint when it has one (cached per text).

        Without one (hosted APIs, vLLM, LM Studio), or with ``[backends.openai] tokenize = "off"``,
        the answer is :func:`upper_bound_tokens`, which never undercounts.
        """
        if not text:
            return 0
        return self._count_cached(text)

    def tokenizer(self) -> tuple[str, str] | None:
        """The tokenize endpoint and its text field, probed once (None: the server has none)."""
        facts = self.facts()
        if facts.tokenizer is False:
            facts.tokenizer = None
            if self.settings.tokenize == "auto":
                for endpoint, field in TOKENIZERS:
                    try:
                        token_count(
                            self.client.post_json(endpoint, {field: "probe", "model": facts.model}, root=True), endpoint
                        )
                    except (ApiError, MalformedResponse):
                        continue
                    facts.tokenizer = (endpoint, field)
                    break
        return facts.tokenizer if isinstance(facts.tokenizer, tuple) else None

    def _count_on_server(self, text: str) -> int:
        found = self.tokenizer()
        if found is None:
            return upper_bound_tokens(text)
        endpoint, field = found
        body: dict[str, Any] = {field: text, "model": self.facts().model}
        if endpoint == "/tokenize":
            body["add_special"] = False
        return token_count(self.client.post_json(endpoint, body, root=True), endpoint)

    # -- generation ---------------------------------------------------------------------------

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]:
        """Stream ``POST /chat/completions``: Token events, then one Done (``error`` set if it failed midway).

        Raises KbError before the first event when the server is down, refuses the key, does not
        serve the model or refuses the request; a grammar is refused too (not part of the API).
        """
        if request.grammar:
            raise OPENAI.no_grammar()
        facts = self.facts()
        body = chat_body(facts.model, request, seed=self.settings.seed)
        lines = self.client.post_stream("/chat/completions", body)
        try:
            events = sse_data(lines)
            first = first_or_done(lambda: self._call(lambda: next(events, None)))
            if isinstance(first, Done):  # a timeout or a malformed answer: the generation started and failed
                yield first
                return
            yield from self._events(first, events, request)
        finally:
            lines.close()  # also when the caller stops early: the HTTP stream is closed at once

    def _events(self, first: str | None, events: Iterator[str], request: GenerateRequest) -> Iterator[StreamEvent]:
        """Turn stream events into Tokens and the closing Done; every failure becomes that Done."""
        number, data = 1, first
        reason: str | None = None
        usage: Usage | None = None
        deltas = 0
        try:
            while data is not None and data.strip() != DONE_MARK:
                chunk = parse_chunk(data, number)
                if chunk.error is not None:
                    yield Done(finish_reason="error", error=OPENAI.reported(chunk.error))
                    return
                if chunk.content:
                    deltas += 1
                    yield Token(chunk.content)
                reason = chunk.finish_reason or reason
                usage = chunk.usage or usage
                number, data = number + 1, next(events, None)
            if reason is None:
                ended = "before '[DONE]'" if data is None else "at '[DONE]'"
                raise MalformedResponse(f"the stream ended {ended} after {number - 1} events without a finish_reason")
            if usage is None:
                usage = Usage(self._prompt_estimate(request), deltas)
            yield Done(
                finish_reason=reason,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
            )
        except KbError as exc:
            yield Done(finish_reason="error", error=str(exc))

    def _prompt_estimate(self, request: GenerateRequest) -> int:
        """Prompt tokens when the server does not report usage: the messages' text, counted (template excluded)."""
        try:
            return sum(self.count_tokens(m["content"]) for m in chat_messages(request))
        except KbError:
            return 0

    # -- health -------------------------------------------------------------------------------

    def check(self) -> list[Problem]:
        """Problems ``kb doctor`` reports: server down, key refused, model not served."""
        try:
            self.facts()
        except KbError as exc:
            return [Problem(COMPONENT, exc.message, fix=exc.hint)]
        return []


def make_model(config: Config, options: Mapping[str, object], environ: Mapping[str, str] | None = None) -> OpenAIModel:
    """The backend for ``config`` and the ``[backends.openai]`` table (environment: ``KB_OPENAI_*``)."""
    return OpenAIModel(OpenAISettings.resolve(config, options, os.environ if environ is None else environ))
