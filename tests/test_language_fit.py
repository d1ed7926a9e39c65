"""A corpus in languages the embedder does not model is named at ingest and by kb doctor, with the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kbtest import LEXICAL, VECTOR

from kb_core.app import KnowledgeBase
from kb_core.cli.main import main
from kb_core.config import load_config
from kb_core.ingest.language_fit import language_fit
from kb_core.maintenance import doctor_report

DATA = Path(__file__).parent / "data"
INDEXES = f'["{LEXICAL}", "{VECTOR}"]'  # the test indexes; the verdict is the vector index's embedder's
ENGLISH = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "notes"


def write_chinese(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for line in (DATA / "zh_paragraphs.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        (folder / f"{row['id']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n", encoding="utf-8")
    return folder


@pytest.mark.slow
def test_chinese_notes_with_the_english_embedder_are_flagged_at_ingest_and_by_doctor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_INDEXES__ENABLED", INDEXES)
    notes = write_chinese(tmp_path / "notes")
    kb_dir = tmp_path / "kb"
    assert main(["--kb", str(kb_dir), "ingest", str(notes)]) == 0
    err = capsys.readouterr().err
    assert "embedder minilm models English" in err and "han" in err
    assert 'name = "multilingual"' in err and "kb reindex" in err
    assert len(err.strip().splitlines()) == 1

    kb = KnowledgeBase(load_config(None, kb_dir, {"indexes.enabled": [LEXICAL, VECTOR]}, environ={}))
    fit = language_fit(kb)
    assert fit is not None and fit.mismatch and fit.unmodeled_share > 0.9
    assert fit.suggestion == "multilingual"
    problems = [p for p in doctor_report(kb).problems if p.component == "embedder"]
    assert len(problems) == 1 and "multilingual" in problems[0].fix
    kb.close()


@pytest.mark.slow
def test_english_notes_are_not_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_INDEXES__ENABLED", INDEXES)
    kb_dir = tmp_path / "kb"
    assert main(["--kb", str(kb_dir), "ingest", str(ENGLISH), "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    json.loads(captured.out)
    kb = KnowledgeBase(load_config(None, kb_dir, {"indexes.enabled": [LEXICAL, VECTOR]}, environ={}))
    fit = language_fit(kb)
    assert fit is not None and not fit.mismatch and fit.unmodeled_share == 0.0
    assert not [p for p in doctor_report(kb).problems if p.component == "embedder"]
    kb.close()


def test_no_vector_index_no_verdict(tmp_path: Path) -> None:
    kb = KnowledgeBase(load_config(None, tmp_path / "kb", {"indexes.enabled": [LEXICAL]}, environ={}))
    assert language_fit(kb) is None
    kb.close()
