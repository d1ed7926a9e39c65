"""A recording for kb-serve's tests: kb-audio's ``heron.ogg`` (three sentences), ingested with a scripted
transcriber in place of Whisper (what it hears, and when, is known), under ``talks/``."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kb_core

HERON = Path(__file__).resolve().parents[2] / "kb-audio" / "fixtures" / "heron.ogg"


def start_with_recording(start_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, folder: Path) -> Any:
    """A server whose knowledge base has ingested ``folder/talks/heron-pump.ogg`` (heard as kb_audio.testing.SPOKEN)."""
    from kb_audio.parser import WhisperTranscriber
    from kb_audio.testing import scripted_words

    monkeypatch.setattr(WhisperTranscriber, "words", lambda self, samples: scripted_words(samples))
    (folder / "talks").mkdir(parents=True)
    shutil.copy(HERON, folder / "talks" / "heron-pump.ogg")
    server = start_server()
    report = server.app.state.service.write(lambda kb: kb_core.ingest_paths(kb, [folder]))
    assert report.failed == [] and "talks/heron-pump.ogg" in report.added, report
    return server
