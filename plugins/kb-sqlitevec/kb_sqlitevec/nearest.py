"""Which vectors are nearest to a query: the exact vec0 scan, the HNSW graph, or the graph filtered.

The plan for one search (``SqliteVecIndex.last_plan`` records it):

- ``exact``: sqlite-vec scans every vector (filters become a ``rowid IN (...)`` constraint that vec0
  applies during the scan). Used below ``exact_threshold`` chunks and whenever the graph is missing
  or out of step with the database.
- ``ann``: the HNSW graph, ``expansion`` wide, returns the k nearest with exact float32 distances.
- ``ann-filtered``: with a path, metadata or grant (``path_prefixes``) filter matching ``m`` of ``n``
  chunks, the graph is asked for ``k * oversample * ceil(n / m)`` candidates (at most
  ``MAX_CANDIDATES``) and those outside the filter are dropped. When that leaves fewer than k (a
  selective filter: a narrow grant), the search falls back:
- ``subset``: the matching chunks (at most ``SUBSET_LIMIT``) are ranked exactly from the graph's
  stored vectors; beyond that, ``exact``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from kb_core import SearchQuery
from kb_sqlitevec.ann import MAX_CANDIDATES, SUBSET_LIMIT, AnnOptions, ann_search, subset_search

Pairs = list[tuple[int, float]]


def document_conditions(query: SearchQuery) -> tuple[str, list[Any]]:
    """The query's filters as conditions on ``documents d`` ("" when it has none).

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
    prefixes = query.path_prefixes
    if prefixes is not None:  # the asker's grants
        if not prefixes:
            conditions.append("0")
        else:
            conditions.append("(" + " OR ".join("substr(d.path, 1, ?) = ?" for _ in prefixes) + ")")
            params.extend(value for prefix in prefixes for value in (len(prefix), prefix))
    return " AND ".join(conditions), params


def matching_sql(conditions: str, select: str = "c.id") -> str:
    """``SELECT <select>`` over the chunks of the documents that meet ``conditions``."""
    return f"SELECT {select} FROM chunks c WHERE c.doc_path IN (SELECT d.path FROM documents d WHERE {conditions})"


def exact(conn: Any, table: str, query: SearchQuery, vector: np.ndarray, k: int) -> Pairs:
    """The k nearest by a full vec0 scan, filters applied by vec0 during the scan."""
    conditions, params = document_conditions(query)
    constraint = f" AND rowid IN ({matching_sql(conditions)})" if conditions else ""
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
    conditions, params = document_conditions(query)
    if not conditions:
        return "ann", ann_search(graph, vector, k, options.expansion)[:k]
    matching = int(conn.execute(matching_sql(conditions, "count(*)"), params).fetchone()[0])
    if not matching:
        return "ann-filtered", []
    wanted = k * options.oversample * -(-count // matching)
    if wanted <= MAX_CANDIDATES:
        candidates = ann_search(graph, vector, min(wanted, count), options.expansion)
        marks = ",".join("?" * len(candidates))
        kept_sql = (
            f"SELECT c.id FROM chunks c WHERE c.id IN ({marks})"
            f" AND EXISTS (SELECT 1 FROM documents d WHERE d.path = c.doc_path AND {conditions})"
        )  # candidate first: a probe per candidate, whatever the filter matches
        kept = {int(r[0]) for r in conn.execute(kept_sql, [*(i for i, _ in candidates), *params])}
        found = [(i, d) for i, d in candidates if i in kept]
        if len(found) >= min(k, matching):
            return "ann-filtered", found[:k]
    if matching <= SUBSET_LIMIT:
        return "subset", subset_search(
            graph, vector, sorted(int(r[0]) for r in conn.execute(matching_sql(conditions), params)), k
        )
    return "exact", exact(conn, table, query, vector, k)


def chunk_rows(conn: Any, pairs: Pairs) -> list[tuple[str, str, int, int, str, float]]:
    """(chunk id, path, start, end, heading path JSON, distance) for (id, distance) pairs, by distance then id."""
    distances = dict(pairs)
    ids = list(distances)
    rows: list[tuple[str, str, int, int, str, float]] = []
    for first in range(0, len(ids), 500):
        batch = ids[first : first + 500]
        found = conn.execute(
            "SELECT id, chunk_id, doc_path, start_line, end_line, heading_path_json"
            f" FROM chunks WHERE id IN ({','.join('?' * len(batch))})",
            batch,
        )
        rows.extend((cid, path, start, end, heading, distances[i]) for i, cid, path, start, end, heading in found)
    return sorted(rows, key=lambda r: (r[5], r[0]))
