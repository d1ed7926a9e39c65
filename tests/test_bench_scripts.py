"""The benchmark scripts still import what they use from kb and its plugins.

Benchmarks run by hand, not in the suite, so a module that moves can break one unseen (it
happened: ``kb_core.search`` became ``kb_core.retrieval.search``). Every ``import`` of a kb
module in ``bench/`` and ``plugins/*/bench/``, at any depth of the file, must name a module that
imports and names it holds. A script that imports a plugin is a ``needs_plugins`` test: kb-core
alone (as ``scripts/check-dist`` runs it) has no plugin to import.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted([*ROOT.glob("bench/*.py"), *ROOT.glob("plugins/*/bench/*.py")])


def kb_imports(script: Path) -> list[tuple[str, str | None]]:
    """(module, name or None) for every import of a ``kb_*`` module anywhere in ``script``."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.startswith("kb_")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("kb_"):
            found += [(node.module or "", alias.name) for alias in node.names]
    return found


def needs_only_the_core(script: Path) -> bool:
    """Whether every kb module ``script`` imports is part of kb-core."""
    return all(module.split(".")[0] == "kb_core" for module, _ in kb_imports(script))


def test_there_are_benchmark_scripts_to_check() -> None:
    assert len(SCRIPTS) >= 10 and any(kb_imports(s) for s in SCRIPTS)
    assert any(needs_only_the_core(s) for s in SCRIPTS) and not all(needs_only_the_core(s) for s in SCRIPTS)


@pytest.mark.parametrize(
    "script",
    [pytest.param(s, marks=() if needs_only_the_core(s) else pytest.mark.needs_plugins) for s in SCRIPTS],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_benchmark_imports_resolve(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for helpers in ROOT.glob("plugins/*/tests"):  # a bench may put a plugin's test helpers on its path itself
        monkeypatch.syspath_prepend(str(helpers))  # (access_probe.py: kb_serve_probe), not only after they ran
    for module_name, name in kb_imports(script):
        module = importlib.import_module(module_name)
        if name is not None and not hasattr(module, name):
            importlib.import_module(f"{module_name}.{name}")  # a submodule, or ImportError names what is missing


@pytest.mark.slow
@pytest.mark.needs_plugins  # kb serve and kb mcp are plugins
def test_fuzz_inputs_runs_and_breaks_nothing(tmp_path: Path) -> None:
    """``bench/fuzz_inputs.py`` with a handful of inputs per entry point: its JSON report, every input counted, and
    none of them an internal error, an exit 70 or a hang (the full run is 10,000 per entry point)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "fuzz_inputs.py"), "--count", "30", "--timeout", "60", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    report = json.loads(done.stdout)
    assert set(report["entry_points"]) == {"cli", "serve", "mcp"}
    for name, row in report["entry_points"].items():
        assert row["inputs"] == 30 == row["ok"] + row["usage_error"] + row["other"], (name, row)
        assert (row["5xx"], row["exit_70"], row["hang"]) == (0, 0, 0), (name, row)


def test_same_answers_names_every_question_whose_answer_moved(tmp_path: Path) -> None:
    """``bench/same_answers.py``: 0 differ for the same report, the question and field for a changed one."""
    result = {"id": "q1", "answer": "Paris [#1].", "grounded": True, "cited": ["a.md"], "answer_check": 0.9}
    same, moved = tmp_path / "a.json", tmp_path / "b.json"
    same.write_text(json.dumps({"results": [result]}), encoding="utf-8")
    moved.write_text(json.dumps({"results": [result | {"answer_check": 0.4}]}), encoding="utf-8")
    script = str(ROOT / "bench" / "same_answers.py")
    unchanged = subprocess.run([sys.executable, script, str(same), str(same)], capture_output=True, text=True)
    assert unchanged.returncode == 0 and "1 questions, 0 differ" in unchanged.stdout
    changed = subprocess.run([sys.executable, script, str(same), str(moved)], capture_output=True, text=True)
    assert changed.returncode == 1 and "q1: answer_check (0.9 -> 0.4)" in changed.stdout
