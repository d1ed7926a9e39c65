"""Schemathesis against a real server: for every operation of ``/openapi.json``, generated requests (valid
ones, then ones that break the schema) get no 5xx and responses that follow the document.

Bounded and deterministic: ``max_examples`` per operation and mode, derandomized, no example database.
Questions go to ``kb_core.testing``'s scripted model (no real model runs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from kb_serve.openapi import document

MAX_EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def explore(operation: Any, mode: str, url: str) -> set[int]:
    """Call ``operation`` with ``MAX_EXAMPLES`` generated requests and check each response; the statuses seen."""
    seen: set[int] = set()

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=schemathesis.GenerationMode(mode)))
    def check(case: Any) -> None:
        response = case.call_and_validate(base_url=url, checks=CHECKS, timeout=60)
        seen.add(response.status_code)

    check()
    return seen


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_generated_requests_get_no_5xx_and_documented_responses(start_server: Callable[..., Any], mode: str) -> None:
    server = start_server()
    with server.client() as http:
        doc = http.get("/openapi.json").json()  # the document the app serves
    assert doc == document()
    schema = schemathesis.openapi.from_dict(doc)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 19
    if mode == "negative":  # (an operation without parameters or body has nothing to get wrong)
        inputs = {"parameters", "requestBody"}
        operations = [o for o in operations if inputs & set(doc["paths"][o.path][o.method.lower()])]
    statuses = {operation.label: explore(operation, mode, server.url) for operation in operations}

    assert all(statuses.values()), statuses  # every operation was called
    if mode == "positive":  # valid requests are answered, not only refused
        assert 200 in statuses["GET /health"] and 200 in statuses["GET /search"], statuses
    with server.client() as http:
        assert http.get("/health").status_code == 200
