"""A real PostgreSQL for the tests: started once per test session with pgserver
(:func:`kb_postgres.testing.postgres_server`, which says what it does as root), each test on a new schema. Without
pgserver the tests fail, saying how to install it: they are not skipped.

``KB_POSTGRES_TEST_URL`` names an existing server instead (a database the role may create schemas
in); each test's schema is dropped afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import psycopg
import pytest
from kb_postgres.testing import postgres_server
from psycopg import sql

from kb_core import KnowledgeBase, load_config
from kb_core.testing import TestIndexesPlugin, load_registry

TEST_URL = os.environ.get("KB_POSTGRES_TEST_URL", "")  # (read at import: the tests' environment drops KB_*)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a running PostgreSQL server for the whole session."""
    with ExitStack() as stack:
        try:
            url = stack.enter_context(postgres_server(TEST_URL, prefix="kb-postgres-test-"))
        except ImportError:
            pytest.fail(
                "pgserver is not installed: kb-postgres's tests start PostgreSQL with it"
                ' (pip install -e "plugins/kb-postgres[test]"; CPython 3.11 or 3.12 on x86_64 Linux, macOS arm64'
                " or Windows), or set KB_POSTGRES_TEST_URL to a server",
                pytrace=False,
            )
        yield url


@pytest.fixture
def postgres_options(postgres_url: str) -> Iterator[dict[str, object]]:
    """``[backends.postgres]`` for a new, empty schema of the session's server (dropped afterwards)."""
    schema = f"kb_test_{uuid.uuid4().hex[:12]}"
    yield {"url": postgres_url, "schema": schema}
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def kb_env(postgres_options: dict[str, object], kb_test_plugins: str) -> Callable[..., dict[str, str]]:
    """``kb_env(**extra)``: the environment of a real ``kb`` on the test's schema with the test index (``extra``:
    more variables, as ``KB_...="value"``)."""

    def environment(**extra: str) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | {
            "KB_STORE__BACKEND": "postgres",
            "KB_BACKENDS__POSTGRES__URL": str(postgres_options["url"]),
            "KB_BACKENDS__POSTGRES__SCHEMA": str(postgres_options["schema"]),
            "KB_INDEXES__ENABLED": json.dumps(["test-lexical"]),
            "KB_PLUGIN_MODULES": kb_test_plugins,
            **extra,
        }

    return environment


def kb_command(folder: Path, *args: str) -> list[str]:
    """The ``kb`` command line on knowledge base ``folder``."""
    return [str(Path(sys.executable).parent / "kb"), "--kb", str(folder), *args]


@pytest.fixture
def run_kb(kb_env: Callable[..., dict[str, str]]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_kb(folder, *args)``: the real ``kb`` command on ``folder``, the store in the test's schema."""

    def run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(kb_command(folder, *args), capture_output=True, text=True, env=kb_env(), timeout=300)

    return run


@pytest.fixture
def open_kb(postgres_options: dict[str, object], tmp_path: Path) -> Iterator[KnowledgeBase]:
    """A knowledge base on ``postgres_options``' schema with the test lexical index (a module may override it)."""
    plugins = load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin())])
    overrides = {
        "store.backend": "postgres",
        "backends.postgres": dict(postgres_options),
        "indexes.enabled": ["test-lexical"],
    }
    kb = KnowledgeBase(load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={}), plugins)
    yield kb
    kb.close()
