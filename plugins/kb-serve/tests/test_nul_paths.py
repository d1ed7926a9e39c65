"""A path, prefix, glob or id holding a NUL (or, in a JSON body, a lone surrogate) is bad input on every route
that hands one to a store: one 400 line, on SQLite as on PostgreSQL, whose text cannot hold a NUL (it was a 507
there, and a 404 on SQLite). In a URL a lone surrogate cannot arrive as one (its bytes are not UTF-8 and decode to
U+FFFD); in a JSON body it can, as a ``\\ud800`` escape."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core import KnowledgeBase, ingest_paths, load_config

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
JSON = {"Content-Type": "application/json"}
#: Every route that takes a path, prefix, glob or id, as (method, target with {} for the value, JSON body or None).
ROUTES = [
    ("GET", "/documents?prefix={}", None),
    ("GET", "/documents/{}", None),
    ("DELETE", "/documents/{}", None),
    ("GET", "/documents/{}/pages/1.png", None),
    ("GET", "/search?q=heliograph&path={}", None),
    ("GET", "/answers/{}", None),
    ("GET", "/threads/{}", None),
    ("DELETE", "/threads/{}", None),
    ("POST", "/threads/{}/ask", {"question": "and then?"}),
]
BODY_ROUTES = [  # a value in a JSON body: a lone surrogate can arrive too
    (
        "/v1/chat/completions",
        lambda v: {"model": "kb", "messages": [{"role": "user", "content": "hi"}], "kb_thread": v},
    ),
]
around = st.text(st.characters(codec="utf-8", exclude_characters="\x00/?#%"), max_size=12)
with_nul = st.builds(lambda a, b: f"{a}\x00{b}", st.sampled_from(["", "web/", "notes/heliograph.md", "thr_"]), around)
with_fault = st.builds(
    lambda a, fault, b: f"{a}{fault}{b}", around, st.sampled_from(["\x00", "\ud800", "\udfff", "\udc80"]), around
)


def refused_as_bad_input(reply: httpx.Response) -> None:
    """A 400 whose one line names the NUL or the character that is not valid Unicode."""
    assert reply.status_code == 400, (reply.request.method, str(reply.request.url)[:200], reply.text[:300])
    assert "\n" not in reply.text
    said = reply.json()["error"]
    line = said if isinstance(said, str) else said["message"]  # (/v1: OpenAI's error shape)
    assert "NUL character" in line or "not valid Unicode" in line, said


def check_routes(url: str) -> None:
    """Hypothesis over every route's path parameter: each value with a NUL (or, in a body, a lone surrogate) is a
    400 line, and the server goes on answering."""
    with httpx.Client(base_url=url, timeout=60.0) as http:

        @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(value=with_nul, route=st.sampled_from(ROUTES))
        def in_the_url(value: str, route: tuple[str, str, Any]) -> None:
            method, target, body = route
            if not target.startswith("/documents/"):  # (one segment: a "/" would be another route, not this one)
                value = value.replace("/", "")
            encoded = quote(value, safe="/")
            content = json.dumps(body).encode() if body is not None else None
            reply = http.request(method, target.format(encoded), content=content, headers=JSON if body else {})
            refused_as_bad_input(reply)

        @settings(max_examples=20, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(value=with_fault, route=st.sampled_from(BODY_ROUTES))
        def in_a_body(value: str, route: tuple[str, Callable[[str], Any]]) -> None:
            path, body = route
            reply = http.post(path, content=json.dumps(body(value)).encode(), headers=JSON)
            refused_as_bad_input(reply)

        in_the_url()
        in_a_body()
        assert http.get("/documents/web%00x.html").status_code == 400  # the two requests
        assert http.get("/documents", params={"prefix": "web\x00"}).status_code == 400
        assert http.get("/documents").json()["documents"]  # and it goes on answering


def test_a_nul_in_any_path_is_a_400_on_sqlite(start_server: Callable[..., Any]) -> None:
    check_routes(start_server().url)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server from pgserver (kb_postgres.testing), for this module; skipped without kb-postgres or
    pgserver."""
    testing = pytest.importorskip("kb_postgres.testing")
    with ExitStack() as stack:
        try:
            url = stack.enter_context(testing.postgres_server(prefix="kb-serve-nul-pg-"))
        except ImportError as exc:
            pytest.skip(f"could not import 'pgserver': {exc}")
        yield url


def test_a_nul_in_any_path_is_a_400_on_postgres(
    start_server: Callable[..., Any], postgres_url: str, tmp_path: Path
) -> None:
    overrides = {
        "store.backend": "postgres",
        "backends.postgres.url": postgres_url,
        "backends.postgres.schema": f"kb_nul_{uuid.uuid4().hex[:10]}",
    }
    kb_dir = tmp_path / "pg-kb"
    with KnowledgeBase(load_config(kb_dir=kb_dir, overrides=overrides, environ={})) as kb:
        ingest_paths(kb, [CORPUS / "web"])
    check_routes(start_server(kb_dir=kb_dir, overrides=overrides).url)
