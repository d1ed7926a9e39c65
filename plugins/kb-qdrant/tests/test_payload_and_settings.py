"""Pure parts: point ids, payloads, collection names and settings (metadata and ids come from user files)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core import Chunk, ConfigError
from kb_qdrant.index import collection_name
from kb_qdrant.payload import chunk_payload, metadata_pairs, point_id
from kb_qdrant.settings import QdrantSettings

relaxed = settings(deadline=None)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
metadata = st.dictionaries(st.text(max_size=15), scalars | st.lists(scalars, max_size=4), max_size=6)


@relaxed
@given(st.text(max_size=80))
def test_point_ids_are_stable_uuids(chunk_id: str) -> None:
    assert point_id(chunk_id) == point_id(chunk_id)
    assert uuid.UUID(point_id(chunk_id)).version == 5


def test_point_ids_differ_per_chunk() -> None:
    assert len({point_id(f"chunk-{i}") for i in range(1000)}) == 1000


@relaxed
@given(metadata)
def test_every_metadata_value_becomes_a_pair_a_filter_can_match(values: dict[str, object]) -> None:
    pairs = metadata_pairs(values)
    assert pairs == sorted(set(pairs))
    for key, value in values.items():
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            text = ("true" if item else "false") if isinstance(item, bool) else str(item)
            assert f"{key}={text}" in pairs


def test_the_payload_carries_the_citation() -> None:
    chunk = Chunk("c1", "a/b.md", 0, "Some   text\nhere", "h1", 3, 9, heading_path=("A", "B"))
    payload = chunk_payload(chunk, {"lang": "en", "tags": ["x", "y"], "draft": False})
    assert payload == {
        "chunk_id": "c1",
        "doc_path": "a/b.md",
        "start_line": 3,
        "end_line": 9,
        "heading_path": ["A", "B"],
        "content_hash": "h1",
        "snippet": "Some text here",
        "meta_kv": ["draft=false", "lang=en", "tags=x", "tags=y"],
    }


@relaxed
@given(st.text(min_size=1, max_size=120), st.integers(1, 8192), st.text(min_size=1, max_size=120))
def test_collection_names_are_safe_and_distinct(model_a: str, dims: int, model_b: str) -> None:
    name = collection_name("kb", model_a, dims)
    assert re.fullmatch(r"kb_[A-Za-z0-9_.-]+_\d+", name) and len(name) < 120
    if model_a != model_b:
        assert name != collection_name("kb", model_b, dims)
    assert name != collection_name("kb", model_a, dims + 1)


def test_local_mode_is_the_default_in_the_index_folder(tmp_path: Path) -> None:
    local = QdrantSettings.resolve(tmp_path, {}, {})
    assert local.url is None and local.path == tmp_path / "local" and local.where == f"local:{tmp_path / 'local'}"
    chosen = QdrantSettings.resolve(tmp_path, {"path": str(tmp_path / "elsewhere")}, {})
    assert chosen.path == tmp_path / "elsewhere"


def test_server_mode_url_key_and_environment(tmp_path: Path) -> None:
    server = QdrantSettings.resolve(tmp_path, {"url": "http://127.0.0.1:6333/", "api_key": "sk-q-77"}, {})
    assert (server.url, server.path, server.api_key, server.where) == (
        "http://127.0.0.1:6333",
        None,
        "sk-q-77",
        server.url,
    )
    assert "sk-q-77" not in repr(server)
    env = {"KB_QDRANT_URL": "https://cluster.example:6333", "MY_KEY": "secret"}
    from_env = QdrantSettings.resolve(tmp_path, {"url": "http://ignored", "api_key_env": "MY_KEY"}, env)
    assert from_env.url == "https://cluster.example:6333" and from_env.api_key == "secret"
    assert "secret" not in repr(from_env)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "ftp://x"}, "url = 'ftp://x' .* is not an http:// or https:// URL"),
        ({"collection_prefix": "my kb!"}, "collection_prefix = 'my kb!' .* is not 1-32 letters"),
        ({"timeout_s": "soon"}, "timeout_s = 'soon' .* is not a number from 0 to 86,400"),
        ({"api_key": ["sk-q-77"]}, r"api_key = \*\*\* .* is not text"),
    ],
)
def test_invalid_settings_are_config_errors(tmp_path: Path, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        QdrantSettings.resolve(tmp_path, options, {})
    assert "sk-q-77" not in str(raised.value)


def test_an_invalid_url_in_the_environment_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="invalid Qdrant URL 'ftp://x'"):
        QdrantSettings.resolve(tmp_path, {}, {"KB_QDRANT_URL": "ftp://x"})
