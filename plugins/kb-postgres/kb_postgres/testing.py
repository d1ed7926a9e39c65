"""A throwaway PostgreSQL server for tests (kb-postgres's, and another plugin's that runs kb on PostgreSQL).

pgserver (a test dependency: ``pip install -e "plugins/kb-postgres[test]"``) bundles PostgreSQL 16 and pgvector
and starts a server on a Unix socket; it is imported only here, never at run time.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["postgres_server", "run_sql"]


@contextmanager
def postgres_server(url: str = "", *, prefix: str = "kb-postgres-") -> Iterator[str]:
    """The URL of a PostgreSQL server: ``url`` when given (a server that is running, left as it is), else one that
    pgserver starts in a new temporary folder (named from ``prefix``), stopped and the folder deleted on leaving.
    ImportError, before anything is made, when it would start one without pgserver.

    As root, PostgreSQL refuses to run; pgserver then adds a system user ``pgserver`` (``useradd``, once) and runs
    the server as that user, making the data folder theirs and the folders above it and its own binaries
    readable by others (o+rx). The data folder is a new private temporary folder, so nothing else is opened up.
    """
    if url:
        yield url
        return
    with warnings.catch_warnings():  # (no XDG_RUNTIME_DIR: its lock file goes to /tmp/runtime-UID, as it says)
        warnings.simplefilter("ignore")
        import pgserver

    folder = Path(tempfile.mkdtemp(prefix=prefix))
    server = pgserver.get_server(folder / "data", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def run_sql(options: dict[str, object], query: str) -> list[tuple[Any, ...]]:
    """Run ``query`` in the schema of ``[backends.postgres]`` ``options`` (a test reaching past the store: a lease
    run out, a row to look at); its rows, or [] when it returns none."""
    import psycopg

    with psycopg.connect(str(options["url"]), autocommit=True) as conn:
        conn.execute(f"SET search_path TO {options['schema']}")
        cursor = conn.execute(query)
        return cursor.fetchall() if cursor.description else []
