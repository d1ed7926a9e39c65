"""Several real ``kb`` processes on one PostgreSQL schema (issue 45, deliver 2).

- two knowledge base folders (two servers, each with its own index) follow the store's change feed: what one
  ingests the other's search finds, with ``kb search`` and with a running ``kb serve``;
- ingest workers share a folder's files through the store's queue: every document stored once, none twice;
- a worker SIGKILLed in the middle of a document leaves nothing of it stored, and the other worker does it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

pytestmark = pytest.mark.slow  # (real kb processes)

RunKb = Callable[..., subprocess.CompletedProcess[str]]


def kb_command(folder: Path, *args: str) -> list[str]:
    """The ``kb`` command line on knowledge base ``folder``."""
    return [str(Path(sys.executable).parent / "kb"), "--kb", str(folder), *args]


def write_notes(folder: Path, count: int, prefix: str = "note") -> list[str]:
    """``count`` small text files, each with a word of its own (``word<N>``); their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for number in range(count):
        name = f"{prefix}{number:03d}.txt"
        (folder / name).write_text(f"Note {number} about word{prefix}{number} and shared things.\n", encoding="utf-8")
        names.append(name)
    return names


def searched(run_kb: RunKb, folder: Path, text: str) -> list[str]:
    result = run_kb(folder, "search", "--mode", "lexical", "--json", text)
    assert result.returncode in (0, 1), result.stderr  # (1: nothing found)
    return [hit["doc_path"] for hit in json.loads(result.stdout)["hits"]]


def test_what_one_folder_ingests_the_other_folder_finds(run_kb: RunKb, tmp_path: Path) -> None:
    write_notes(tmp_path / "docs-a", 3, "alpha")
    write_notes(tmp_path / "docs-b", 2, "beta")
    assert run_kb(tmp_path / "one", "ingest", str(tmp_path / "docs-a")).returncode == 0
    assert searched(run_kb, tmp_path / "two", "wordalpha1") == ["alpha001.txt"]  # built from the store
    assert run_kb(tmp_path / "two", "ingest", str(tmp_path / "docs-b")).returncode == 0
    assert searched(run_kb, tmp_path / "one", "wordbeta0") == ["beta000.txt"]  # the feed, applied before searching
    (tmp_path / "docs-a" / "alpha001.txt").write_text("Rewritten: nothing of that word now.\n", encoding="utf-8")
    assert run_kb(tmp_path / "one", "ingest", str(tmp_path / "docs-a")).returncode == 0
    assert searched(run_kb, tmp_path / "two", "wordalpha1") == []  # a change reaches the other index too
    assert searched(run_kb, tmp_path / "two", "rewritten") == ["alpha001.txt"]


