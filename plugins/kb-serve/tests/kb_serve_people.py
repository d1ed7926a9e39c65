"""People, groups and grants for kb-serve's access tests (test_access_people, test_access_probe and
bench/access_probe.py): made in a store of record, and an HTTP client per person."""

from __future__ import annotations

from typing import Any

import httpx

from kb_core.testing.access_store import Grants, add_people, token_of

__all__ = ["Grants", "add_people", "as_person", "cited", "token_of"]  # (people are made by kb_core.testing's)


def as_person(url: str, token: str | None) -> httpx.Client:
    """An HTTP client of the server at ``url`` sending ``token`` (None: no Authorization header)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=60.0)


def cited(answer: dict[str, Any]) -> set[str]:
    """The documents an answer's citations and a refusal's nearest passages name."""
    shown = [*answer.get("citations", []), *answer.get("candidates", [])]
    return {c["citation"]["path"] for c in shown}
