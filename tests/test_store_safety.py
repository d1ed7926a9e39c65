"""The store under concurrency and on read-only media, and created for its owner only."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from kbtest import TEST_INDEXES_ENV, run_kb

from kb_core.storage.store import MIGRATIONS, StoreOfRecord

ENV = TEST_INDEXES_ENV


def _kb(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | ENV
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "kb"), *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_concurrent_first_opens_never_give_an_internal_error(tmp_path: Path) -> None:
    """The issue's loop: `kb list & kb list & kb init & wait` on a fresh directory, several times."""
    for round_ in range(8):
        kb_dir = tmp_path / f"R{round_}"
        processes = [_kb("--kb", str(kb_dir), "init" if i % 3 == 2 else "list") for i in range(6)]
        for process in processes:
            _, err = process.communicate(timeout=120)
            assert process.returncode in (0, 1, 2), err  # 1: empty list; 2: 'no knowledge base' before init
            assert "internal error" not in err and "Traceback" not in err, err
        assert StoreOfRecord(kb_dir, create=False).schema_version == len(MIGRATIONS)


def test_search_during_the_first_ingest_never_gives_an_internal_error(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(300):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\nPangolin fact number {i}.\n")
    kb_dir = str(tmp_path / "k")
    ingest = _kb("--kb", kb_dir, "ingest", str(docs))
    searches = [_kb("--kb", kb_dir, "search", "pangolin", "--mode", "lexical") for _ in range(4)]
    for process in [*searches, ingest]:
        _, err = process.communicate(timeout=300)
        assert "internal error" not in err and "Traceback" not in err, err


def _ingested(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Axolotl\n\nThe axolotl regrows limbs.\n")
    env = ENV | {"KB_HOME": str(tmp_path / "k")}
    assert run_kb("ingest", str(docs), env=env).returncode == 0
    return tmp_path / "k", env


def _chattr(flag: str, *paths: Path) -> bool:
    if not shutil.which("chattr"):
        return False
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, check=False).returncode == 0


@pytest.mark.slow
def test_an_immutable_knowledge_base_can_be_searched_and_listed(tmp_path: Path) -> None:
    kb_dir, env = _ingested(tmp_path)
    frozen = [kb_dir / "kb.sqlite3", kb_dir]
    if not _chattr("+i", *frozen):
        pytest.skip("chattr +i is not available here")
    try:
        found = run_kb("search", "axolotl", "--mode", "lexical", "--json", env=env)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["hits"][0]["doc_path"] == "a.md"
        assert run_kb("list", env=env).returncode == 0
        change = run_kb("ingest", str(tmp_path / "docs"), env=env)
        assert change.returncode == 5 and "read-only" in change.stderr and "internal" not in change.stderr
    finally:
        _chattr("-i", *frozen)


def _as_nobody(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run kb as user nobody on a chmod'ed read-only copy of an ingested knowledge base."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run as another user")
    kb_dir, _ = _ingested(tmp_path)
    shared = Path("/tmp") / f"kb-ro-{os.getpid()}"
    shutil.rmtree(shared, ignore_errors=True)
    shutil.copytree(kb_dir, shared / "k")
    try:
        for path in [shared, *shared.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        kb = str(Path(sys.executable).parent / "kb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | ENV
        env |= {"HOME": str(shared), "XDG_CONFIG_HOME": str(shared)}
        result = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", kb, "--kb", str(shared / "k"), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        if "python" in result.stderr.lower() and "Permission denied" in result.stderr:
            pytest.skip("the test interpreter is not readable by nobody")
        return result
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_read_only_copy_opened_by_another_user_can_be_listed(tmp_path: Path) -> None:
    """The store opens read-only (mode=ro / immutable) when its files cannot be written."""
    result = _as_nobody(tmp_path, "list")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("a.md")


def test_a_read_only_copy_opened_by_another_user_can_be_searched(tmp_path: Path) -> None:
    result = _as_nobody(tmp_path, "search", "axolotl", "--mode", "lexical")
    assert result.returncode == 0, result.stderr
    assert "a.md#L" in result.stdout


def test_knowledge_base_is_created_owner_only(tmp_path: Path) -> None:
    kb_dir, _ = _ingested(tmp_path)
    assert stat.S_IMODE(kb_dir.stat().st_mode) == 0o700
    for name in ("kb.sqlite3", "writer.lock"):
        assert stat.S_IMODE((kb_dir / name).stat().st_mode) == 0o600, name
    store = StoreOfRecord(kb_dir)  # the write-ahead log and its index follow the database's mode
    with store.transaction():
        store.conn.execute("INSERT INTO eval_runs (run_id, created_at, kind) VALUES ('r', 'now', 'x')")
    for extra in kb_dir.glob("kb.sqlite3-*"):
        assert stat.S_IMODE(extra.stat().st_mode) == 0o600, extra
    store.close()
