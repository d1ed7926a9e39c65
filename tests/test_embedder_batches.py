"""The ONNX embedder's batches are bounded in tokens, not only in texts: ONNX Runtime's arena keeps the largest
run's intermediates, so 32 chunks of 256 tokens per run held a gigabyte through a whole ingest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kb_core.builtin.embedders.minilm import (
    BATCH_TOKENS,
    MODELS_DIR,
    EmbedderSettings,
    OnnxEmbedder,
    token_batches,
)

TOKENIZER = MODELS_DIR / "all-MiniLM-L6-v2" / "tokenizer.json"


class _RecordingSession:
    """Stands in for an ONNX session: records each run's shape; a row's output says how many tokens it has."""

    def __init__(self) -> None:
        self.shapes: list[tuple[int, int]] = []

    def run(self, _outputs: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        mask = feeds["attention_mask"]
        self.shapes.append(mask.shape)
        hidden = np.zeros((*mask.shape, 2), dtype=np.float32)
        hidden[:, :, 0] = 1.0
        hidden[:, :, 1] = mask.sum(axis=1, keepdims=True) / 100.0
        return [hidden]


def _embedder(tmp_path: Path) -> tuple[OnnxEmbedder, _RecordingSession]:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"never loaded")
    embedder = OnnxEmbedder(model, TOKENIZER, EmbedderSettings(id="test", max_tokens=256), batch_size=32)
    session = _RecordingSession()
    embedder._session = session
    embedder._input_names = {"input_ids", "attention_mask"}
    embedder.dimensions = 2
    return embedder, session


def test_no_run_takes_more_than_the_token_budget(tmp_path: Path) -> None:
    embedder, session = _embedder(tmp_path)
    long_texts = [" ".join(["pump valve inspection"] * (20 + i)) for i in range(40)]  # 60 to 180 words
    short_texts = [f"note {i}" for i in range(40)]
    texts = [t for pair in zip(long_texts, short_texts, strict=True) for t in pair]
    vectors = embedder.embed_array(texts)
    assert vectors.shape == (80, 2)
    assert any(width > 128 for _, width in session.shapes)  # long texts were there to bound
    for rows, width in session.shapes:
        assert rows <= embedder.batch_size
        assert rows == 1 or rows * width <= BATCH_TOKENS, (rows, width)
    assert max(rows for rows, _ in session.shapes) > 4  # short texts still share a run


def test_each_text_gets_its_own_vector_whatever_the_batches(tmp_path: Path) -> None:
    embedder, _ = _embedder(tmp_path)
    texts = [" ".join(["heron"] * n) for n in (300, 1, 40, 7, 120, 2, 250, 60)]
    together = embedder.embed_array(texts)
    alone = np.stack([embedder.embed_array([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, rtol=1e-6)
    assert len({round(float(v[1]), 6) for v in together}) == len(texts)  # distinct lengths, distinct vectors


@given(st.lists(st.integers(min_value=1, max_value=600), max_size=80), st.integers(min_value=1, max_value=4096))
def test_token_batches_cover_every_position_once_within_the_budget(lengths: list[int], budget: int) -> None:
    groups = token_batches(lengths, budget)
    assert sorted(p for g in groups for p in g) == list(range(len(lengths)))
    for group in groups:
        assert len(group) == 1 or len(group) * max(lengths[p] for p in group) <= budget
