"""The knowledge base as a library object: configuration, store of record and engines, opened lazily.

Every CLI command is a function over a :class:`KnowledgeBase`; so is every test that drives
the whole pipeline. Engines are made on first use, so ``kb list`` never loads a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kb_core.config import Config, load_config
from kb_core.errors import KbError
from kb_core.extend.contracts import Embedder, FactoryContext, IndexContext, LanguageModel, OcrEngine, SearchIndex
from kb_core.extend.options import check_declared
from kb_core.extend.record_store import RecordStore, StoreContext
from kb_core.extend.registry import Registry
from kb_core.extend.registry import registry as default_registry
from kb_core.privacy import quiet_dependencies
from kb_core.storage.sqlite_files import make_private_dir
from kb_core.storage.view import ReadOnlyStore
from kb_core.types import Progress


class KnowledgeBase:
    """One knowledge base directory, with its configuration and the plugins that serve it."""

    def __init__(self, config: Config, registry: Registry | None = None, *, create: bool = True) -> None:
        quiet_dependencies()  # where a program starts using kb: the engines it loads later never phone home
        self.config = config
        self.registry = registry or default_registry()
        check_declared(config, self.registry.options)  # the plugins' [backends.NAME] tables
        self._create = create
        self._store: RecordStore | None = None
        self._embedder: Embedder | None = None
        self._indexes: dict[str, SearchIndex] = {}
        self._llms: dict[str, LanguageModel] = {}
        self._ocr: tuple[OcrEngine | None, str] | None = None
        #: Where models report long first-use work (set by the CLI to a terminal progress bar).
        self.progress: Progress | None = None

    @property
    def directory(self) -> Path:
        """Where this knowledge base keeps its files."""
        return self.config.kb_path

    @property
    def store(self) -> RecordStore:
        """The store of record ``[store] backend`` names (opened, and migrated, on first use)."""
        if self._store is None:
            name = self.config.store.backend
            context = StoreContext(
                self.config,
                self.config.backend_options(name),
                self.progress,
                directory=self.directory,
                create=self._create,
            )
            self._store = self.registry.store_factory(name)(context)
        return self._store

    def embedder(self) -> Embedder:
        """The configured embedder, made on first use."""
        if self._embedder is None:
            name = self.config.models.embedding.name
            factory = self.registry.embedder_factory(name)
            self._embedder = factory(FactoryContext(self.config, progress=self.progress))
        return self._embedder

    def index_mode(self, name: str) -> str:
        """``"lexical"`` or ``"vector"``: what kind of index ``name`` is."""
        return str(self.registry.get("indexes", name).info.get("mode", "lexical"))

    def index(self, name: str) -> SearchIndex:
        """The index ``name`` (an index that is also a retriever of its mode), opened on first use."""
        if name not in self._indexes:
            registration = self.registry.get("indexes", name)
            needs_embedder = registration.info.get("mode") == "vector"
            context = IndexContext(
                self.config,
                self.config.backend_options(name),
                self.progress,
                name=name,
                directory=self.directory / "indexes" / name,
                store=ReadOnlyStore(self.store),
                embedder=self.embedder() if needs_embedder else None,
            )
            make_private_dir(context.directory)
            self._indexes[name] = self.registry.index_factory(name)(context)
        return self._indexes[name]

    def enabled_index_names(self) -> list[str]:
        """The configured indexes that are installed; raises if one is configured but missing."""
        names = list(self.config.indexes.enabled)
        for name in names:
            self.registry.get("indexes", name)
        return names

    def retrievers(self, mode: str) -> list[SearchIndex]:
        """The enabled indexes that serve ``mode`` (hybrid: all of them)."""
        wanted = ("lexical", "vector") if mode == "hybrid" else (mode,)
        chosen = [self.index(n) for n in self.enabled_index_names() if self.index_mode(n) in wanted]
        if not chosen:
            raise KbError(
                f"no enabled index serves {mode} search",
                hint="install one (pip install kb-tantivy kb-sqlitevec) and list it in [indexes] enabled",
            )
        return chosen

    def language_model(self, backend: str | None = None) -> LanguageModel:
        """The language model of ``backend`` (default: the configured one), made on first use."""
        name = backend or self.config.models.llm.backend
        if name not in self._llms:
            factory = self.registry.language_model_factory(name)
            self._llms[name] = factory(FactoryContext(self.config, self.config.backend_options(name), self.progress))
        return self._llms[name]

    def ocr(self) -> tuple[OcrEngine | None, str]:
        """The OCR engine ``[ingest] ocr`` names (made on the first page it reads), or None and the
        line to show instead; one per knowledge base, like its other engines."""
        if self._ocr is None:
            from kb_core.ingest.ocr import choose_ocr  # (only when an ingest or kb doctor needs it)

            self._ocr = choose_ocr(self)
        return self._ocr

    def close(self) -> None:
        """Close the indexes and the store of record."""
        for index in self._indexes.values():
            index.close()
        self._indexes.clear()
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def open_kb(
    config_path: str | Path | None = None,
    kb_dir: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    *,
    create: bool = True,
) -> KnowledgeBase:
    """Load the configuration and open the knowledge base it names."""
    return KnowledgeBase(load_config(config_path, kb_dir, overrides), create=create)
