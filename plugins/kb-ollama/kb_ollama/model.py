"""The ``ollama`` language model: generation, token counting and health checks over Ollama's API."""

from __future__ import annotations

import functools
import os
from collections.abc import Generator, Iterator, Mapping
from typing import Any

import attrs

from kb_core import Config, ConfigError, KbError, ModelUnavailableError
from kb_core.plugin import Done, GenerateRequest, ModelRef, Problem, StreamEvent, Token
from kb_core.plugin.options import checked_options
from kb_core.plugin.remote import ApiError, Timeouts, first_or_done, upper_bound_tokens
from kb_ollama.client import BaseUrl, OllamaClient
from kb_ollama.options import DEFAULT_URL, OPTIONS
from kb_ollama.protocol import (
    OLLAMA,
    MalformedResponse,
    chat_body,
    context_length,
    count_body,
    find_pulled,
    parse_chat_line,
    parse_tags,
)

URL_ENV = OLLAMA.url_env
COUNT_CACHE_SIZE = 4096
COMPONENT = "ollama"


@attrs.frozen
class OllamaSettings:
    """Everything the backend needs, resolved from ``[backends.ollama]``, ``[models.llm]`` and the environment."""

    url: BaseUrl
    model: str
    context_tokens: int
    seed: int
    timeouts: Timeouts

    @classmethod
    def resolve(cls, config: Config, options: Mapping[str, object], environ: Mapping[str, str]) -> OllamaSettings:
        """Settings for one invocation; ConfigError when no model is named or the URL is invalid."""
        llm = config.models.llm
        values = checked_options("ollama", OPTIONS, options, config.sources)
        url = OLLAMA.configured_url(values, environ, DEFAULT_URL)
        model = str(values["model"] or llm.model or "").strip()
        if not model:
            raise ConfigError(
                "no Ollama model is configured",
                hint="set [backends.ollama] model = 'NAME' (see 'ollama list')",
            )
        return cls(BaseUrl.parse(url), model, llm.context_tokens, llm.seed, Timeouts.of(llm))


@attrs.frozen
class ModelFacts:
    """What the server knows about the model: its digest and trained context length."""

    digest: str
    max_context: int | None


class ModelNotPulled(ModelUnavailableError):
    """The server runs but does not have the model."""

    def __init__(self, model: str, url: BaseUrl, pulled: list[str] | None = None) -> None:
        known = f" (pulled: {', '.join(pulled)})" if pulled else ""
        super().__init__(f"Ollama model {model!r} is not pulled on {url}{known}", hint=f"run 'ollama pull {model}'")


