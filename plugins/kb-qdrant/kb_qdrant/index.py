"""The Qdrant vector index: a collection per embedding model, changes applied at ``commit``.

* Collection ``<prefix>_<model id>_<dims>`` (cosine distance); a model change means another
  collection, so vectors of two models never mix. ``clear()`` drops every collection of the
  prefix and adopts the configured model.
* Points are keyed by ``uuid5(chunk id)``: replaying a batch rewrites the same points.
* ``upsert`` and ``delete`` are buffered and applied in order by ``commit`` (nothing is durable
  before it; ``close`` without ``commit`` drops them). A rebuild (``clear`` then upserts) flushes
  every ``FLUSH_POINTS`` points instead of holding the whole corpus in memory; an interrupted
  rebuild is left unrecorded by the core, which rebuilds again.
* A chunk whose point already holds a vector for the same content hash is not embedded again
  (a replayed batch, or ``kb reindex`` with the same model).
* Scores: ``raw_score`` is the cosine similarity; ``score`` maps it with the embedder's similarity
  floor for the query's script, and is 0 when the embedder does not model the query's script,
  exactly as kb-sqlitevec does (see its README).
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from kb_core import Chunk, Citation, Hit, KbError, SearchQuery
from kb_core.plugin import Embedder, Problem, StoreView, score_mapping, similarity_to_score
from kb_qdrant.connection import open_client, translated
from kb_qdrant.payload import chunk_payload, point_id
from kb_qdrant.settings import QdrantSettings

SCHEMA_VERSION = 1
MAX_K = 10_000
MAX_DOCUMENTS = 10_000_000  # distinct document paths a path_glob is matched against
UPSERT_BATCH = 256
FLUSH_POINTS = 4096


def collection_name(prefix: str, model_id: str, dimensions: int) -> str:
    """``<prefix>_<model id made safe>_<dims>``, with a short digest when the id had to be changed."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", model_id).strip("-.")[:80] or "model"
    if safe != model_id:
        safe += "-" + hashlib.blake2b(model_id.encode(), digest_size=4).hexdigest()
    return f"{prefix}_{safe}_{dimensions}"


