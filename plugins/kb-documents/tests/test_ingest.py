"""End to end: ``kb ingest`` over a folder of good and bad PDFs and DOCX files, then ``kb search``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import kb_core
from kb_documents.assemble import page_of_line
from kb_documents.cli import resolve

BAD_FILES = ("bomb.docx", "corrupt.docx", "corrupt.pdf", "encrypted.pdf", "scanned.pdf", "truncated.pdf")
#: What kb reports for each bad file (the parser's own line).
REASONS = {
    "bomb.docx": "word/document.xml in the .docx would inflate",
    "corrupt.docx": "not a valid .docx",
    "corrupt.pdf": "the PDF is damaged",
    "encrypted.pdf": "the PDF is encrypted",
    "scanned.pdf": "no text layer; OCR is off",  # the CLI tests turn OCR off (see _env): test_ocr_ingest.py reads scans
    "truncated.pdf": "the PDF is truncated",
}
PLUGIN = Path(__file__).resolve().parent.parent


@pytest.fixture
def folder(tmp_path: Path, fixtures_dir: Path) -> Path:
    """A notes folder holding every good and bad fixture side by side."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for source in [*sorted((fixtures_dir / "good").iterdir()), *sorted((fixtures_dir / "bad").iterdir())]:
        shutil.copy(source, docs / source.name)
    return docs


def test_ingest_stores_good_documents_reports_each_bad_one_and_search_cites_the_page(
    folder: Path, tmp_path: Path, config_file: Path
) -> None:
    with kb_core.open_kb(config_path=config_file, kb_dir=tmp_path / "kb") as kb:
        report = kb_core.ingest_paths(kb, [folder])
        failed = [w.path for w in report.failed]
        assert sorted(set(failed)) == sorted(failed)  # one line per file
        assert {"report.pdf", "columns.pdf"} <= set(report.added)
        assert {"handbook.docx", "brochure.pdf"} <= set(report.added)
        assert sorted(failed) == sorted(BAD_FILES)
        assert all("\n" not in w.reason for w in report.failed)
        hits = kb_core.search(kb, kb_core.SearchQuery(text="transformer fault Ridgeback", mode="lexical", k=3)).hits
        top = hits[0]
        assert top.doc_path == "report.pdf"
        document = kb.store.get_document("report.pdf")
        assert document is not None
        assert page_of_line(document.metadata["page_lines"], top.citation.start_line) == 2
        assert page_of_line(document.metadata["page_lines"], top.citation.end_line) == 2
        assert top.heading_path[0] == "Page 2"
        (linked,) = resolve(kb.store, [str(top.citation)])
        assert linked.link == f"report.pdf#page=2&L{top.citation.start_line}-L{top.citation.end_line}"
        # Ingesting again changes nothing stored and reports the same failures.
        again = kb_core.ingest_paths(kb, [folder])
        assert again.added == [] and again.unchanged == len(report.added)
        assert sorted(w.path for w in again.failed) == sorted(failed)


def test_the_page_limit_comes_from_the_configuration(fixtures_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[backends.documents]\nmax_pages = 2\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(fixtures_dir / "good" / "report.pdf", folder)
    shutil.copy(fixtures_dir / "good" / "columns.pdf", folder)
    with kb_core.open_kb(config_path=config, kb_dir=tmp_path / "kb") as kb:
        report = kb_core.ingest_paths(kb, [folder])
    assert report.added == ["columns.pdf"]
    (failure,) = report.failed
    assert failure.path == "report.pdf" and "the PDF has 3 pages, over the limit of 2" in failure.reason


def _kb(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "kb"), *args]
    cwd = env["KB_HOME"] + "-cwd"  # a working folder of its own, not the worktree
    os.makedirs(cwd, exist_ok=True)
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, cwd=cwd, check=False)


def _env(tmp_path: Path, config_file: Path, pythonpath: str = "") -> dict[str, str]:
    config_file.write_text('[ingest]\nocr = "off"\n')  # the same reasons whether an OCR engine is installed or not
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
    env["KB_CONFIG"] = str(config_file)
    env["KB_HOME"] = str(tmp_path / "kb")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


@pytest.mark.slow
def test_cli_ingest_then_search(folder: Path, tmp_path: Path, config_file: Path) -> None:
    env = _env(tmp_path, config_file)
    ingest = _kb(env, "ingest", str(folder), "--json")
    assert ingest.returncode == 4, ingest.stderr  # finished, some files failed
    payload = json.loads(ingest.stdout)
    assert payload["schema_version"] == "ingest_report.v1"
    assert {"report.pdf", "columns.pdf"} <= set(payload["added"])
    assert "Traceback" not in ingest.stderr
    search = _kb(env, "search", "inverter firmware certified", "--mode", "lexical", "--json")
    assert search.returncode == 0, search.stderr
    hit = json.loads(search.stdout)["hits"][0]
    assert hit["doc_path"] in ("report.pdf", "columns.pdf")
    assert hit["heading_path"][0] == ("Page 3" if hit["doc_path"] == "report.pdf" else "Page 1")
    citation = f"{hit['doc_path']}#L{hit['citation']['start_line']}-L{hit['citation']['end_line']}"
    pages = _kb(env, "pages", citation, "--json")
    assert pages.returncode == 0, pages.stderr
    payload = json.loads(pages.stdout)
    jsonschema.validate(payload, json.loads((PLUGIN / "kb_documents/schemas/page_citations.v1.json").read_text()))
    page = 3 if hit["doc_path"] == "report.pdf" else 1
    assert payload["citations"][0]["link"] == citation.replace("#L", f"#page={page}&L")
    missing = _kb(env, "pages", "nowhere.pdf#L1-L2")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no document" in missing.stderr


@pytest.mark.slow
def test_kb_ingest_reads_docx_and_binary_pdfs_and_reports_bad_files_in_their_own_words(
    folder: Path, tmp_path: Path, config_file: Path
) -> None:
    env = _env(tmp_path, config_file)
    ingest = _kb(env, "ingest", str(folder), "--json")
    assert ingest.returncode == 4, ingest.stderr
    payload = json.loads(ingest.stdout)
    assert sorted(payload["added"]) == ["brochure.pdf", "columns.pdf", "handbook.docx", "report.pdf"]
    reasons = {item["path"]: item["reason"] for item in payload["failed"]}
    assert sorted(reasons) == sorted(BAD_FILES)
    for name, reason in REASONS.items():
        assert reasons[name].startswith(reason), reasons[name]
    tours = json.loads(_kb(env, "search", "guided tours Saturday", "--mode", "lexical", "--json").stdout)["hits"][0]
    assert (tours["doc_path"], tours["heading_path"][0]) == ("brochure.pdf", "Page 1")  # a compressed, binary PDF
    search = _kb(env, "search", "duty engineer pager", "--mode", "lexical", "--json")
    hit = json.loads(search.stdout)["hits"][0]
    assert hit["doc_path"] == "handbook.docx"
    assert hit["heading_path"] == ["Operator Handbook", "Contacts"]
    start, end = hit["citation"]["start_line"], hit["citation"]["end_line"]
    assert start <= 12 <= end  # paragraph 12 of the handbook names the pager
