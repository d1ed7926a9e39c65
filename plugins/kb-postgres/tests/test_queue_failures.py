"""A batch that fails leaves no file of the shared ingest queue taken (issue 45; review findings 1 and 2).

Before: any exception after ``take_files`` (a document the store refused, a busy feed lock, a chunker bug) left
the batch's jobs holding this worker's token, renewed for as long as the store stayed open; ``kb ingest`` aborted,
and in ``kb serve`` every later upload polled forever for files "in progress". Now a document the store refuses is
that file's failure, any other failure puts the batch back in the queue (untaken, its takers not counted), and a
container's own document is written with its job's finishing, only while the job is still the worker's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kb_postgres.settings import PostgresSettings
from kb_postgres.store import PostgresStore
from kb_postgres.testing import run_sql

from kb_core import KbError, KnowledgeBase, WriterBusyError, ingest_paths, load_config
from kb_core.plugin import RegisterParser, hookimpl
from kb_core.plugin.containers import Part, TextParser
from kb_core.plugin.stores import IngestJob
from kb_core.testing import TestIndexesPlugin, load_registry

#: A text file whose first NUL byte comes after the first 8 KiB (the ingest's old binary sniff).
NUL_PAST_8_KIB = b"Plain text line.\n" * 600 + b"then a NUL \x00 here.\n"


def kb_command(folder: Path) -> list[str]:
    """The ``kb`` command line on knowledge base ``folder``."""
    return [str(Path(sys.executable).parent / "kb"), "--kb", str(folder)]


@pytest.fixture
def open_kb(postgres_options: dict[str, object], tmp_path: Path) -> Iterator[KnowledgeBase]:
    plugins = load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin())])
    overrides = {"store.backend": "postgres", "backends.postgres": dict(postgres_options), "indexes.enabled": []}
    kb = KnowledgeBase(load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={}), plugins)
    yield kb
    kb.close()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (folder / name).write_text(f"Notes of {name}.\n")
    return folder


def store_of(kb: KnowledgeBase) -> PostgresStore:
    assert isinstance(kb.store, PostgresStore)
    return kb.store


def stored(options: dict[str, object]) -> list[str]:
    return [row[0] for row in run_sql(options, "SELECT path FROM documents ORDER BY path")]


def renewed(store: PostgresStore) -> set[str]:
    """The tokens the store's lease renewer still renews."""
    return set(store._renewer._tokens) if store._renewer is not None else set()


def test_a_file_with_a_nul_past_the_first_8_kib_fails_alone(
    open_kb: KnowledgeBase, docs: Path, postgres_options: dict[str, object]
) -> None:
    (docs / "b.md").write_bytes(NUL_PAST_8_KIB)
    report = ingest_paths(open_kb, [docs])
    assert report.added == ["a.md", "c.md"]
    assert [(w.path, w.reason) for w in report.failed] == [("b.md", "binary file (NUL bytes); skipped")]
    assert run_sql(postgres_options, "SELECT count(*) FROM ingest_jobs") == [(0,)]  # nothing left taken
    again = ingest_paths(open_kb, [docs])  # the same handle (kb serve's writer): not waiting for a lease
    assert again.unchanged == 2 and [w.path for w in again.failed] == ["b.md"]


def test_a_document_the_store_refuses_is_that_files_failure(
    open_kb: KnowledgeBase, docs: Path, postgres_options: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_of(open_kb)
    replace = store.replace_document

    def refusing(document: Any, chunks: Any, mtime_ns: int = 0) -> None:
        if document.path == "b.md":
            raise KbError("cannot store 'b.md': refused", hint="mend it")
        replace(document, chunks, mtime_ns)

    monkeypatch.setattr(store, "replace_document", refusing)
    report = ingest_paths(open_kb, [docs])
    assert report.added == ["a.md", "c.md"] and stored(postgres_options) == ["a.md", "c.md"]
    assert [(w.path, w.reason) for w in report.failed] == [("b.md", "cannot store 'b.md': refused (mend it)")]
    assert run_sql(postgres_options, "SELECT count(*) FROM ingest_jobs") == [(0,)]


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("a bug in the write step"), WriterBusyError("the feed lock is busy"), KeyboardInterrupt()],
    ids=["bug", "busy", "interrupt"],
)
def test_a_failure_in_the_write_step_puts_the_batch_back_untaken(
    open_kb: KnowledgeBase,
    docs: Path,
    postgres_options: dict[str, object],
    monkeypatch: pytest.MonkeyPatch,
    failure: BaseException,
) -> None:
    store = store_of(open_kb)
    replace = store.replace_document

    def failing(document: Any, chunks: Any, mtime_ns: int = 0) -> None:
        if document.path == "b.md":
            raise failure
        replace(document, chunks, mtime_ns)

    monkeypatch.setattr(store, "replace_document", failing)
    with pytest.raises(type(failure)):
        ingest_paths(open_kb, [docs])
    assert stored(postgres_options) == []  # the batch's transaction is whole: nothing of it written
    jobs = run_sql(postgres_options, "SELECT path, token, lease_until, tries FROM ingest_jobs ORDER BY path")
    assert jobs == [(name, None, None, 0) for name in ("a.md", "b.md", "c.md")]  # untaken, no taker counted
    assert renewed(store) == set()
    monkeypatch.undo()
    report = ingest_paths(open_kb, [docs])  # the same handle goes on at once
    assert report.added == ["a.md", "b.md", "c.md"] and report.failed == []
    assert run_sql(postgres_options, "SELECT count(*) FROM ingest_jobs") == [(0,)]


