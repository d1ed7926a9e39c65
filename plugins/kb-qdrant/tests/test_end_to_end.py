"""The whole path: ingest the shared fixture corpus with ``[indexes] enabled = ["tantivy", "qdrant"]``, search,
then ``kb reindex`` and ``kb doctor`` through the real command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kb_core import SearchQuery, ingest_paths, open_kb, search

REPO = Path(__file__).resolve().parents[3]
ENABLED = ["tantivy", "qdrant"]
QUESTIONS = {
    "How many panels can one Heliograph controller drive?": "notes/heliograph.md",
    "How often is a new minor version released?": "notes/release-process.md",
    "What current draw triggers a motor stall alert?": "notes/ops/runbook.markdown",
}


def run_kb(*args: str, kb_dir: Path) -> subprocess.CompletedProcess[str]:
    """The real ``kb`` command with this knowledge base and the two indexes enabled."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
    env |= {"KB_HOME": str(kb_dir), "KB_INDEXES__ENABLED": json.dumps(ENABLED)}
    kb = Path(sys.executable).parent / "kb"
    return subprocess.run([str(kb), *args], capture_output=True, text=True, env=env, timeout=300, check=False)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("e2e")
    shutil.copytree(REPO / "fixtures" / "corpus", root / "corpus")
    kb_dir = root / "kb"
    with open_kb(kb_dir=kb_dir, overrides={"indexes.enabled": ENABLED}) as kb:
        report = ingest_paths(kb, [root / "corpus"])
        assert report.failed == [] and {r.index for r in report.indexes} == set(ENABLED)
        assert kb.index("qdrant").count() == kb.store.count_chunks() > 0
    return kb_dir


@pytest.mark.slow
def test_hybrid_and_vector_search_find_the_right_document(ingested: Path) -> None:
    with open_kb(kb_dir=ingested, overrides={"indexes.enabled": ENABLED}) as kb:
        for question, path in QUESTIONS.items():
            hybrid = search(kb, SearchQuery(question, k=5, mode="hybrid"))
            assert hybrid.hits[0].doc_path == path, (question, [h.doc_path for h in hybrid.hits])
            assert {r.name for r in hybrid.retrievers} == set(ENABLED)
            vector = search(kb, SearchQuery(question, k=3, mode="vector"))
            assert vector.hits[0].doc_path == path and {r.name for r in vector.retrievers} == {"qdrant"}
            assert 0.0 < vector.hits[0].score <= 1.0
        glob = search(kb, SearchQuery("solar panels", k=10, mode="vector", path_glob="notes/*"))
        assert glob.hits and all(h.doc_path.startswith("notes/") for h in glob.hits)


@pytest.mark.slow
def test_reindex_and_doctor_through_the_command_line(ingested: Path) -> None:
    reindexed = run_kb("reindex", "--store", "qdrant", "--json", kb_dir=ingested)
    assert reindexed.returncode == 0, reindexed.stderr
    payload = json.loads(reindexed.stdout)
    assert payload["schema_version"] == "reindex.v1"
    (result,) = payload["indexes"]
    assert result["index"] == "qdrant" and result["chunks"] > 0
    doctor = run_kb("doctor", "--json", kb_dir=ingested)
    report = json.loads(doctor.stdout)
    assert not [p for p in report["problems"] if p["component"] in ("qdrant", "indexes")], report["problems"]
    assert any(c["component"] == "indexes" and c["ok"] for c in report["checks"]), report["checks"]
    with open_kb(kb_dir=ingested, overrides={"indexes.enabled": ENABLED}) as kb:
        hits = search(kb, SearchQuery("How many panels can one Heliograph controller drive?", k=3, mode="vector")).hits
        assert hits[0].doc_path == "notes/heliograph.md"
