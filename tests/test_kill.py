"""A `kb ingest` killed with SIGKILL at any point leaves a knowledge base the next ingest completes.

A real subprocess ingests a generated folder and is killed after several delays (before, during
and after the store and index writes); each time, the next `kb ingest` must finish the work: every
file stored exactly once, the index holding exactly the store's chunks, nothing reported behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kbtest import LEXICAL, TEST_INDEXES_ENV, run_kb

FILES = 1500


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kill-corpus")
    for i in range(FILES):
        folder = root / f"d{i % 10}"
        folder.mkdir(exist_ok=True)
        body = "\n\n".join(f"Paragraph {j} of note {i} mentions topic{i} and item{j}." for j in range(8))
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")
    return root


def _env(kb_dir: Path) -> dict[str, str]:
    return {"KB_HOME": str(kb_dir), **TEST_INDEXES_ENV, "HOME": str(kb_dir.parent)}


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.2, 0.8, 1.5, 2.5, 4.0])
def test_sigkill_during_ingest_is_completed_by_the_next_run(tmp_path: Path, corpus: Path, delay: float) -> None:
    kb_dir = tmp_path / "kb"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | _env(kb_dir)
    kb = str(Path(sys.executable).parent / "kb")
    process = subprocess.Popen(
        [kb, "ingest", str(corpus)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    finished = run_kb("ingest", str(corpus), "--json", env=_env(kb_dir))
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout)
    assert report["documents"] == FILES
    assert len(report["added"]) + len(report["updated"]) + report["unchanged"] == FILES
    assert report["failed"] == []

    doctor = run_kb("doctor", "--json", env=_env(kb_dir) | {"KB_MODELS__LLM__BACKEND": "ollama"})
    index_problems = [p for p in json.loads(doctor.stdout)["problems"] if p["component"] == LEXICAL]
    assert index_problems == []

    found = run_kb("search", "topic1234", "--mode", "lexical", "--json", env=_env(kb_dir))
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["doc_path"] == "d4/note1234.md"
    again = json.loads(run_kb("ingest", str(corpus), "--json", env=_env(kb_dir)).stdout)
    assert again["unchanged"] == FILES and again["added"] == []
