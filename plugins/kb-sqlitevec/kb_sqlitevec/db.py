"""The SQLite side of the index: the schema, opening the file with sqlite-vec, the model key, small helpers."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from kb_core import KbError

try:
    from pysqlite3 import dbapi2 as sqlite3
except ImportError:  # pragma: no cover - the interpreter's own module is a fallback
    import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    doc_path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    heading_path_json TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_path);
CREATE TABLE IF NOT EXISTS documents (path TEXT PRIMARY KEY, metadata_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embedding_cache (
    model TEXT NOT NULL,
    text_hash BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
"""


def text_hash(text: str) -> bytes:
    """The embedding cache's key for a text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def metadata_matches(metadata_json: str | None, wanted_json: str) -> bool:
    """True when a document's metadata has every wanted key = value (a list matches any item)."""
    metadata = json.loads(metadata_json or "{}")
    for key, wanted in json.loads(wanted_json).items():
        value = metadata.get(key)
        values = value if isinstance(value, list) else [value]
        if wanted not in {_as_text(v) for v in values if v is not None}:
            return False
    return True


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _glob_matches(path: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(path, pattern)


def _batches(items: Sequence[Any], size: int = 500) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def connect(path: Path) -> sqlite3.Connection:
    """Open (or create) the index file with sqlite-vec loaded, in WAL mode."""
    import sqlite_vec

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except AttributeError:
        raise KbError("this SQLite cannot load extensions", hint="pip install --force-reinstall pysqlite3") from None
    except (OSError, sqlite3.Error) as exc:
        raise KbError(f"cannot open the vector index at {path}: {exc}") from None
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.create_function("kb_glob", 2, _glob_matches, deterministic=True)
    conn.create_function("kb_meta", 2, metadata_matches, deterministic=True)
    conn.executescript(SCHEMA)
    return conn


@attrs.frozen
class ModelKey:
    """An embedding model as far as stored vectors are concerned: its id and dimensions."""

    id: str
    dimensions: int

    def __str__(self) -> str:
        return f"{self.id}@{self.dimensions}"

    @property
    def table(self) -> str:
        """The name of this model's vec0 table."""
        return "vec_" + hashlib.blake2b(str(self).encode(), digest_size=8).hexdigest()

    def describe(self) -> str:
        """A human-readable name, for messages."""
        return f"{self.id} ({self.dimensions} dimensions)"
