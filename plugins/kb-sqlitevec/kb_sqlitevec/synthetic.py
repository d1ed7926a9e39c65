"""An embedder that looks vectors up in a table, for measuring recall on synthetic vectors.

Recall of the HNSW graph is measured against exact search, so the vectors must be known: the
tests (``tests/test_ann.py``) and the bench (``bench/ann_scale.py``) draw clustered unit vectors
and index chunks whose text names a row. Never registered, never on kb's runtime path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kb_core.plugin import ModelRef


class TableEmbedder:
    """Text ``v:<i>`` is data row i, ``q:<j>`` query j (a table, not a model: recall needs known vectors)."""

    max_tokens = 512

    def __init__(self, data: np.ndarray, queries: np.ndarray) -> None:
        self.data, self.queries = data, queries
        self.dimensions = data.shape[1]
        self.model_ref = ModelRef(id="synthetic", provider="kb_sqlitevec.synthetic", dimensions=self.dimensions)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """One token per text."""
        return [1 for _ in texts]

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """The data rows the texts name."""
        return self.data[[int(t[2:]) for t in texts]]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """The data rows the texts name, as lists."""
        return list(self.embed_array(texts).tolist())

    def embed_query(self, text: str) -> list[float]:
        """The query row ``q:<j>`` names."""
        return list(self.queries[int(text[2:])].tolist())
