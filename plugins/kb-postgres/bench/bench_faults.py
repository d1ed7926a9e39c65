"""SIGKILL during an ingest on PostgreSQL, then a restart: nothing lost, nothing half stored, every document stored
once (issue 45's fault target). Three runs, each on a new schema, on a folder of ``--documents`` (300) small notes:

a. two ``kb ingest`` workers; one is SIGKILLed once a quarter of the folder is stored; the other finishes, then
   ``kb ingest`` runs again.
b. one upload of the whole folder (one ``POST /documents``) to a ``kb serve``, SIGKILLed once a quarter is
   stored; the server is started again on its folder and the client sends the same upload again.
c. two ``kb ingest`` workers; PostgreSQL's postmaster is SIGKILLed once a third is stored; the server is started
   again on its data folder (pgserver's bundled ``pg_ctl``; PostgreSQL's crash recovery), then ``kb ingest`` again.

After each: the store through kb-postgres's Python API (every document once, its chunks whole, no chunk without
its document, one feed write per document, the queue empty, nothing set aside), the last ``kb ingest``'s report
(nothing failed) and ``kb doctor --no-generate`` (exit 0). The file leases are 5 s (``job_lease_s``; default 30)
so that the files a killed process held come back sooner. One JSON object of figures; any ``anomalies`` listed.

    python plugins/kb-postgres/bench/bench_faults.py [--documents 300]

Starts PostgreSQL with pgserver (run c kills and restarts it, so no ``--url``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
from bench_checks import KB, Server, anomalies, load_average, opened_store, serve_environment, store_figures
from bench_shared import write_folder
from kb_postgres.testing import postgres_server
from pgserver._commands import POSTGRES_BIN_PATH

LEASE_S = "5"


class Run:
    """One fault run: a new schema, its environment and knowledge base folders, what happened, what is wrong."""

    def __init__(self, name: str, url: str, work: Path, documents: int) -> None:
        self.name = name
        self.url = url
        self.work = work
        self.documents = documents
        self.schema = f"faults_{name}_{uuid.uuid4().hex[:8]}"
        self.env = serve_environment(url, self.schema) | {"KB_BACKENDS__POSTGRES__JOB_LEASE_S": LEASE_S}
        self.began = time.perf_counter()
        self.figures: dict[str, Any] = {"schema": self.schema}
        self.anomalies: list[str] = []

    def at(self) -> float:
        """Seconds since the run began."""
        return round(time.perf_counter() - self.began, 2)

    def stored(self) -> int:
        """Documents in the schema now (-1 when the server cannot be reached)."""
        try:
            with psycopg.connect(self.url, connect_timeout=2) as conn:
                row = conn.execute(f"SELECT count(*) FROM {self.schema}.documents").fetchone()
                return int(row[0]) if row else -1
        except psycopg.Error:
            return -1

    def wait_for(self, count: int, alive: Callable[[], bool]) -> int:
        """Poll until ``count`` documents are stored (or ``alive()`` turns false); how many there are."""
        while (now := self.stored()) < count and alive():
            time.sleep(0.01)
        return now

    def ingest(self, folder: Path, docs: Path) -> subprocess.Popen[str]:
        """A ``kb ingest --json`` worker of ``docs`` on knowledge base ``folder``."""
        command = [KB, "--kb", str(folder), "ingest", "--json", str(docs)]
        return subprocess.Popen(
            command, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )

    def finished(self, label: str, worker: subprocess.Popen[str], expect_ok: bool = True) -> dict[str, Any]:
        """A worker's exit, its report's counts and its error line; a traceback or an unexpected failure is an
        anomaly."""
        try:
            out, err = worker.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            worker.kill()
            out, err = worker.communicate()
            self.anomalies.append(f"{label}: still running after 600 s, killed")
        summary: dict[str, Any] = {"exit": worker.returncode}
        try:
            report = json.loads(out)
            summary |= {k: len(report[k]) for k in ("added", "updated", "failed")} | {"unchanged": report["unchanged"]}
            if report["failed"]:
                self.anomalies.append(f"{label}: failed {report['failed'][:3]}")
        except (json.JSONDecodeError, KeyError, TypeError):
            summary["stderr"] = err.strip().splitlines()[-1:] if err.strip() else []
        if "Traceback (most recent call last)" in err:
            self.anomalies.append(f"{label}: a traceback: {err.strip().splitlines()[-1]}")
        if expect_ok and worker.returncode != 0:
            self.anomalies.append(f"{label}: exit {worker.returncode}: {err.strip()[-300:]}")
        return summary

    def check(self, folders: list[Path]) -> None:
        """The store and ``kb doctor`` of each folder, after the run."""
        with opened_store(self.url, self.schema, self.work / f"check-{self.name}") as store:
            figures = store_figures(store)
        self.figures["store"] = figures
        self.anomalies += anomalies(figures, self.documents)
        doctors = {}
        for folder in folders:
            command = [KB, "--kb", str(folder), "doctor", "--no-generate", "--json"]
            done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=600)
            doctors[folder.name] = done.returncode
            if done.returncode != 0:
                problems = list(json.loads(done.stdout or "{}").get("problems", []))[:3]
                self.anomalies.append(f"kb doctor on {folder.name}: exit {done.returncode} {problems}")
        self.figures["doctor_exit"] = doctors

    def result(self) -> dict[str, Any]:
        """The run's figures with its anomalies and the load average."""
        return self.figures | {"anomalies": self.anomalies, "load_average": load_average()}


