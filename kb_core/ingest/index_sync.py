"""Keeping derived indexes in step with the store of record.

Each document change appends its path to ``index_outbox`` in the same transaction as the change.
Each index remembers the last outbox entry it applied (``index_state``). :func:`sync_index`
applies what is pending, in batches: delete every path of the batch, upsert the chunks of those
that still exist, commit the index, then record progress. A crash anywhere leaves entries
pending, and replaying them is harmless, so the next run completes the work.
"""

from __future__ import annotations

import attrs

from kb_core.app import KnowledgeBase
from kb_core.types import Problem, Progress

BATCH = 500


@attrs.frozen
class SyncResult:
    """What one index sync did."""

    index: str
    documents: int
    chunks: int
    rebuilt: bool
    skipped_reason: str = ""


def _fingerprint_problem(kb: KnowledgeBase, name: str) -> Problem | None:
    _, recorded = kb.store.index_state(name)
    current = kb.index(name).fingerprint
    if recorded and recorded != current:
        return Problem(
            name,
            f"index {name} was built with {recorded}, the configuration now gives {current}",
            f"kb reindex --store {name}",
        )
    return None


def rebuild_index(kb: KnowledgeBase, name: str, progress: Progress | None = None) -> SyncResult:
    """Rebuild index ``name`` from the store of record alone."""
    store, index = kb.store, kb.index(name)
    target_seq = store.last_seq()
    total = store.count_chunks()
    index.clear()
    done = 0
    for batch in store.iter_chunks(BATCH):
        index.upsert(batch)
        done += len(batch)
        if progress:
            progress(f"indexing {name}", done, total)
    index.commit()
    store.set_index_state(name, target_seq, index.fingerprint)
    return SyncResult(name, store.count_documents(), total, rebuilt=True)


def sync_index(kb: KnowledgeBase, name: str, progress: Progress | None = None) -> SyncResult:
    """Apply the pending outbox entries to index ``name`` (a first run builds it whole)."""
    store = kb.store
    applied, recorded = store.index_state(name)
    if not recorded:
        return rebuild_index(kb, name, progress)
    problem = _fingerprint_problem(kb, name)
    if problem:
        return SyncResult(name, 0, 0, rebuilt=False, skipped_reason=f"{problem.message}; run '{problem.fix}'")
    index = kb.index(name)
    pending_total = store.last_seq() - applied
    documents = chunks = 0
    while entries := store.pending_paths(applied, BATCH):
        paths = sorted({path for _, path in entries})
        index.delete(paths)
        batch_chunks = store.chunks_of(paths)
        index.upsert(batch_chunks)
        index.commit()
        applied = entries[-1][0]
        store.set_index_state(name, applied, index.fingerprint)
        documents += len(paths)
        chunks += len(batch_chunks)
        if progress:
            progress(f"indexing {name}", min(pending_total, documents), pending_total)
    return SyncResult(name, documents, chunks, rebuilt=False)


def sync_all(kb: KnowledgeBase, progress: Progress | None = None) -> list[SyncResult]:
    """Bring every enabled index up to date, then forget outbox entries all have applied."""
    names = kb.enabled_index_names()
    results = [sync_index(kb, name, progress) for name in names]
    kb.store.trim_outbox(names)
    return results


def index_problems(kb: KnowledgeBase) -> list[Problem]:
    """Indexes that are behind the store of record, built with another configuration, or broken."""
    problems: list[Problem] = []
    latest = kb.store.last_seq()
    for name in kb.enabled_index_names():
        applied, recorded = kb.store.index_state(name)
        if not recorded and kb.store.count_documents():
            problems.append(Problem(name, f"index {name} was never built", f"kb reindex --store {name}"))
            continue
        problem = _fingerprint_problem(kb, name)
        if problem:
            problems.append(problem)
        elif applied < latest:
            problems.append(
                Problem(
                    name,
                    f"index {name} is {latest - applied} change(s) behind (an interrupted run)",
                    "kb ingest PATH (or kb reindex)",
                )
            )
        problems.extend(kb.index(name).check())
    return problems
