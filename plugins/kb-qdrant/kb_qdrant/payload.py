"""What each Qdrant point carries, and the small pure functions around it.

A point's id is a UUID derived from the chunk id (Qdrant ids are integers or UUIDs); its payload
holds everything a hit and its citation need, so search never reads the store of record:

``chunk_id``, ``doc_path``, ``start_line``, ``end_line``, ``heading_path`` (list),
``content_hash``, ``snippet`` (the chunk's first ~300 characters) and ``meta_kv``: the document's
metadata as ``"key=value"`` strings (a list value gives one string per item), so a metadata filter
is one keyword match per wanted pair whatever characters the keys contain.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kb_core import Chunk
from kb_core.plugin import make_snippet

#: The namespace of point ids: ``uuid5(POINT_NAMESPACE, chunk_id)``.
POINT_NAMESPACE = uuid.UUID("6f1c9a5e-2b7d-5c3e-9a41-0d8e7b6c5a43")


def point_id(chunk_id: str) -> str:
    """The stable Qdrant point id of a chunk."""
    return str(uuid.uuid5(POINT_NAMESPACE, chunk_id))


def as_text(value: Any) -> str:
    """A metadata value as the text a filter compares with (booleans as ``true``/``false``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def metadata_pairs(metadata: Mapping[str, Any]) -> list[str]:
    """``key=value`` strings of a document's metadata (a list gives one per item; None is left out)."""
    pairs: list[str] = []
    for key, value in metadata.items():
        values = value if isinstance(value, list) else [value]
        pairs.extend(f"{key}={as_text(v)}" for v in values if v is not None)
    return sorted(set(pairs))


def chunk_payload(chunk: Chunk, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The payload of a chunk's point."""
    return {
        "chunk_id": chunk.chunk_id,
        "doc_path": chunk.doc_path,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "heading_path": list(chunk.heading_path),
        "content_hash": chunk.content_hash,
        "snippet": make_snippet(chunk.text),
        "meta_kv": metadata_pairs(metadata),
    }
