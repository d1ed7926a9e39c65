"""The contract of a store of record that keeps people, groups, grants and owners
(:class:`~kb_core.extend.access_store.AccessStore`). The SQLite store passes it, as kb-postgres does: subclass it
with your ``store_factory`` and ``store_options`` fixtures, as :mod:`kb_core.testing.shared_store` shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs
import pytest

from kb_core.extend.access_store import AccessStore, GrantRecord, PersonRecord
from kb_core.extend.record_store import RecordStore
from kb_core.service.people import hash_token
from kb_core.testing.store_kit import StoreKit
from kb_core.testing.store_ledger_contract import citation, ledger_answer, turn

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
        access.add_person("ann", "h1", "t")
        access.add_person("bob", "h2", "t")
        access.set_owner("thread", "t-1", "ann")
        access.set_owner("thread", "t-1", "bob")  # an owner is kept
        access.set_owner("thread", "t-2", "bob")
        access.set_owner("answer", "t-2", "ann")  # kinds apart
        access.set_owner("answer", "t-3", "nobody")  # no such person: nothing
        assert access.owner_of("thread", "t-1") == "ann" and access.owner_of("thread", "t-3") is None
        assert access.owned_by("thread", "bob") == ["t-2"] and access.owned_by("answer", "ann") == ["t-2"]
        assert access.owner_of("answer", "t-3") is None and access.owned_by("answer", "nobody") == []

    def test_a_name_given_again_inherits_nothing(self, access: AccessStore) -> None:
        access.add_person("ann", "h1", "t")
        access.set_owner("answer", "ans_1", "ann")
        access.set_owner("thread", "thr_1", "ann")
        assert access.remove_person("ann")
        assert access.owner_of("answer", "ans_1") is None and access.owner_of("thread", "thr_1") is None
        access.add_person("ann", "h2", "t")  # someone else, given the name later
        assert access.owned_by("answer", "ann") == [] and access.owned_by("thread", "ann") == []

    def test_an_owner_is_kept_with_what_it_owns_or_not_at_all(self, access: AccessStore) -> None:
        store = _ledger(access)
        access.add_person("ann", "h1", "t")

        def store_and_fail() -> None:
            with store.transaction():  # an answer stored and owned together, or neither
                store.insert_answer(ledger_answer("ans_lost"))
                access.set_owner("answer", "ans_lost", "ann")
                raise RuntimeError("the answer's transaction fails")

        with pytest.raises(RuntimeError):
            store_and_fail()
        assert store.answer_entry("ans_lost") is None and access.owner_of("answer", "ans_lost") is None
        _owned_turn(store, access, "thr_1", "ans_1", "ann")
        _owned_turn(store, access, "thr_1", "ans_2", "ann")
        _owned_turn(store, access, "thr_2", "ans_3", "ann")
        assert store.delete_thread("thr_1") == 2
        assert access.owner_of("thread", "thr_1") is None and access.owned_by("answer", "ann") == ["ans_3"]
        assert store.purge_answers(["ans_3"]) == ["ans_3"]  # its thread, left without a turn, goes with it
        assert access.owned_by("answer", "ann") == [] and access.owned_by("thread", "ann") == []

    def test_a_persons_listings_hold_only_their_own(self, access: AccessStore) -> None:
        store = _ledger(access)
        access.add_person("ann", "h1", "t")
        access.add_person("bob", "h2", "t")
        _owned_turn(store, access, "thr_a", "ans_a1", "ann", "2026-01-01T00:00:00Z")
        _owned_turn(store, access, "thr_b", "ans_b1", "bob", "2026-01-02T00:00:00Z")
        _owned_turn(store, access, "thr_a", "ans_a2", "ann", "2026-01-03T00:00:00Z")
        with store.transaction():
            store.insert_answer(ledger_answer("ans_x", "2026-01-04T00:00:00Z"))  # asked by nobody (the command line)
            store.insert_citations([attrs.evolve(citation("ans_a1", 1, "x.md"), state="stale")])
        entries, total = store.answer_entries(None, owner="ann")
        assert [e.answer_id for e in entries] == ["ans_a2", "ans_a1"] and total == 2
        entries, total = store.answer_entries(1, owner="ann")
        assert [e.answer_id for e in entries] == ["ans_a2"] and total == 2
        assert store.answer_entries(None, owner="ann", stale_only=True)[1] == 1
        assert store.answer_entries(None, owner="bob", stale_only=True) == ([], 0)
        assert store.answer_entries(None, owner="nobody") == ([], 0) and store.answer_entries(None)[1] == 4
        assert [t.thread_id for t in store.thread_summaries(None, owner="ann")] == ["thr_a"]
        assert [t.turns for t in store.thread_summaries(5, owner="ann")] == [2]
        assert [t.thread_id for t in store.thread_summaries(None, owner="bob")] == ["thr_b"]
        assert store.thread_summaries(None, owner="nobody") == [] and len(store.thread_summaries(None)) == 2


def _ledger(access: AccessStore) -> RecordStore:
    assert isinstance(access, RecordStore)
    return access


def _owned_turn(
    store: RecordStore, access: AccessStore, thread_id: str, answer_id: str, person: str, at: str = "2026-01-01"
) -> None:
    """A turn of ``thread_id`` (new or not) and its answer, both owned by ``person``, stored in one transaction."""
    with store.transaction():
        if store.thread_record(thread_id) is None:
            store.create_thread(thread_id, at)
            access.set_owner("thread", thread_id, person)
        store.insert_answer(ledger_answer(answer_id, at))
        store.append_turn(thread_id, turn(answer_id, f"asked {answer_id}", at))
        access.set_owner("answer", answer_id, person)
