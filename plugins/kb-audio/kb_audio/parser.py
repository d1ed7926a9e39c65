"""The parser of recordings: decode, transcribe, and write the transcript a line per sentence with its moment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Protocol

import numpy as np

from kb_audio.decode import Piece, pieces
from kb_audio.transcript import Line, Word, lines
from kb_core.plugin import Block, ParsedDocument, Progress

AUDIO_EXTENSIONS = (".wav", ".mp3", ".m4a", ".ogg", ".oga", ".opus", ".flac")
VIDEO_EXTENSIONS = (".mp4", ".mkv", ".webm", ".mov")


class Transcriber(Protocol):
    """Speech to words: the words of 16 kHz mono float32 samples, their times in seconds from the first sample."""

    name: str
    language: str

    def words(self, samples: np.ndarray) -> list[Word]:
        """The words heard, in order."""
        ...


class WhisperTranscriber:
    """Whisper tiny.en through faster-whisper, with word timestamps (loaded on first use, once per process)."""

    name = "whisper-tiny.en"
    language = "en"

    def words(self, samples: np.ndarray) -> list[Word]:
        """Beam search 5, no voice-activity filter (it cut the first words of a sentence in our bench)."""
        from kb_audio.model import load

        segments, _ = load().transcribe(samples, language="en", beam_size=5, vad_filter=False, word_timestamps=True)
        return [Word(w.word, w.start, w.end) for s in segments for w in s.words or ()]


class AudioParser:
    """A recording (or a video's sound) as its transcript: ``[HH:MM:SS] sentence`` a line, one block each."""

    def __init__(self, transcriber: Transcriber, progress: Progress | None = None) -> None:
        self.transcriber = transcriber
        self.progress = progress

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Transcribe the file's bytes; a KbError (one line) when they are not sound kb can decode."""
        suffix = PurePosixPath(path).suffix.lower()
        kind = "video" if suffix in VIDEO_EXTENSIONS else "recording"
        heard: list[Line] = []
        seconds = 0.0
        for piece in pieces(data, kind):
            heard.extend(self._piece(piece))
            seconds = piece.offset + len(piece.samples) / 16000
            self._report(path, seconds, piece.total)
        blocks = tuple(Block(line.written(), n, n, (), "paragraph", verbatim=True) for n, line in enumerate(heard, 1))
        metadata = {
            "duration_seconds": round(seconds, 2),
            "transcribed_by": self.transcriber.name,
            "language": self.transcriber.language,
            # when each line is said, so that a citation of lines names its moment (kb_core.storage.moments)
            "moments": {
                "media": kind if kind == "video" else "audio",
                "duration": round(seconds, 2),
                "lines": [[n, round(line.start, 2)] for n, line in enumerate(heard, 1)],
            },
        }
        warnings = () if blocks else (f"no speech heard in {seconds:.0f} s of sound",)
        return ParsedDocument(title=PurePosixPath(path).stem, blocks=blocks, metadata=metadata, warnings=warnings)

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Recover the bytes of text decoded as UTF-8 (lossless when it succeeded) and parse them."""
        from kb_core import KbError

        if "\ufffd" in text:
            raise KbError(
                "this recording was decoded as text, losing bytes",
                hint="pass the file's bytes to parse_bytes (kb-core 0.2 and later do this when ingesting)",
            )
        return self.parse_bytes(text.encode("utf-8", errors="surrogatepass"), path)

    def _piece(self, piece: Piece) -> list[Line]:
        words = self.transcriber.words(piece.samples)
        shifted = (Word(w.text, w.start + piece.offset, w.end + piece.offset) for w in words)
        return lines(shifted)

    def _report(self, path: str, seconds: float, total: float | None) -> None:
        if self.progress is not None:
            done = int(seconds)
            self.progress(f"transcribe {path}", done, max(done, int(total or 0)))


def make_parser(transcriber: Callable[[], Transcriber] = WhisperTranscriber) -> Callable[..., AudioParser]:
    """A parser factory for kb (``factory(ParserContext) -> AudioParser``)."""

    def factory(ctx: object) -> AudioParser:
        return AudioParser(transcriber(), getattr(ctx, "progress", None))

    return factory
