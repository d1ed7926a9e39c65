"""The only fake language model in kb: a scripted LanguageModel for tests of the answer pipeline.

It lives in :mod:`kb_core.testing`, which nothing on the product's runtime path imports. Its
tokenizer is one token per character, so packing budgets can be checked exactly; its stream
replays a script.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kb_core.extend.hookspecs import RegisterLanguageModel, hookimpl
from kb_core.types import Done, GenerateRequest, ModelRef, Problem, StreamEvent, Token

Script = Sequence[str] | Callable[[GenerateRequest], Sequence[str]]


class ScriptedLanguageModel:
    """Streams scripted tokens (a list, or a function of the request) and records every request."""

    def __init__(
        self,
        script: Script = ("ok [#1]",),
        *,
        context_tokens: int = 8192,
        finish_reason: str = "stop",
        error: str | None = None,
        model_id: str = "scripted",
        verdict_no_share: float | None = None,
    ) -> None:
        self.script = script
        self.verdict_no_share = verdict_no_share  # reported for a request that opens with a verdict
        self.context_tokens = context_tokens
        self.finish_reason = finish_reason
        self.error = error
        self.model_ref = ModelRef(id=model_id, provider="mock")
        self.requests: list[GenerateRequest] = []

    def count_tokens(self, text: str) -> int:
        """One token per character."""
        return len(text)

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]:
        """Record the request, then yield the scripted tokens and one Done with exact counts."""
        self.requests.append(request)
        pieces = list(self.script(request) if callable(self.script) else self.script)
        prompt_tokens = self.count_tokens(request.system) + self.count_tokens(request.user)
        for piece in pieces:
            yield Token(piece)
        share = self.verdict_no_share if request.verdict is not None else None
        yield Done(self.finish_reason, prompt_tokens, len(pieces), error=self.error, verdict_no_share=share)

    def check(self) -> list[Problem]:
        """Nothing can be wrong with a script."""
        return []


class CheckingLanguageModel(ScriptedLanguageModel):
    """A scripted model that also answers the answer check (:class:`~kb_core.plugin.AnswerChecker`).

    ``yes`` is the P("Yes") it gives every check; the checks it was asked are kept in ``checks``.
    """

    def __init__(self, script: Script = ("ok [#1]",), *, yes: float = 1.0, **options: Any) -> None:
        super().__init__(script, **options)
        self.yes = yes
        self.checks: list[GenerateRequest] = []

    def yes_probability(self, request: GenerateRequest) -> float:
        """Record the check and give ``yes``."""
        self.checks.append(request)
        return self.yes


def extractive(request: GenerateRequest) -> list[str]:
    """A script that answers with the text of evidence entry [#1] (after its header line), citing ``[#1]``.

    Its answers are grounded by kb's own checks whenever entry [#1] is the passage that answers:
    ``ScriptedLanguageModel(extractive)``, ``ScriptedPlugin(extractive)``.
    """
    after = re.split(r"\[#1[\] ]", request.user, maxsplit=1)[1]
    entry = re.split(r"\n\n\[#2[\] ]|\n\n(?:Question|질문|问题)[:：]|\n\n\[Earlier in this conversation", after)[0]
    words = entry.split("\n", 1)[1].split()
    return [w if i == 0 else " " + w for i, w in enumerate(words)] + [" [#1]"]


class ScriptedPlugin:
    """An in-process plugin that registers the backend ``scripted`` (for CLI tests through the registry)."""

    def __init__(
        self, script: Script = ("ok [#1]",), *, yes: float | None = None, verdict_no_share: float | None = None
    ) -> None:
        self.script = script
        self.yes = yes  # given: the models are CheckingLanguageModels that give this P(Yes)
        self.verdict_no_share = verdict_no_share  # what the models report for a verdict opening
        self.models: list[ScriptedLanguageModel] = []

    @hookimpl
    def register_language_models(self, register: RegisterLanguageModel) -> None:
        """Register ``scripted``; every model it makes is kept in ``models``."""

        def make(_ctx: object) -> ScriptedLanguageModel:
            share = self.verdict_no_share
            model = (
                ScriptedLanguageModel(self.script, verdict_no_share=share)
                if self.yes is None
                else CheckingLanguageModel(self.script, yes=self.yes, verdict_no_share=share)
            )
            self.models.append(model)
            return model

        register("scripted", make)


def following_up(topic: str, answer: Callable[[GenerateRequest], Sequence[str]] = extractive) -> Script:
    """A script for threads: ``topic`` when kb asks what a follow-up is about, else ``answer``'s tokens.

    ``ScriptedPlugin(following_up("the Heliograph daemon"))``: "Which port does it listen on?"
    asked after a question is searched as "Which port does it listen on? (the Heliograph daemon)".
    """
    from kb_core.conversations.standalone import TOPIC_SYSTEM

    def script(request: GenerateRequest) -> Sequence[str]:
        return [topic] if request.system == TOPIC_SYSTEM else answer(request)

    return script
