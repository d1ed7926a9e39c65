"""`kb answers list` / `kb answers purge`: see and delete the stored questions."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from kbtest import run_kb, save_answer_row

from kb_core.output import schema
from kb_core.storage.store import StoreOfRecord

SECRET = "what is my bank PIN zanzibar-4471"


def _store_answers(kb_dir: Path) -> None:
    store = StoreOfRecord(kb_dir)
    with store.transaction():
        for i, (day, question) in enumerate(
            [("2026-01-01", SECRET), ("2026-03-01", "when was \x1b]0;x\x07 it?"), ("2026-05-01", "who wrote it?")]
        ):
            save_answer_row(
                store,
                {
                    "answer_id": f"a{i}",
                    "created_at": f"{day}T00:00:00Z",
                    "question": question,
                    "answer": "…",
                    "grounded": i % 2,
                    "refusal_reason": None if i % 2 else "score_gate",
                    "prompt_template_version": "rag-v1-en",
                },
            )
    store.close()


def _json(env: dict[str, str], *args: str, code: int = 0) -> dict:
    result = run_kb(*args, "--json", env=env)
    assert result.returncode == code, result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, schema(data["schema_version"]))
    return data


@pytest.mark.slow
def test_list_and_purge_stored_questions(tmp_path: Path) -> None:
    env = {"KB_HOME": str(tmp_path / "k")}
    _store_answers(tmp_path / "k")
    listed = _json(env, "answers", "list")
    assert [a["answer_id"] for a in listed["answers"]] == ["a2", "a1", "a0"] and listed["total"] == 3
    assert _json(env, "answers", "list", "--limit", "1")["answers"][0]["answer_id"] == "a2"
    human = run_kb("answers", "list", env=env)
    assert human.returncode == 0 and "\x1b" not in human.stdout and len(human.stdout.splitlines()) == 3

    assert _json(env, "answers", "purge", "--before", "2026-02-01")["answer_ids"] == ["a0"]
    data = b"".join(p.read_bytes() for p in (tmp_path / "k").glob("kb.sqlite3*"))
    assert b"zanzibar-4471" not in data  # overwritten, not only unlinked from the table
    assert _json(env, "answers", "purge", "a1")["purged"] == 1
    assert _json(env, "answers", "purge", "--all")["answer_ids"] == ["a2"]
    assert _json(env, "answers", "list", code=1) == {"schema_version": "answer_history.v1", "answers": [], "total": 0}


@pytest.mark.slow
def test_purge_needs_exactly_one_selection(tmp_path: Path) -> None:
    env = {"KB_HOME": str(tmp_path / "k")}
    _store_answers(tmp_path / "k")
    for args in ([], ["--all", "a1"], ["--before", "yesterday"], ["nope"]):
        result = run_kb("answers", "purge", *args, env=env)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, (args, result.stderr)
    assert _json(env, "answers", "list")["total"] == 3
