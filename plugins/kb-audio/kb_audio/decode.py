"""A recording's bytes to 16 kHz mono samples, a piece at a time, through PyAV (the FFmpeg its wheel bundles).

One path for every format: WAV, MP3, M4A (AAC), Ogg (Vorbis, Opus), FLAC, and the first sound track of
a video (MP4, MKV, WebM). The samples come in pieces of about :data:`PIECE_SECONDS`, each cut at the
quietest tenth of a second near its end so that a word is rarely split, so memory stays bounded
however long the recording is; a recording longer than :data:`MAX_SECONDS` is refused.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import attrs
import numpy as np

from kb_core import KbError

RATE = 16000  #: samples per second, what Whisper reads
PIECE_SECONDS = 300  #: about this much sound is transcribed at once
SEARCH_SECONDS = 15  #: a piece ends at the quietest moment of its last this many seconds
MAX_SECONDS = 6 * 3600  #: a longer recording is refused (about 25 minutes of CPU on 2 cores)
HINT = "kb reads WAV, MP3, M4A, Ogg, FLAC and the sound of MP4, MKV and WebM videos; check the file plays"


@attrs.frozen
class Piece:
    """Samples (float32, -1..1, 16 kHz mono), where they start in the recording and its length as the file
    says (None when it does not), in seconds."""

    samples: np.ndarray
    offset: float
    total: float | None = None


def pieces(data: bytes, kind: str = "recording") -> Iterator[Piece]:
    """The recording's sound in pieces; a KbError (one line) when it is not sound kb can decode."""
    import av

    try:
        container = av.open(io.BytesIO(data), mode="r")
    except (av.FFmpegError, ValueError, OSError, EOFError, IndexError) as error:
        raise KbError(f"not a {kind} kb can decode ({_reason(error)})", hint=HINT) from None
    with container:
        stream = next((s for s in container.streams if s.type == "audio"), None)
        if stream is None:
            raise KbError(f"the {kind} has no sound track", hint=HINT)
        total = _seconds(stream, container)
        resampler = av.AudioResampler(format="flt", layout="mono", rate=RATE)
        held: list[np.ndarray] = []
        count = 0
        offset = 0
        try:
            for frame in _frames(container, stream, resampler):
                held.append(frame)
                count += len(frame)
                if offset + count > MAX_SECONDS * RATE:
                    raise KbError(
                        f"the {kind} is longer than {MAX_SECONDS // 3600} hours",
                        hint="split it into shorter files (for example with ffmpeg -f segment)",
                    )
                if count >= PIECE_SECONDS * RATE:
                    samples = np.concatenate(held)
                    cut = quiet_cut(samples)
                    yield Piece(samples[:cut], offset / RATE, total)
                    offset += cut
                    held, count = [samples[cut:]], len(samples) - cut
        except (av.FFmpegError, ValueError, OSError, EOFError, IndexError) as error:
            raise KbError(f"the {kind} is damaged at {offset + count} samples ({_reason(error)})", hint=HINT) from None
        if count:
            yield Piece(np.concatenate(held), offset / RATE, total)


def _frames(container: object, stream: object, resampler: object) -> Iterator[np.ndarray]:
    """Every decoded frame of STREAM as mono float32 at :data:`RATE`, the resampler's tail included."""
    for frame in container.decode(stream):  # type: ignore[attr-defined]
        for out in resampler.resample(frame):  # type: ignore[attr-defined]
            yield np.asarray(out.to_ndarray(), dtype=np.float32).reshape(-1)
    for out in resampler.resample(None):  # type: ignore[attr-defined]
        yield np.asarray(out.to_ndarray(), dtype=np.float32).reshape(-1)


def quiet_cut(samples: np.ndarray) -> int:
    """Where to end a piece: the start of the quietest tenth of a second in its last :data:`SEARCH_SECONDS`."""
    step = RATE // 10
    start = max(0, len(samples) - SEARCH_SECONDS * RATE)
    tail = samples[start : start + (len(samples) - start) // step * step]
    if len(tail) < step:
        return len(samples)
    energy = np.square(tail.reshape(-1, step)).sum(axis=1)
    return start + int(np.argmin(energy)) * step or len(samples)


def _seconds(stream: object, container: object) -> float | None:
    """The sound track's length as the file states it (the container's when the track's is not given)."""
    duration, base = getattr(stream, "duration", None), getattr(stream, "time_base", None)
    if duration and base:
        return float(duration * base)
    whole = getattr(container, "duration", None)
    return whole / 1_000_000 if whole else None


def _reason(error: BaseException) -> str:
    """The first line of an FFmpeg error, without its errno prefix."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text.split("] ", 1)[-1].removesuffix(": '<none>'")[:200]
