"""The contract of a store of record that keeps people, groups, grants and owners
(:class:`~kb_core.extend.access_store.AccessStore`). The SQLite store passes it, as kb-postgres does: subclass it
with your ``store_factory`` and ``store_options`` fixtures, as :mod:`kb_core.testing.shared_store` shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest

from kb_core.extend.access_store import AccessStore, GrantRecord, PersonRecord
from kb_core.extend.record_store import RecordStore
from kb_core.service.people import hash_token
from kb_core.testing.store_kit import StoreKit

__all__ = ["AccessStoreContract", "Grants", "add_people", "token_of"]

#: A group's grants, as :func:`add_people` takes them: (prefix, write).
Grants = Mapping[str, Sequence[tuple[str, bool]]]


def token_of(name: str) -> str:
    """The bearer token :func:`add_people` gives the person ``name`` (a test's, never a real one)."""
    return f"token-{name}"


def add_people(store: object, groups: Mapping[str, Sequence[str]], grants: Grants) -> dict[str, str]:
    """Keep each person of ``groups`` (person -> their groups; none: a person without any grant) and each
    group's ``grants`` in ``store`` (an AccessStore); returns each person's token (:func:`token_of`), for a
    test of a server with people."""
    assert isinstance(store, AccessStore)
    for group in sorted({g for names in groups.values() for g in names} | set(grants)):
        store.add_group(group, "t")
    for person, names in groups.items():
        store.add_person(person, hash_token(token_of(person)), "t")
        for group in names:
            store.add_member(group, person)
    for group, given in grants.items():
        for prefix, write in given:
            store.set_grant(group, prefix, write)
    return {person: token_of(person) for person in groups}


class AccessStoreContract(StoreKit):
    """What a store of people and grants must do. Provide ``store_factory`` and ``store_options`` as for
    :class:`~kb_core.testing.RecordStoreContract`."""

    @pytest.fixture
    def access(self, open_store: Callable[..., RecordStore]) -> AccessStore:
        """The store under test, new and empty."""
        store = open_store()
        assert isinstance(store, AccessStore)
        return store

    def test_people_are_named_once_and_found_by_token_hash(self, access: AccessStore) -> None:
        assert not access.has_people() and access.people() == []
        assert access.add_person("bob", "hash-b", "2024-01-01") and access.add_person("Ann", "hash-a", "2024-01-02")
        assert not access.add_person("bob", "hash-c", "2024-01-03")  # taken: nothing changes
        assert access.has_people() and [p.name for p in access.people()] == ["Ann", "bob"]  # code point order
        assert access.person_of_token("hash-b") == "bob" and access.person_of_token("hash-c") is None
        assert access.set_token("bob", "hash-new") and not access.set_token("nobody", "x")
        assert access.person_of_token("hash-b") is None and access.person_of_token("hash-new") == "bob"

    def test_grants_reach_a_person_through_their_groups(self, access: AccessStore) -> None:
        access.add_person("ann", "h1", "t")
        access.add_person("bob", "h2", "t")
        assert access.add_group("legal", "t") and access.add_group("eng", "t") and not access.add_group("eng", "t")
        assert access.add_member("legal", "ann") and access.add_member("eng", "ann") and access.add_member("eng", "bob")
        assert not access.add_member("legal", "nobody") and not access.add_member("nogroup", "ann")
        assert access.set_grant("legal", "contracts/", False) and access.set_grant("eng", "docs/", True)
        assert not access.set_grant("nogroup", "x/", True)
        assert access.set_grant("legal", "contracts/", True)  # replaced, not doubled
        assert access.grants_of("ann") == [GrantRecord("eng", "docs/", True), GrantRecord("legal", "contracts/", True)]
        assert access.grants_of("bob") == [GrantRecord("eng", "docs/", True)]
        assert access.people() == [PersonRecord("ann", "t", ("eng", "legal")), PersonRecord("bob", "t", ("eng",))]
        assert access.remove_member("eng", "bob") and not access.remove_member("eng", "bob")
        assert access.grants_of("bob") == []
        assert access.revoke("legal", "contracts/") and not access.revoke("legal", "contracts/")
        assert access.grants_of("ann") == [GrantRecord("eng", "docs/", True)]

    def test_removing_a_group_or_person_removes_what_hangs_on_it(self, access: AccessStore) -> None:
        access.add_person("ann", "h1", "t")
        access.add_group("eng", "t")
        access.add_member("eng", "ann")
        access.set_grant("eng", "docs/", False)
        assert access.remove_group("eng") and not access.remove_group("eng")
        assert access.groups() == [] and access.grants() == [] and access.grants_of("ann") == []
        access.add_group("eng", "t")
        access.add_member("eng", "ann")
        assert access.remove_person("ann") and access.people() == [] and not access.has_people()
        assert access.person_of_token("h1") is None and access.grants_of("ann") == []

    def test_owners_of_answers_and_threads(self, access: AccessStore) -> None:
        access.set_owner("thread", "t-1", "ann")
        access.set_owner("thread", "t-1", "bob")  # an owner is kept
        access.set_owner("thread", "t-2", "bob")
        access.set_owner("answer", "t-2", "ann")  # kinds apart
        assert access.owner_of("thread", "t-1") == "ann" and access.owner_of("thread", "t-3") is None
        assert access.owned_by("thread", "bob") == ["t-2"] and access.owned_by("answer", "ann") == ["t-2"]
