"""People, groups and grants for kb-serve's access tests (test_access_people, test_access_probe and
bench/access_probe.py): made in a store of record, and an HTTP client per person."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from kb_core.plugin.stores import AccessStore
from kb_serve.access import hash_token

#: A group's grants: (prefix, write).
Grants = Mapping[str, Sequence[tuple[str, bool]]]


def token_of(name: str) -> str:
    """The bearer token these tests give the person ``name``."""
    return f"token-{name}"


def add_people(store: object, groups: Mapping[str, Sequence[str]], grants: Grants) -> dict[str, str]:
    """Keep each person of ``groups`` (person -> their groups; none: a person without any grant) and each
    group's ``grants`` in ``store``; returns each person's token."""
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


def as_person(url: str, token: str | None) -> httpx.Client:
    """An HTTP client of the server at ``url`` sending ``token`` (None: no Authorization header)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=60.0)


def cited(answer: dict[str, Any]) -> set[str]:
    """The documents an answer's citations and a refusal's nearest passages name."""
    shown = [*answer.get("citations", []), *answer.get("candidates", [])]
    return {c["citation"]["path"] for c in shown}