def test_a_running_server_finds_what_another_folder_ingests(
    run_kb: RunKb, kb_env: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    write_notes(tmp_path / "docs", 2, "gamma")
    assert run_kb(tmp_path / "served", "init").returncode == 0
    server = subprocess.Popen(
        kb_command(tmp_path / "served", "serve", "--port", "0", "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kb_env(),
    )
    try:
        url = _serve_url(server)
        assert _search(url, "wordgamma1") == []
        assert run_kb(tmp_path / "ingesting", "ingest", str(tmp_path / "docs")).returncode == 0
        deadline = time.monotonic() + 120  # (not a timing target: bench/bench_shared.py measures the delay)
        while (found := _search(url, "wordgamma1")) == [] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert found == ["gamma001.txt"]
    finally:
        server.terminate()
        server.wait(30)


def _serve_url(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    lines: list[str] = []
    while not lines or lines[-1] != "}\n":
        line = process.stdout.readline()
        assert line, process.stderr.read() if process.stderr else "kb serve printed nothing"
        lines.append(line)
    return str(json.loads("".join(lines))["url"])


def _search(url: str, text: str) -> list[str]:
    query = urllib.parse.urlencode({"q": text, "mode": "lexical", "k": 3})
    with urllib.request.urlopen(f"{url}/search?{query}", timeout=60) as response:
        body: dict[str, Any] = json.load(response)
    return [hit["doc_path"] for hit in body["hits"]]


def test_two_workers_share_a_folder_and_store_each_document_once(
    kb_env: Callable[..., dict[str, str]], postgres_options: dict[str, object], tmp_path: Path
) -> None:
    names = write_notes(tmp_path / "docs", 60)
    workers = [
        subprocess.Popen(
            kb_command(tmp_path / "kb", "ingest", "--json", str(tmp_path / "docs")),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=kb_env(),
        )
        for _ in range(2)
    ]
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        reports.append(json.loads(out))
    added = [set(report["added"]) for report in reports]
    assert added[0] | added[1] == set(names) and not added[0] & added[1]  # each document by one worker
    assert sum(len(a) for a in added) == len(names)
    with psycopg.connect(str(postgres_options["url"])) as conn:
        conn.execute(f"SET search_path TO {postgres_options['schema']}")
        assert _rows(conn, "SELECT count(*) FROM documents") == len(names)
        assert _rows(conn, "SELECT count(*) FROM ingest_jobs") == 0
        assert _rows(conn, "SELECT seq FROM outbox_head") == len(names)  # one feed entry a document: none twice


def _rows(conn: psycopg.Connection[Any], query: str) -> int:
    row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


#: A parser plugin for ``.slow`` files that stops for good in the first process to parse ``stuck.slow`` (it
#: leaves a marker saying so); every later parse reads the file as text.
SLOW_PLUGIN = textwrap.dedent(
    """
    import os, time
    from pathlib import Path
    from kb_core.plugin import hookimpl
    from kb_core.plugin.containers import TextParser

    class Slow(TextParser):
        def parse(self, text, path):
            marker = Path(os.environ["KB_TEST_STUCK_MARKER"])
            if path.endswith("stuck.slow") and not marker.exists():
                marker.write_text(str(os.getpid()))
                time.sleep(600)
            return super().parse(text, path)

    @hookimpl
    def register_parsers(register):
        register("slow", lambda ctx: Slow(), extensions=(".slow",))
    """
)


def test_a_worker_killed_mid_document_leaves_it_to_the_other(
    kb_env: Callable[..., dict[str, str]], postgres_options: dict[str, object], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    names = write_notes(docs, 20)
    (docs / "a-stuck.slow").write_text("The stuck document, about wordstuck.\n", encoding="utf-8")
    (tmp_path / "slowparser.py").write_text(SLOW_PLUGIN, encoding="utf-8")
    marker = tmp_path / "stuck-marker"
    env = kb_env(KB_BACKENDS__POSTGRES__JOB_LEASE_S="2", KB_TEST_STUCK_MARKER=str(marker))
    env["KB_PLUGIN_MODULES"] += ",slowparser"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH", "")]))

    def worker() -> subprocess.Popen[str]:
        command = kb_command(tmp_path / "kb", "ingest", "--json", str(docs))
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    first = worker()
    deadline = time.monotonic() + 120
    while not marker.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), first.communicate()[1]
    second = worker()
    time.sleep(0.5)  # (the second is walking the folder, or taking files already)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(30)
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    report = json.loads(out)
    with psycopg.connect(str(postgres_options["url"])) as conn:
        conn.execute(f"SET search_path TO {postgres_options['schema']}")
        assert _rows(conn, "SELECT count(*) FROM documents") == len(names) + 1
        assert _rows(conn, "SELECT count(*) FROM ingest_jobs") == 0
        assert _rows(conn, "SELECT seq FROM outbox_head") == len(names) + 1  # none stored twice
        whole = (
            "SELECT count(*) FROM documents d"
            " WHERE chunk_count <> (SELECT count(*) FROM chunks c WHERE c.doc_path = d.path)"
        )
        assert _rows(conn, whole) == 0  # nothing half stored
    assert "a-stuck.slow" in report["added"]  # the killed worker's document, done by the other
    assert len(report["added"]) == len(names) + 1  # (the killed worker stored nothing: it was in its first batch)
