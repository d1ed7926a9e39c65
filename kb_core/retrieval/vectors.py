"""What every vector index shares: how a cosine similarity becomes a score in [0, 1], and the snippet.

A score maps the similarity linearly from the embedder's floor for the query's script (what an
unrelated passage reaches; see :func:`~kb_core.extend.contracts.similarity_floor`) to 1, so that
hybrid fusion weighs every vector index alike. When the embedder models less than
:data:`MIN_COVERAGE` of the query's words (an English-only model and a Korean question), its
similarities are no evidence: every hit scores 0 and only the ranking remains.
"""

from __future__ import annotations

from kb_core.extend.contracts import Embedder, modeled_scripts, similarity_floor
from kb_core.writing_systems import coverage, dominant_script, script_profile

#: The share of a query's words the embedder must model for its similarities to count.
MIN_COVERAGE = 0.5
#: The length of a passage's snippet in characters.
SNIPPET_CHARS = 300


def similarity_to_score(similarity: float, floor: float = 0.0) -> float:
    """``clamp((similarity - floor) / (1 - floor), 0, 1)``.

    >>> round(similarity_to_score(0.55, 0.1), 6)
    0.5
    """
    if not floor < 1.0:
        raise ValueError(f"similarity floor must be below 1, got {floor}")
    return min(1.0, max(0.0, (similarity - floor) / (1.0 - floor)))


def score_mapping(embedder: Embedder, query_text: str) -> tuple[float, bool]:
    """``(floor, modeled)`` for a query: its script's similarity floor, and whether the embedder
    models enough of its words for the similarities to count."""
    profile = script_profile(query_text)
    floor = similarity_floor(embedder, dominant_script(profile))
    return floor, coverage(profile, modeled_scripts(embedder)) >= MIN_COVERAGE


def make_snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The start of a passage with whitespace collapsed, cut at a word boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] if " " in flat[:limit] else flat[:limit]
    return cut + "…"
