"""Decoding: every format to 16 kHz mono in bounded pieces; anything else one line."""

from __future__ import annotations

import io

import av
import numpy as np
import pytest
from audiotest import FIXTURES, wav_bytes
from kb_audio import decode

from kb_core import KbError


def _length(data: bytes) -> float:
    return sum(len(p.samples) for p in decode.pieces(data)) / decode.RATE


@pytest.mark.parametrize("name", ["heron.ogg", "heron.mp4"])
def test_a_recording_and_a_videos_sound_decode_to_their_length(name: str) -> None:
    (piece,) = decode.pieces((FIXTURES / name).read_bytes())
    assert piece.offset == 0 and piece.samples.dtype == np.float32
    assert abs(len(piece.samples) / decode.RATE - 15.84) < 0.1
    assert piece.total is not None and abs(piece.total - 15.84) < 0.1
    assert 0.01 < float(np.abs(piece.samples).max()) <= 1.0


def test_a_stereo_wav_at_44_khz_comes_out_mono_at_16_khz() -> None:
    tone = np.sin(np.linspace(0, 2 * np.pi * 440 * 3, 44100 * 3)) * 0.5
    stereo = np.stack([tone, -tone * 0.5], axis=1).reshape(-1)
    assert abs(_length(wav_bytes(stereo, rate=44100, channels=2)) - 3.0) < 0.02


def test_long_sound_comes_in_pieces_cut_in_a_quiet_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "PIECE_SECONDS", 20)
    monkeypatch.setattr(decode, "SEARCH_SECONDS", 12)
    seconds = np.arange(65 * decode.RATE) / decode.RATE
    loud = np.sin(2 * np.pi * 200 * seconds) * 0.5 * ((seconds % 10) < 6)  # 4 s of silence every 10 s
    got = list(decode.pieces(wav_bytes(loud)))
    assert len(got) >= 4 and sum(len(p.samples) for p in got) == len(loud)
    for before, after in zip(got, got[1:], strict=False):
        assert after.offset == pytest.approx(before.offset + len(before.samples) / decode.RATE)
        assert 6 <= after.offset % 10 < 10  # cut in a silence


def test_sound_over_the_limit_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "MAX_SECONDS", 2)
    with pytest.raises(KbError, match="longer than"):
        _length(wav_bytes(np.zeros(3 * decode.RATE)))


def _silent_video() -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=1)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        for _ in range(3):
            frame = av.VideoFrame.from_ndarray(np.zeros((64, 64, 3), dtype=np.uint8), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not a recording kb can decode"),
        (b"these are the minutes of the meeting, in plain text\n" * 40, "not a recording kb can decode"),
        (b"%PDF-1.7\n" + bytes(range(256)) * 8, "not a recording kb can decode"),
        (_silent_video(), "has no sound track"),
    ],
)
def test_what_is_not_sound_fails_in_one_line(data: bytes, reason: str) -> None:
    with pytest.raises(KbError) as caught:
        _length(data)
    assert reason in caught.value.message and "\n" not in caught.value.message
    assert caught.value.hint
