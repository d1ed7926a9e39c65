"""What one question carries through the answer pipeline (:mod:`kb_core.answers.pipeline`): the caller's
choices (:class:`AskOptions`) and the state of its run (:class:`QuestionRun`)."""

from __future__ import annotations

import attrs

from kb_core.answers.prompts import PromptTemplate, QuestionPrompt
from kb_core.answers.questions import QuestionKind
from kb_core.limits import CheckedText
from kb_core.types import AnswerCitation, Hit


@attrs.frozen
class AskOptions:
    """Per-question choices; ``None`` means "use the configuration".

    ``k`` is a floor over ``[search] default_k``: a smaller k never starves retrieval.
    """

    k: int | None = None
    mode: str | None = None
    temperature: float | None = None
    seed: int | None = None
    explain: bool = False
    constrained: bool | None = None
    backend: str | None = None
    template_version: str | None = None


def citation_of(hit: Hit, marker: int | None) -> AnswerCitation:
    """The citation of ``hit`` as packed under ``marker`` (None: a candidate, not packed)."""
    return AnswerCitation(marker, hit.chunk_id, str(hit.citation), hit.citation, round(hit.score, 4), hit.heading_path)


@attrs.define
class QuestionRun:
    """The state of one question on its way through the pipeline."""

    question: CheckedText
    options: AskOptions
    prompt: QuestionPrompt  # the template, the question written in
    mode: str
    k: int
    started: float
    trace_id: str
    kind: QuestionKind  # decided once, here; every later stage reads it
    computed: bool = False  # its answer must be worked out from numbers (kb_core.answers.computed)
    hits: list[Hit] = attrs.field(factory=list)
    retrieval_ms: float = 0.0

    @property
    def template(self) -> PromptTemplate:
        """The prompt template chosen for the question."""
        return self.prompt.template
