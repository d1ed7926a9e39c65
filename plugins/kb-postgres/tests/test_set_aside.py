"""A file that kills every ingest worker taking it is set aside after ``FILE_TAKES`` of them (issue 45, deliver 2).

Without the cap the shared queue would hand such a file (a parser that crashes its process) to worker after
worker once each lease ran out. The store takes a file whose taker stopped alone, counting its takers; the
core sets it aside at the next taking, reports it as failed with its reason in that ingest and every later one,
and takes it again once its bytes change or ``kb ingest --retry-failed`` asks for it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kb_postgres.settings import PostgresSettings
from kb_postgres.store import PostgresStore
from kb_postgres.testing import run_sql

from kb_core import KnowledgeBase, ingest_paths
from kb_core.bounds import FILE_TAKES

EXPIRE = "UPDATE ingest_jobs SET lease_until = now() - interval '1 second' WHERE token IS NOT NULL"


@pytest.fixture
def open_in(postgres_options: dict[str, object], tmp_path: Path) -> Iterator[Callable[[str], PostgresStore]]:
    opened: list[PostgresStore] = []

    def open_one(folder: str) -> PostgresStore:
        opened.append(PostgresStore(PostgresSettings.resolve(postgres_options, {}), tmp_path / folder))
        return opened[-1]

    yield open_one
    for store in opened:
        store.close()


def test_a_file_whose_taker_stopped_is_taken_alone_with_its_takers_counted(
    open_in: Callable[[str], PostgresStore], postgres_options: dict[str, object]
) -> None:
    first, second = open_in("kb"), open_in("kb")
    first.queue_files("/src", ["a.md", "b.md", "c.md"])
    assert [job.taken_before for job in first.take_files("/src", 8)] == [0, 0, 0]
    run_sql(postgres_options, EXPIRE)  # (the first worker died holding all three)
    taken = [second.take_files("/src", 8) for _ in range(3)]
    assert [[(job.path, job.taken_before) for job in jobs] for jobs in taken] == [
        [("a.md", 1)],
        [("b.md", 1)],
        [("c.md", 1)],
    ]  # one at a time: a file that kills its worker takes no other file down with it again
    run_sql(postgres_options, EXPIRE)
    assert [(job.path, job.taken_before) for job in first.take_files("/src", 8)] == [("a.md", 2)]


def test_a_file_set_aside_is_reported_until_it_changes_or_is_retried(
    open_kb: KnowledgeBase, postgres_options: dict[str, object], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Alpha notes.\n")
    (docs / "b.md").write_text("Bravo notes.\n")
    root = str(docs.resolve())
    store = open_kb.store
    assert isinstance(store, PostgresStore)
    store.queue_files(root, ["b.md"])  # b.md as FILE_TAKES workers left it: each took it, and died
    run_sql(postgres_options, f"UPDATE ingest_jobs SET token = 'dead', tries = {FILE_TAKES.high}")
    run_sql(postgres_options, EXPIRE)

    report = ingest_paths(open_kb, [docs])
    assert report.added == ["a.md"] and [w.path for w in report.failed] == ["b.md"]
    reason = report.failed[0].reason
    assert reason.startswith(f"each of the {FILE_TAKES.high} ingest workers that took it stopped")
    assert "kb ingest --retry-failed" in reason
    digest = hashlib.sha256(b"Bravo notes.\n").hexdigest()
    assert [(f.path, f.content_hash, f.reason) for f in store.files_set_aside()] == [("b.md", digest, reason)]

    again = ingest_paths(open_kb, [docs])  # unchanged: not taken, reported again
    assert again.added == [] and [(w.path, w.reason) for w in again.failed] == [("b.md", reason)]
    assert store.get_document("b.md") is None

    (docs / "b.md").write_text("Bravo notes, mended.\n")
    changed = ingest_paths(open_kb, [docs])
    assert changed.added == ["b.md"] and changed.failed == [] and store.files_set_aside() == []

    store.queue_files(root, ["b.md"])
    [job] = store.take_files(root, 8)
    assert store.set_aside(job, hashlib.sha256(b"Bravo notes, mended.\n").hexdigest(), "crashed")
    assert [w.path for w in ingest_paths(open_kb, [docs]).failed] == ["b.md"]
    retried = ingest_paths(open_kb, [docs], retry_failed=True)
    assert retried.failed == [] and retried.unchanged == 2 and store.files_set_aside() == []


#: A parser plugin for ``.boom`` files that kills its own process (SIGKILL: no Python handler runs) on a file whose
#: text says BOOM, as a native parser's crash would, unless KB_TEST_DEFUSED is set.
BOOM_PLUGIN = textwrap.dedent(
    """
    import os, signal
    from kb_core.plugin import hookimpl
    from kb_core.plugin.containers import TextParser

    class Boom(TextParser):
        def parse(self, text, path):
            if "BOOM" in text and not os.environ.get("KB_TEST_DEFUSED"):
                os.kill(os.getpid(), signal.SIGKILL)
            return super().parse(text, path)

    @hookimpl
    def register_parsers(register):
        register("boom", lambda ctx: Boom(), extensions=(".boom",))
    """
)


@pytest.mark.slow  # (real kb processes)
def test_two_workers_set_aside_a_file_that_kills_them_after_three_deaths(
    kb_env: Callable[..., dict[str, str]], postgres_options: dict[str, object], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    names = [f"note{n:02d}.txt" for n in range(12)]
    for number, name in enumerate(names):
        (docs / name).write_text(f"Note {number} about word{number}.\n")
    (docs / "note05-crash.boom").write_text("This file says BOOM.\n")  # (in the middle: in some worker's batch)
    (tmp_path / "boomparser.py").write_text(BOOM_PLUGIN)
    env = kb_env(KB_BACKENDS__POSTGRES__JOB_LEASE_S="1")
    env["KB_PLUGIN_MODULES"] += ",boomparser"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH", "")]))
    command = [str(Path(sys.executable).parent / "kb"), "--kb", str(tmp_path / "kb"), "ingest", "--json", str(docs)]

    def workers(count: int, **extra: str) -> list[subprocess.CompletedProcess[str]]:
        running = [
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env | extra)
            for _ in range(count)
        ]
        return [subprocess.CompletedProcess(p.args, p.wait(300), *p.communicate()) for p in running]

    deaths, reports = 0, []
    for _round in range(int(FILE_TAKES.high) + 1):  # (each round two workers; the file kills at most two of them)
        for done in workers(2):
            if done.returncode == -9:
                deaths += 1
            else:
                assert done.returncode in (0, 4), done.stderr
                reports.append(json.loads(done.stdout))
        if any(report["failed"] for report in reports):
            break
    assert deaths == FILE_TAKES.high  # every taker of the file died, and no other worker
    failed = [item for report in reports for item in report["failed"]]
    assert [item["path"] for item in failed] == ["note05-crash.boom"]
    assert failed[0]["reason"].startswith(f"each of the {FILE_TAKES.high} ingest workers that took it stopped")
    stored = run_sql(postgres_options, "SELECT path FROM documents ORDER BY path")
    assert [row[0] for row in stored] == names  # every other file stored, once (below), none half
    assert run_sql(postgres_options, "SELECT seq FROM outbox_head") == [(len(names),)]
    assert run_sql(postgres_options, "SELECT path FROM ingest_jobs WHERE failed_hash IS NOT NULL") == [
        ("note05-crash.boom",)
    ]

    doctor = subprocess.run(
        [*command[:3], "doctor", "--no-generate", "--json"], capture_output=True, text=True, env=env, timeout=300
    )
    assert doctor.returncode == 3, doctor.stderr
    [problem] = [p for p in json.loads(doctor.stdout)["problems"] if p["component"] == "store"]
    assert problem["message"].startswith(f"1 file(s) of {docs.resolve()} set aside: every ingest worker")
    assert problem["message"].endswith(": note05-crash.boom")
    assert problem["fix"].startswith(f"kb ingest --retry-failed {docs.resolve()}")

    [later] = workers(1)  # an ingest later: no worker takes it (none dies), and it is reported again
    assert later.returncode == 4, later.stderr
    assert [item["path"] for item in json.loads(later.stdout)["failed"]] == ["note05-crash.boom"]
    [retried] = workers(1, KB_TEST_DEFUSED="1")  # (the parser mended: still aside without the flag)
    assert retried.returncode == 4  # without the flag it stays aside
    retry_command = [*command[:-1], "--retry-failed", command[-1]]
    done = subprocess.run(
        retry_command, capture_output=True, text=True, env=env | {"KB_TEST_DEFUSED": "1"}, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == ["note05-crash.boom"]
    assert run_sql(postgres_options, "SELECT count(*) FROM ingest_jobs") == [(0,)]
