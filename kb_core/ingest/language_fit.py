"""Does the configured embedder model the languages of the knowledge base?

A corpus mostly in Korean or Chinese embedded with an English-only model gets a vector index that
cannot rank it (every text looks alike to the model). Search copes (the vector index scores such
queries 0 and hybrid fusion leans on the lexical index), but the user should know, and know how to
switch: ``kb ingest`` prints :func:`ingest_notice` and ``kb doctor`` reports
:func:`mismatch_problem`.

The corpus's scripts are measured on a sample of chunks (:data:`SAMPLE_CHUNKS`, their first
:data:`SAMPLE_CHARS` characters, chosen by chunk id, which is a hash), counted in words
(:func:`kb_core.writing_systems.script_profile`). A mismatch is more than :data:`MISMATCH_SHARE`
of those words in scripts the embedder does not declare.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import click

from kb_core.extend.contracts import modeled_scripts
from kb_core.types import Problem
from kb_core.writing_systems import merge, script_profile, shares

if TYPE_CHECKING:
    from kb_core.app import KnowledgeBase

SAMPLE_CHUNKS = 400
SAMPLE_CHARS = 600
MISMATCH_SHARE = 0.3


@attrs.frozen
class LanguageFit:
    """How much of the corpus the embedder models, and which registered embedder would model it."""

    embedder: str
    languages: str
    corpus_shares: dict[str, float]
    unmodeled_share: float
    suggestion: str | None

    @property
    def mismatch(self) -> bool:
        """True when too much of the corpus is in scripts the embedder does not model."""
        return self.unmodeled_share > MISMATCH_SHARE

    def describe(self) -> str:
        """One line: the embedder, what it models, and what the corpus is written in."""
        top = ", ".join(f"{script} {share:.0%}" for script, share in list(self.corpus_shares.items())[:3])
        return (
            f"embedder {self.embedder} models {self.languages}, but {self.unmodeled_share:.0%} of this"
            f" knowledge base is in other scripts ({top})"
        )

    def fix(self) -> str:
        """The one-line change that gives the corpus an embedder that models it."""
        if self.suggestion is None:
            return "set [models.embedding] name to an embedder that models these languages, then run 'kb reindex'"
        install = " (pip install 'kb-core[multilingual]')" if self.suggestion == "multilingual" else ""
        return (
            f'set [models.embedding] name = "{self.suggestion}" in the config file{install},'
            " then run 'kb reindex --store sqlitevec'"
        )


def corpus_profile(kb: KnowledgeBase) -> dict[str, float]:
    """Words per script over a sample of the stored chunks."""
    return merge(script_profile(text) for text in kb.store.sample_chunk_texts(SAMPLE_CHUNKS, SAMPLE_CHARS))


def _vector_enabled(kb: KnowledgeBase) -> bool:
    return any(kb.index_mode(name) == "vector" for name in kb.enabled_index_names())


def _suggest(kb: KnowledgeBase, needed: set[str]) -> str | None:
    """The first registered embedder whose declared ``scripts`` cover ``needed``."""
    for name, registration in sorted(kb.registry.items.get("embedders", {}).items()):
        scripts = registration.info.get("scripts")
        if scripts is not None and needed <= set(scripts):
            return name
    return None


def language_fit(kb: KnowledgeBase) -> LanguageFit | None:
    """The fit of the configured embedder to the corpus; None without a vector index, chunks or a
    declaration of what the embedder models."""
    if not _vector_enabled(kb):
        return None
    profile = corpus_profile(kb)
    if not profile:
        return None
    embedder = kb.embedder()
    scripts = modeled_scripts(embedder)
    if scripts is None:
        return None
    corpus = shares(profile)
    unmodeled = sum(share for script, share in corpus.items() if script not in scripts)
    needed = {script for script, share in corpus.items() if share >= 0.05}
    name = kb.config.models.embedding.name
    languages = str(getattr(embedder, "languages", "") or ", ".join(sorted(scripts)))
    return LanguageFit(name, languages, corpus, unmodeled, _suggest(kb, needed))


def mismatch_problem(kb: KnowledgeBase) -> Problem | None:
    """A ``kb doctor`` problem when the embedder does not model the corpus's languages."""
    fit = language_fit(kb)
    if fit is None or not fit.mismatch:
        return None
    return Problem("embedder", fit.describe(), fit.fix())


def ingest_notice(kb: KnowledgeBase) -> None:
    """After ``kb ingest``: on stderr, name the embedder and how to switch when it does not model the corpus."""
    try:
        fit = language_fit(kb)
    except Exception:  # noqa: BLE001 - a notice must never fail an ingest that succeeded
        return
    if fit is not None and fit.mismatch:
        click.echo(f"note: {fit.describe()}; vector search cannot rank those chunks. To switch: {fit.fix()}", err=True)
