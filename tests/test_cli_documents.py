"""The document commands as a user runs them: exit codes, one-line errors, schema-valid JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from kbtest import CORPUS, LEXICAL, TEST_INDEXES_ENV, run_kb

from kb_core.output import schema, schema_versions


@pytest.fixture(scope="module")
def kb_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("cli")
    shutil.copytree(CORPUS, root / "corpus")
    env = {"KB_HOME": str(root / "kb"), **TEST_INDEXES_ENV, "CORPUS": str(root / "corpus")}
    result = run_kb("ingest", str(root / "corpus"), "--json", env=env)
    assert result.returncode == 0, result.stderr
    env["INGEST_JSON"] = result.stdout
    return env


def _json(env: dict[str, str], *args: str, code: int = 0) -> dict:
    result = run_kb(*args, "--json", env=env)
    assert result.returncode == code, result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, schema(data["schema_version"]))
    return data


def test_every_schema_file_is_a_valid_json_schema() -> None:
    for version in schema_versions():
        jsonschema.Draft202012Validator.check_schema(schema(version))
        assert schema(version)["title"] == version


def test_ingest_report_is_schema_valid_and_complete(kb_env: dict[str, str]) -> None:
    report = json.loads(kb_env["INGEST_JSON"])
    jsonschema.validate(report, schema("ingest_report.v1"))
    wanted = {".md", ".markdown", ".txt", ".html", ".htm"}
    files = [
        p for p in Path(kb_env["CORPUS"]).rglob("*") if p.is_file() and p.suffix in wanted and p.name != "README.md"
    ]
    assert len(report["added"]) == report["documents"] == len(files) - len(report["failed"]) > 5
    assert report["indexes"][0]["index"] == LEXICAL


def test_list_inspect_document_and_chunk(kb_env: dict[str, str]) -> None:
    listing = _json(kb_env, "list")
    paths = [d["path"] for d in listing["documents"]]
    assert paths == sorted(paths) and any("/" in p for p in paths)
    doc = _json(kb_env, "inspect", paths[0])
    assert doc["document"]["path"] == paths[0] and doc["chunks"]
    first = doc["chunks"][0]
    by_id = _json(kb_env, "inspect", first["chunk_id"])
    citation = f"{paths[0]}#L{first['start_line']}-L{first['end_line']}"
    assert by_id["citation"] == citation
    by_citation = _json(kb_env, "inspect", citation)
    assert by_citation["chunk"]["chunk_id"] == first["chunk_id"]


@pytest.mark.slow
def test_user_mistakes_are_one_line_with_exit_2(kb_env: dict[str, str], tmp_path: Path) -> None:
    cases = [
        ("inspect", "no/such/doc.md"),
        ("rm", "no/such/doc.md"),
        ("ingest", str(tmp_path / "missing-folder")),
        ("reindex", "--store", "nonexistent"),
        ("--backend", "nonexistent", "ask", "hello"),
    ]
    for args in cases:
        result = run_kb(*args, env=kb_env)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kb: error:"), (args, result.stderr)


@pytest.mark.slow
def test_commands_on_a_missing_kb_say_how_to_create_one(tmp_path: Path) -> None:
    result = run_kb("list", env={"KB_HOME": str(tmp_path / "nothing")})
    assert result.returncode == 2
    assert "kb init" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "nothing").exists()


@pytest.mark.slow
def test_unknown_option_is_a_usage_error(kb_env: dict[str, str]) -> None:
    result = run_kb("list", "--frobnicate", env=kb_env)
    assert result.returncode == 2 and "No such option" in result.stderr


def test_rm_reindex_doctor_config_and_init(kb_env: dict[str, str], tmp_path: Path) -> None:
    env = dict(kb_env, KB_HOME=str(tmp_path / "kb2"))
    assert _json(env, "init")["documents"] == 0
    ingest = _json(env, "ingest", kb_env["CORPUS"])
    victim = ingest["added"][0]
    assert _json(env, "rm", victim)["removed"] == [victim]
    rebuilt = _json(env, "reindex")
    assert rebuilt["indexes"][0]["chunks"] == ingest["chunks"] - len(_json(kb_env, "inspect", victim)["chunks"])
    doctor_env = dict(env, KB_MODELS__LLM__BACKEND="ollama", KB_OLLAMA_URL="http://127.0.0.1:9")
    doctor = _json(doctor_env, "doctor", code=3)
    assert not doctor["healthy"]
    assert any(p["component"] == "language model" for p in doctor["problems"])
    assert all(check["ok"] for check in doctor["checks"] if check["component"] in {"store", "indexes"})
    shown = _json(env, "config", "show")
    assert {"key": "indexes.enabled", "value": [LEXICAL], "source": "env:KB_INDEXES__ENABLED"} in shown["values"]


@pytest.mark.slow
def test_empty_list_exits_1(tmp_path: Path) -> None:
    env = {"KB_HOME": str(tmp_path / "empty")}
    assert run_kb("init", env=env).returncode == 0
    result = run_kb("list", env=env)
    assert result.returncode == 1
