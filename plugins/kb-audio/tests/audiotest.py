"""The kb-audio tests' helpers (a module named conftest would clash with the core's); the recording's words and the
scripted transcriber are the public :mod:`kb_audio.testing`'s."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np
from kb_audio.testing import SPOKEN, ScriptedTranscriber, scripted_words

__all__ = ["FIXTURES", "SPOKEN", "ScriptedTranscriber", "scripted_words", "wav_bytes"]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def wav_bytes(samples: np.ndarray, rate: int = 16000, channels: int = 1) -> bytes:
    """A 16-bit PCM WAV of float samples (-1..1); several channels when SAMPLES has that many columns."""
    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(channels)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return out.getvalue()
