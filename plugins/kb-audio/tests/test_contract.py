"""kb-audio's parser holds kb's parser contract: real recordings parse to ordered blocks, any bytes parse or fail
in one line (the scripted transcriber stands in for Whisper)."""

from __future__ import annotations

import numpy as np
import pytest
from audiotest import FIXTURES, SPOKEN, ScriptedTranscriber, wav_bytes
from kb_audio import AudioParser
from kb_audio.transcript import Word

from kb_core.testing import BytesParserContract


class TestAudioParser(BytesParserContract):
    samples = ((FIXTURES / "heron.ogg").read_bytes(), (FIXTURES / "heron.mp4").read_bytes())
    sample_path = "talks/heron.ogg"

    @pytest.fixture
    def parser(self) -> AudioParser:
        return AudioParser(ScriptedTranscriber())


def test_each_sentence_is_a_line_that_starts_with_its_moment() -> None:
    seen: list[tuple[str, int, int]] = []
    parser = AudioParser(ScriptedTranscriber(), progress=lambda stage, done, total: seen.append((stage, done, total)))
    document = parser.parse_bytes((FIXTURES / "heron.mp4").read_bytes(), "talks/heron.mp4")
    assert document.title == "heron" and document.warnings == ()
    assert [b.text for b in document.blocks] == [
        "[00:00:01] The heron pump by the weir was serviced on Tuesday.",
        "[00:00:06] Its seals were replaced and the filter was cleaned.",
        "[00:00:12] The next inspection is planned for the spring.",
    ]
    assert [(b.start_line, b.end_line) for b in document.blocks] == [(1, 1), (2, 2), (3, 3)]
    assert (
        document.metadata["transcribed_by"] == "scripted" and abs(document.metadata["duration_seconds"] - 15.84) < 0.1
    )
    assert seen == [("transcribe talks/heron.mp4", 15, 15)]
    assert len(SPOKEN) == len(document.blocks)


def test_silence_gives_no_lines_and_says_so() -> None:
    class Deaf(ScriptedTranscriber):
        def words(self, samples: np.ndarray) -> list[Word]:
            return []

    document = AudioParser(Deaf()).parse_bytes(wav_bytes(np.zeros(16000 * 2)), "quiet.wav")
    assert document.blocks == () and document.warnings == ("no speech heard in 2 s of sound",)
