"""Saved answers stay true as the notes change: re-checked after every ingest that changes a cited document."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from kbtest import REPO, TEST_INDEXES_ENV, run_kb

from kb_core.output import schema
from kb_core.storage.store import StoreOfRecord

NOTE = "# Heliograph\n\nThe daemon listens on port 8080 and logs to syslog.\n"
QUESTION = "Which port does the daemon listen on?"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    plugins = TEST_INDEXES_ENV["KB_PLUGIN_MODULES"] + ",extractive_backend"
    return TEST_INDEXES_ENV | {
        "KB_HOME": str(tmp_path / "kb"),
        "KB_PLUGIN_MODULES": plugins,
        "PYTHONPATH": str(REPO / "tests"),
        "KB_MODELS__LLM__BACKEND": "extractive",
        "KB_INDEXES__ENABLED": '["test-lexical"]',
        "KB_SEARCH__MODE": "lexical",
    }


def _json(env: dict[str, str], *args: str, code: int | None = 0) -> dict:
    result = run_kb(*args, "--json", env=env)
    assert code is None or result.returncode == code, result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, schema(data["schema_version"]))
    return data


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A notes folder holding ``h.md`` (NOTE)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "h.md").write_text(NOTE)
    return folder


def _ask(env: dict[str, str], notes: Path) -> str:
    assert run_kb("ingest", str(notes), env=env).returncode == 0
    answer = _json(env, "ask", QUESTION)
    assert answer["grounded"] and answer["citations"][0]["ref"].startswith("h.md#L1-")
    return str(answer["answer_id"])


@pytest.mark.slow
def test_a_line_added_above_reanchors_and_the_answer_still_holds(env: dict[str, str], notes: Path) -> None:
    answer_id = _ask(env, notes)
    (notes / "h.md").write_text("Introduction.\n\n" + NOTE)
    ingest = run_kb("ingest", str(notes), env=env)
    assert "no longer hold" not in ingest.stdout
    shown = _json(env, "answers", "show", answer_id)
    assert shown["state"] == "reanchored"
    assert (shown["citations"][0]["start_line"], shown["citations"][0]["state"]) == (3, "reanchored")
    assert _json(env, "answers", "list", "--stale", code=1)["total"] == 0


@pytest.mark.slow
def test_a_changed_number_makes_the_answer_stale_with_both_wordings(env: dict[str, str], notes: Path) -> None:
    answer_id = _ask(env, notes)
    (notes / "h.md").write_text(NOTE.replace("8080", "9090"))
    ingest = run_kb("ingest", str(notes), env=env)
    assert "1 saved answer(s) no longer hold: kb answers list --stale" in ingest.stdout
    report = _json(env, "ingest", str(notes))  # nothing changed now: nothing re-checked
    assert report["answers"] is None
    listed = _json(env, "answers", "list", "--stale")
    assert [a["answer_id"] for a in listed["answers"]] == [answer_id] and listed["answers"][0]["state"] == "stale"
    (citation,) = _json(env, "answers", "show", answer_id)["citations"]
    assert (citation["state"], citation["reason"]) == ("stale", "changed")
    assert "8080" in citation["cited_text"] and "9090" in citation["now_text"]
    human = run_kb("answers", "show", answer_id, env=env).stdout
    assert "was:" in human and "now:" in human
    check = _json(env, "answers", "check", code=1)
    assert (check["stale"], check["valid"]) == (1, 0) and check["stale_answers"][0]["answer_id"] == answer_id
    again = _json(env, "ask", "--again", answer_id)
    assert again["previous"]["state"] == "stale" and "the answer's text changed" in again["changes"]
    assert "9090" in again["answer"]["answer"]


@pytest.mark.slow
def test_a_deleted_file_makes_the_answer_stale(env: dict[str, str], notes: Path) -> None:
    (notes / "other.md").write_text("# Other\n\nSomething else entirely.\n")
    answer_id = _ask(env, notes)
    (notes / "h.md").unlink()
    assert "1 saved answer(s) no longer hold" in run_kb("ingest", str(notes), env=env).stdout
    (citation,) = _json(env, "answers", "show", answer_id)["citations"]
    assert (citation["state"], citation["reason"]) == ("stale", "removed")


@pytest.mark.slow
def test_a_folder_moved_with_repoint_keeps_the_answer_valid(tmp_path: Path, env: dict[str, str], notes: Path) -> None:
    answer_id = _ask(env, notes)
    moved = tmp_path / "moved"
    shutil.move(notes, moved)
    assert run_kb("ingest", "--repoint", str(moved), env=env).returncode == 0
    assert _json(env, "answers", "show", answer_id)["state"] == "valid"
    assert _json(env, "answers", "check")["valid"] == 1


def test_answers_stored_before_the_migration_are_checked_against_their_chunks(tmp_path: Path) -> None:
    store = StoreOfRecord(tmp_path / "kb")
    from kb_core.testing import store_document

    (chunk,) = store_document(store, "h.md", ["The daemon listens on port 8080.\nIt logs to syslog."])
    citation = {"marker": 1, "chunk_id": chunk.chunk_id, "ref": "h.md#L1-L2", "score": 0.9, "heading_path": []}
    citation["citation"] = {"path": "h.md", "start_line": chunk.start_line, "end_line": chunk.end_line}
    gone = dict(citation, chunk_id="h.md#gone", marker=2)
    with store.transaction():
        undone = ("access_owners", "access_grants", "access_members", "access_groups", "access_people")  # 5
        for table in ("turns", "threads", "answer_citations", *undone):  # back to schema 2: migrations 3 to 5 undone
            store.conn.execute(f"DROP TABLE {table}")
        store.conn.execute("PRAGMA user_version = 2")
        for answer_id, cited in (("ans_old", [citation]), ("ans_lost", [gone])):
            store.conn.execute(
                "INSERT INTO answers (answer_id, created_at, question, answer, grounded, citations_json,"
                " prompt_template_version) VALUES (?, '2026-01-01T00:00:00Z', 'q', 'a [#1]', 1, ?, 'rag-v5')",
                (answer_id, json.dumps(cited)),
            )
    store.close()
    store = StoreOfRecord(tmp_path / "kb")  # migrates: the citations are recorded, unchecked
    states = dict(store.conn.execute("SELECT answer_id, state FROM answer_citations"))
    assert states == {"ans_old": "unchecked", "ans_lost": "unchecked"}
    from kb_core.storage.cited import recheck_documents

    report = recheck_documents(store)
    assert (report.valid, report.unverifiable) == (1, 1)
    assert store.conn.execute("SELECT count(*) FROM answers").fetchone()[0] == 2  # nothing stored was lost
    store.close()
