"""Which vectors are nearest to a query: the exact vec0 scan, the HNSW graph, or the graph filtered.

The plan for one search (``SqliteVecIndex.last_plan`` records it):

- ``exact``: sqlite-vec scans every vector (filters become a ``rowid IN (...)`` constraint that vec0
  applies during the scan). Used below ``exact_threshold`` chunks and whenever the graph is missing
  or out of step with the database.
- ``ann``: the HNSW graph, ``expansion`` wide, returns the k nearest with exact float32 distances.
- ``ann-filtered``: with a path or metadata filter matching ``m`` of ``n`` chunks, the graph is asked
  for ``k * oversample * ceil(n / m)`` candidates (at most ``MAX_CANDIDATES``) and those outside the
  filter are dropped. When that leaves fewer than k (a selective filter), the search falls back:
- ``subset``: the matching chunks (at most ``SUBSET_LIMIT``) are ranked exactly from the graph's
  stored vectors; beyond that, ``exact``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from kb_core.types import SearchQuery
from kb_sqlitevec.ann import MAX_CANDIDATES, SUBSET_LIMIT, AnnOptions, ann_search, subset_search

Pairs = list[tuple[int, float]]


def filter_sql(query: SearchQuery) -> tuple[str, list[Any]]:
    """A ``SELECT c.id`` of the chunks that pass the query's filters ("" when it has none).

    Globs and metadata are matched once per document, not once per chunk. A glob without ``[``
    means the same to SQLite's case-sensitive ``GLOB`` as to :func:`fnmatch.fnmatchcase` (``*`` and
    ``?`` match any characters, ``/`` included), and ``GLOB`` can use the documents' key; sets
    (``[!a-c]``) go through Python's fnmatch.
    """
    conditions: list[str] = []
    params: list[Any] = []
    if query.path_glob:
        conditions.append("kb_glob(d.path, ?)" if "[" in query.path_glob else "d.path GLOB ?")
        params.append(query.path_glob)
    if query.metadata:
        conditions.append("kb_meta(d.metadata_json, ?)")
        params.append(json.dumps(dict(query.metadata)))
    if not conditions:
        return "", []
    sql = (
        "SELECT c.id FROM chunks c WHERE c.doc_path IN"
        f" (SELECT d.path FROM documents d WHERE {' AND '.join(conditions)})"
    )
    return sql, params


def exact(conn: Any, table: str, query: SearchQuery, vector: np.ndarray, k: int) -> Pairs:
    """The k nearest by a full vec0 scan, filters applied by vec0 during the scan."""
    where, params = filter_sql(query)
    constraint = f" AND rowid IN ({where})" if where else ""
    rows = conn.execute(
        f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ?{constraint}",
        [vector.tobytes(), k, *params],
    )
    return [(int(i), float(d)) for i, d in rows]


def plan_and_search(
    conn: Any,
    table: str,
    graph: Any | None,
    count: int,
    options: AnnOptions,
    query: SearchQuery,
    vector: np.ndarray,
    k: int,
) -> tuple[str, Pairs]:
    """(plan, the k nearest (id, cosine distance) pairs) for one search (see the module docstring)."""
    if graph is None:
        return "exact", exact(conn, table, query, vector, k)
    where, params = filter_sql(query)
    if not where:
        return "ann", ann_search(graph, vector, k, options.expansion)[:k]
    matching = int(conn.execute(where.replace("SELECT c.id", "SELECT count(*)", 1), params).fetchone()[0])
    if not matching:
        return "ann-filtered", []
    wanted = k * options.oversample * -(-count // matching)
    if wanted <= MAX_CANDIDATES:
        candidates = ann_search(graph, vector, min(wanted, count), options.expansion)
        marks = ",".join("?" * len(candidates))
        kept = {
            int(r[0]) for r in conn.execute(f"{where} AND c.id IN ({marks})", [*params, *(i for i, _ in candidates)])
        }
        found = [(i, d) for i, d in candidates if i in kept]
        if len(found) >= min(k, matching):
            return "ann-filtered", found[:k]
    if matching <= SUBSET_LIMIT:
        return "subset", subset_search(graph, vector, sorted(int(r[0]) for r in conn.execute(where, params)), k)
    return "exact", exact(conn, table, query, vector, k)
