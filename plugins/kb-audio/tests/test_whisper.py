"""The real model: Whisper tiny.en hears the fixture's sentences at their moments; and ``kb ingest`` through the CLI
exits 4 naming the one file that is not sound."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from audiotest import FIXTURES, SPOKEN
from kb_audio import AudioParser
from kb_audio.model import FILES, check_files, model_dir
from kb_audio.parser import WhisperTranscriber
from kb_audio.transcript import read_stamp

from kb_core import ModelUnavailableError

pytestmark = pytest.mark.slow


def test_the_installed_model_files_are_the_pinned_ones(tmp_path: Path) -> None:
    check_files(model_dir())
    changed = (model_dir() / "config.json").read_text().replace("50257", "50258", 1)  # the same size
    (tmp_path / "config.json").write_text(changed)
    with pytest.raises(ModelUnavailableError, match="not the file kb-audio knows"):
        check_files(tmp_path, {"config.json": FILES["config.json"]})
    with pytest.raises(ModelUnavailableError, match="missing"):
        check_files(tmp_path, {"model.bin": FILES["model.bin"]})


@pytest.mark.parametrize("name", ["heron.ogg", "heron.mp4"])
def test_whisper_hears_each_sentence_within_five_seconds_of_its_moment(name: str) -> None:
    document = AudioParser(WhisperTranscriber()).parse_bytes((FIXTURES / name).read_bytes(), name)
    text = " ".join(b.text for b in document.blocks).lower()
    for key in ("serviced on tuesday", "seals", "filter was cleaned", "next inspection is planned for the spring"):
        assert key in text, text
    for sentence, start in SPOKEN:
        last = sentence.lower().split()[-1].strip(".")
        line = next(b.text for b in document.blocks if last in b.text.lower())
        moment = read_stamp(line)
        assert moment is not None and abs(moment - start) <= 5, line


def test_kb_ingest_exits_4_and_names_the_file_that_is_not_sound(tmp_path: Path) -> None:
    folder = tmp_path / "talks"
    folder.mkdir()
    shutil.copy(FIXTURES / "heron.ogg", folder / "heron.ogg")
    (folder / "notes.m4a").write_bytes(b"not sound at all\n" * 50)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | {"KB_DIR": str(tmp_path / "kb")}
    kb = str(Path(sys.executable).parent / "kb")
    done = subprocess.run([kb, "ingest", str(folder), "--json"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 4, done.stderr
    report = json.loads(done.stdout)
    assert report["added"] == ["heron.ogg"]
    ((failed),) = report["failed"]
    assert failed["path"] == "notes.m4a" and "not a recording kb can decode" in failed["reason"]
    assert "\n" not in failed["reason"]
    found = subprocess.run(
        [kb, "search", "filter cleaned", "--json"], capture_output=True, text=True, env=env, timeout=600
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["doc_path"] == "heron.ogg"
