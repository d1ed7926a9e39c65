"""A small index for tests of the core and of plugins that need one: no engine, a JSON file.

:class:`WordIndex` is a real :class:`~kb_core.extend.contracts.Index` and
:class:`~kb_core.extend.contracts.Retriever`, passing the :class:`~kb_core.testing.IndexContract`
kit, so tests of ingest, sync, search and answers run without kb-tantivy or kb-sqlitevec. It is
naive on purpose: a lexical one scores a chunk by the share of the query's words it holds (words
are lower-cased runs of letters and digits; CJK runs count by character bigrams), a vector one by
the cosine of the context's embedder, mapped to [0, 1] as kb's vector indexes map it. What is
committed is written to ``<directory>/chunks.json``, so another process (a CLI test) reads it.

::

    from kb_core.testing import TestIndexesPlugin
    from kb_core.extend.registry import load_registry

    registry = load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin())])
    # then [indexes] enabled = ["test-lexical", "test-vector"]
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Callable, Sequence

import regex

from kb_core.extend.contracts import IndexContext
from kb_core.extend.hookspecs import RegisterIndex, hookimpl
from kb_core.retrieval.vectors import make_snippet, score_mapping, similarity_to_score
from kb_core.types import Chunk, Citation, Hit, Problem, SearchQuery

_WORD = regex.compile(r"[\p{Han}\p{Hangul}\p{Hiragana}\p{Katakana}]+|[\p{L}\p{N}]+")
_CJK = regex.compile(r"[\p{Han}\p{Hangul}\p{Hiragana}\p{Katakana}]")


def words(text: str) -> set[str]:
    """The distinct terms of ``text``: lower-cased words; a CJK run gives its character bigrams."""
    terms: set[str] = set()
    for run in _WORD.findall(text.lower()):
        if _CJK.match(run) and len(run) > 1:
            terms.update(run[i : i + 2] for i in range(len(run) - 1))
        else:
            terms.add(run)
    return terms


class WordIndex:
    """A lexical (word overlap) or vector (cosine) index over a JSON file; see the module docstring."""

    def __init__(self, context: IndexContext, mode: str) -> None:
        if mode == "vector" and context.embedder is None:
            raise ValueError("a vector WordIndex needs the context's embedder")
        self.context = context
        self._mode = mode
        self._file = context.directory / "chunks.json"
        self._committed: dict[str, dict[str, object]] = self._read()
        self._pending = dict(self._committed)

    @property
    def name(self) -> str:
        """The name the index was registered under."""
        return self.context.name

    @property
    def mode(self) -> str:
        """``lexical`` or ``vector``."""
        return self._mode

    @property
    def fingerprint(self) -> str:
        """The scoring, and the embedder of a vector index."""
        embedder = self.context.embedder
        return f"words-v1 {self._mode}" + (f" {embedder.model_ref.id}" if embedder else "")

    def _read(self) -> dict[str, dict[str, object]]:
        if not self._file.is_file():
            return {}
        data: dict[str, dict[str, object]] = json.loads(self._file.read_text(encoding="utf-8"))
        return data

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Stage ``chunks`` (a vector index embeds them now)."""
        embedder = self.context.embedder
        vectors = embedder.embed_documents([c.text for c in chunks]) if embedder and self._mode == "vector" else []
        for i, chunk in enumerate(chunks):
            row: dict[str, object] = {
                "path": chunk.doc_path,
                "text": chunk.text,
                "lines": [chunk.start_line, chunk.end_line],
                "headings": list(chunk.heading_path),
            }
            if vectors:
                row["vector"] = [float(x) for x in vectors[i]]
            self._pending[chunk.chunk_id] = row

    def delete(self, doc_paths: Sequence[str]) -> None:
        """Stage the removal of every chunk of ``doc_paths``."""
        gone = set(doc_paths)
        self._pending = {cid: row for cid, row in self._pending.items() if row["path"] not in gone}

    def clear(self) -> None:
        """Stage the removal of everything."""
        self._pending = {}

    def commit(self) -> None:
        """Make the staged changes visible and durable (written atomically)."""
        self._file.parent.mkdir(parents=True, exist_ok=True)
        scratch = self._file.with_name(f"chunks.{os.getpid()}.partial")
        scratch.write_text(json.dumps(self._pending), encoding="utf-8")
        scratch.replace(self._file)
        self._committed = dict(self._pending)

    def count(self) -> int:
        """Committed chunks."""
        return len(self._committed)

    def search(self, query: SearchQuery) -> list[Hit]:
        """The ``query.k`` best committed chunks matching ``query.path_glob`` and ``query.path_prefixes``, scores in
        [0, 1]."""
        self._committed = self._read()  # what is committed, by this process or another
        rank_of = self._ranker(query.text)
        prefixes = query.path_prefixes
        found = [
            (rank_of(row), cid, row)
            for cid, row in self._committed.items()
            if (not query.path_glob or fnmatch.fnmatchcase(str(row["path"]), query.path_glob))
            and (prefixes is None or any(str(row["path"]).startswith(p) for p in prefixes))
        ]
        if self._mode == "lexical":
            found = [item for item in found if item[0][0] > 0.0]  # no shared word: no match
        found.sort(key=lambda item: (-item[0][1], item[1]))
        return [self._hit(cid, row, key[0], rank, query) for rank, (key, cid, row) in enumerate(found[: query.k], 1)]

    def _ranker(self, text: str) -> Callable[[dict[str, object]], tuple[float, float]]:
        """``(score, ranking value)`` of a stored row for the query ``text``."""
        if self._mode == "lexical":
            wanted = words(text)

            def overlap(row: dict[str, object]) -> tuple[float, float]:
                share = len(wanted & words(str(row["text"]))) / len(wanted) if wanted else 0.0
                return share, share

            return overlap
        embedder = self.context.embedder
        assert embedder is not None
        query = embedder.embed_query(text)
        floor, modeled = score_mapping(embedder, text)

        def cosine(row: dict[str, object]) -> tuple[float, float]:
            stored = row["vector"]
            assert isinstance(stored, list)
            similarity = sum(a * b for a, b in zip(query, stored, strict=True))
            # a query the embedder does not model: similarities are no evidence, only the order remains
            return (similarity_to_score(similarity, floor) if modeled else 0.0), similarity

        return cosine

    def _hit(self, chunk_id: str, row: dict[str, object], score: float, rank: int, query: SearchQuery) -> Hit:
        lines = row["lines"]
        headings = row["headings"]
        assert isinstance(lines, list) and isinstance(headings, list)
        path = str(row["path"])
        return Hit(
            chunk_id=chunk_id,
            doc_path=path,
            score=score,
            rank=rank,
            citation=Citation(path, int(lines[0]), int(lines[1])),
            heading_path=tuple(str(h) for h in headings),
            snippet=make_snippet(str(row["text"])) if query.snippets else "",
            retriever=self.name,
            raw_score=score,
        )

    def check(self) -> list[Problem]:
        """A file that cannot be read is a problem; nothing else can be wrong."""
        try:
            self._read()
        except (OSError, ValueError) as exc:
            return [Problem(self.name, f"cannot read {self._file}: {exc}", "run kb reindex")]
        return []

    def close(self) -> None:
        """Drop what was staged and not committed."""
        self._pending = dict(self._committed)


class TestIndexesPlugin:
    """An in-process plugin registering ``test-lexical`` and ``test-vector`` (:class:`WordIndex`)."""

    __test__ = False  # not a pytest test class

    @hookimpl
    def register_indexes(self, register: RegisterIndex) -> None:
        """Register both modes."""
        register("test-lexical", lambda ctx: WordIndex(ctx, "lexical"), mode="lexical")
        register("test-vector", lambda ctx: WordIndex(ctx, "vector"), mode="vector")