class OllamaModel:
    """A :class:`kb_core.plugin.LanguageModel` served by an Ollama server.

    ``context_tokens`` starts as ``[models.llm] context_tokens`` and is lowered to the model's
    own context length the first time the server is asked anything (``count_tokens``,
    ``generate_stream`` or ``check``); ``model_ref.path`` then records the model's digest.
    """

    def __init__(self, settings: OllamaSettings, client: OllamaClient | None = None) -> None:
        self.settings = settings
        self.client = client or OllamaClient(settings.url, settings.timeouts)
        self.context_tokens = settings.context_tokens
        self.model_ref = ModelRef(id=settings.model, provider="ollama")
        self._facts: ModelFacts | None = None
        self._count_cached = functools.lru_cache(maxsize=COUNT_CACHE_SIZE)(self._count_on_server)

    # -- what the server knows -----------------------------------------------------------------

    def facts(self) -> ModelFacts:
        """Ask the server (once) whether the model is pulled and how long its context is."""
        if self._facts is None:
            pulled = parse_tags(self.client.get_json("/api/tags"))
            found = find_pulled(pulled, self.settings.model)
            if found is None:
                raise ModelNotPulled(self.settings.model, self.settings.url, [m.name for m in pulled])
            show = self._call(lambda: self.client.post_json("/api/show", {"model": self.settings.model}))
            self._facts = ModelFacts(found.digest, context_length(show))
            if self._facts.max_context:
                self.context_tokens = min(self.settings.context_tokens, self._facts.max_context)
            if found.digest:
                self.model_ref = attrs.evolve(self.model_ref, path=f"sha256:{found.digest}")
        return self._facts

    def _call(self, request: Any) -> Any:
        """Run a request, turning the server's "model not found" into ModelNotPulled."""
        try:
            return request()
        except ApiError as exc:
            if exc.status == 404 and exc.server_message.startswith("model ") and "not found" in exc.server_message:
                raise ModelNotPulled(self.settings.model, self.settings.url) from None
            raise

    # -- tokens -------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes for this model, as the server's own tokenizer counts them.

        One ``/api/generate`` call in raw mode per distinct text (cached): the server reports
        ``prompt_eval_count``, which includes the BOS token the model adds, so the count may be
        one above the text's own tokens but never below. When the server does not report a
        count, or the text filled the whole context (so the server truncated it), the answer
        is :func:`upper_bound_tokens`.
        """
        if not text:
            return 0
        self.facts()
        return self._count_cached(text)

    def _count_on_server(self, text: str) -> int:
        body = count_body(self.settings.model, text, num_ctx=self.context_tokens)
        answer = self._call(lambda: self.client.post_json("/api/generate", body))
        count = answer.get("prompt_eval_count")
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
            return upper_bound_tokens(text)
        if count >= self.context_tokens:
            return max(count, upper_bound_tokens(text))
        return count

    # -- generation ---------------------------------------------------------------------------

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]:
        """Stream ``/api/chat``: Token events, then one Done (with ``error`` set if it failed midway).

        Raises KbError before the first event when the server is down, the model is not
        pulled, the server refuses the request, or a grammar is asked for.
        """
        if request.grammar:
            raise OLLAMA.no_grammar()
        self.facts()
        body = chat_body(self.settings.model, request, num_ctx=self.context_tokens, seed=self.settings.seed)
        lines = self.client.post_lines("/api/chat", body)
        first = first_or_done(lambda: self._call(lambda: next(lines, None)))
        if isinstance(first, Done):  # a timeout or a malformed answer: the generation started and failed
            yield first
            return
        yield from self._events(first, lines)

    def _events(self, first: bytes | None, lines: Generator[bytes, None, None]) -> Iterator[StreamEvent]:
        """Turn stream lines into events; every failure becomes the closing Done."""
        lineno, raw = 1, first
        try:
            while raw is not None:
                line = parse_chat_line(raw, lineno)
                if line.error is not None:
                    yield Done(finish_reason="error", error=OLLAMA.reported(line.error))
                    return
                if line.content:
                    yield Token(line.content)
                if line.done:
                    yield Done(
                        finish_reason=line.done_reason or "stop",
                        prompt_tokens=line.prompt_eval_count or 0,
                        completion_tokens=line.eval_count or 0,
                    )
                    return
                lineno, raw = lineno + 1, next(lines, None)
            raise MalformedResponse(f"the stream ended after {lineno - 1} lines without a final 'done: true' line")
        except KbError as exc:
            yield Done(finish_reason="error", error=str(exc))
        finally:
            lines.close()

    # -- health -------------------------------------------------------------------------------

    def check(self) -> list[Problem]:
        """Problems ``kb doctor`` reports: server down, model not pulled, context too long."""
        try:
            facts = self.facts()
        except KbError as exc:
            return [Problem(COMPONENT, exc.message, fix=exc.hint)]
        if facts.max_context and self.settings.context_tokens > facts.max_context:
            return [
                Problem(
                    COMPONENT,
                    f"[models.llm] context_tokens = {self.settings.context_tokens} exceeds the context length "
                    f"of {self.settings.model!r} ({facts.max_context}); using {facts.max_context}",
                    fix=f"set [models.llm] context_tokens = {facts.max_context}",
                )
            ]
        return []


def make_model(config: Config, options: Mapping[str, object], environ: Mapping[str, str] | None = None) -> OllamaModel:
    """The backend for ``config`` and the ``[backends.ollama]`` table (environment: ``KB_OLLAMA_URL``)."""
    return OllamaModel(OllamaSettings.resolve(config, options, os.environ if environ is None else environ))
