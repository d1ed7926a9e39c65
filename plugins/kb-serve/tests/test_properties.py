"""Untrusted input, property-based: uploaded file names, question bodies, and the event-stream encoding."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core import LIMITS, AskOptions
from kb_serve.asking import ask_options, sse
from kb_serve.client import parse_sse
from kb_serve.settings import ApiError
from kb_serve.uploads import safe_name

EXTENSIONS = (".md", ".txt", ".html")
name_parts = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["..", ".", "", "a", "/", "\\", "x.md"]
)
names = st.lists(name_parts, max_size=6).map("/".join) | st.text(max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
ask_bodies = (
    st.fixed_dictionaries(
        {},
        optional={
            "question": json_values | st.text(max_size=30),
            "k": json_values | st.integers(),
            "mode": st.sampled_from(["lexical", "vector", "hybrid"]) | json_values,
            "temperature": json_values,
            "seed": json_values | st.integers(),
            "explain": json_values,
            "constrained": json_values,
            "backend": json_values,
        },
    )
    | json_values
)


@settings(max_examples=400, deadline=None)
@given(names)
def test_an_accepted_name_always_stays_inside_the_uploads_folder(name: str) -> None:
    folder = Path("/srv/kb/uploads")
    try:
        clean = safe_name(name, EXTENSIONS)
    except ApiError as exc:
        assert exc.status in (400, 415) and "\n" not in exc.message
        return
    assert clean == unicodedata.normalize("NFC", clean)
    assert not clean.startswith("/") and ".." not in clean.split("/")
    assert all(part and not part.startswith(".") for part in clean.split("/"))
    assert Path(clean).suffix.lower() in EXTENSIONS
    resolved = (folder / clean).resolve()
    assert resolved.is_relative_to(folder) and resolved != folder


def test_names_that_escape_or_hide_are_refused() -> None:
    for bad in [
        "../a.md",
        "a/../../b.md",
        "/etc/x.md",
        ".hidden.md",
        "a/.git/x.md",
        "a//b.md",
        "C:\\x.md",
        "a\x00.md",
        "a\u202e.md",
        " /x.md/ ",
        "",
        "noext",
        "x.exe",
    ]:
        try:
            safe_name(bad, EXTENSIONS)
        except ApiError:
            continue
        raise AssertionError(f"{bad!r} was accepted")
    assert safe_name("notes/Cafe\u0301.md", EXTENSIONS) == "notes/Caf\u00e9.md"


@settings(max_examples=400, deadline=None)
@given(ask_bodies)
def test_any_json_body_gives_options_or_one_clear_400(body: Any) -> None:
    try:
        question, options = ask_options(body)
    except ApiError as exc:
        assert exc.status == 400 and exc.message and "\n" not in exc.message
        return
    assert isinstance(options, AskOptions) and question.strip() and len(question) <= LIMITS.query_chars
    assert options.k is None or (isinstance(options.k, int) and 1 <= options.k <= LIMITS.k)
    assert options.seed is None or 0 <= options.seed < 2**32
    assert options.mode in (None, "lexical", "vector", "hybrid")
    assert options.temperature is None or options.temperature >= 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["token", "answer", "error"]), json_values), max_size=8))
def test_every_event_survives_the_stream_encoding(events: list[tuple[str, Any]]) -> None:
    body = b": comment\n\n" + b"".join(sse(name, data) for name, data in events)
    decoded = parse_sse(body.decode())
    assert len(decoded) == len(events)
    for (name, data), (got_name, got) in zip(events, decoded, strict=True):
        assert got_name == name
        assert json.dumps(got) == json.dumps(data)  # (NaN is not equal to itself)