class FailingTokenizer:
    """An embedder whose tokenizer fails on any text holding ``word`` (the chunker then fails on that document)."""

    def __init__(self, embedder: Any, word: str) -> None:
        self._embedder, self._word = embedder, word

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._embedder, name)
        if name not in ("count_tokens", "token_starts"):
            return found

        def failing(texts: list[str]) -> Any:
            if any(self._word in text for text in texts):
                raise ValueError("no way to cut it")
            return found(texts)

        return failing


def test_a_chunker_failure_is_that_files_failure(
    open_kb: KnowledgeBase, docs: Path, postgres_options: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = FailingTokenizer(open_kb.embedder(), "Notes of b.md")
    monkeypatch.setattr(open_kb, "embedder", lambda: embedder)
    report = ingest_paths(open_kb, [docs])
    assert report.added == ["a.md", "c.md"] and stored(postgres_options) == ["a.md", "c.md"]
    assert [(w.path, w.reason) for w in report.failed] == [
        ("b.md", "cannot be cut into passages (chunker failed: ValueError: no way to cut it); skipped")
    ]
    assert run_sql(postgres_options, "SELECT count(*) FROM ingest_jobs") == [(0,)]


def test_return_files_clears_only_this_workers_jobs(
    open_kb: KnowledgeBase, postgres_options: dict[str, object]
) -> None:
    store = store_of(open_kb)
    store.queue_files("/src", ["a.md", "b.md"])
    jobs = store.take_files("/src", 8)
    assert renewed(store) == {jobs[0].token}
    assert store.return_files([IngestJob("/src", "a.md", "not-the-token")]) == 0
    assert store.return_files(jobs[:1]) == 1
    rows = run_sql(postgres_options, "SELECT path, token IS NULL, tries FROM ingest_jobs ORDER BY path")
    assert rows == [("a.md", True, 0), ("b.md", False, 1)]  # b.md is still this worker's
    assert store.return_files(jobs[1:]) == 1 and renewed(store) == set()
    assert [(job.path, job.taken_before) for job in store.take_files("/src", 8)] == [("a.md", 0), ("b.md", 0)]


class Pack(TextParser):
    """A container of five ``.txt`` parts; ``during(number)`` runs before each part is yielded."""

    def __init__(self, during: Callable[[int], None]) -> None:
        super().__init__()
        self.during = during

    def parts(self, file: Path, path: str) -> Iterator[Part]:
        for number in range(5):
            self.during(number)
            yield Part(f"part{number}.txt", f"Part {number} of the pack.".encode())


class PackPlugin:
    def __init__(self, pack: Pack) -> None:
        self.pack = pack

    @hookimpl
    def register_parsers(self, register: RegisterParser) -> None:
        register("pack", lambda ctx: self.pack, extensions=(".pack",))


def test_a_containers_own_document_is_written_only_while_its_job_is_the_workers(
    postgres_options: dict[str, object], tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "box.pack").write_text("five parts\n")
    root = str(folder.resolve())
    thief = PostgresStore(PostgresSettings.resolve(postgres_options, {}), tmp_path / "thief")

    stolen: list[IngestJob] = []

    def steal(number: int) -> None:  # mid-file (the first time), its lease runs out and another worker takes it
        if number == 3 and not stolen:
            run_sql(postgres_options, "UPDATE ingest_jobs SET lease_until = now() - interval '1 second'")
            [job] = stolen[:] = thief.take_files(root, 8)
            assert thief.set_aside(job, "hash", "held by the thief")  # (so the first worker stops waiting for it)

    plugins = load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin()), ("pack", PackPlugin(Pack(steal)))])
    overrides = {"store.backend": "postgres", "backends.postgres": dict(postgres_options), "indexes.enabled": []}
    parts = [f"box.pack/part{n}.txt" for n in range(5)]
    try:
        with KnowledgeBase(load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={}), plugins) as kb:
            first = ingest_paths(kb, [folder])
            assert stored(postgres_options) == parts  # its parts, each batch whole: never the document with the hash
            assert "box.pack" not in first.added
            assert thief.release_files(root) == 1
            again = ingest_paths(kb, [folder])
            assert again.added == ["box.pack"] and again.unchanged == 5  # the parts stored already: by their hash
    finally:
        thief.close()
    assert stored(postgres_options) == sorted(["box.pack", *parts])
    assert run_sql(postgres_options, "SELECT count(*) FROM ingest_jobs") == [(0,)]


