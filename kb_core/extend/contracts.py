"""The four roles a plugin can fill, as Protocols, plus the parser role.

Implementations are registered through the hooks in :mod:`kb_core.extend.hookspecs` and checked by
the contract test kit in :mod:`kb_core.testing`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from kb_core.types import (
    Chunk,
    GenerateRequest,
    Hit,
    ModelRef,
    ParsedDocument,
    Problem,
    Progress,
    SearchQuery,
    StreamEvent,
)

if TYPE_CHECKING:
    from kb_core.config import Config
    from kb_core.storage.store import StoreOfRecord


@runtime_checkable
class Parser(Protocol):
    """Turns the text of one file into a :class:`ParsedDocument`. Must never raise on any text."""

    def parse(self, text: str, path: str) -> ParsedDocument: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns text into unit-length vectors; counts tokens with the model's own tokenizer.

    What the model understands is part of the contract:

    * ``scripts``: the writing systems it was trained on (names from
      :data:`kb_core.writing_systems.SCRIPTS`: ``latin``, ``hangul``, ``han``, ...), or None when
      unknown. Vectors of text in other scripts carry no meaning, and search treats them so.
    * ``languages``: the same in words, for messages (``"English"``).
    * ``similarity_floors``: per script, the cosine similarity a question reaches with unrelated
      passages in that script (measured: ``bench/embedder_floors.py``); a vector index maps it to
      score 0. :func:`similarity_floor` reads it with the fallbacks.

    An embedder may also offer ``token_starts(texts) -> list[list[int]]`` (the character offset
    of each content token); the chunker then tokenizes each block once instead of per slice.
    """

    model_ref: ModelRef
    dimensions: int
    max_tokens: int
    scripts: frozenset[str] | None
    languages: str
    similarity_floors: Mapping[str, float]

    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def modeled_scripts(embedder: object) -> frozenset[str] | None:
    """The scripts an embedder declares it models (None: it does not say, so nothing is held against it)."""
    scripts = getattr(embedder, "scripts", None)
    return frozenset(scripts) if scripts is not None else None


def similarity_floor(embedder: object, script: str | None = None) -> float:
    """The cosine similarity that maps to score 0 for a query in ``script``.

    The embedder's ``similarity_floors[script]``, else its ``similarity_floor`` attribute (one value
    for every script), else the lowest floor it declares, else 0.0.
    """
    floors: Mapping[str, float] = getattr(embedder, "similarity_floors", None) or {}
    if script is not None and script in floors:
        return float(floors[script])
    single = getattr(embedder, "similarity_floor", None)
    if single is not None:
        return float(single)
    return float(min(floors.values())) if floors else 0.0


@runtime_checkable
class Store(Protocol):
    """An index that follows the store of record. Derived data: it can always be rebuilt.

    The sync engine (:mod:`kb_core.ingest.index_sync`) applies each batch of changed documents as
    ``delete(all paths in the batch)``, ``upsert(chunks of those that still exist)``, ``commit()``,
    and a rebuild as ``clear()``, upserts, ``commit()``. Both must be idempotent: a batch may be
    replayed after a crash. Nothing is durable before ``commit``. ``fingerprint`` names whatever
    decides the index's content besides the chunks (an analyzer version, an embedding model and
    its dimensions); when it changes, the index must be rebuilt with ``kb reindex``.
    """

    name: str
    fingerprint: str

    def upsert(self, chunks: Sequence[Chunk]) -> None: ...

    def delete(self, doc_paths: Sequence[str]) -> None: ...

    def commit(self) -> None: ...

    def clear(self) -> None: ...

    def count(self) -> int: ...

    def check(self) -> list[Problem]: ...

    def close(self) -> None: ...


@runtime_checkable
class Retriever(Protocol):
    """Finds chunks for a query. Every hit has a score in [0, 1] and a citation."""

    name: str
    mode: str  # "lexical" or "vector"

    def search(self, query: SearchQuery) -> list[Hit]: ...


@runtime_checkable
class LanguageModel(Protocol):
    """Generates text as a stream of Token events closed by exactly one Done event.

    Errors during generation end the stream with ``Done(finish_reason="error", error=...)``;
    errors before it starts (server down, model missing) raise :class:`kb_core.errors.KbError`.
    """

    model_ref: ModelRef
    context_tokens: int

    def count_tokens(self, text: str) -> int: ...

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]: ...

    def check(self) -> list[Problem]: ...


@runtime_checkable
class AnswerChecker(Protocol):
    """An optional capability of a LanguageModel: how likely its reply to ``request`` starts with "Yes".

    Returns P(Yes) / (P(Yes) + P(No)) for the first token of the reply, in [0, 1], without
    generating. The answer pipeline asks it whether the evidence states the answer, with the
    check appended to the question's user message; a model that keeps its context can then
    reuse what it evaluated for the answer that follows.
    """

    def yes_probability(self, request: GenerateRequest) -> float: ...


@attrs.frozen
class IndexContext:
    """What an index factory receives: where to keep its files and how to reach its peers."""

    name: str
    directory: Path
    config: Config
    store: StoreOfRecord
    embedder: Embedder | None = None


@attrs.frozen
class ModelContext:
    """What an embedder or language-model factory receives.

    ``progress`` (stage, done, total), when given, is how a model reports long first-use work
    (joining a packaged model, loading it) so that the user sees what is happening.
    """

    config: Config
    options: dict[str, object] = attrs.field(factory=dict)
    progress: Progress | None = None
