"""End to end: a real ``kb watch`` subprocess following real file operations in a temporary folder."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from gate_parser import GATE_ENV
from watch_helpers import WAIT_S, WatchProcess, frozen, listed, run_kb, search_paths, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "ops").mkdir(parents=True)
    (folder / "alpha.md").write_text("# Alpha\n\nThe aardvark eats ants at dawn.\n", encoding="utf-8")
    (folder / "ops" / "backups.md").write_text("# Backups\n\nBackups are verified on Sundays.\n", encoding="utf-8")
    return folder


@pytest.fixture
def watching(tmp_path: Path, notes: Path) -> Iterator[WatchProcess]:
    process = WatchProcess(tmp_path / "kb", notes)
    first = process.event()
    assert (first["kind"], first["trigger"], sorted(first["added"])) == (
        "update",
        "initial",
        ["alpha.md", "ops/backups.md"],
    )
    yield process
    process.close()


def test_create_modify_rename_delete(tmp_path: Path, notes: Path, watching: WatchProcess) -> None:
    kb_dir = tmp_path / "kb"
    (notes / "ops" / "pager.md").write_text("# Pager\n\nThe zebrafish rota starts Monday.\n", encoding="utf-8")
    created = watching.event()
    assert (created["trigger"], created["added"], created["removed"]) == ("change", ["ops/pager.md"], [])
    assert search_paths(kb_dir, "zebrafish") == ["ops/pager.md"]

    (notes / "ops" / "pager.md").write_text("# Pager\n\nThe quokka rota starts Tuesday.\n", encoding="utf-8")
    assert watching.event()["updated"] == ["ops/pager.md"]
    assert search_paths(kb_dir, "quokka") == ["ops/pager.md"]
    assert search_paths(kb_dir, "zebrafish") == []

    (notes / "ops" / "pager.md").rename(notes / "rota.md")
    moved = watching.event()
    while not moved["added"]:  # a move seen as two batches: the removal first
        moved = {**watching.event(), "removed": moved["removed"]}
    assert (moved["added"], moved["removed"]) == (["rota.md"], ["ops/pager.md"])
    assert search_paths(kb_dir, "quokka") == ["rota.md"]

    (notes / "alpha.md").unlink()
    assert watching.event()["removed"] == ["alpha.md"]
    assert listed(kb_dir) == ["ops/backups.md", "rota.md"]

    (notes / "ops").rename(tmp_path / "elsewhere")  # a folder moved out of the watched one
    assert watching.event()["removed"] == ["ops/backups.md"]
    assert listed(kb_dir) == ["rota.md"]


def test_a_burst_of_saves_is_one_update(tmp_path: Path, notes: Path, watching: WatchProcess) -> None:
    target = notes / "draft.md"
    with frozen(watching):  # the 20 saves reach the watcher together, however slowly this machine makes them
        for n in range(20):
            target.write_text(f"# Draft\n\nVersion {n} of the draft mentions the narwhal{n}.\n", encoding="utf-8")
    update = watching.event()
    assert (update["added"], update["updated"]) == (["draft.md"], []) and update["changes"] >= 1
    assert search_paths(tmp_path / "kb", "narwhal19") == ["draft.md"]
    assert search_paths(tmp_path / "kb", "narwhal3") == []
    (notes / "after.md").write_text("# After\n\nThe okapi comes after the burst.\n", encoding="utf-8")
    after = watching.event()  # the next update is this file's: the burst left no second update behind
    assert (after["added"], after["updated"], after["removed"]) == (["after.md"], [], [])


def test_a_bad_file_is_one_line_and_watching_continues(tmp_path: Path, notes: Path, watching: WatchProcess) -> None:
    (notes / "alpha.md").write_bytes(b"\x00\x01binary now")
    bad = watching.event()
    assert bad["failed"] == [
        {"path": "alpha.md", "reason": "binary file (NUL bytes); skipped; the stored earlier version is kept"}
    ]
    assert search_paths(tmp_path / "kb", "aardvark") == ["alpha.md"]  # the stored version is kept
    (notes / "good.md").write_text("# Good\n\nThe platypus is fine.\n", encoding="utf-8")
    good = watching.event()
    assert good["added"] == ["good.md"] and good["failed"] == []  # the same bad file is not reported again
    assert search_paths(tmp_path / "kb", "platypus") == ["good.md"]


def test_sigint_ends_cleanly_with_130(tmp_path: Path, notes: Path, watching: WatchProcess) -> None:
    (notes / "late.md").write_text("# Late\n\nThe wombat arrives late.\n", encoding="utf-8")
    assert watching.event()["added"] == ["late.md"]
    assert watching.interrupt(signal.SIGINT) == 130
    stopped = watching.event()
    assert (stopped["kind"], stopped["documents"]) == ("stopped", 3)
    assert "Traceback" not in watching.stderr
    assert search_paths(tmp_path / "kb", "wombat") == ["late.md"]
    assert listed(tmp_path / "kb") == ["alpha.md", "late.md", "ops/backups.md"]


def test_sigterm_ends_with_0_and_status_lines_go_to_stderr(tmp_path: Path, notes: Path) -> None:
    process = WatchProcess(tmp_path / "kb", notes, json_lines=False)
    try:
        assert process.process.stderr is not None
        while "watching" not in process.stderr:  # the initial ingest is done (a line, or the end of stderr)
            line = process.process.stderr.readline()
            assert line, f"kb watch ended before watching: {process.stderr}"
            process.stderr += line
        assert process.interrupt(signal.SIGTERM) == 0
        assert process.lines.get(timeout=WAIT_S) is None  # nothing on stdout
        assert "ingested: added 2, updated 0, removed 0, failed 0" in process.stderr
        assert "stopped (2 documents)" in process.stderr
    finally:
        process.close()


def test_a_missing_path_is_one_line(tmp_path: Path) -> None:
    done = run_kb(tmp_path / "kb", "watch", str(tmp_path / "absent"))
    assert done.returncode == 2
    assert done.stderr == f"kb: error: no such file or folder: {tmp_path / 'absent'} (check the path)\n"


def test_sigint_during_an_update_lets_it_finish(tmp_path: Path, notes: Path) -> None:
    kb_dir, gate, staged = tmp_path / "kb", tmp_path / "gate", tmp_path / "staged"
    gate.mkdir()
    staged.mkdir()
    for n in range(40):
        text = f"# Bulk {n}\n\nEvery bulk note names the capybara {n}.\n\n" + "More words about rodents. " * 40
        (staged / f"bulk{n:03d}.md").write_text(text, encoding="utf-8")
    (staged / "hold.gate").write_text("The gate holds the update until the watcher has its SIGINT.\n")
    env = {"KB_PLUGIN_MODULES": "gate_parser", "PYTHONPATH": str(Path(__file__).parent), GATE_ENV: str(gate)}
    watching = WatchProcess(kb_dir, notes, env=env)
    try:
        assert watching.event()["trigger"] == "initial"
        staged.rename(notes / "bulk")  # one change: a folder of 41 files moved in
        wait_until((gate / "started").exists, "the update reached the gate")  # the update is running
        assert watching.interrupt(signal.SIGINT) == 130  # the gate lets the update go on once kb has the signal
        update, stopped = watching.event(), watching.event()
    finally:
        watching.close()
    assert len(update["added"]) == 41  # the update in progress finished
    assert (stopped["kind"], stopped["documents"]) == ("stopped", 43)
    assert len([p for p in listed(kb_dir) if p.startswith("bulk/")]) == 41
    assert len(search_paths(kb_dir, "capybara")) == 10  # the indexes were brought up to date too (k=10)