@pytest.mark.slow  # (real kb processes)
def test_kb_ingest_and_kb_serve_go_on_past_a_file_with_a_nul(
    run_kb: Callable[..., subprocess.CompletedProcess[str]],
    kb_env: Callable[..., dict[str, str]],
    docs: Path,
    postgres_options: dict[str, object],
    tmp_path: Path,
) -> None:
    (docs / "b.md").write_bytes(NUL_PAST_8_KIB)
    first = run_kb(tmp_path / "kb", "ingest", str(docs))
    assert first.returncode == 4, first.stderr
    assert [line for line in first.stderr.splitlines() if "b.md" in line] == [
        "  failed: b.md: binary file (NUL bytes); skipped"
    ]
    assert stored(postgres_options) == ["a.md", "c.md"]
    assert run_sql(postgres_options, "SELECT count(*) FROM ingest_jobs") == [(0,)]
    second = run_kb(tmp_path / "kb", "ingest", str(docs))  # not waiting for a lease: nothing is held
    assert second.returncode == 4 and "added 0, updated 0, unchanged 2" in second.stdout, second.stderr

    server = subprocess.Popen(
        [*kb_command(tmp_path / "kb"), "serve", "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kb_env(),
    )
    try:
        assert server.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "}\n":
            line = server.stdout.readline()
            assert line, server.stderr.read() if server.stderr else "kb serve printed nothing"
            lines.append(line)
        url = json.loads("".join(lines))["url"]
        with httpx.Client(base_url=url, timeout=120) as http:  # (a guard: before, the second upload never ended)
            bad = http.post("/documents", files={"file": ("up/bad.md", NUL_PAST_8_KIB, "text/markdown")})
            assert bad.status_code == 200, bad.text
            assert bad.json()["failed"] == [{"path": "up/bad.md", "reason": "binary file (NUL bytes); skipped"}]
            good = http.post("/documents", files={"file": ("up/good.md", b"A good note.\n", "text/markdown")})
            assert good.status_code == 200, good.text
            assert good.json()["added"] == ["up/good.md"] and good.json()["failed"] == []
    finally:
        server.terminate()
        server.wait(30)
    assert run_sql(postgres_options, "SELECT count(*) FROM ingest_jobs") == [(0,)]


#: A container plugin for ``.pack`` files: ten ``.txt`` parts, the process killed (SIGKILL: no Python handler runs)
#: as it reads the seventh, unless KB_TEST_DEFUSED is set.
PACK_PLUGIN = textwrap.dedent(
    """
    import os, signal
    from kb_core.plugin import hookimpl
    from kb_core.plugin.containers import Part, TextParser

    class Pack:
        def parts(self, file, path):
            for number in range(10):
                if number == 6 and not os.environ.get("KB_TEST_DEFUSED"):
                    os.kill(os.getpid(), signal.SIGKILL)
                yield Part(f"part{number}.txt", f"Part {number} of the pack.".encode())

    @hookimpl
    def register_parsers(register):
        register("pack", lambda ctx: Pack(), extensions=(".pack",))
    """
)


@pytest.mark.slow  # (real kb processes)
def test_a_worker_killed_mid_container_leaves_whole_batches_of_parts_and_no_hash(
    kb_env: Callable[..., dict[str, str]], postgres_options: dict[str, object], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "box.pack").write_text("ten parts\n")
    (tmp_path / "packparser.py").write_text(PACK_PLUGIN)
    env = kb_env(KB_BACKENDS__POSTGRES__JOB_LEASE_S="1", KB_INGEST__BATCH_DOCUMENTS="2")
    env["KB_PLUGIN_MODULES"] += ",packparser"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH", "")]))
    command = [*kb_command(tmp_path / "kb"), "ingest", "--json", str(docs)]
    killed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert killed.returncode == -9, killed.stderr
    parts = [f"box.pack/part{n}.txt" for n in range(6)]
    assert stored(postgres_options) == parts  # three whole batches of two; not the container's own document
    assert run_sql(postgres_options, "SELECT path, tries FROM ingest_jobs") == [("box.pack", 1)]  # its lease runs out
    again = subprocess.run(command, capture_output=True, text=True, env=env | {"KB_TEST_DEFUSED": "1"}, timeout=300)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["unchanged"] == 6  # the parts stored already: skipped by their hash
    assert sorted(report["added"]) == ["box.pack", *[f"box.pack/part{n}.txt" for n in range(6, 10)]]
    assert run_sql(postgres_options, "SELECT count(*) FROM ingest_jobs") == [(0,)]
