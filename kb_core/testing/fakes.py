"""Fakes that stand in for engines in tests of the core and of plugins: fast, deterministic, honest.

:class:`HashingEmbedder` turns words into unit vectors by hashing them (a bag of words), so
texts that share words are near each other. It lets an index plugin's tests, or the core's,
run without loading a model; it is never registered and never on kb's runtime path.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import regex

from kb_core.types import ModelRef

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
