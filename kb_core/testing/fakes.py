"""Fakes and small builders for tests of the core and of plugins: fast, deterministic, honest.

:class:`HashingEmbedder` turns words into unit vectors by hashing them (a bag of words), so
texts that share words are near each other. It lets an index plugin's tests, or the core's,
run without loading a model; it is never registered and never on kb's runtime path.
:func:`document_chunks` and :func:`store_document` put hand-written passages into a store of
record the way ingest would, for index tests. :class:`CountingEmbedder` wraps an embedder and
records what it embeds (its subclasses in :data:`MODEL_CHANGES` look like another model to an
index). :func:`free_port` and :func:`unanswered_port` stand for a server that is down and one that
never answers. :func:`isolate_environment` keeps a test away from the user's configuration and data.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import signal
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
import regex

from kb_core.extend.record_store import RecordStore
from kb_core.types import Chunk, Document, ModelRef

_WORD = regex.compile(r"\p{L}[\p{L}\p{M}\p{N}]*|\p{N}+")


class HashingEmbedder:
    """A deterministic bag-of-words embedder: each word adds 1 to one of ``dimensions`` buckets.

    >>> embedder = HashingEmbedder(dimensions=64)
    >>> round(sum(x * x for x in embedder.embed_query("herons in wetlands")), 6)
    1.0
    """

    scripts: frozenset[str] | None = None
    languages = "any (hashed words)"
    similarity_floors: dict[str, float] = {}  # noqa: RUF012  (read-only by contract)

    def __init__(self, dimensions: int = 256, max_tokens: int = 512) -> None:
        self.dimensions = dimensions
        self.max_tokens = max_tokens
        self.model_ref = ModelRef(id=f"hashing-{dimensions}", provider="kb_core.testing", dimensions=dimensions)

    def _words(self, text: str) -> list[str]:
        return [w.lower() for w in _WORD.findall(text)]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """One token per word."""
        return [len(self._words(t)) for t in texts]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in self._words(text) or [""]:
            bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
            vector[bucket % self.dimensions] += 1.0
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text."""
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The unit vector of ``text`` (queries and passages share one space)."""
        return self._vector(text)


def document_chunks(path: str, texts: Sequence[str]) -> list[Chunk]:
    """One chunk per text (two source lines each, under heading ``Top > Section i``), ids from the content."""
    return [
        Chunk(
            chunk_id=hashlib.sha1(f"{path}:{i}:{text}".encode()).hexdigest()[:16],
            doc_path=path,
            ordinal=i,
            text=text,
            content_hash=hashlib.sha256(text.encode()).hexdigest(),
            start_line=1 + 3 * i,
            end_line=2 + 3 * i,
            heading_path=("Top", f"Section {i}"),
        )
        for i, text in enumerate(texts)
    ]


def store_document(
    store: RecordStore, path: str, texts: Sequence[str], metadata: dict[str, Any] | None = None
) -> list[Chunk]:
    """Put a document of ``texts`` (and ``metadata``) into the store of record; return its chunks."""
    chunks = document_chunks(path, texts)
    digest = hashlib.sha256("".join(texts).encode()).hexdigest()
    with store.transaction():
        store.replace_document(Document(path, digest, 10, path, "text", "/src", metadata=metadata or {}), chunks)
    return chunks


def isolate_environment(monkeypatch: Any, home: Path, keep: Sequence[str] = ()) -> None:
    """No user configuration, no stray ``KB_*`` variables (but ``keep``), platform folders under ``home``.

    Call it from an autouse fixture::

        @pytest.fixture(autouse=True)
        def isolated(monkeypatch, tmp_path_factory):
            isolate_environment(monkeypatch, tmp_path_factory.mktemp("home"))
    """
    for name in list(os.environ):
        if name.startswith("KB_") and name not in keep:
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))


def default_ctrl_c() -> None:
    """A ``preexec_fn`` for a ``kb`` process a test interrupts: Ctrl-C (SIGINT) as a terminal gives it.

    A test run started in the background (``cmd &`` in a script) hands its children SIGINT
    *ignored*, so a server that restores the handler it found (uvicorn) would then ignore the
    test's SIGINT too. ``subprocess.Popen(..., preexec_fn=default_ctrl_c)`` gives the child the
    default disposition whatever the runner's.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class CountingEmbedder:
    """Delegates to an embedder and records every text it is asked to embed (``embedded``) and each call's size."""

    def __init__(self, inner: Any, *, with_array: bool = True) -> None:
        self.inner = inner
        self.embedded: list[str] = []
        self.calls: list[int] = []
        if with_array:
            self.embed_array = self._embed_array

    def __getattr__(self, name: str) -> Any:
        if name == "embed_array":  # only when made without it
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _embed_array(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        self.calls.append(len(texts))
        return np.asarray(self.inner.embed_array(texts))

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """The inner embedder's vectors, recorded."""
        self.embedded.extend(texts)
        self.calls.append(len(texts))
        return list(self.inner.embed_documents(texts))


class RenamedEmbedder(CountingEmbedder):
    """The same vectors under another model id: what a model change looks like to an index."""

    @property
    def model_ref(self) -> Any:
        """The inner model's reference with id ``another/model v2``."""
        return attrs.evolve(self.inner.model_ref, id="another/model v2")


class TruncatedEmbedder(CountingEmbedder):
    """The first 128 dimensions, renormalised: a change of dimensions under the same model id."""

    dimensions = 128

    def _embed_array(self, texts: Sequence[str]) -> np.ndarray:
        vectors = super()._embed_array(texts)[:, :128]
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> list[float]:
        """The inner query vector, truncated and renormalised."""
        vector = np.asarray(self.inner.embed_query(text))[:128]
        return list((vector / np.linalg.norm(vector)).tolist())


#: The model changes every vector index must notice, by the name a test is parametrized with.
MODEL_CHANGES: dict[str, type[CountingEmbedder]] = {"renamed": RenamedEmbedder, "truncated": TruncatedEmbedder}


def free_port() -> int:
    """A loopback port nobody listens on right now (a server that is not running)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def unanswered_port() -> Iterator[int]:
    """A loopback port whose accept queue is full, so new connections hang until they time out.

    Skips the test where the system completes loopback connections beyond the listen backlog.
    """
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = int(server.getsockname()[1])
    held: list[socket.socket] = []
    try:
        for _ in range(8):
            probe = socket.socket()
            probe.settimeout(0.2)
            held.append(probe)
            try:
                probe.connect(("127.0.0.1", port))
            except TimeoutError:
                break
        else:
            pytest.skip("this system completes loopback connections beyond the listen backlog")
        yield port
    finally:
        for sock in held:
            sock.close()
        server.close()
