"""People, groups and grants as a store of record keeps them: the :class:`AccessStore` contract and its records.

A *person* has a name and a token (kept only as its SHA-256: shown once when made, never again); a
*group* has people; a *grant* gives a group a path prefix to read, or to read and write (upload,
delete). Answers and threads a person asked are *owned* by them (``set_owner``): a server with people
shows each person only what they own. The policy (what a token opens, what a route allows) is the
core's and the server's; a store keeps the rows. Both stores of record that ship with kb (SQLite and
kb-postgres) are AccessStores; ``kb_core.testing.AccessStoreContract`` proves one.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs


@attrs.frozen
class PersonRecord:
    """A person: their name, when they were made, and their groups (sorted)."""

    name: str
    created_at: str
    groups: tuple[str, ...] = ()


@attrs.frozen
class GrantRecord:
    """A group's grant of a path prefix: to read it, or (``write``) to read and write it."""

    group: str
    prefix: str
    write: bool = False


@runtime_checkable
class AccessStore(Protocol):
    """What a store of record keeps of people, groups, grants and owners (see the module's docstring).

    Each write is its own transaction unless made inside the store's ``transaction()``. Names are
    compared exactly; lists come in code point order. A method that names a person or group that
    does not exist returns False (or None) and changes nothing.
    """

    def add_person(self, name: str, token_hash: str, created_at: str) -> bool:
        """Keep a new person with the SHA-256 hex of their token; False when the name is taken."""
        ...

    def remove_person(self, name: str) -> bool:
        """Remove a person, their memberships and their ownership (what they asked stays stored, owned by nobody:
        a person given the name later inherits nothing), in one transaction."""
        ...

    def set_token(self, name: str, token_hash: str) -> bool:
        """Replace a person's token hash (the old token stops working at once)."""
        ...

    def person_of_token(self, token_hash: str) -> str | None:
        """The person whose token hashes to ``token_hash``, or None."""
        ...

    def has_people(self) -> bool:
        """Whether any person exists (a server then asks every request who it is)."""
        ...

    def people(self) -> list[PersonRecord]:
        """Every person, with their groups."""
        ...

    def add_group(self, name: str, created_at: str) -> bool:
        """Keep a new group; False when the name is taken."""
        ...

    def remove_group(self, name: str) -> bool:
        """Remove a group, its memberships and its grants."""
        ...

    def groups(self) -> list[str]:
        """Every group's name."""
        ...

    def add_member(self, group: str, person: str) -> bool:
        """Put ``person`` in ``group`` (True also when already there)."""
        ...

    def remove_member(self, group: str, person: str) -> bool:
        """Take ``person`` out of ``group``; False when they were not in it."""
        ...

    def set_grant(self, group: str, prefix: str, write: bool) -> bool:
        """Grant ``group`` the ``prefix`` to read (or read and write), replacing its grant of that prefix."""
        ...

    def revoke(self, group: str, prefix: str) -> bool:
        """Remove ``group``'s grant of ``prefix``; False when it had none."""
        ...

    def grants(self) -> list[GrantRecord]:
        """Every grant, by group then prefix."""
        ...

    def grants_of(self, person: str) -> list[GrantRecord]:
        """The grants of every group ``person`` is in (in the store's query: one round trip)."""
        ...

    def set_owner(self, kind: str, item_id: str, person: str) -> None:
        """Record that ``person`` owns the ``kind`` (``"answer"`` or ``"thread"``) ``item_id`` (kept if set;
        nothing when no such person exists). Inside ``transaction()`` it commits with the answer or turn stored
        there; deleting an answer or thread (``purge_answers``, ``delete_thread``) deletes its owner with it."""
        ...

    def owner_of(self, kind: str, item_id: str) -> str | None:
        """Who owns the ``kind`` ``item_id``, or None (made without people, or by the command line)."""
        ...

    def owned_by(self, kind: str, person: str) -> list[str]:
        """The ids of every ``kind`` that ``person`` owns."""
        ...


__all__ = ["AccessStore", "GrantRecord", "PersonRecord"]
