"""``kb doctor``'s verdict on kb-tesseract, whether or not this machine has Tesseract's data.

kb-tesseract installed without its language data cannot read a scan: that is a problem (exit 3),
exactly one, on the ``ocr`` component, naming the folder and the command that installs the data.
OCR turned off is healthy; so is the engine with its data (run where ``bash scripts/install-ocr``
has installed it). A real ``kb`` process on the test indexes and the scripted language model, so
that nothing but OCR is judged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kb_tesseract import INSTALL

KB = str(Path(sys.executable).parent / "kb")
SCRIPTED = "kb_core.testing.language_models:ScriptedPlugin"


def doctor(tmp_path: Path, plugins: str, config: str) -> tuple[int, dict[str, Any]]:
    """``kb doctor --no-generate --json`` on a new knowledge base with ``config``: the exit code and the report."""
    path = tmp_path / "config.toml"
    path.write_text(config, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | {
        "KB_PLUGIN_MODULES": f"{plugins},{SCRIPTED}",
        "KB_INDEXES__ENABLED": '["test-lexical"]',
        "KB_MODELS__LLM__BACKEND": "scripted",
    }
    base = [KB, "--config", str(path), "--kb", str(tmp_path / "kb")]
    subprocess.run([*base, "init"], env=env, capture_output=True, check=True, timeout=300)
    done = subprocess.run([*base, "doctor", "--no-generate", "--json"], env=env, capture_output=True, timeout=300)
    return done.returncode, json.loads(done.stdout)


def ocr_check(report: dict[str, Any]) -> dict[str, Any]:
    """The report's ``ocr`` check."""
    return next(check for check in report["checks"] if check["component"] == "ocr")


@pytest.mark.slow
def test_without_its_data_the_engine_is_one_problem_naming_the_install_command(
    tmp_path: Path, kb_test_plugins: str
) -> None:
    folder = tmp_path / "no-tessdata"
    code, report = doctor(tmp_path, kb_test_plugins, f'[backends.tesseract]\ntessdata = "{folder}"\n')
    assert (code, report["healthy"]) == (3, False)
    (problem,) = report["problems"]
    assert problem["component"] == "ocr" and str(folder) in problem["message"]
    assert problem["fix"] == f"install it: {INSTALL}"
    assert not ocr_check(report)["ok"]


@pytest.mark.slow
def test_with_ocr_off_the_missing_data_is_no_problem(tmp_path: Path, kb_test_plugins: str) -> None:
    folder = tmp_path / "no-tessdata"
    config = f'[ingest]\nocr = "off"\n\n[backends.tesseract]\ntessdata = "{folder}"\n'
    code, report = doctor(tmp_path, kb_test_plugins, config)
    assert (code, report["problems"]) == (0, [])
    assert ocr_check(report)["ok"] and "OCR is off" in ocr_check(report)["detail"]


@pytest.mark.slow
@pytest.mark.needs_ocr_data
def test_with_its_data_the_engine_is_healthy(tmp_path: Path, kb_test_plugins: str) -> None:
    code, report = doctor(tmp_path, kb_test_plugins, "")
    assert (code, report["problems"]) == (0, [])
    assert ocr_check(report)["ok"] and "; reads " in ocr_check(report)["detail"]
