"""The real parts an index's tests work with: a store of record and an installed embedder.

from kb_core.testing import StoreOfRecord, real_embedder

store = StoreOfRecord(tmp_path / "kb")      # what IndexContext.store reads (through a view)
embedder = real_embedder()                   # the default embedder, all-MiniLM-L6-v2 int8
"""

from __future__ import annotations

from kb_core.config import Config
from kb_core.extend.contracts import Embedder, FactoryContext
from kb_core.extend.registry import load_registry
from kb_core.storage.store import StoreOfRecord

__all__ = ["StoreOfRecord", "real_embedder"]


def real_embedder(name: str = "minilm") -> Embedder:
    """The installed embedder ``name`` (``minilm``, ``multilingual``, ...), made with the default configuration."""
    return load_registry().embedder_factory(name)(FactoryContext(Config()))
