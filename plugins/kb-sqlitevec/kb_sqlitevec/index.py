"""The sqlite-vec vector index: one SQLite file, a vec0 table per embedding model, an embedding cache.

``<kb>/indexes/sqlitevec/vectors.sqlite3`` (WAL mode) holds:

- ``meta``: the embedding model (id and dimensions) the stored vectors come from;
- ``chunks``: chunk metadata (chunk id, document path, lines, heading path, content hash) keyed by an
  integer id, so hits are built without the store of record (which only supplies snippet text);
- ``documents``: each indexed document's metadata (frontmatter), for ``SearchQuery.metadata``;
- ``vec_<digest of model id and dimensions>``: a vec0 table (cosine distance) whose rowids are the
  ids of ``chunks``;
- ``embedding_cache``: (model id and dimensions, hash of the text) -> vector. It survives ``clear()``,
  so a rebuild, or the same text in two documents, never embeds a chunk twice.

Scores. ``raw_score`` is the cosine similarity ``s`` of query and chunk. ``score`` is
``clamp((s - floor) / (1 - floor), 0, 1)`` when the embedder models the query, else 0, where

* ``floor`` is the embedder's similarity floor for the query's script (the similarity unrelated
  texts in that language reach with that model: ``similarity_floors``, see
  :func:`kb_core.plugin.similarity_floor`; 0.0 when the embedder does not say). Sentence
  embedders rarely give negative cosines: with all-MiniLM-L6-v2, off-topic English text sits
  around 0.0-0.2 and on-topic passages at 0.4 and above; multilingual-e5 puts unrelated text at
  0.7-0.8. The common ``(s + 1) / 2`` would put off-topic queries at 0.5-0.6, above any useful
  score gate; this mapping keeps them near 0, so the answer pipeline's gate (``[rag]
  score_gates``, 0.35 for vector search by default) refuses them.
* the embedder models the query when at least ``kb_core.retrieval.vectors.MIN_COVERAGE`` (half) of the query's words are
  written in scripts it declares (``Embedder.scripts``, :func:`kb_core.writing_systems.coverage`;
  always when it declares none). An English-only model finds every Korean or Chinese text alike
  (cosines of 0.7 for unrelated paragraphs): its similarities for such a query are no evidence,
  so they score 0 while the ranking (by similarity) is kept. Hybrid fusion then gives this index
  no weight for the query.

Large indexes. From ``exact_threshold`` chunks on (``[backends.sqlitevec]``, 20 000 by default), a
search walks an HNSW graph (usearch, see :mod:`kb_sqlitevec.ann`) instead of scanning every vector;
below it, and whenever the graph is missing or behind, sqlite-vec scans every vector (exact).
``bench/ann_scale.py`` measures both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kb_core import Chunk, Citation, Hit, KbError, SearchQuery
from kb_core.plugin import ArrayEmbedder, Embedder, Problem, StoreView, make_snippet, score_mapping, similarity_to_score
from kb_sqlitevec.ann import AnnFiles, AnnOptions, Changes, batched_rows
from kb_sqlitevec.db import (
    ModelKey,
    _batches,
    connect,
    metadata_matches,
    text_hash,
)
from kb_sqlitevec.nearest import chunk_rows, plan_and_search

__all__ = ["ModelKey", "SqliteVecIndex", "metadata_matches", "text_hash"]

DB_NAME = "vectors.sqlite3"
SCHEMA_VERSION = 2  # 2: meta.generation and the ANN graph files beside the database
FINGERPRINT_VERSION = 1  # what the vectors are; unchanged by 2 (the graph is derived, an old index stays exact)
MAX_K = 4096  # the largest k a vec0 KNN query accepts
REINDEX_HINT = "run 'kb reindex --store sqlitevec'"


class SqliteVecIndex:
    """An index that is also a vector retriever, on sqlite-vec (see the module docstring)."""

    mode = "vector"

    def __init__(
        self,
        directory: Path,
        embedder: Embedder,
        store: StoreView,
        *,
        name: str = "sqlitevec",
        batch_size: int = 32,
        options: AnnOptions | None = None,
    ) -> None:
        self.name = name
        self.embedder = embedder
        self.store = store
        self.batch_size = max(1, batch_size)
        self.path = Path(directory) / DB_NAME
        self.conn = connect(self.path)
        self.options = options or AnnOptions()
        self.ann = AnnFiles(Path(directory), self.options)
        self._changes: Changes | None = None
        self._current: ModelKey | None = None
        self._closed = False
        self.last_plan = ""  # how the last search ran: exact, ann, ann-filtered, subset (for tests and benches)

    # -- models -------------------------------------------------------------------------------

    def current_model(self) -> ModelKey:
        """The configured embedder's key (embeds a probe once if it does not know its dimensions)."""
        if self._current is None:
            dims = int(getattr(self.embedder, "dimensions", 0) or 0)
            if not dims:
                dims = len(self.embedder.embed_query("dimension probe"))
            self._current = ModelKey(self.embedder.model_ref.id, dims)
        return self._current

    def indexed_model(self) -> ModelKey | None:
        """The model the stored vectors come from, or None for a new index."""
        rows = dict(self.conn.execute("SELECT key, value FROM meta WHERE key IN ('model_id', 'dimensions')"))
        if "model_id" not in rows:
            return None
        return ModelKey(rows["model_id"], int(rows["dimensions"]))

    @property
    def fingerprint(self) -> str:
        """Schema version, embedding model id and dimensions: a change means ``kb reindex``."""
        key = self.current_model()
        return f"sqlitevec-{FINGERPRINT_VERSION};model={key.id};dims={key.dimensions}"

    def _mismatch(self, indexed: ModelKey, current: ModelKey) -> str:
        return (
            f"the vector index was built with {indexed.describe()} but the configured embedder is {current.describe()}"
        )

    def _writable_model(self) -> ModelKey:
        """The model to write with; adopts the configured one when the index is new or empty."""
        current, indexed = self.current_model(), self.indexed_model()
        if indexed == current:
            return current
        if indexed is not None and self.count():
            raise KbError(self._mismatch(indexed, current), hint=REINDEX_HINT)
        self._begin()
        self._reset_vectors(current)
        return current

    def _reset_vectors(self, key: ModelKey) -> None:
        """Drop every vec0 table and create an empty one for ``key`` (inside a transaction)."""
        tables = self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'vec!_%' ESCAPE '!'"
            " AND sql LIKE '%USING vec0%'"
        ).fetchall()
        for (table,) in tables:
            self.conn.execute(f"DROP TABLE {table}")
        self._track().clear()
        self.conn.execute(
            f"CREATE VIRTUAL TABLE {key.table} USING vec0(embedding float[{key.dimensions}] distance_metric=cosine)"
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("model_id", key.id), ("dimensions", str(key.dimensions)), ("schema", str(SCHEMA_VERSION))],
        )

    # -- embeddings ---------------------------------------------------------------------------

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Embed passages: through ``embed_array`` when the embedder has it, else in batches."""
        if isinstance(self.embedder, ArrayEmbedder):
            return np.asarray(self.embedder.embed_array(texts), dtype=np.float32)
        vectors: list[list[float]] = []
        for batch in _batches(texts, self.batch_size):
            vectors.extend(self.embedder.embed_documents(batch))
        return np.asarray(vectors, dtype=np.float32)

    def _vectors_for(self, texts: list[str], key: ModelKey) -> tuple[np.ndarray, list[tuple[str, bytes, bytes]]]:
        """Vectors for ``texts`` from the cache, embedding only texts it lacks (each once)."""
        hashes = [text_hash(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        for batch in _batches(list(dict.fromkeys(hashes))):
            marks = ",".join("?" * len(batch))
            rows = self.conn.execute(
                f"SELECT text_hash, vector FROM embedding_cache WHERE model = ? AND text_hash IN ({marks})",
                [str(key), *batch],
            )
            found.update((h, np.frombuffer(v, dtype=np.float32)) for h, v in rows)
        missing = {h: t for h, t in zip(hashes, texts) if h not in found}
        fresh: list[tuple[str, bytes, bytes]] = []
        if missing:
            vectors = self._embed(list(missing.values()))
            if vectors.ndim != 2 or vectors.shape[1] != key.dimensions:
                raise KbError(
                    f"the embedder returned vectors of shape {vectors.shape}, expected {key.dimensions} dimensions",
                    hint=REINDEX_HINT,
                )
            for h, vector in zip(missing, vectors):
                found[h] = vector
                fresh.append((str(key), h, vector.tobytes()))
        return np.stack([found[h] for h in hashes]), fresh

    # -- Index --------------------------------------------------------------------------------

    def _begin(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self._changes = None

    def generation(self) -> int:
        """The counter every committed change of the vectors increments (0 for an index older than it)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _track(self) -> Changes:
        """This transaction's vector changes; the first call bumps the generation (inside the transaction)."""
        self._begin()
        if self._changes is None:
            base = self.generation()
            self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (str(base + 1),))
            self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            self._changes = Changes(base)
        return self._changes

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks by chunk id; embeds only texts the cache lacks."""
        latest = list({c.chunk_id: c for c in chunks}.values())
        if not latest:
            return
        key = self._writable_model()
        vectors, fresh = self._vectors_for([c.text for c in latest], key)
        self._begin()
        c = self.conn
        c.executemany("INSERT OR IGNORE INTO embedding_cache (model, text_hash, vector) VALUES (?,?,?)", fresh)
        self._remove_ids(self._ids_where("chunk_id", [ch.chunk_id for ch in latest]), key)
        self._record_documents(sorted({ch.doc_path for ch in latest}))
        first = int(c.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]) + 1
        ids = range(first, first + len(latest))
        c.executemany(
            "INSERT INTO chunks (id, chunk_id, doc_path, start_line, end_line, heading_path_json, content_hash)"
            " VALUES (?,?,?,?,?,?,?)",
            [
                (
                    i,
                    ch.chunk_id,
                    ch.doc_path,
                    ch.start_line,
                    ch.end_line,
                    json.dumps(list(ch.heading_path), ensure_ascii=False),
                    ch.content_hash,
                )
                for i, ch in zip(ids, latest)
            ],
        )
        c.executemany(
            f"INSERT INTO {key.table} (rowid, embedding) VALUES (?, ?)",
            [(i, v.tobytes()) for i, v in zip(ids, vectors)],
        )
        self._track().add(ids, vectors)

    def _record_documents(self, paths: list[str]) -> None:
        """Copy each document's metadata from the store of record (for metadata filters)."""
        rows = []
        for path in paths:
            document = self.store.get_document(path)
            metadata = document.metadata if document else {}
            rows.append((path, json.dumps(metadata, ensure_ascii=False, default=str)))
        self.conn.executemany("INSERT OR REPLACE INTO documents (path, metadata_json) VALUES (?, ?)", rows)

    def _ids_where(self, column: str, values: Sequence[str]) -> list[int]:
        ids: list[int] = []
        for batch in _batches(values):
            marks = ",".join("?" * len(batch))
            ids.extend(r[0] for r in self.conn.execute(f"SELECT id FROM chunks WHERE {column} IN ({marks})", batch))
        return ids

    def _remove_ids(self, ids: list[int], key: ModelKey) -> None:
        if ids:
            self._track().remove(ids)
        self.conn.executemany(f"DELETE FROM {key.table} WHERE rowid = ?", [(i,) for i in ids])
        self.conn.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in ids])

    def delete(self, doc_paths: Sequence[str]) -> None:
        """Remove every chunk of the given documents (paths not indexed are ignored)."""
        paths = list(doc_paths)
        if not paths:
            return
        ids = self._ids_where("doc_path", paths)
        self._begin()
        indexed = self.indexed_model()
        if ids and indexed is not None:
            self._remove_ids(ids, indexed)
        self.conn.executemany("DELETE FROM documents WHERE path = ?", [(p,) for p in paths])

    def commit(self) -> None:
        """Make every change since the last commit durable, then bring the ANN graph up to date."""
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")
        changes, self._changes = self._changes, None
        if changes is not None:
            try:
                self._update_graph(changes, changes.base + 1)
            except (OSError, RuntimeError, MemoryError):
                # The vectors are committed; without a graph for this generation search stays exact and
                # check() asks for 'kb reindex'.
                self.ann.drop()

    def _update_graph(self, changes: Changes, generation: int) -> None:
        """Patch or rebuild the graph for ``generation``; small indexes have none (exact search)."""
        key = self.indexed_model()
        if key is None or self.count() < max(1, self.options.exact_threshold):
            self.ann.drop()
            return

        def scan() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            return batched_rows(iter(self.conn.execute(f"SELECT rowid, embedding FROM {key.table}")))

        self.ann.update(key.table, changes, generation, key.dimensions, scan)

    def rebuild_graph(self) -> None:
        """Build the ANN graph afresh from the stored vectors, under a new generation."""
        self._track().cleared = True
        self.commit()

    def _graph(self, key: ModelKey, count: int) -> Any | None:
        """The graph to search, or None: small index, no graph for this generation, or one out of step."""
        if count < max(1, self.options.exact_threshold):
            return None
        graph = self.ann.view(key.table, self.generation())
        if graph is None or int(graph.size) != count:
            return None
        return graph

    def clear(self) -> None:
        """Remove every chunk and vector (the embedding cache stays) and adopt the configured model."""
        key = self.current_model()
        self._begin()
        self.conn.execute("DELETE FROM chunks")
        self.conn.execute("DELETE FROM documents")
        self._reset_vectors(key)

    def count(self) -> int:
        """How many chunks are indexed."""
        return int(self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def check(self) -> list[Problem]:
        """A changed embedding model, vectors and chunk metadata out of step, or a missing ANN graph."""
        indexed, current = self.indexed_model(), self.current_model()
        if indexed is None or not self.count():
            return []
        if indexed != current:
            return [Problem(self.name, self._mismatch(indexed, current), f"kb reindex --store {self.name}")]
        vectors = int(self.conn.execute(f"SELECT count(*) FROM {indexed.table}").fetchone()[0])
        if vectors != self.count():
            message = f"{vectors} vectors for {self.count()} chunks"
            return [Problem(self.name, message, f"kb reindex --store {self.name}")]
        if vectors >= max(1, self.options.exact_threshold) and self._graph(indexed, vectors) is None:
            message = (
                f"the ANN graph of {vectors} vectors is missing or out of date"
                " (an older index or an interrupted write): vector search scans every vector"
            )
            return [Problem(self.name, message, f"kb reindex --store {self.name}")]
        return []

    def close(self) -> None:
        """Roll back anything uncommitted and close the file (a second call does nothing)."""
        if self._closed:
            return
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self._changes = None
        self.conn.close()
        self._closed = True

    # -- Retriever ----------------------------------------------------------------------------

    def search(self, query: SearchQuery) -> list[Hit]:
        """The k chunks nearest to the query by cosine similarity, filtered by path glob and metadata."""
        indexed, current = self.indexed_model(), self.current_model()
        count = self.count()  # once: counting a million rows takes milliseconds
        if indexed is not None and indexed != current and count:
            raise KbError(self._mismatch(indexed, current), hint=REINDEX_HINT)
        k = min(query.k, MAX_K)
        if indexed is None or k <= 0 or not count:
            return []
        vector = np.asarray(self.embedder.embed_query(query.text), dtype=np.float32)
        self.last_plan, pairs = plan_and_search(
            self.conn, indexed.table, self._graph(indexed, count), count, self.options, query, vector, k
        )
        rows = chunk_rows(self.conn, pairs)
        texts = self.store.get_chunks([r[0] for r in rows]) if query.snippets else {}  # for the snippets
        floor, modeled = score_mapping(self.embedder, query.text)
        hits = []
        for rank, (chunk_id, doc_path, start, end, heading_json, distance) in enumerate(rows, start=1):
            similarity = 1.0 - float(distance)
            chunk = texts.get(chunk_id)
            hits.append(
                Hit(
                    chunk_id=chunk_id,
                    doc_path=doc_path,
                    score=similarity_to_score(similarity, floor) if modeled else 0.0,
                    rank=rank,
                    citation=Citation(doc_path, start, end),
                    heading_path=tuple(json.loads(heading_json)),
                    snippet=make_snippet(chunk.text) if chunk else "",
                    retriever=self.name,
                    raw_score=similarity,
                )
            )
        return hits