def kill_a_worker(url: str, work: Path, docs: Path, count: int) -> dict[str, Any]:
    """Run a: SIGKILL one of two ``kb ingest`` workers mid-run, then ``kb ingest`` again."""
    run = Run("worker", url, work, count)
    folder = work / "kb-worker"
    first, second = run.ingest(folder, docs), run.ingest(folder, docs)
    stored = run.wait_for(count // 4, lambda: first.poll() is None)
    running = first.poll() is None
    os.kill(first.pid, signal.SIGKILL)
    run.figures["killed"] = {"what": "kb ingest worker", "at_s": run.at(), "was_running": running}
    run.figures["stored_at_kill"] = stored
    first.wait()
    run.figures["other_worker"] = run.finished("the other worker", second)
    run.figures["stored_after_other_worker"] = run.stored()
    run.figures["again"] = run.finished("kb ingest again", run.ingest(folder, docs))
    run.check([folder])
    return run.result()


def upload(server: str, files: list[tuple[str, bytes]], out: dict[str, Any]) -> None:
    """``POST /documents`` of ``files`` in one request; its status or the error, into ``out``."""
    parts = [("file", (name, data, "text/markdown")) for name, data in files]
    try:
        response = httpx.post(f"{server}/documents", files=parts, timeout=900)
        out["status"] = response.status_code
        out["body"] = response.json() if response.is_success else response.text[:300]
    except httpx.HTTPError as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"


def kill_a_server(url: str, work: Path, docs: Path, count: int) -> dict[str, Any]:
    """Run b: SIGKILL a ``kb serve`` ingesting an upload, start it again, send the upload again."""
    run = Run("server", url, work, count)
    folder = work / "kb-server"
    files = [(path.name, path.read_bytes()) for path in sorted(docs.iterdir())]
    subprocess.run([KB, "--kb", str(folder), "init"], env=run.env, check=True, stdout=subprocess.DEVNULL)
    server = Server(folder, run.env)
    sent: dict[str, Any] = {}
    client = threading.Thread(target=upload, args=(server.url, files, sent))
    client.start()
    stored = run.wait_for(count // 4, client.is_alive)
    running = client.is_alive()
    server.kill()
    client.join()
    run.figures["killed"] = {"what": "kb serve ingesting an upload", "at_s": run.at(), "was_running": running}
    run.figures["stored_at_kill"] = stored
    run.figures["client_saw"] = sent.get("error") or sent.get("status")
    with opened_store(url, run.schema, work / "check-server-killed") as store:
        between = store_figures(store)
    run.figures["stored_after_kill"] = between["documents"]
    run.anomalies += [f"after the kill: {a}" for a in anomalies(between, between["documents"]) if "queue" not in a]
    run.figures["queue_left_by_kill"] = between["queue_left"]
    server = Server(folder, run.env)
    again: dict[str, Any] = {}
    try:
        upload(server.url, files, again)
    finally:
        server.stop()
    if again.get("status") != 200:
        run.anomalies.append(f"the upload again: {again}")
    body = again.get("body") or {}
    run.figures["upload_again"] = {"status": again.get("status")} | (
        {k: len(body[k]) for k in ("added", "updated", "failed")} | {"unchanged": body["unchanged"]}
        if isinstance(body, dict) and "added" in body
        else {}
    )
    tracebacks = server.tracebacks()
    if tracebacks:
        run.anomalies.append(f"kb serve wrote {tracebacks} traceback(s): see {server.log}")
    run.check([folder])
    return run.result()


def data_folder(url: str) -> Path:
    """The data folder of the server at ``url``."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    return Path(str(row[0]))


def restart(data: Path, postmaster: int) -> tuple[float, int]:
    """Start PostgreSQL again on ``data`` with pgserver's bundled ``pg_ctl``, as pgserver starts it (its socket in
    the folder the killed server used, so the URL stays; as the ``pgserver`` user when root); the seconds it took
    and the attempts (a start fails while the killed server's backends, leaving, still hold its shared memory).

    pgserver's own ``ensure_postgres_running`` would take the killed postmaster for a running one: with no
    init process reaping it, it stays a zombie, which psutil calls running."""
    began = time.perf_counter()
    socket_dir = (data / "postmaster.pid").read_text().splitlines()[4]
    command = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(data), "-w", "-o", '-h ""', "-o", f"-k {socket_dir}"]
    command += ["-l", str(data / "log"), "start"]
    user = "pgserver" if os.geteuid() == 0 else None
    for attempt in range(1, 61):
        done = subprocess.run(command, user=user, capture_output=True, text=True, timeout=300)
        if done.returncode == 0:
            assert int((data / "postmaster.pid").read_text().split()[0]) != postmaster
            return time.perf_counter() - began, attempt
        time.sleep(1)
    raise SystemExit(f"PostgreSQL did not start again on {data}: {done.stderr.strip()[-300:]}")


def kill_postgres(url: str, work: Path, docs: Path, count: int) -> dict[str, Any]:
    """Run c: SIGKILL PostgreSQL's postmaster during an ingest by two workers, start it again, ingest again."""
    run = Run("postgres", url, work, count)
    folder = work / "kb-postgres"
    data = data_folder(url)
    workers = [run.ingest(folder, docs), run.ingest(folder, docs)]
    stored = run.wait_for(count // 3, lambda: any(w.poll() is None for w in workers))
    running = any(w.poll() is None for w in workers)
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    os.kill(postmaster, signal.SIGKILL)
    run.figures["killed"] = {"what": "the PostgreSQL postmaster", "at_s": run.at(), "workers_running": running}
    run.figures["stored_at_kill"] = stored
    run.figures["workers"] = [run.finished(f"worker {n + 1}", w, expect_ok=False) for n, w in enumerate(workers)]
    took, attempts = restart(data, postmaster)
    run.figures["restart"] = {"seconds": round(took, 2), "pg_ctl_starts": attempts}
    run.figures["stored_after_restart"] = run.stored()
    run.figures["again"] = run.finished("kb ingest again", run.ingest(folder, docs))
    run.check([folder])
    return run.result()


def main() -> None:
    """Run the three faults one after another; print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=300)
    parser.add_argument("--only", choices=["worker", "server", "postgres"], help="one run only")
    args = parser.parse_args()
    runs = {"worker": kill_a_worker, "server": kill_a_server, "postgres": kill_postgres}
    with postgres_server("", prefix="kb-bench-pg-") as url:
        work = Path(tempfile.mkdtemp(prefix="kb-bench-faults-"))
        try:
            write_folder(work / "docs", args.documents)
            report: dict[str, Any] = {"documents": args.documents, "job_lease_s": int(LEASE_S)}
            for name, run in runs.items():
                if args.only in (None, name):
                    report[name] = run(url, work, work / "docs", args.documents)
            report["anomalies"] = sum(len(r["anomalies"]) for r in report.values() if isinstance(r, dict))
            print(json.dumps(report, indent=1))
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
