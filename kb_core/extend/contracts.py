"""The roles a plugin can fill, as Protocols: Parser, Embedder, Index (with Retriever), LanguageModel and OcrEngine.

Optional capabilities are Protocols of their own (``BytesParser``, ``TokenStartsEmbedder``,
``ArrayEmbedder``, ``AnswerChecker``, ``Preloadable``); the core checks them with ``isinstance``.
Every factory receives a :class:`FactoryContext` (an index factory its extension
:class:`IndexContext`, a parser factory :class:`ParserContext`). Implementations are registered
through the hooks in :mod:`kb_core.extend.hookspecs` and checked by the contract test kit in
:mod:`kb_core.testing`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from kb_core.types import (
    Chunk,
    Document,
    GenerateRequest,
    Hit,
    ModelRef,
    OcrImage,
    OcrLine,
    ParsedDocument,
    Problem,
    Progress,
    SearchQuery,
    StreamEvent,
)

if TYPE_CHECKING:
    from kb_core.config import Config


@runtime_checkable
class Parser(Protocol):
    """Turns the text of one file into a :class:`ParsedDocument`. Must never raise on any text."""

    def parse(self, text: str, path: str) -> ParsedDocument: ...


@runtime_checkable
class BytesParser(Protocol):
    """An optional Parser capability: parse a binary format (PDF, DOCX) from the file's bytes.

    The ingester then hands over the bytes instead of decoded text. A damaged, encrypted or
    unreadable file is a :class:`~kb_core.errors.KbError` whose message is the one line the user
    sees for that file; the ingest goes on, and a stored earlier version is kept.
    """

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument: ...


@runtime_checkable
class OcrEngine(Protocol):
    """Reads the text lines of a page image, in reading order.

    ``identity`` names the engine, its version and its models: kb keeps what an engine read by the
    image's content and this identity, so an unchanged scan is never read twice by the same engine.
    ``languages()`` are what it can read (for ``kb doctor``). ``read`` never raises on any image
    (a blank or unreadable page is an empty list); a missing model is a
    :class:`~kb_core.errors.KbError` naming the command that installs it.
    """

    @property
    def identity(self) -> str: ...

    def languages(self) -> tuple[str, ...]: ...

    def read(self, image: OcrImage) -> list[OcrLine]: ...


@attrs.frozen
class RenderedPage:
    """A page of a document as an image to show: the encoded ``data``, its ``media_type``
    (``image/png`` or ``image/jpeg``) and its size in pixels."""

    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    media_type: str
    width: int
    height: int


@runtime_checkable
class PageRenderer(Protocol):
    """An optional Parser capability: a page of a file it reads, as an image to show (a scanned PDF
    page, a photo), for a front end to show a citation's region on it.

    ``render_page`` gives page ``page`` (1-based, as ``metadata["ocr"]["pages"]`` numbers them) of
    the file's bytes ``data``, upright, its long side at most ``max_side`` pixels, encoded anew
    (never the file's own bytes). The parser applies its own limits, as when it parses (the pixels it
    decodes at most: a JPEG may be decoded smaller); a page it cannot render (no such page, damaged,
    over a limit, a renderer missing) is a :class:`~kb_core.errors.KbError` of one line. A front end
    may call it in a child process (kb-serve does, with the parser pickled), so the parser pickles.
    """

    def render_page(self, data: bytes, path: str, page: int, *, max_side: int) -> RenderedPage: ...


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

    Optional capabilities: :class:`TokenStartsEmbedder`, :class:`ArrayEmbedder`.
    """

    @property
    def model_ref(self) -> ModelRef: ...

    @property
    def dimensions(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    @property
    def scripts(self) -> frozenset[str] | None: ...

    @property
    def languages(self) -> str: ...

    @property
    def similarity_floors(self) -> Mapping[str, float]: ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


@runtime_checkable
class SnippetMaker(Protocol):
    """An optional Index capability: the excerpt of a chunk's ``text`` it would show for ``query``.

    The core calls it for the hits it keeps after fusion, having asked the index for its fan-out
    with ``SearchQuery.snippets`` False, so an index spends no time on excerpts nobody sees.
    """

    def snippet(self, query: SearchQuery, text: str) -> str: ...


@runtime_checkable
class TokenStartsEmbedder(Protocol):
    """An optional Embedder capability: the character offset of each content token of each text.

    The chunker then tokenizes each block once instead of once per slice.
    """

    def token_starts(self, texts: Sequence[str]) -> list[list[int]]: ...


@runtime_checkable
class ArrayEmbedder(Protocol):
    """An optional Embedder capability: passages embedded into one float32 array of unit rows.

    Vector indexes use it instead of ``embed_documents`` to skip building Python lists.
    """

    def embed_array(self, texts: Sequence[str]) -> Any: ...


def modeled_scripts(embedder: object) -> frozenset[str] | None:
    """The scripts an embedder declares it models (None: it does not say, so nothing is held against it)."""
    scripts = getattr(embedder, "scripts", None)
    return frozenset(scripts) if scripts is not None else None


def similarity_floor(embedder: object, script: str | None = None) -> float:
    """The cosine similarity that maps to score 0 for a query in ``script``.

    The embedder's ``similarity_floors[script]``, else the lowest floor it declares, else 0.0
    (an embedder that declares none).
    """
    floors: Mapping[str, float] = getattr(embedder, "similarity_floors", None) or {}
    if script is not None and script in floors:
        return float(floors[script])
    return float(min(floors.values())) if floors else 0.0


@runtime_checkable
class Index(Protocol):
    """A search index that follows the store of record. Derived data: it can always be rebuilt.

    An index is also a :class:`Retriever`: the registry's ``mode`` says which kind of search it
    serves.

    The sync engine (:mod:`kb_core.ingest.index_sync`) applies each batch of changed documents as
    ``delete(all paths in the batch)``, ``upsert(chunks of those that still exist)``, ``commit()``,
    and a rebuild as ``clear()``, upserts, ``commit()``. Both must be idempotent: a batch may be
    replayed after a crash. Nothing is durable before ``commit``. ``fingerprint`` names whatever
    decides the index's content besides the chunks (an analyzer version, an embedding model and
    its dimensions); when it changes, the index must be rebuilt with ``kb reindex``.
    """

    @property
    def name(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...

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

    @property
    def name(self) -> str: ...

    @property
    def mode(self) -> str: ...  # "lexical" or "vector"

    def search(self, query: SearchQuery) -> list[Hit]: ...


@runtime_checkable
class LanguageModel(Protocol):
    """Generates text as a stream of Token events closed by exactly one Done event.

    Errors during generation end the stream with ``Done(finish_reason="error", error=...)``;
    errors before it starts (server down, model missing) raise :class:`kb_core.errors.KbError`.
    """

    @property
    def model_ref(self) -> ModelRef: ...

    @property
    def context_tokens(self) -> int: ...

    def count_tokens(self, text: str) -> int: ...

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]: ...

    def check(self) -> list[Problem]: ...


@runtime_checkable
class AnswerChecker(Protocol):
    """An optional capability of a LanguageModel: how likely its reply to ``request`` starts with "Yes".

    Returns P(Yes) / (P(Yes) + P(No)) for the first token of the reply, in [0, 1], without
    generating. After a grounded answer, the answer pipeline asks it the template's judge (a
    request of its own: a short system message, the packed entries, the question) whether the
    passages state the answer; below ``[rag] answer_check`` the answer is withdrawn.
    """

    def yes_probability(self, request: GenerateRequest) -> float: ...


@runtime_checkable
class Preloadable(Protocol):
    """An optional capability of a LanguageModel: start loading it in the background, returning at once.

    A long-running front end (``kb serve``) calls it as it starts, so that a model that loads on
    first use (a local file) is ready for the first question. The model's other methods wait for
    the load; a failure is not raised here but by the next use, in its caller's thread (which loads
    again). Calling it while it loads, or once loaded, does nothing. ``kb ask`` does not call it: a
    question refused before the model is needed would wait for the load as the process exits.
    """

    def preload(self) -> None: ...


@runtime_checkable
class SearchIndex(Index, Retriever, Protocol):
    """An index that is also a retriever of its mode: what an index factory returns."""


@runtime_checkable
class StoreView(Protocol):
    """What an index may read of the store of record: documents, chunks and its own sync state."""

    def get_document(self, path: str) -> Document | None: ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]: ...

    def count_chunks(self) -> int: ...

    def last_seq(self) -> int: ...

    def index_state(self, name: str) -> tuple[int, str]: ...


