"""The PostgreSQL store's people, groups, grants and owners: the SQL of the ``access_*`` tables (migrations 3 and 5),
the :class:`~kb_core.plugin.stores.AccessStore` methods of :class:`~kb_postgres.store.PostgresStore`."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import psycopg

from kb_core.plugin.stores import GrantRecord, PersonRecord


class PostgresAccess:
    """A mixin over the store's ``_exec`` (each statement its own transaction, or the caller's)."""

    def _exec(self, query: Any, params: Any = None) -> psycopg.Cursor[tuple[Any, ...]]:  # (PostgresStore's)
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[Any]:  # (PostgresStore's)
        raise NotImplementedError

    def _changed(self, query: str, params: tuple[Any, ...]) -> bool:
        return self._exec(query, params).rowcount == 1

    def add_person(self, name: str, token_hash: str, created_at: str) -> bool:
        """Keep a new person; False when the name is taken."""
        query = "INSERT INTO access_people (name, token_hash, created_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
        return self._changed(query, (name, token_hash, created_at))

    def remove_person(self, name: str) -> bool:
        """Remove a person, their memberships and who owned what (migration 5's foreign key)."""
        return self._changed("DELETE FROM access_people WHERE name = %s", (name,))

    def set_token(self, name: str, token_hash: str) -> bool:
        """Replace a person's token hash."""
        return self._changed("UPDATE access_people SET token_hash = %s WHERE name = %s", (token_hash, name))

    def person_of_token(self, token_hash: str) -> str | None:
        """The person whose token hashes to ``token_hash``, or None."""
        row = self._exec("SELECT name FROM access_people WHERE token_hash = %s", (token_hash,)).fetchone()
        return None if row is None else str(row[0])

    def has_people(self) -> bool:
        """Whether any person exists."""
        return self._exec("SELECT 1 FROM access_people LIMIT 1").fetchone() is not None

    def people(self) -> list[PersonRecord]:
        """Every person with their groups."""
        rows = self._exec(
            "SELECT p.name, p.created_at, coalesce(array_agg(m.group_name ORDER BY m.group_name)"
            " FILTER (WHERE m.group_name IS NOT NULL), '{}') FROM access_people p"
            " LEFT JOIN access_members m ON m.person = p.name GROUP BY p.name, p.created_at ORDER BY p.name"
        ).fetchall()
        return [PersonRecord(name, created, tuple(groups)) for name, created, groups in rows]

    def add_group(self, name: str, created_at: str) -> bool:
        """Keep a new group; False when the name is taken."""
        query = "INSERT INTO access_groups (name, created_at) VALUES (%s, %s) ON CONFLICT DO NOTHING"
        return self._changed(query, (name, created_at))

    def remove_group(self, name: str) -> bool:
        """Remove a group, its memberships and grants."""
        return self._changed("DELETE FROM access_groups WHERE name = %s", (name,))

    def groups(self) -> list[str]:
        """Every group's name."""
        return [str(r[0]) for r in self._exec("SELECT name FROM access_groups ORDER BY name").fetchall()]

    def add_member(self, group: str, person: str) -> bool:
        """Put ``person`` in ``group`` (one statement: nothing when either is missing)."""
        self._exec(
            "INSERT INTO access_members (group_name, person) SELECT g.name, p.name"
            " FROM access_groups g, access_people p WHERE g.name = %s AND p.name = %s ON CONFLICT DO NOTHING",
            (group, person),
        )
        query = "SELECT 1 FROM access_members WHERE group_name = %s AND person = %s"
        return self._exec(query, (group, person)).fetchone() is not None

    def remove_member(self, group: str, person: str) -> bool:
        """Take ``person`` out of ``group``."""
        return self._changed("DELETE FROM access_members WHERE group_name = %s AND person = %s", (group, person))

    def set_grant(self, group: str, prefix: str, write: bool) -> bool:
        """Grant ``group`` the ``prefix``, replacing its grant of that prefix."""
        return self._changed(
            "INSERT INTO access_grants (group_name, prefix, can_write) SELECT name, %s, %s FROM access_groups"
            " WHERE name = %s ON CONFLICT (group_name, prefix) DO UPDATE SET can_write = excluded.can_write",
            (prefix, write, group),
        )

    def revoke(self, group: str, prefix: str) -> bool:
        """Remove ``group``'s grant of ``prefix``."""
        return self._changed("DELETE FROM access_grants WHERE group_name = %s AND prefix = %s", (group, prefix))

    def grants(self) -> list[GrantRecord]:
        """Every grant, by group then prefix."""
        rows = self._exec("SELECT group_name, prefix, can_write FROM access_grants ORDER BY 1, 2").fetchall()
        return [GrantRecord(g, p, bool(w)) for g, p, w in rows]

    def grants_of(self, person: str) -> list[GrantRecord]:
        """The grants of every group ``person`` is in."""
        rows = self._exec(
            "SELECT g.group_name, g.prefix, g.can_write FROM access_grants g"
            " JOIN access_members m ON m.group_name = g.group_name WHERE m.person = %s ORDER BY 1, 2",
            (person,),
        ).fetchall()
        return [GrantRecord(g, p, bool(w)) for g, p, w in rows]

    def set_owner(self, kind: str, item_id: str, person: str) -> None:
        """Record the owner of an answer or thread (kept if already set; nothing for a person who does not exist)."""
        query = (
            "INSERT INTO access_owners (kind, item_id, person) SELECT %s, %s, name FROM access_people WHERE name = %s"
            " ON CONFLICT DO NOTHING"
        )
        self._exec(query, (kind, item_id, person))

    def owner_of(self, kind: str, item_id: str) -> str | None:
        """Who owns ``item_id``, or None."""
        query = "SELECT person FROM access_owners WHERE kind = %s AND item_id = %s"
        row = self._exec(query, (kind, item_id)).fetchone()
        return None if row is None else str(row[0])

    def owned_by(self, kind: str, person: str) -> list[str]:
        """The ids of every ``kind`` that ``person`` owns."""
        query = "SELECT item_id FROM access_owners WHERE kind = %s AND person = %s ORDER BY item_id"
        return [str(r[0]) for r in self._exec(query, (kind, person)).fetchall()]
