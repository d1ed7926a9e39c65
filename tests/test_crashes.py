"""A language model that kills the process: never a bare "Segmentation fault", always reported afterwards."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from kbtest import REPO, TEST_INDEXES_ENV, run_kb

from kb_core.crashes import inside_model, last_crash
from kb_core.types import ModelRef

CRASHING = {
    "KB_PLUGIN_MODULES": TEST_INDEXES_ENV["KB_PLUGIN_MODULES"] + ",crashing_backend",
    "PYTHONPATH": str(REPO / "tests"),
    # These tests judge the language model, so OCR is off: whether kb-tesseract and its data are installed
    # here must not decide them (its verdict, one problem when the data is missing, is tested in kb-tesseract).
    "KB_INGEST__OCR": "off",
}


@pytest.fixture
def crash_env(tmp_path: Path) -> dict[str, str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Heliograph\n\nHeliograph 2.3.0 was released on 2024-06-18.\n")
    env = TEST_INDEXES_ENV | CRASHING | {"KB_HOME": str(tmp_path / "kb"), "XDG_STATE_HOME": str(tmp_path / "state")}
    assert run_kb("ingest", str(docs), env=env).returncode == 0
    return env


@pytest.mark.slow
def test_doctor_reports_a_model_that_crashes_in_one_line_with_exit_3(crash_env: dict[str, str]) -> None:
    env = crash_env | {"KB_MODELS__LLM__BACKEND": "crashing"}
    result = run_kb("doctor", env=env)
    assert result.returncode == 3, result.stderr
    problems = [line for line in result.stdout.splitlines() if line.strip().startswith("problem:")]
    assert len(problems) == 1
    assert "crashing (crash-1b) crashed the process (SIGSEGV)" in problems[0]
    assert "set [backends.crashing] safe = true" in problems[0]
    report = json.loads(run_kb("doctor", "--json", env=env).stdout)
    assert [p["component"] for p in report["problems"]] == ["language model"] and not report["healthy"]
    assert run_kb("doctor", "--no-generate", env=env).returncode == 0  # the probe is what found it


@pytest.mark.slow
def test_doctor_is_healthy_when_the_model_generates(crash_env: dict[str, str]) -> None:
    plugins = TEST_INDEXES_ENV["KB_PLUGIN_MODULES"] + ",kb_core.testing.language_models:ScriptedPlugin"
    env = crash_env | {"KB_MODELS__LLM__BACKEND": "scripted", "KB_PLUGIN_MODULES": plugins}
    result = run_kb("doctor", env=env)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_a_process_killed_in_the_model_is_reported_by_the_next_run(crash_env: dict[str, str]) -> None:
    env = crash_env | {"KB_MODELS__LLM__BACKEND": "crashing"}
    crashed = run_kb("ask", "When was Heliograph 2.3.0 released?", env=env)
    assert crashed.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in crashed.stderr  # faulthandler: the stack, not a bare line
    assert "crashes.py" not in crashed.stderr.split("Segmentation fault")[0]

    plugins = TEST_INDEXES_ENV["KB_PLUGIN_MODULES"] + ",kb_core.testing.language_models:ScriptedPlugin"
    healthy = env | {"KB_MODELS__LLM__BACKEND": "scripted", "KB_PLUGIN_MODULES": plugins}
    after = run_kb("ask", "When was Heliograph 2.3.0 released?", env=healthy)
    warnings = [line for line in after.stderr.splitlines() if line.startswith("kb: warning:")]
    assert len(warnings) == 1
    assert "died inside the language model (crashing, crash-1b)" in warnings[0]
    again = run_kb("ask", "When was Heliograph 2.3.0 released?", env=healthy)
    assert "died inside" not in again.stderr  # reported once

    run_kb("ask", "When was Heliograph 2.3.0 released?", env=env)
    doctor = run_kb("doctor", "--no-generate", env=healthy)
    assert doctor.returncode == 3 and "died inside the language model (crashing, crash-1b)" in doctor.stdout


def test_the_marker_lives_only_while_the_model_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    with inside_model(ModelRef(id="m", provider="p")):
        assert len(list(tmp_path.rglob("*.json"))) == 1
        assert last_crash() is None  # this process is alive: not a crash
    assert list(tmp_path.rglob("*.json")) == []
    assert last_crash() is None


def test_a_marker_of_a_dead_process_is_reported_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    folder = tmp_path / "kb" / "inside-model"
    folder.mkdir(parents=True)
    (folder / "999999999.json").write_text(json.dumps({"pid": 999999999, "backend": "b", "model": "m", "since": 0}))
    (folder / "junk.json").write_text("{not json")
    message = last_crash()
    assert message is not None and "(b, m)" in message and "\n" not in message
    assert last_crash() is None and list(folder.iterdir()) == []
