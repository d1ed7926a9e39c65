"""Fixtures: the real default embedder, a real store of record, and a Qdrant index in local mode or on a server.

``qdrant_target`` is parametrized: ``local`` always runs (``QdrantClient(path=...)``); ``server`` runs
only when ``KB_QDRANT_URL`` names a Qdrant server (skipped with that reason otherwise), with a
collection prefix of its own per test, dropped at teardown.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from kb_core import Chunk, Embedder
from kb_core.testing import StoreOfRecord, real_embedder, store_document
from kb_qdrant.index import QdrantIndex
from kb_qdrant.settings import QdrantSettings

SERVER_URL = os.environ.get("KB_QDRANT_URL", "")

CORPUS: dict[str, list[str]] = {
    "biology/photosynthesis.md": [
        "Photosynthesis converts light energy into chemical energy stored in glucose inside plant leaves.",
        "Chlorophyll in the chloroplasts absorbs mostly red and blue light.",
    ],
    "computing/python.md": [
        "Python is a programming language popular for data analysis and scripting.",
        "A Python list comprehension builds a new list from an iterable in one expression.",
    ],
    "notes/cooking.md": [
        "To bake sourdough bread, feed the starter, mix flour and water, and let the dough rise overnight.",
    ],
    "notes/finance.md": [
        "The central bank raised interest rates to slow inflation in the economy.",
    ],
}


@pytest.fixture(scope="session")
def embedder() -> Any:  # an Embedder (its dict attributes do not match the Protocol for mypy)
    """The real default embedder (all-MiniLM-L6-v2 int8), loaded once."""
    return real_embedder()


class Counting:
    """Delegates to the real embedder and records every text it is asked to embed."""

    def __init__(self, inner: Embedder, *, with_array: bool = True) -> None:
        self.inner = inner
        self.embedded: list[str] = []
        if with_array:
            self.embed_array = self._embed_array

    def __getattr__(self, name: str) -> Any:
        if name == "embed_array":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _embed_array(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return np.asarray(self.inner.embed_array(texts))

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return self.inner.embed_documents(texts)


class Renamed(Counting):
    """The same vectors under another model id: what a model change looks like to the index."""

    @property
    def model_ref(self) -> Any:
        return attrs.evolve(self.inner.model_ref, id="another/model v2")


class Helpers:
    """What the test modules share (conftest is not importable under --import-mode=importlib)."""

    corpus: dict[str, list[str]] = CORPUS
    counting: type[Counting] = Counting
    renamed: type[Renamed] = Renamed
    store_document = staticmethod(store_document)


@pytest.fixture
def helpers() -> Helpers:
    """The shared helpers."""
    return Helpers()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreOfRecord]:
    opened = StoreOfRecord(tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def corpus(store: StoreOfRecord) -> list[Chunk]:
    chunks: list[Chunk] = []
    for path, texts in CORPUS.items():
        lang = "en-gb" if path.startswith("notes/") else "en"
        metadata = {"lang": lang, "tags": ["kb", path.split("/")[0]], "draft": path.endswith("finance.md")}
        chunks += store_document(store, path, texts, metadata)
    return chunks


@pytest.fixture(params=["local", "server"])
def qdrant_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QdrantSettings]:
    """Where the index under test lives."""
    if request.param == "local":
        yield QdrantSettings(url=None, path=tmp_path / "qdrant-local")
        return
    if not SERVER_URL:
        pytest.skip("no Qdrant server: set KB_QDRANT_URL=http://127.0.0.1:6333 to run the server variant")
    prefix = f"t{uuid.uuid4().hex[:10]}"
    settings = QdrantSettings(
        url=SERVER_URL, path=None, api_key=os.environ.get("KB_QDRANT_API_KEY", ""), collection_prefix=prefix
    )
    yield settings
    from kb_qdrant.connection import open_client

    client = open_client(settings)
    for collection in client.get_collections().collections:
        if collection.name.startswith(prefix + "_"):
            client.delete_collection(collection.name)
    client.close()


OpenIndex = Callable[..., QdrantIndex]


@pytest.fixture
def open_index(store: StoreOfRecord, embedder: Any, qdrant_target: QdrantSettings) -> Iterator[OpenIndex]:
    """Open indexes on the target (closed at teardown)."""
    opened: list[QdrantIndex] = []

    def build(with_embedder: Any = None, batch_size: int = 32) -> QdrantIndex:
        index = QdrantIndex(qdrant_target, with_embedder or embedder, store, batch_size=batch_size)
        opened.append(index)
        return index

    yield build
    for index in opened:
        index.close()


@pytest.fixture
def index(open_index: OpenIndex, corpus: list[Chunk]) -> QdrantIndex:
    idx = open_index()
    idx.upsert(corpus)
    idx.commit()
    return idx
