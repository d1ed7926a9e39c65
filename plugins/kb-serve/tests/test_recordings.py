"""``GET /recordings/{path}``: a transcribed recording's own bytes, whole or a Range of them, only to a person
allowed to read it, only while the file is as ingested; anything else is a 404 (or a 409, a 416)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kb_serve_people import add_people, as_person
from kb_serve_recordings import HERON, start_with_recording

from kb_core import KnowledgeBase, load_config
from kb_serve.recordings import Unsatisfiable, byte_range

pytest.importorskip("kb_audio", reason="kb-audio (recordings) is not installed")

PATH = "/recordings/talks/heron-pump.ogg"


def test_a_recording_is_served_whole_and_by_range(
    start_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = start_with_recording(start_server, monkeypatch, tmp_path / "folder")
    data = HERON.read_bytes()
    with server.client() as client:
        whole = client.get(PATH)
        assert whole.status_code == 200 and whole.content == data
        assert whole.headers["content-type"] == "audio/ogg" and whole.headers["accept-ranges"] == "bytes"
        part = client.get(PATH, headers={"Range": "bytes=100-199"})
        assert part.status_code == 206 and part.content == data[100:200]
        assert part.headers["content-range"] == f"bytes 100-199/{len(data)}"
        assert client.get(PATH, headers={"Range": "bytes=-10"}).content == data[-10:]
        assert client.get(PATH, headers={"Range": f"bytes={len(data) - 5}-"}).content == data[-5:]
        past = client.get(PATH, headers={"Range": f"bytes={len(data)}-"})
        assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{len(data)}"
        assert client.get(PATH, headers={"Range": "pages=1-2"}).content == data  # another unit: the whole file
        assert client.get("/recordings/notes/heliograph.md").status_code == 404  # no recording
        assert client.get("/recordings/talks/nothing.ogg").status_code == 404
        assert client.get("/recordings/talks/../etc/passwd").status_code == 404
        (tmp_path / "folder" / "talks" / "heron-pump.ogg").write_bytes(data[:-1] + b"x")  # changed since
        assert client.get(PATH).status_code == 409


def test_a_person_without_the_grant_gets_a_404_for_the_bytes(
    start_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = start_with_recording(start_server, monkeypatch, tmp_path / "folder")
    with KnowledgeBase(load_config(kb_dir=server.kb_dir, environ={})) as kb:
        groups = {"ann": ["listeners"], "bob": ["writers"]}
        tokens = add_people(kb.store, groups, {"listeners": [("talks/", False)], "writers": [("notes/", True)]})
    assert as_person(server.url, tokens["ann"]).get(PATH).status_code == 200
    refused = as_person(server.url, tokens["bob"]).get(PATH, headers={"Range": "bytes=0-9"})
    assert refused.status_code == 404 and b"OggS" not in refused.content
    assert as_person(server.url, None).get(PATH).status_code == 401


@given(st.text(max_size=60) | st.from_regex(r"bytes=[0-9]{0,25}-[0-9]{0,25}", fullmatch=True), st.integers(0, 10**9))
def test_any_range_header_is_a_range_inside_the_file_the_whole_file_or_a_416(header: str, size: int) -> None:
    try:
        wanted = byte_range(header, size)
    except Unsatisfiable:
        return
    assert wanted is None or 0 <= wanted[0] <= wanted[1] < size
