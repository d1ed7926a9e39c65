"""Fault injection: nothing stored is lost when the disk fills up or two writers race.

The other faults of the battery live next to the code they exercise: unreadable folders, broken
and looping links, files that vanish mid-run and invalid UTF-8 in ``test_ingest_safety.py``;
SIGKILL at several points of a real ingest in ``test_kill.py``; concurrent first opens and
read-only media in ``test_store_safety.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kbtest import LEXICAL, TEST_INDEXES_ENV, run_kb

from kb_core.errors import EXIT_STORAGE, KbError
from kb_core.ingest.pipeline import ingest_paths
from kb_core.storage.store import StoreOfRecord, sqlite3

ENV = TEST_INDEXES_ENV


def _notes(root: Path, count: int, words: int = 30, tag: str = "note") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = " ".join(f"{tag}{i} term{j}" for j in range(words))
        (root / f"{tag}{i}.md").write_text(f"# {tag} {i}\n\n{body}\n", encoding="utf-8")
    return root


def _paths(kb_dir: Path) -> list[str]:
    store = StoreOfRecord(kb_dir, create=False)
    try:
        return [d.path for d in store.list_documents()]
    finally:
        store.close()


def test_injected_disk_full_keeps_what_was_stored(tmp_path: Path, make_kb, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    kb = make_kb(indexes__enabled=[LEXICAL], ingest__batch_documents=5)
    first = _notes(tmp_path / "first", 4, tag="old")
    ingest_paths(kb, [first])
    second = _notes(tmp_path / "second", 20, tag="new")
    calls = {"n": 0}
    original = StoreOfRecord.replace_document

    def fill_up(self: StoreOfRecord, *args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 8:  # in the middle of the second batch
            raise sqlite3.OperationalError("database or disk is full")
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(StoreOfRecord, "replace_document", fill_up)
    with pytest.raises(KbError) as caught:
        ingest_paths(kb, [second])
    assert caught.value.exit_code == EXIT_STORAGE and "disk is full" in str(caught.value)
    stored = [d.path for d in kb.store.list_documents()]
    assert [p for p in stored if p.startswith("old")] == [f"old{i}.md" for i in range(4)]
    assert len([p for p in stored if p.startswith("new")]) == 5  # the first batch, whole; the second rolled back
    monkeypatch.undo()
    again = ingest_paths(kb, [second])
    assert (len(again.added), again.unchanged, again.failed) == (15, 5, [])


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1.5 MB tmpfs: a real full disk (needs root / CAP_SYS_ADMIN, else skipped)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1536k", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if made.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


@pytest.mark.slow
def test_a_real_full_disk_keeps_what_was_stored(tmp_path: Path, tiny_disk: Path) -> None:
    env = ENV | {"KB_HOME": str(tiny_disk / "k")}
    first = _notes(tmp_path / "first", 3, tag="okapi")
    assert run_kb("ingest", str(first), env=env).returncode == 0
    big = _notes(tmp_path / "big", 300, words=300, tag="bulk")
    full = run_kb("ingest", str(big), env=env)
    assert full.returncode == EXIT_STORAGE, full.stderr
    assert (
        "disk is full" in full.stderr and len(full.stderr.strip().splitlines()) == 1 and "Traceback" not in full.stderr
    )
    assert [p for p in _paths(tiny_disk / "k") if p.startswith("okapi")] == [f"okapi{i}.md" for i in range(3)]
    found = run_kb("search", "okapi1", "--mode", "lexical", "--json", env=env)
    assert found.returncode == 0 and json.loads(found.stdout)["hits"][0]["doc_path"] == "okapi1.md"
    # free space (a bigger disk), and the next run completes the work
    subprocess.run(["mount", "-o", "remount,size=64m", str(tiny_disk)], check=True)
    done = run_kb("ingest", str(big), "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["documents"] == 303
    doctor = run_kb("doctor", "--json", env=env | {"KB_MODELS__LLM__BACKEND": "ollama"})
    assert [p for p in json.loads(doctor.stdout)["problems"] if p["component"] == LEXICAL] == []


@pytest.mark.slow
def test_two_writers_at_once_lose_nothing(tmp_path: Path) -> None:
    one, two = _notes(tmp_path / "one", 200, tag="alpha"), _notes(tmp_path / "two", 200, tag="beta")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | ENV | {"KB_HOME": str(tmp_path / "k")}
    kb = str(Path(sys.executable).parent / "kb")
    assert run_kb("init", env=ENV | {"KB_HOME": str(tmp_path / "k")}).returncode == 0
    writers = [
        subprocess.Popen(
            [kb, "ingest", str(folder)], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for folder in (one, two)
    ]
    outcomes = [(w.wait(timeout=300), w.stderr.read() if w.stderr else "") for w in writers]
    for code, err in outcomes:
        assert code in (0, 2), err
        assert code == 0 or "another kb process is writing" in err
    for (code, _), folder in zip(outcomes, (one, two)):
        if code:
            assert run_kb("ingest", str(folder), env=ENV | {"KB_HOME": str(tmp_path / "k")}).returncode == 0
    paths = _paths(tmp_path / "k")
    assert len(paths) == 400 and len(set(paths)) == 400


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), ValueError("IoError (os error 28)")])
def test_a_full_disk_in_an_index_engine_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: Exception
) -> None:
    from kb_core.cli.main import main
    from kb_core.testing import WordIndex

    docs = _notes(tmp_path / "docs", 3, tag="ibex")
    monkeypatch.setenv("KB_INDEXES__ENABLED", f'["{LEXICAL}"]')
    monkeypatch.setattr(WordIndex, "commit", lambda self: (_ for _ in ()).throw(error))
    assert main(["--kb", str(tmp_path / "k"), "ingest", str(docs)]) == EXIT_STORAGE
    err = capsys.readouterr().err
    assert "disk is full" in err and len(err.strip().splitlines()) == 1
    assert _paths(tmp_path / "k") == ["ibex0.md", "ibex1.md", "ibex2.md"]  # the store of record kept them
    monkeypatch.undo()
    monkeypatch.setenv("KB_INDEXES__ENABLED", f'["{LEXICAL}"]')
    assert main(["--kb", str(tmp_path / "k"), "ingest", str(docs)]) == 0  # and the next run completes the index
