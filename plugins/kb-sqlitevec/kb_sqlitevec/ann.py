"""The approximate nearest-neighbour (ANN) side index: a usearch HNSW graph beside the SQLite file.

SQLite stays the store of truth (chunks, the vec0 float table, the embedding cache). The HNSW graph
is derived from the vec0 table and lives in ``ann-<table>-<generation>.usearch``, where
``generation`` is the counter (``meta.generation``) that every write transaction touching vectors
increments in the same transaction. A search uses the graph only when a file for the current
generation exists and holds as many vectors as there are chunks; otherwise it runs the exact vec0
scan. So a crash between the SQLite commit and the graph update, an index written by an older
version of the plugin, or an index built before the graph existed all give exact (slower) results,
never stale ones, and ``check()`` says ``kb reindex`` rebuilds the graph.

The graph stores float32 vectors, so the distances it returns for its candidates are exact cosine
distances (the same float32 arithmetic as vec0): the approximation is only in which candidates the
graph visits (``expansion``, HNSW's ``ef``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from kb_core.plugin.options import checked_options
from kb_sqlitevec.options import OPTIONS

MAX_CANDIDATES = 4096  # the most candidates one filtered ANN search asks the graph for
SUBSET_LIMIT = 20_000  # a filter matching at most this many chunks is ranked exactly from the graph's vectors

STALE_PARTIAL_S = 3600.0  # a half-written graph file this old belongs to no live writer

Scan = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]


def usearch_index() -> Any:
    """usearch's ``Index`` class, imported after onnxruntime when that is installed.

    usearch 2.26.3 and later crash the interpreter (segmentation fault) when onnxruntime is imported
    after them; in the other order both work. kb's embedders use onnxruntime, so it goes first.
    """
    with contextlib.suppress(ImportError):  # an embedder without onnxruntime
        import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index


@attrs.frozen
class AnnOptions:
    """``[backends.sqlitevec]`` options (:data:`OPTIONS` says what each is)."""

    exact_threshold: int = OPTIONS["exact_threshold"].default
    expansion: int = OPTIONS["expansion"].default
    oversample: int = OPTIONS["oversample"].default
    connectivity: int = OPTIONS["connectivity"].default

    @classmethod
    def from_config(cls, options: Mapping[str, Any]) -> AnnOptions:
        """Options from the plugin's ``[backends.sqlitevec]`` table; kb's one-line ConfigError for a bad one."""
        return cls(**checked_options("sqlitevec", OPTIONS, options))


@attrs.define
class Changes:
    """The vector changes of one write transaction, applied to the graph after the commit."""

    base: int  # the generation the transaction started from
    cleared: bool = False
    added: dict[int, np.ndarray] = attrs.field(factory=dict)
    removed: set[int] = attrs.field(factory=set)

    def add(self, ids: Iterable[int], vectors: np.ndarray) -> None:
        """Record inserted vectors (not after a clear: the graph is then rebuilt from the table)."""
        if self.cleared:
            return
        for i, vector in zip(ids, vectors):
            self.added[int(i)] = vector

    def remove(self, ids: Iterable[int]) -> None:
        """Record deleted vectors."""
        if self.cleared:
            return
        for i in ids:
            if self.added.pop(int(i), None) is None:
                self.removed.add(int(i))

    def clear(self) -> None:
        """Record that every vector was dropped."""
        self.cleared = True
        self.added.clear()
        self.removed.clear()


class AnnFiles:
    """The graph files of one index folder: open for search, update after a commit, rebuild."""

    def __init__(self, directory: Path, options: AnnOptions) -> None:
        self.directory = Path(directory)
        self.options = options
        self._view: tuple[Path, Any] | None = None

    def path(self, tag: str, generation: int) -> Path:
        """The graph file of ``tag`` (a vec0 table name) at ``generation``."""
        return self.directory / f"ann-{tag}-{generation}.usearch"

    def files(self) -> list[Path]:
        """Every graph file in the folder."""
        return sorted(self.directory.glob("ann-*.usearch"))

    def view(self, tag: str, generation: int) -> Any | None:
        """The graph for ``generation``, memory-mapped read-only (None when there is none)."""
        path = self.path(tag, generation)
        if self._view is not None and self._view[0] == path:
            return self._view[1]
        if not path.exists():
            return None
        try:
            index = usearch_index().restore(str(path), view=True)
        except (OSError, RuntimeError, ValueError):
            return None  # a torn or foreign file: search exactly, check() reports it
        if index is None:
            return None
        index.expansion_search = self.options.expansion
        self._view = (path, index)
        return index

    def drop(self, keep: Path | None = None) -> None:
        """Delete every graph file older than ``keep`` (all of them without it; open views keep their mapping)."""
        if self._view is not None and self._view[0] != keep:
            self._view = None
        newest = _generation(keep) if keep is not None else None
        for path in self.files():
            if path != keep and (newest is None or _generation(path) < newest):
                path.unlink(missing_ok=True)
        for partial in self.directory.glob("ann-*.partial-*"):  # left by a writer that died mid-save
            with contextlib.suppress(OSError):
                if time.time() - partial.stat().st_mtime > STALE_PARTIAL_S:
                    partial.unlink()

    def update(self, tag: str, changes: Changes, generation: int, ndim: int, scan: Scan) -> None:
        """Bring the graph to ``generation``: patch the previous one, or rebuild it from ``scan``."""
        self._view = None
        previous = self.path(tag, changes.base)
        target = self.path(tag, generation)
        index: Any = None
        if not changes.cleared and previous.exists():
            index = usearch_index().restore(str(previous), view=False)
            if index is not None:
                stale = [i for i in [*changes.removed, *changes.added] if index.contains(i)]
                if stale:
                    index.remove(np.asarray(stale, dtype=np.uint64))
        if index is None:
            index = self.new_index(ndim)
            for ids, vectors in scan():
                index.add(ids.astype(np.uint64), vectors, threads=self._threads())
        elif changes.added:
            keys = np.fromiter(changes.added, dtype=np.uint64, count=len(changes.added))
            index.add(keys, np.stack(list(changes.added.values())), threads=self._threads())
        self.save(index, target)
        self.drop(keep=target)

    def new_index(self, ndim: int) -> Any:
        """An empty float32 cosine HNSW graph with the configured links per node."""
        return usearch_index()(
            ndim=ndim,
            metric="cos",
            dtype="f32",
            connectivity=self.options.connectivity,
            expansion_search=self.options.expansion,
        )

    @staticmethod
    def save(index: Any, target: Path) -> None:
        """Write ``index`` to ``target`` atomically (a reader never sees half a file)."""
        partial = target.with_suffix(f".partial-{os.getpid()}")
        index.save(str(partial))
        os.replace(partial, target)

    @staticmethod
    def _threads() -> int:
        return max(1, os.cpu_count() or 1)


def _generation(path: Path) -> int:
    """The generation in a graph file's name (-1 when the name is not one of ours)."""
    tail = path.name.removesuffix(".usearch").rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def ann_search(index: Any, vector: np.ndarray, count: int, expansion: int) -> list[tuple[int, float]]:
    """``count`` (id, cosine distance) pairs from the graph, nearest first."""
    index.expansion_search = max(expansion, count)
    matches = index.search(vector, count, threads=1)
    return [(int(k), float(d)) for k, d in zip(matches.keys, matches.distances)]


