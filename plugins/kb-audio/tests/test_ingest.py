"""End to end with the installed plugin (a scripted transcriber for Whisper): recordings ingested, searched, asked;
a file that is not sound fails alone, in one line."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from audiotest import FIXTURES

import kb_core

pytestmark = pytest.mark.usefixtures("scripted_speech")


def test_a_recording_is_ingested_searched_and_cited_by_its_moment(
    tmp_path: Path, open_kb: Callable[[], kb_core.KnowledgeBase]
) -> None:
    folder = tmp_path / "talks"
    folder.mkdir()
    shutil.copy(FIXTURES / "heron.ogg", folder / "pump-meeting.ogg")
    shutil.copy(FIXTURES / "heron.mp4", folder / "pump-video.mp4")
    (folder / "minutes.mp3").write_bytes(b"these are the minutes, saved as text by mistake\n" * 30)
    with open_kb() as kb:
        report = kb_core.ingest_paths(kb, [folder])
        assert sorted(report.added) == ["pump-meeting.ogg", "pump-video.mp4"]
        ((failed_path, reason),) = [(f.path, f.reason) for f in report.failed]
        assert failed_path == "minutes.mp3" and "not a recording kb can decode" in reason and "\n" not in reason

        hits = kb_core.search(kb, kb_core.SearchQuery(text="next inspection spring", mode="lexical", k=5)).hits
        top = hits[0]
        assert top.doc_path in ("pump-meeting.ogg", "pump-video.mp4")
        chunk = kb.store.get_chunks([top.chunk_id])[top.chunk_id]
        assert "[00:00:12] The next inspection is planned for the spring." in chunk.text

        answer = kb_core.ask(kb, "When is the next inspection of the heron pump planned?", save=False)
        assert answer.grounded, answer.note
        cited = answer.citations[0].citation
        assert cited.path in ("pump-meeting.ogg", "pump-video.mp4") and cited.start_line >= 1
        moments = kb.store.get_document(cited.path).metadata["moments"]
        assert moments["lines"] == [[1, 1.0], [2, 6.41], [3, 12.07]]
        assert moments["media"] == ("video" if cited.path.endswith(".mp4") else "audio")
        moment = answer.citations[0].moment  # the cited lines' moment, as a player's link names it
        assert moment is not None and moment.start == [1, 6, 12][cited.start_line - 1]
        assert moment.end is not None and moment.end >= moment.start + 1
        assert moment.fragment().startswith(f"t=00:00:{moment.start:02d},")

        again = kb_core.ingest_paths(kb, [folder])
        assert again.added == [] and [f.path for f in again.failed] == ["minutes.mp3"]
