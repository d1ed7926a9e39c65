"""Connecting to PostgreSQL, and its failures as one-line :class:`~kb_core.errors.KbError` values.

Errors are told apart by SQLSTATE (https://www.postgresql.org/docs/16/errcodes-appendix.html): a
server that cannot be reached or went away, another writer holding a lock (a
:class:`~kb_core.errors.WriterBusyError`, try again), a full disk, a role without the right, a
standby that cannot be written. Each names the server (never its password) and what to do.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import sql

from kb_core import KbError, WriterBusyError
from kb_postgres.settings import URL_ENV, PostgresSettings

Connection = psycopg.Connection[tuple[Any, ...]]
#: kb's exit code of a knowledge base that cannot be written (busy, disk full, read-only, unreachable);
#: kb-serve answers 503 or 507 for it.
EXIT_STORAGE = 5


def connect(settings: PostgresSettings) -> Connection:
    """A new connection in autocommit mode (``transaction()`` opens transactions), on the settings' schema."""
    extra: dict[str, Any] = {"application_name": "kb"}
    if settings.connect_timeout is not None:
        extra["connect_timeout"] = settings.connect_timeout
    try:
        conn = psycopg.connect(settings.url, autocommit=True, **extra)
    except psycopg.Error as exc:
        raise unreachable(settings, exc) from None
    try:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(settings.schema)))
        conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(f"{round(settings.lock_timeout_s * 1000)}ms")))
    except psycopg.Error as exc:
        conn.close()
        raise storage_error(settings, exc) from None
    return conn


def unreachable(settings: PostgresSettings, exc: psycopg.Error) -> KbError:
    """The error of a connection that could not be made: no server, a refused login, no such database.

    libpq reports a failed connection without a SQLSTATE, so the server's words tell them apart.
    """
    text = first_line(exc)
    if exc.sqlstate == "3D000" or _said(text, r'database ".*" does not exist'):
        return KbError(
            f"PostgreSQL at {settings.where} has no such database: {text}",
            hint="create it (createdb NAME, or CREATE DATABASE as a role that may) or fix [backends.postgres] url",
            exit_code=EXIT_STORAGE,
        )
    if (exc.sqlstate or "").startswith("28") or _said(
        text, r'authentication failed|no password supplied|role ".*" does not exist|no pg_hba.conf entry'
    ):
        return KbError(
            f"PostgreSQL at {settings.where} refused the login: {text}",
            hint="check the user in [backends.postgres] url and the password in PGPASSWORD or ~/.pgpass",
            exit_code=EXIT_STORAGE,
        )
    return KbError(
        f"cannot reach PostgreSQL at {settings.where}: {text}",
        hint=f"start the server (a pgserver one: its get_server(...) line starts it again) or fix"
        f" [backends.postgres] url ({URL_ENV})",
        exit_code=EXIT_STORAGE,
    )


def _said(text: str, pattern: str) -> bool:
    return re.search(pattern, text) is not None


def storage_error(settings: PostgresSettings, exc: psycopg.Error) -> KbError:
    """The one-line error of a failed statement or commit."""
    state = exc.sqlstate or ""
    text, where = first_line(exc), settings.where
    if state in ("55P03", "40001", "40P01"):  # lock_timeout reached, serialization failure, deadlock
        return WriterBusyError(
            f"the knowledge base in PostgreSQL at {where} is busy: another writer holds what this write needs ({text})",
            hint="wait for the other kb process to finish, then run the command again",
            exit_code=EXIT_STORAGE,
        )
    if state.startswith("08") or state in ("57P01", "57P02", "57P03") or (not state and _lost(exc)):
        return KbError(
            f"lost the connection to PostgreSQL at {where}: {text}",
            hint="check that the server is running, then run the command again; what was committed is intact",
            exit_code=EXIT_STORAGE,
        )
    if state == "53100":
        return KbError(
            f"the PostgreSQL server at {where} is out of disk space: nothing of this write was stored ({text})",
            hint="free space on the server, then run the command again",
            exit_code=EXIT_STORAGE,
        )
    if state == "25006":
        return KbError(
            f"the PostgreSQL server at {where} is read-only (a standby?): {text}",
            hint="point [backends.postgres] url at the primary server",
            exit_code=EXIT_STORAGE,
        )
    if state == "42501":
        return KbError(
            f"the PostgreSQL role of [backends.postgres] url may not do this at {where}: {text}",
            hint="grant it the rights on the database and schema (as their owner), or use the owner's role",
            exit_code=EXIT_STORAGE,
        )
    return KbError(f"PostgreSQL at {where} failed: {text}", exit_code=EXIT_STORAGE)


def _lost(exc: psycopg.Error) -> bool:
    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)


def first_line(exc: BaseException) -> str:
    """The first line of an error's text (the server's primary message when it sent one)."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    text = str(primary or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