@attrs.frozen
class FactoryContext:
    """What every plugin factory receives: the configuration, and where to report long work.

    ``options`` are the factory's own settings (a backend's ``[backends.<name>]`` table);
    ``progress`` (stage, done, total), when given, is how a model reports long first-use work
    (joining a packaged model, loading it) so that the user sees what is happening.
    """

    config: Config
    options: dict[str, object] = attrs.field(factory=dict)
    progress: Progress | None = None


@attrs.frozen(kw_only=True)
class IndexContext(FactoryContext):
    """What an index factory receives: a FactoryContext plus its name, its folder and its peers.

    ``store`` is a read-only view of the store of record; ``embedder`` is set for vector indexes.
    """

    name: str
    directory: Path
    store: StoreView
    embedder: Embedder | None = None


@attrs.frozen(kw_only=True)
class ParserContext(FactoryContext):
    """What a parser factory receives: a FactoryContext plus the OCR engine, when one is installed.

    ``ocr`` reads page images (scanned PDF pages, photos); None when no OCR engine is installed or
    ``[ingest] ocr = "off"``, and then ``ocr_missing`` is the one line to show instead, naming the
    install command. ``progress`` is the ingest's: a parser reports long work per page with it
    (``progress("ocr " + path, page, pages)``).
    """

    ocr: OcrEngine | None = None
    ocr_missing: str = ""


#: The name of :class:`FactoryContext` before 0.2 (embedders and language models received it).
ModelContext = FactoryContext
