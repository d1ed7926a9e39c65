"""What every store of record kit asks of a store's tests, once: :class:`~kb_core.testing.RecordStoreContract`,
:class:`~kb_core.testing.shared_store.SharedStoreContract` and
:class:`~kb_core.testing.access_store.AccessStoreContract` open the store under test through it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kb_core.config import Config
from kb_core.extend.record_store import RecordStore, StoreContext


class StoreKit:
    """The fixtures a store's test class provides (``store_factory``, and ``store_options``) and ``open_store``,
    which opens handles on the test's store through them."""

    @pytest.fixture
    def store_factory(self) -> Callable[[StoreContext], RecordStore]:
        """The factory your plugin registers with ``register_stores``."""
        kit = next(c for c in type(self).__mro__ if c.__module__.startswith("kb_core.testing."))
        raise NotImplementedError(f"define a 'store_factory' fixture in your {kit.__name__} subclass")

    @pytest.fixture
    def store_options(self) -> dict[str, object]:
        """Your ``[backends.<name>]`` table, naming a store that is new and empty for each test."""
        return {}

    @pytest.fixture
    def open_store(
        self, store_factory: Callable[[StoreContext], RecordStore], store_options: dict[str, object], tmp_path: Path
    ) -> Iterator[Callable[..., RecordStore]]:
        """``open_store(create=True, folder="kb")``: another handle on the test's store, from knowledge base folder
        ``folder`` (closed after the test)."""
        opened: list[RecordStore] = []

        def open_one(create: bool = True, folder: str = "kb") -> RecordStore:
            context = StoreContext(Config(), dict(store_options), directory=tmp_path / folder, create=create)
            opened.append(store_factory(context))
            return opened[-1]

        yield open_one
        for handle in opened:
            handle.close()
