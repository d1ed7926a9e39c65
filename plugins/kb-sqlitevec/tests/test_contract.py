"""kb-sqlitevec passes the contract test kit for indexes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kb_core.plugin import IndexContext
from kb_core.testing import IndexContract
from kb_sqlitevec import make_index


class TestSqliteVecIndexContract(IndexContract):
    mode = "vector"
    name = "sqlitevec"

    @pytest.fixture
    def index_factory(self) -> Callable[[IndexContext], Any]:
        return make_index
