"""``kb doctor`` on a PostgreSQL store (issue 45, deliver 4): real ``kb`` processes against pgserver.

Each problem is one line with the command that fixes it, in text and in ``--json`` (``doctor.v1``): a server
that cannot be reached (exit 3, the password never shown), a schema behind this kb-postgres's migrations
(``kb init`` applies them) and one written by a newer kb-postgres. kb-postgres uses no PostgreSQL extension
(no pgvector: the vectors stay in each folder's index), so none is checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from kb_postgres.schema import MIGRATIONS

pytestmark = pytest.mark.slow  # (real kb processes)

KbEnv = Callable[..., dict[str, str]]
#: The language model and OCR are not what these tests judge: a scripted model, no OCR, no generation.
QUIET = {"KB_MODELS__LLM__BACKEND": "scripted", "KB_INGEST__OCR": "off"}


def kb_command(folder: Path, *args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "kb"), "--kb", str(folder), *args]


def kb(kb_env: KbEnv, folder: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = kb_env(**QUIET, **extra)
    env["KB_PLUGIN_MODULES"] += ",kb_core.testing.language_models:ScriptedPlugin"
    return subprocess.run(kb_command(folder, *args), capture_output=True, text=True, env=env, timeout=300)


def doctor(kb_env: KbEnv, folder: Path, **extra: str) -> tuple[int, dict[str, Any], str]:
    """``kb doctor --json``'s exit code and report, and the text ``kb doctor`` prints."""
    as_json = kb(kb_env, folder, "doctor", "--no-generate", "--json", **extra)
    text = kb(kb_env, folder, "doctor", "--no-generate", **extra)
    assert as_json.returncode == text.returncode, text.stderr
    return as_json.returncode, json.loads(as_json.stdout), text.stdout + text.stderr


def problem_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("problem:")]


@pytest.fixture
def ingested(kb_env: KbEnv, tmp_path: Path) -> Path:
    """A knowledge base folder on the test's schema, with one document ingested."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Heliograph\n\nHeliograph 2.3.0 was released in June.\n")
    result = kb(kb_env, tmp_path / "kb", "ingest", str(tmp_path / "docs"))
    assert result.returncode == 0, result.stderr
    return tmp_path / "kb"


def schema_sql(postgres_options: dict[str, object], *statements: str) -> None:
    with psycopg.connect(str(postgres_options["url"]), autocommit=True) as conn:
        conn.execute(f"SET search_path TO {postgres_options['schema']}")
        for statement in statements:
            conn.execute(statement)


def test_a_healthy_store_is_checked_with_no_problem(kb_env: KbEnv, ingested: Path) -> None:
    code, report, text = doctor(kb_env, ingested)
    assert code == 0 and report["healthy"] and report["problems"] == [], text
    store = next(check for check in report["checks"] if check["component"] == "store")
    assert store == {"component": "store", "ok": True, "detail": f"schema {len(MIGRATIONS)}, 1 documents"}


def test_a_wrong_url_is_one_problem_line_without_the_password_and_exit_3(kb_env: KbEnv, tmp_path: Path) -> None:
    wrong = "postgresql://ann:s3cret-pw@127.0.0.1:1/kb"  # (port 1: nothing listens, refused at once)
    code, report, text = doctor(kb_env, tmp_path / "kb", KB_BACKENDS__POSTGRES__URL=wrong)
    assert code == 3 and not report["healthy"]
    [line] = problem_lines(text)  # the store's one line; the indexes, which need the store, are not checked
    assert line.startswith("problem: store: cannot reach PostgreSQL at postgresql://ann@127.0.0.1:1/kb (schema")
    assert "-> start the server" in line and "fix [backends.postgres] url" in line
    assert "s3cret" not in text and "Traceback" not in text
    assert [p["component"] for p in report["problems"]] == ["store"]
    indexes = next(check for check in report["checks"] if check["component"] == "indexes")
    assert indexes == {"component": "indexes", "ok": False, "detail": "not checked: the store could not be opened"}


def test_a_schema_behind_this_kb_names_kb_init_which_mends_it(
    kb_env: KbEnv, postgres_options: dict[str, object], ingested: Path
) -> None:
    schema_sql(postgres_options, *UNDO_LAST_MIGRATION)
    code, report, text = doctor(kb_env, ingested)
    behind = len(MIGRATIONS) - 1
    assert code == 3 and [p["component"] for p in report["problems"]] == ["store"], text
    [line] = problem_lines(text)
    assert f"has {behind} of this kb-postgres's {len(MIGRATIONS)} migrations" in line
    assert "-> run 'kb init' to apply them" in line
    assert report["problems"][0]["fix"].startswith("run 'kb init' to apply them")
    searched = kb(kb_env, ingested, "search", "--mode", "lexical", "heliograph")
    assert searched.returncode == 2 and "run 'kb init'" in searched.stderr  # a read changes no shared schema
    assert kb(kb_env, ingested, "init").returncode == 0  # the fix the line names
    code, report, text = doctor(kb_env, ingested)
    assert code == 0 and report["healthy"], text
    assert "a.md" in kb(kb_env, ingested, "search", "--mode", "lexical", "heliograph").stdout  # nothing lost


def test_a_schema_written_by_a_newer_kb_postgres_names_the_upgrade(
    kb_env: KbEnv, postgres_options: dict[str, object], ingested: Path
) -> None:
    schema_sql(postgres_options, f"INSERT INTO kb_migrations (version) VALUES ({len(MIGRATIONS) + 1})")
    code, report, text = doctor(kb_env, ingested)
    assert code == 3 and [p["component"] for p in report["problems"]] == ["store"]
    assert report["problems"][0]["message"].endswith(
        f"was written by a newer kb-postgres (schema {len(MIGRATIONS) + 1})"
    )
    assert report["problems"][0]["fix"] == "upgrade kb-postgres"


#: What the last migration made, undone, and its record removed: the schema as the kb-postgres before it left it.
UNDO_LAST_MIGRATION = (
    "ALTER TABLE access_owners DROP CONSTRAINT access_owners_person",
    "DROP INDEX access_owned",
    "CREATE INDEX access_owned ON access_owners (kind, person)",
    f"DELETE FROM kb_migrations WHERE version = {len(MIGRATIONS)}",
)
