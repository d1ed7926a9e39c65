"""Where the store lives, ``[backends.postgres]`` (a libpq connection string and a schema), and its name in messages.

| key | default | meaning |
|---|---|---|
| ``url`` | unset | a libpq connection string (``postgresql://kb@db.example:5432/kb``); ``KB_POSTGRES_URL`` overrides |
| ``schema`` | ``kb`` | the schema holding this knowledge base's tables (one per knowledge base in a database) |
| ``connect_timeout_s`` | ``10`` | seconds a connection attempt may take |
| ``lock_timeout_s`` | ``30`` | seconds a write waits for another writer before giving up |
| ``folder_lease_h`` | ``168`` | hours the feed is kept for a knowledge base folder not seen since (then it rebuilds) |
| ``job_lease_s`` | ``30`` | seconds a file taken by an ingest worker stays its own without news from it |
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from kb_core import ConfigError
from kb_core.plugin.options import Option, checked_options

URL_ENV = "KB_POSTGRES_URL"
#: How a newcomer without a server gets one (PostgreSQL and pgvector from PyPI, on this machine only).
PGSERVER_RECIPE = (
    "pip install pgserver (then python -c \"import pgserver; print(pgserver.get_server('~/kb-postgres',"
    ' cleanup_mode=None).get_uri())" prints its URL)'
)

#: The options of ``[backends.postgres]``, declared to kb (``register_options``): checked at start.
OPTIONS: dict[str, Option] = {
    "url": Option.text(
        "",
        "the PostgreSQL server and database, as a libpq connection string: postgresql://kb@db.example:5432/kb"
        f" or 'host=/run/postgresql dbname=kb' (keep the password in PGPASSWORD or ~/.pgpass); {URL_ENV} overrides."
        f" No server at hand: {PGSERVER_RECIPE} prints the URL of one on this machine",
    ),
    "schema": Option.text(
        "kb",
        "the schema holding this knowledge base's tables: give each knowledge base sharing a database its own",
        pattern=r"[a-z_][a-z0-9_]{0,62}",
        shape="1-63 lower-case letters, digits or '_', not starting with a digit",
    ),
    "connect_timeout_s": Option.timeout(10.0, "seconds a connection attempt may take (0: no limit)"),
    "lock_timeout_s": Option.timeout(30.0, "seconds a write waits for another writer's lock (0: no limit)"),
    "folder_lease_h": Option.number(
        0.01,
        87_600,
        168.0,
        "hours the change feed is kept for a knowledge base folder (a server's indexes) not seen since; one away"
        " longer rebuilds its indexes from the store when it comes back",
    ),
    "job_lease_s": Option.number(
        1,
        3600,
        30.0,
        "seconds a file an ingest worker took stays its own without news from it (it renews the lease while it"
        " works); then another worker takes the file again",
    ),
}


@attrs.frozen
class PostgresSettings:
    """A resolved ``[backends.postgres]``: the connection string, the schema, the two timeouts and the two leases."""

    url: str = attrs.field(repr=False)
    schema: str = "kb"
    connect_timeout_s: float = 10.0
    lock_timeout_s: float = 30.0
    folder_lease_h: float = 168.0
    job_lease_s: float = 30.0

    @classmethod
    def resolve(cls, options: Mapping[str, object], environ: Mapping[str, str]) -> PostgresSettings:
        """Settings from the table (``environ`` may override the URL); ConfigError when no server is named."""
        values = checked_options("postgres", OPTIONS, options)
        url = str(environ.get(URL_ENV) or values["url"]).strip()
        if not url:
            raise ConfigError(
                '[store] backend = "postgres" needs a PostgreSQL server: [backends.postgres] url is not set',
                hint=f"set it (or {URL_ENV}) to postgresql://user@host:5432/dbname;"
                f" no server at hand: {PGSERVER_RECIPE}",
            )
        from psycopg.conninfo import conninfo_to_dict  # (psycopg is imported only when the store is opened)

        try:
            conninfo_to_dict(url)
        except Exception:  # (psycopg.ProgrammingError: its text may repeat the string, password included)
            raise ConfigError(
                "[backends.postgres] url is not a libpq connection string",
                hint="write it like postgresql://user@host:5432/dbname or 'host=... dbname=...'",
            ) from None
        return cls(
            url,
            str(values["schema"]),
            float(values["connect_timeout_s"]),
            float(values["lock_timeout_s"]),
            float(values["folder_lease_h"]),
            float(values["job_lease_s"]),
        )

    @property
    def where(self) -> str:
        """The server, database and schema for messages (never the password)."""
        return f"{describe(self.url)} (schema {self.schema})"

    @property
    def folder_lease_s(self) -> float:
        """``folder_lease_h`` in seconds."""
        return self.folder_lease_h * 3600

    @property
    def connect_timeout(self) -> int | None:
        """libpq's ``connect_timeout`` (whole seconds, at least 2; None: no limit)."""
        return max(2, math.ceil(self.connect_timeout_s)) if self.connect_timeout_s else None


def describe(url: str) -> str:
    """A connection string as a URL without its password (or options), for messages.

    >>> describe("postgresql://ann:secret@db.example:5433/kb?sslmode=require")
    'postgresql://ann@db.example:5433/kb'
    >>> describe("host=/tmp/pg dbname=kb password=secret")
    'postgresql:///kb?host=/tmp/pg'
    """
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:
        return "an unreadable connection string"
    user, host, port, dbname = (_one_line(parts.get(key)) for key in ("user", "host", "port", "dbname"))
    socket = host.startswith("/") or host.startswith("@")
    shown = f"postgresql://{user + '@' if user else ''}{'' if socket else host}{':' + port if port else ''}/{dbname}"
    return f"{shown}?host={host}" if socket else shown


def _one_line(value: object) -> str:
    return "" if value is None else " ".join(str(value).split())
