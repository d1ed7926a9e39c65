"""A recording for kb-serve's tests: kb-audio's ``heron.ogg`` (three sentences), ingested with a scripted
transcriber in place of Whisper (what it hears, and when, is known), under ``talks/``."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kb_core

HERON = Path(__file__).resolve().parents[2] / "kb-audio" / "fixtures" / "heron.ogg"
#: what heron.ogg says (kb-audio's fixtures/make.sh), and when each sentence starts, in seconds
SPOKEN = (
    ("The heron pump by the weir was serviced on Tuesday.", 1.0),
    ("Its seals were replaced and the filter was cleaned.", 6.405),
    ("The next inspection of the heron pump is planned for the spring.", 12.075),
)


def scripted_words(samples: np.ndarray) -> list[Any]:
    """SPOKEN's words at their moments, a quarter of a second apart, those inside SAMPLES."""
    from kb_audio.transcript import Word

    out = []
    for sentence, start in SPOKEN:
        for n, text in enumerate(sentence.split()):
            at = start + n * 0.25
            if at < len(samples) / 16000:
                out.append(Word(" " + text, at, at + 0.2))
    return out


def start_with_recording(start_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, folder: Path) -> Any:
    """A server whose knowledge base has ingested ``folder/talks/heron-pump.ogg`` (heard as SPOKEN)."""
    from kb_audio.parser import WhisperTranscriber

    monkeypatch.setattr(WhisperTranscriber, "words", lambda self, samples: scripted_words(samples))
    (folder / "talks").mkdir(parents=True)
    shutil.copy(HERON, folder / "talks" / "heron-pump.ogg")
    server = start_server()
    report = server.app.state.service.write(lambda kb: kb_core.ingest_paths(kb, [folder]))
    assert report.failed == [] and "talks/heron-pump.ogg" in report.added, report
    return server
