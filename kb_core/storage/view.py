"""The read-only view of the store of record that index plugins receive (:class:`StoreView`)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from kb_core.extend.record_store import RecordStore
from kb_core.types import Chunk, Document


@attrs.frozen
class ReadOnlyStore:
    """Documents, chunks and index sync state, read from a store of record; nothing else of it.

    Indexes follow the store of record through the core's sync engine; they never write to it,
    and this view gives them no way to.
    """

    _store: RecordStore

    def get_document(self, path: str) -> Document | None:
        """The stored document at ``path``, or None."""
        return self._store.get_document(path)

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """The stored chunks with these ids, by id (missing ids are left out)."""
        return self._store.get_chunks(chunk_ids)

    def count_chunks(self) -> int:
        """How many chunks the store of record holds."""
        return self._store.count_chunks()

    def last_seq(self) -> int:
        """The sequence number of the newest change in the outbox."""
        return self._store.last_seq()

    def index_state(self, name: str) -> tuple[int, str]:
        """The outbox position index ``name`` has applied, and the fingerprint it was built with."""
        return self._store.index_state(name)
