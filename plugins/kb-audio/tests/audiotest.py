"""The kb-audio tests' recordings and a scripted transcriber (a module named conftest would clash with the core's)."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np
from kb_audio.transcript import Word

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: what heron.ogg and heron.mp4 say (fixtures/make.sh), and when each sentence starts, in seconds
SPOKEN = (
    ("The heron pump by the weir was serviced on Tuesday.", 1.0),
    ("Its seals were replaced and the filter was cleaned.", 6.405),
    ("The next inspection is planned for the spring.", 12.075),
)


def scripted_words(samples: np.ndarray) -> list[Word]:
    """The words of SPOKEN at their moments, a quarter of a second apart, those that fall inside SAMPLES."""
    out: list[Word] = []
    for sentence, start in SPOKEN:
        for n, text in enumerate(sentence.split()):
            at = start + n * 0.25
            if at < len(samples) / 16000:
                out.append(Word(" " + text, at, at + 0.2))
    return out


class ScriptedTranscriber:
    """A transcriber that hears SPOKEN, whatever the sound."""

    name = "scripted"
    language = "en"

    def words(self, samples: np.ndarray) -> list[Word]:
        """SPOKEN's words inside the samples."""
        return scripted_words(samples)


def wav_bytes(samples: np.ndarray, rate: int = 16000, channels: int = 1) -> bytes:
    """A 16-bit PCM WAV of float samples (-1..1); several channels when SAMPLES has that many columns."""
    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(channels)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return out.getvalue()
