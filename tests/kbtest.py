"""Helpers shared by tests (importable because pytest puts tests/ on sys.path)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from kb_core.storage.store import StoreOfRecord
from kb_core.testing.pytest_plugin import TEST_INDEXES, TEST_PLUGIN_MODULES
from kb_core.types import Chunk, Document

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
CORPUS = FIXTURES / "corpus"

#: The plugins every core test loads (``KB_PLUGIN_MODULES``): the test indexes of kb_core.testing, so
#: the core's tests need no engine installed; tests of the real engines are marked ``needs_plugins``.
TEST_PLUGINS = TEST_PLUGIN_MODULES
LEXICAL, VECTOR = TEST_INDEXES["indexes.enabled"]
#: Both test indexes, as the environment every core test runs in (TEST_INDEXES: as a config override).
DEFAULT_ENV = {"KB_PLUGIN_MODULES": TEST_PLUGINS, "KB_INDEXES__ENABLED": f'["{LEXICAL}", "{VECTOR}"]'}
#: The lexical test index alone (no embeddings: faster).
TEST_INDEXES_ENV = DEFAULT_ENV | {"KB_INDEXES__ENABLED": f'["{LEXICAL}"]'}


#: The real ``kb`` console command of this environment.
KB = Path(sys.executable).parent / "kb"


def kb_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a ``kb`` subprocess: this one's without its ``KB_*`` variables, on the test indexes
    (``DEFAULT_ENV``), then ``env``."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | DEFAULT_ENV | (env or {})


def run_kb(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the real ``kb`` console command in a subprocess, on the test indexes unless ``env`` says otherwise."""
    return subprocess.run([str(KB), *args], capture_output=True, text=True, env=kb_env(env), cwd=cwd, timeout=timeout)


def save_answer_row(store: object, row: dict[str, object]) -> None:
    """Insert a hand-made row into the ``answers`` table (tests of history and purging)."""
    conn = store.conn  # type: ignore[attr-defined]
    conn.execute(f"INSERT INTO answers ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))


def store_chunks(store: StoreOfRecord, chunks: Sequence[Chunk]) -> list[Chunk]:
    """Store each of ``chunks`` as its document's only chunk (replacing what was stored there); return them."""
    with store.transaction():
        for chunk in chunks:
            document = Document(chunk.doc_path, f"hash-{chunk.text}", 10, chunk.doc_path, "text", "docs")
            store.replace_document(document, [chunk])
    return list(chunks)


def real_model_path() -> str:
    """The GGUF file for a real-model test ("" = the llamacpp plugin's default, ``$KBTEST_GGUF`` another).

    Skips the test when kb-llamacpp or its default model is not installed.
    """
    pytest.importorskip("kb_llamacpp", reason="the llamacpp plugin is not installed")
    from kb_core import ModelUnavailableError
    from kb_llamacpp import default_model_path

    if os.environ.get("KBTEST_GGUF"):
        return os.environ["KBTEST_GGUF"]
    try:
        default_model_path()
    except ModelUnavailableError as exc:
        pytest.skip(f"the embedded default model is not installed: {exc.message}")
    return ""
