"""From a BM25 score to a score in [0, 1] that carries absolute evidence.

Tantivy scores a chunk with BM25 (k1 = 1.2, b = 0.75); a query term ``t`` contributes
``idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len))`` with
``idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))``. When a term occurs once in a chunk of
average length that contribution is exactly ``idf(t)``. So the *query's evidence mass*
``M = sum of idf(t) over the distinct query terms`` (terms absent from the index count with
``df = 0``, the largest idf) is the raw score of a chunk that contains every query term once.

The coverage ``c = raw / M`` is the evidence a chunk holds relative to what the query asks for,
independent of corpus size, query length and the other hits: a chunk that matches only a
question's common words (``what``, ``is``) has ``c`` near 0, one that holds its rare, telling
words has ``c`` near 1, and repeated terms or heading/title matches push ``c`` above 1. The score
is the saturating curve

    score = c**2 / (c**2 + HALF**2)

0 for no evidence, 0.5 at ``c = HALF``, approaching 1 as evidence grows, and monotone in the raw
score (the ranking is BM25's). It is never divided by the top hit's score, so the best hit of an
off-topic question still scores low. ``HALF = 0.9`` was calibrated on SciFact
(``bench/scifact_lexical.py``, question stopwords removed as in every query): the top hits of the
300 SciFact claims have ``c`` at p10 0.56 and median 0.98 (scores 0.28 and 0.54), the top hits
of 20 everyday questions the corpus cannot answer have median 0.52 and p90 0.71 (scores 0.25 and
0.38). At the default answer gate of 0.3 (``c`` = 0.59) 88% of the claims pass and 35% of those
questions do: a large scientific vocabulary contains stray words like "France" or "bicycle", and
lexical evidence alone cannot tell them from a topic; in a small knowledge base a question whose
words do not occur gets no hits at all. The gate should see hybrid scores where it can.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

HALF = 0.9


def idf(doc_freq: int, num_docs: int) -> float:
    """Tantivy's BM25 inverse document frequency."""
    return math.log(1.0 + (num_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def evidence_mass(doc_freqs: Iterable[int], num_docs: int) -> float:
    """The raw BM25 score of a chunk holding each query term once at average length."""
    return sum(idf(df, num_docs) for df in doc_freqs)


def normalize(raw: float, mass: float) -> float:
    """Map a raw BM25 score to [0, 1] given the query's evidence mass (see the module doc)."""
    if mass <= 0.0 or not math.isfinite(raw) or raw <= 0.0:
        return 0.0
    coverage = raw / mass
    return min(1.0, coverage * coverage / (coverage * coverage + HALF * HALF))