class QdrantIndex:
    """An index that is also a vector retriever, on Qdrant (see the module docstring)."""

    mode = "vector"

    def __init__(
        self,
        settings: QdrantSettings,
        embedder: Embedder,
        store: StoreView,
        *,
        name: str = "qdrant",
        batch_size: int = 32,
        client: Any = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.embedder = embedder
        self.store = store
        self.batch_size = max(1, batch_size)
        self.client = client if client is not None else open_client(settings)
        self._dimensions: int | None = None
        self._ops: list[tuple[str, Any]] = []
        self._pending_points = 0
        self._rebuilding = False
        self._closed = False
        self._known_collections: list[str] | None = None  # cached listing; reset by every change of collections
        self._model_checked = False  # no other model's vectors block writing (checked once per instance)

    # -- model and collection -----------------------------------------------------------------

    @property
    def dimensions(self) -> int:
        """The configured embedder's dimensions (one probe embedding if it does not say)."""
        if self._dimensions is None:
            dims = int(getattr(self.embedder, "dimensions", 0) or 0)
            self._dimensions = dims or len(self.embedder.embed_query("dimension probe"))
        return self._dimensions

    @property
    def collection(self) -> str:
        """The collection of the configured embedding model."""
        return collection_name(self.settings.collection_prefix, self.embedder.model_ref.id, self.dimensions)

    @property
    def fingerprint(self) -> str:
        """Schema, embedding model, dimensions and location: a change means ``kb reindex``."""
        model = self.embedder.model_ref.id
        return f"qdrant-{SCHEMA_VERSION};model={model};dims={self.dimensions};at={self.settings.where}"

    def _collections(self) -> list[str]:
        """Every collection of this prefix. Local mode (one process) lists once and keeps the list up to date;
        a server is asked every time, since other processes may create or drop collections."""
        if self._known_collections is None or self.settings.url:
            with translated(self.settings, "listing collections"):
                names = [c.name for c in self.client.get_collections().collections]
            self._known_collections = sorted(n for n in names if n.startswith(self.settings.collection_prefix + "_"))
        return list(self._known_collections)

    def _exists(self) -> bool:
        return self.collection in self._collections()

    def _ensure_collection(self) -> None:
        from qdrant_client import models

        if self._exists():
            return
        self._known_collections = None
        with translated(self.settings, f"creating collection {self.collection}"):
            self.client.create_collection(
                self.collection,
                vectors_config=models.VectorParams(size=self.dimensions, distance=models.Distance.COSINE),
            )
            if self.settings.url:  # local mode has no payload indexes (and warns about them)
                for field in ("doc_path", "meta_kv"):
                    self.client.create_payload_index(self.collection, field, models.PayloadSchemaType.KEYWORD)

    def _count_in(self, collection: str) -> int:
        with translated(self.settings, f"counting {collection}"):
            return int(self.client.count(collection, exact=True).count)

    def _other_model(self) -> str | None:
        """A collection of another model that holds points, when the configured one holds none."""
        names = self._collections()
        if self.collection in names and self._count_in(self.collection):
            return None
        return next((n for n in names if n != self.collection and self._count_in(n)), None)

    def _mismatch(self, other: str) -> str:
        return (
            f"the Qdrant index holds vectors in {other} but the configured embedder"
            f" {self.embedder.model_ref.id} ({self.dimensions} dimensions) needs {self.collection}"
        )

    # -- embeddings ---------------------------------------------------------------------------

    def _embed(self, texts: list[str]) -> np.ndarray:
        embed_array = getattr(self.embedder, "embed_array", None)
        if callable(embed_array):
            return np.asarray(embed_array(texts), dtype=np.float32)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self.embedder.embed_documents(texts[start : start + self.batch_size]))
        return np.asarray(vectors, dtype=np.float32)

    def _stored_vectors(self, chunks: list[Chunk]) -> dict[str, list[float]]:
        """Vectors already stored for these chunks with the same content hash, by chunk id."""
        if not self._exists():
            return {}
        ids = [point_id(c.chunk_id) for c in chunks]
        with translated(self.settings, "reading stored vectors"):
            records = self.client.retrieve(self.collection, ids=ids, with_vectors=True, with_payload=True)
        wanted = {c.chunk_id: c.content_hash for c in chunks}
        found: dict[str, list[float]] = {}
        for record in records:
            payload = record.payload or {}
            chunk_id = payload.get("chunk_id")
            if chunk_id in wanted and payload.get("content_hash") == wanted[chunk_id] and record.vector is not None:
                found[chunk_id] = list(record.vector)
        return found

    def _vectors_for(self, chunks: list[Chunk]) -> list[list[float]]:
        """One vector per chunk: reused when stored, else embedded (each distinct text once)."""
        stored = self._stored_vectors(chunks)
        missing = list(dict.fromkeys(c.text for c in chunks if c.chunk_id not in stored))
        fresh: dict[str, list[float]] = {}
        if missing:
            array = self._embed(missing)
            if array.ndim != 2 or array.shape[1] != self.dimensions:
                raise KbError(
                    f"the embedder returned vectors of shape {array.shape}, expected {self.dimensions} dimensions",
                    hint=f"run 'kb reindex --store {self.name}'",
                )
            fresh = {text: row.tolist() for text, row in zip(missing, array)}
        return [stored[c.chunk_id] if c.chunk_id in stored else fresh[c.text] for c in chunks]

    # -- Index --------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks by chunk id (applied at ``commit``)."""
        from qdrant_client import models

        latest = list({c.chunk_id: c for c in chunks}.values())
        if not latest:
            return
        if not self._rebuilding and not self._model_checked:
            other = self._other_model()
            if other is not None:
                raise KbError(self._mismatch(other), hint=f"run 'kb reindex --store {self.name}'")
            self._model_checked = True
        vectors = self._vectors_for(latest)
        metadata: dict[str, dict[str, Any]] = {}
        for path in sorted({c.doc_path for c in latest}):
            document = self.store.get_document(path)
            metadata[path] = document.metadata if document else {}
        points = [
            models.PointStruct(id=point_id(c.chunk_id), vector=v, payload=chunk_payload(c, metadata[c.doc_path]))
            for c, v in zip(latest, vectors)
        ]
        self._ops.append(("upsert", points))
        self._pending_points += len(points)
        if self._rebuilding and self._pending_points >= FLUSH_POINTS:
            self._apply()

    def delete(self, doc_paths: Sequence[str]) -> None:
        """Remove every chunk of the given documents (applied at ``commit``; unknown paths are ignored)."""
        paths = sorted(set(doc_paths))
        if paths:
            self._ops.append(("delete", paths))

    def clear(self) -> None:
        """Drop every collection of the prefix and adopt the configured model (applied at ``commit``)."""
        self._ops.append(("clear", None))
        self._model_checked = True  # the rebuild replaces whatever another model left
        self._rebuilding = True

    def commit(self) -> None:
        """Apply the buffered changes in order, waiting until the server has them."""
        self._apply()
        self._rebuilding = False

    def _apply(self) -> None:
        from qdrant_client import models

        ops, self._ops, self._pending_points = self._ops, [], 0
        for kind, value in ops:
            if kind == "clear":
                for name in self._collections():
                    with translated(self.settings, f"dropping {name}"):
                        self.client.delete_collection(name)
                self._known_collections = None
                self._ensure_collection()
            elif kind == "delete" and self._exists():
                selector = models.FilterSelector(
                    filter=models.Filter(must=[models.FieldCondition(key="doc_path", match=models.MatchAny(any=value))])
                )
                with translated(self.settings, "deleting documents"):
                    self.client.delete(self.collection, points_selector=selector, wait=True)
            elif kind == "upsert":
                self._ensure_collection()
                for start in range(0, len(value), UPSERT_BATCH):
                    with translated(self.settings, "writing vectors"):
                        self.client.upsert(self.collection, points=value[start : start + UPSERT_BATCH], wait=True)

    def count(self) -> int:
        """How many chunks are indexed (committed) for the configured model."""
        return self._count_in(self.collection) if self._exists() else 0

    def check(self) -> list[Problem]:
        """An unreachable server, or vectors of another embedding model (fix: ``kb reindex``)."""
        try:
            other = self._other_model()
        except KbError as exc:
            return [Problem(self.name, exc.message, exc.hint)]
        if other is not None:
            return [Problem(self.name, self._mismatch(other), f"kb reindex --store {self.name}")]
        return []

    def close(self) -> None:
        """Drop uncommitted changes and close the client (a second call does nothing)."""
        if self._closed:
            return
        self._ops.clear()
        self._closed = True
        self.client.close()

    def _indexed_paths(self) -> list[str]:
        """Every document path in the collection: Qdrant's facet of ``doc_path`` (a keyword index on a server)."""
        with translated(self.settings, "listing document paths"):
            facet = self.client.facet(self.collection, key="doc_path", limit=MAX_DOCUMENTS, exact=True)
        return [str(hit.value) for hit in facet.hits]

    def _refuse_other_model(self) -> None:
        other = self._other_model()
        if other is not None:
            raise KbError(self._mismatch(other), hint=f"run 'kb reindex --store {self.name}'")

    # -- Retriever ----------------------------------------------------------------------------

    def search(self, query: SearchQuery) -> list[Hit]:
        """The k chunks nearest to the query by cosine similarity, filtered by path glob, path prefixes (grants)
        and metadata."""
        from qdrant_client import models

        k = min(query.k, MAX_K)
        if k <= 0:
            return []
        if not self._exists():
            self._refuse_other_model()
            return []
        must: list[Any] = []
        prefixes = query.path_prefixes
        if query.path_glob or prefixes is not None:  # (the grants too: Qdrant filters inside its HNSW search)
            paths = [
                p
                for p in self._indexed_paths()
                if (not query.path_glob or fnmatch.fnmatchcase(p, query.path_glob))
                and (prefixes is None or any(p.startswith(prefix) for prefix in prefixes))
            ]
            if not paths:
                return []
            must.append(models.FieldCondition(key="doc_path", match=models.MatchAny(any=paths)))
        for key, value in sorted(query.metadata.items()):
            must.append(models.FieldCondition(key="meta_kv", match=models.MatchValue(value=f"{key}={value}")))
        vector = np.asarray(self.embedder.embed_query(query.text), dtype=np.float32).tolist()
        with translated(self.settings, "searching"):
            points = self.client.query_points(
                self.collection,
                query=vector,
                limit=k,
                with_payload=True,
                query_filter=models.Filter(must=must) if must else None,
            ).points
        if not points and not must:
            self._refuse_other_model()
        floor, modeled = score_mapping(self.embedder, query.text)
        rows = sorted(((float(p.score), p.payload or {}) for p in points), key=lambda r: (-r[0], r[1]["chunk_id"]))
        return [
            Hit(
                chunk_id=payload["chunk_id"],
                doc_path=payload["doc_path"],
                score=similarity_to_score(similarity, floor) if modeled else 0.0,
                rank=rank,
                citation=Citation(payload["doc_path"], int(payload["start_line"]), int(payload["end_line"])),
                heading_path=tuple(payload.get("heading_path") or ()),
                snippet=str(payload.get("snippet") or ""),
                retriever=self.name,
                raw_score=similarity,
            )
            for rank, (similarity, payload) in enumerate(rows, start=1)
        ]
