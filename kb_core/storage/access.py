"""The SQLite store's people, groups, grants and owners (the :class:`~kb_core.extend.access_store.AccessStore`
methods of :class:`~kb_core.storage.store.StoreOfRecord`; the tables are migrations 5 and 6)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from kb_core.extend.access_store import GrantRecord, PersonRecord


class SqliteAccess:
    """A mixin over the store's ``conn`` and ``transaction()``."""

    conn: Any
    _writing: Any

    def transaction(self) -> AbstractContextManager[Any]:  # (StoreOfRecord's)
        raise NotImplementedError

    def _change(self, sql: str, params: tuple[Any, ...]) -> int:
        """Run one write in its own transaction (or the caller's); the rows it changed."""
        with self._access_write():
            return int(self.conn.execute(sql, params).rowcount)

    def _access_write(self) -> AbstractContextManager[Any]:
        """This thread's open transaction, joined, or a new one."""
        with self._writing:  # (re-entrant: held here only by the thread inside a transaction, or by none)
            return _Joined(self) if self.conn.in_transaction else self.transaction()

    def add_person(self, name: str, token_hash: str, created_at: str) -> bool:
        """Keep a new person; False when the name is taken."""
        sql = "INSERT INTO access_people (name, token_hash, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
        return self._change(sql, (name, token_hash, created_at)) == 1

    def remove_person(self, name: str) -> bool:
        """Remove a person, their memberships and who owned what (migration 6's foreign key)."""
        return self._change("DELETE FROM access_people WHERE name = ?", (name,)) == 1

    def set_token(self, name: str, token_hash: str) -> bool:
        """Replace a person's token hash."""
        return self._change("UPDATE access_people SET token_hash = ? WHERE name = ?", (token_hash, name)) == 1

    def person_of_token(self, token_hash: str) -> str | None:
        """The person whose token hashes to ``token_hash``, or None."""
        row = self.conn.execute("SELECT name FROM access_people WHERE token_hash = ?", (token_hash,)).fetchone()
        return None if row is None else str(row[0])

    def has_people(self) -> bool:
        """Whether any person exists."""
        return self.conn.execute("SELECT 1 FROM access_people LIMIT 1").fetchone() is not None

    def people(self) -> list[PersonRecord]:
        """Every person with their groups."""
        rows = self.conn.execute(
            "SELECT p.name, p.created_at, m.group_name FROM access_people p"
            " LEFT JOIN access_members m ON m.person = p.name ORDER BY p.name, m.group_name"
        )
        found: dict[str, PersonRecord] = {}
        for name, created, group in rows:
            record = found.setdefault(name, PersonRecord(name, created))
            if group is not None:
                found[name] = PersonRecord(name, created, (*record.groups, group))
        return list(found.values())

    def add_group(self, name: str, created_at: str) -> bool:
        """Keep a new group; False when the name is taken."""
        sql = "INSERT INTO access_groups (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING"
        return self._change(sql, (name, created_at)) == 1

    def remove_group(self, name: str) -> bool:
        """Remove a group, its memberships and grants."""
        return self._change("DELETE FROM access_groups WHERE name = ?", (name,)) == 1

    def groups(self) -> list[str]:
        """Every group's name."""
        return [str(r[0]) for r in self.conn.execute("SELECT name FROM access_groups ORDER BY name")]

    def add_member(self, group: str, person: str) -> bool:
        """Put ``person`` in ``group``."""
        with self._access_write():
            if not self._exists(group, person):
                return False
            self.conn.execute(
                "INSERT INTO access_members (group_name, person) VALUES (?, ?) ON CONFLICT DO NOTHING", (group, person)
            )
            return True

    def _exists(self, group: str, person: str | None = None) -> bool:
        if self.conn.execute("SELECT 1 FROM access_groups WHERE name = ?", (group,)).fetchone() is None:
            return False
        return person is None or (
            self.conn.execute("SELECT 1 FROM access_people WHERE name = ?", (person,)).fetchone() is not None
        )

    def remove_member(self, group: str, person: str) -> bool:
        """Take ``person`` out of ``group``."""
        sql = "DELETE FROM access_members WHERE group_name = ? AND person = ?"
        return self._change(sql, (group, person)) == 1

    def set_grant(self, group: str, prefix: str, write: bool) -> bool:
        """Grant ``group`` the ``prefix``, replacing its grant of that prefix."""
        with self._access_write():
            if not self._exists(group):
                return False
            self.conn.execute(
                "INSERT INTO access_grants (group_name, prefix, can_write) VALUES (?, ?, ?)"
                " ON CONFLICT (group_name, prefix) DO UPDATE SET can_write = excluded.can_write",
                (group, prefix, int(write)),
            )
            return True

    def revoke(self, group: str, prefix: str) -> bool:
        """Remove ``group``'s grant of ``prefix``."""
        return self._change("DELETE FROM access_grants WHERE group_name = ? AND prefix = ?", (group, prefix)) == 1

    def grants(self) -> list[GrantRecord]:
        """Every grant, by group then prefix."""
        rows = self.conn.execute("SELECT group_name, prefix, can_write FROM access_grants ORDER BY group_name, prefix")
        return [GrantRecord(g, p, bool(w)) for g, p, w in rows]

    def grants_of(self, person: str) -> list[GrantRecord]:
        """The grants of every group ``person`` is in."""
        rows = self.conn.execute(
            "SELECT g.group_name, g.prefix, g.can_write FROM access_grants g"
            " JOIN access_members m ON m.group_name = g.group_name WHERE m.person = ? ORDER BY 1, 2",
            (person,),
        )
        return [GrantRecord(g, p, bool(w)) for g, p, w in rows]

    def set_owner(self, kind: str, item_id: str, person: str) -> None:
        """Record the owner of an answer or thread (kept if already set; nothing for a person who does not exist)."""
        sql = (
            "INSERT INTO access_owners (kind, item_id, person) SELECT ?, ?, name FROM access_people WHERE name = ?"
            " ON CONFLICT DO NOTHING"
        )
        self._change(sql, (kind, item_id, person))

    def owner_of(self, kind: str, item_id: str) -> str | None:
        """Who owns ``item_id``, or None."""
        sql = "SELECT person FROM access_owners WHERE kind = ? AND item_id = ?"
        row = self.conn.execute(sql, (kind, item_id)).fetchone()
        return None if row is None else str(row[0])

    def owned_by(self, kind: str, person: str) -> list[str]:
        """The ids of every ``kind`` that ``person`` owns."""
        sql = "SELECT item_id FROM access_owners WHERE kind = ? AND person = ? ORDER BY item_id"
        return [str(r[0]) for r in self.conn.execute(sql, (kind, person))]


class _Joined:
    """The caller's open transaction, joined (a write inside ``transaction()`` commits with it)."""

    def __init__(self, store: SqliteAccess) -> None:
        self.store = store

    def __enter__(self) -> Any:
        return self.store.conn

    def __exit__(self, *exc: object) -> None:
        return None
