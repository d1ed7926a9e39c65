"""kb-qdrant passes the contract test kit for indexes (Qdrant local mode in the index folder)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kb_core.plugin import IndexContext
from kb_core.testing import IndexContract
from kb_qdrant import make_index


class TestQdrantIndexContract(IndexContract):
    mode = "vector"
    name = "qdrant"

    @pytest.fixture
    def index_factory(self) -> Callable[[IndexContext], Any]:
        return make_index