def subset_search(index: Any, vector: np.ndarray, ids: list[int], k: int) -> list[tuple[int, float]]:
    """The exact ``k`` nearest among ``ids``, from the graph's stored float32 vectors."""
    if not ids:
        return []
    keys = np.asarray(ids, dtype=np.uint64)
    found = index.get(keys, dtype=np.float32)
    rows = [(i, v) for i, v in zip(ids, found if isinstance(found, tuple) else list(found)) if v is not None]
    if not rows:
        return []
    matrix = np.stack([v for _, v in rows])
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(vector))
    similarity = (matrix @ vector) / np.where(norms == 0, 1.0, norms)
    order = np.argsort(-similarity, kind="stable")[:k]
    return [(rows[j][0], float(1.0 - similarity[j])) for j in order]


def batched_rows(rows: Iterator[tuple[int, bytes]], size: int = 8192) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(ids, vectors) arrays from (rowid, float32 blob) rows, ``size`` at a time."""
    ids: list[int] = []
    blobs: list[bytes] = []
    for rowid, blob in rows:
        ids.append(rowid)
        blobs.append(blob)
        if len(ids) == size:
            yield np.asarray(ids, dtype=np.uint64), np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(size, -1)
            ids, blobs = [], []
    if ids:
        yield np.asarray(ids, dtype=np.uint64), np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
