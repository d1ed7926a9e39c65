"""Feasibility probe for issue 45 (kb on PostgreSQL): pgserver + pgvector, LISTEN/NOTIFY, SKIP LOCKED.

Not part of kb and not run by its tests: it needs ``pgserver`` and ``psycopg`` (v3), which kb does not
depend on. Run it from a scratch virtual environment, as a user other than root (as root, pgserver
runs ``useradd pgserver`` and widens the permissions of the folders above its data directory)::

    python3 -m venv /tmp/pgprobe && /tmp/pgprobe/bin/pip install pgserver 'psycopg[binary]' numpy
    runuser -u nobody -- /tmp/pgprobe/bin/python bench/postgres_probe.py      # when you are root
    /tmp/pgprobe/bin/python bench/postgres_probe.py --rows 10000 --queries 100 # otherwise

It prints one JSON object with every figure quoted in docs/postgres-probe.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import signal
import statistics
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pgserver
import psutil
import psycopg

DIM = 384
CHANNEL = "kb_changes"


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def _pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def _literal(vector: np.ndarray) -> str:
    """A vector as pgvector's text form ('[0.1,0.2,...]'), so no client-side pgvector package is needed."""
    return "[" + ",".join(f"{x:.6f}" for x in vector) + "]"


# -- 1. pgvector -------------------------------------------------------------------------------------


def probe_vectors(uri: str, rows: int, queries: int, seed: int) -> dict[str, Any]:
    """Create the extension, a vector(384) table with an HNSW index, fill it, time top-10 queries."""
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((rows, DIM)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    out: dict[str, Any] = {}
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        out["pgvector_version"] = conn.execute("SELECT extversion FROM pg_extension WHERE extname='vector'").fetchone()[
            0
        ]
        out["postgres_version"] = conn.execute("SHOW server_version").fetchone()[0]
        out["collation"] = conn.execute(
            "SELECT datcollate FROM pg_database WHERE datname = current_database()"
        ).fetchone()[0]
        conn.execute(
            "CREATE TABLE chunk_vectors (id integer PRIMARY KEY, folder integer NOT NULL,"
            f" embedding vector({DIM}) NOT NULL)"
        )
        conn.execute("CREATE INDEX chunk_vectors_hnsw ON chunk_vectors USING hnsw (embedding vector_cosine_ops)")
        started = time.perf_counter()
        with conn.cursor() as cur, cur.copy("COPY chunk_vectors (id, folder, embedding) FROM STDIN") as copy:
            for i, vector in enumerate(data):
                copy.write_row((i, i % 100, _literal(vector)))  # 100 "folders" for grants
        out["insert_with_index_s"] = round(time.perf_counter() - started, 2)
        # The other order (load, then build the index), as `kb reindex` would do it.
        conn.execute("CREATE TABLE bulk (LIKE chunk_vectors)")
        conn.execute("INSERT INTO bulk SELECT * FROM chunk_vectors")
        started = time.perf_counter()
        conn.execute("CREATE INDEX bulk_hnsw ON bulk USING hnsw (embedding vector_cosine_ops)")
        out["index_build_after_load_s"] = round(time.perf_counter() - started, 2)
        conn.execute("DROP TABLE bulk")
        conn.execute("ANALYZE chunk_vectors")
        probes = rng.standard_normal((queries, DIM)).astype(np.float32)
        probes /= np.linalg.norm(probes, axis=1, keepdims=True)
        sql = "SELECT id FROM chunk_vectors ORDER BY embedding <=> %s::vector LIMIT 10"
        plan = conn.execute("EXPLAIN " + sql, (_literal(probes[0]),)).fetchall()
        out["uses_hnsw_index"] = any("chunk_vectors_hnsw" in row[0] for row in plan)
        exact = [set(np.argsort(-(data @ probe))[:10].tolist()) for probe in probes]
        # ef_search 40 is pgvector's default; random unit vectors in 384 dimensions are HNSW's worst case.
        # prepare=False: psycopg prepares a statement run 5 times, and a prepared plan keeps the index
        # even after enable_indexscan is turned off (ef_search, read when the scan runs, still applies).
        for setting in (
            "hnsw.ef_search = 40",
            "hnsw.ef_search = 100",
            "hnsw.ef_search = 200",
            "enable_indexscan = off",
        ):
            conn.execute(f"SET {setting}")
            times: list[float] = []
            recalls: list[float] = []
            for probe, truth in zip(probes, exact):
                started = time.perf_counter()
                got = [row[0] for row in conn.execute(sql, (_literal(probe),), prepare=False).fetchall()]
                times.append(time.perf_counter() - started)
                recalls.append(len(truth & set(got)) / 10)
            key = setting.replace(" = ", "_").replace("hnsw.", "").replace("enable_indexscan_off", "exact_scan")
            out[key] = {
                "top10_p50_ms": _ms(statistics.median(times)),
                "top10_p95_ms": _ms(_pct(times, 0.95)),
                "recall_at_10": round(statistics.mean(recalls), 3),
            }
        conn.execute("RESET ALL")
        out["granted_filter"] = _filtered(conn, data, probes)
        out["table_and_index_mb"] = round(
            conn.execute("SELECT pg_total_relation_size('chunk_vectors')").fetchone()[0] / 2**20, 1
        )
    return out


def _filtered(conn: Any, data: np.ndarray, probes: np.ndarray) -> dict[str, Any]:
    """Top-10 among the rows a person may read (a grant as a WHERE on the folder), through the HNSW index.

    pgvector before 0.8 filters the ef_search candidates the index returns, so a narrow grant gets
    fewer than 10 rows; 0.8 added ``hnsw.iterative_scan`` for this.
    """
    iterative = conn.execute("SELECT count(*) FROM pg_settings WHERE name = 'hnsw.iterative_scan'").fetchone()[0] > 0
    folders = np.arange(len(data)) % 100
    found: dict[str, Any] = {"iterative_scan_available": iterative}
    sql = "SELECT id FROM chunk_vectors WHERE folder < %s ORDER BY embedding <=> %s::vector LIMIT 10"
    for share in (10, 1):  # a grant on 10 % and on 1 % of the rows
        for setting in ("hnsw.ef_search = 40", "hnsw.ef_search = 400"):
            conn.execute(f"SET {setting}")
            counts, recalls = [], []
            for probe in probes:
                got = [row[0] for row in conn.execute(sql, (share, _literal(probe)), prepare=False).fetchall()]
                scores = np.where(folders < share, data @ probe, -np.inf)
                truth = set(np.argsort(-scores)[:10].tolist())
                counts.append(len(got))
                recalls.append(len(truth & set(got)) / 10)
            found[f"grant_{share}pct_{setting.split('.')[1].replace(' = ', '_')}"] = {
                "rows_returned_mean": round(statistics.mean(counts), 2),
                "rows_returned_min": min(counts),
                "recall_at_10": round(statistics.mean(recalls), 3),
            }
        conn.execute("RESET ALL")
    return found


# -- 2a. LISTEN/NOTIFY ---------------------------------------------------------------------------------


def _listener(uri: str, count: int, ready: Any, results: Any) -> None:
    """Another process: LISTEN, then record each notification's delay (sender's clock = ours, one host)."""
    delays: list[float] = []
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        ready.set()
        for note in conn.notifies(timeout=30, stop_after=count):
            delays.append(time.time() - float(json.loads(note.payload)["sent"]))
    results.put(delays)


def probe_notify(uri: str, count: int) -> dict[str, Any]:
    """A writer commits an outbox row and ``pg_notify`` in one transaction; another process hears it."""
    ctx = mp.get_context("spawn")
    ready, results = ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=_listener, args=(uri, count, ready, results))
    proc.start()
    ready.wait(30)
    with psycopg.connect(uri) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS outbox (seq bigserial PRIMARY KEY, doc_path text NOT NULL)")
        conn.commit()
        for i in range(count):
            with conn.transaction():
                seq = conn.execute("INSERT INTO outbox (doc_path) VALUES (%s) RETURNING seq", (f"d{i}.md",)).fetchone()
                payload = json.dumps({"seq": seq[0], "sent": time.time()})
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
            time.sleep(0.01)
    delays = results.get(timeout=60)
    proc.join(30)
    return {
        "sent": count,
        "received": len(delays),
        "delivery_p50_ms": _ms(statistics.median(delays)),
        "delivery_p95_ms": _ms(_pct(delays, 0.95)),
        "delivery_max_ms": _ms(max(delays)),
    }


# -- 2b. a work queue with FOR UPDATE SKIP LOCKED ------------------------------------------------------

TAKE = "SELECT id FROM jobs WHERE state = 'queued' ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1"  # one job, nobody else's


def _worker(uri: str, name: str, work_s: float, results: Any) -> None:
    """Take jobs until none is left; each job is taken, 'worked' and marked done in one transaction."""
    taken: list[int] = []
    with psycopg.connect(uri) as conn:
        while True:
            with conn.transaction():
                row = conn.execute(TAKE).fetchone()
                if row is None:
                    break
                time.sleep(work_s)
                conn.execute("UPDATE jobs SET state = 'done', done_by = %s WHERE id = %s", (name, row[0]))
                conn.execute("INSERT INTO job_log (job_id, worker) VALUES (%s, %s)", (row[0], name))
            taken.append(row[0])
    results.put((name, taken))


def _holder(uri: str, held: Any) -> None:
    """Take one job and hold its lock forever (the parent SIGKILLs this process mid-'document')."""
    with psycopg.connect(uri) as conn:
        row = conn.execute(TAKE).fetchone()
        held.put(row[0])
        time.sleep(3600)


def probe_queue(uri: str, jobs: int, work_ms: float) -> dict[str, Any]:
    """Two workers drain ``jobs`` jobs; then a worker is killed holding one, which must be taken again."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS jobs, job_log")
        conn.execute("CREATE TABLE jobs (id integer PRIMARY KEY, state text NOT NULL DEFAULT 'queued', done_by text)")
        conn.execute("CREATE TABLE job_log (job_id integer NOT NULL, worker text NOT NULL)")  # no UNIQUE on purpose
        conn.execute("INSERT INTO jobs (id) SELECT generate_series(1, %s)", (jobs,))
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    started = time.perf_counter()
    procs = [ctx.Process(target=_worker, args=(uri, f"w{n}", work_ms / 1000, results)) for n in (1, 2)]
    for proc in procs:
        proc.start()
    taken = dict(results.get(timeout=600) for _ in procs)
    for proc in procs:
        proc.join(30)
    elapsed = time.perf_counter() - started
    every = taken["w1"] + taken["w2"]
    with psycopg.connect(uri, autocommit=True) as conn:
        logged, distinct = conn.execute("SELECT count(*), count(DISTINCT job_id) FROM job_log").fetchone()
        left = conn.execute("SELECT count(*) FROM jobs WHERE state <> 'done'").fetchone()[0]
        # A killed worker: its transaction is rolled back by the server, so its job is free again.
        conn.execute("UPDATE jobs SET state = 'queued' WHERE id = 1")
        held = ctx.Queue()
        holder = ctx.Process(target=_holder, args=(uri, held))
        holder.start()
        held_id = held.get(timeout=30)
        blocked = conn.execute(TAKE).fetchone()  # autocommit: the lock is released at once
        os.kill(holder.pid or 0, signal.SIGKILL)
        holder.join(30)
        waited = time.perf_counter()
        retaken = None
        while retaken is None and time.perf_counter() - waited < 10:
            retaken = conn.execute(TAKE).fetchone()
        retake_ms = _ms(time.perf_counter() - waited)
    return {
        "jobs": jobs,
        "simulated_work_ms": work_ms,
        "per_worker": {name: len(ids) for name, ids in taken.items()},
        "taken_total": len(every),
        "taken_twice": len(every) - len(set(every)),
        "log_rows": logged,
        "log_distinct": distinct,
        "left_undone": left,
        "drain_s": round(elapsed, 2),
        "killed_worker_job": held_id,
        "visible_to_others_while_held": blocked is not None,
        "retaken_after_sigkill": retaken is not None and retaken[0] == held_id,
        "retake_ms": retake_ms,
    }


# -- 2c. the outbox as a change feed: sequence order is not commit order ---------------------------------

FEED_LOCK = 4545  # any constant: the advisory lock every writer of the feed takes


def probe_outbox_order(uri: str) -> dict[str, Any]:
    """A reader that keeps "the last seq I applied" (kb's ``index_state``) misses an entry that a slower
    transaction commits below it; taking one advisory lock before writing the feed closes the gap."""
    out: dict[str, Any] = {}
    with (
        psycopg.connect(uri, autocommit=True) as reader,
        psycopg.connect(uri) as slow,
        psycopg.connect(uri) as fast,
    ):
        reader.execute("DROP TABLE IF EXISTS feed")
        reader.execute("CREATE TABLE feed (seq bigserial PRIMARY KEY, doc_path text NOT NULL)")
        insert = "INSERT INTO feed (doc_path) VALUES (%s) RETURNING seq"
        slow_seq = slow.execute(insert, ("slow.md",)).fetchone()[0]  # not committed yet
        fast_seq = fast.execute(insert, ("fast.md",)).fetchone()[0]
        fast.commit()
        applied = reader.execute("SELECT max(seq) FROM feed").fetchone()[0]  # the reader applies up to here
        slow.commit()
        later = reader.execute("SELECT seq FROM feed WHERE seq > %s", (applied,)).fetchall()
        out["plain"] = {
            "slow_seq": slow_seq,
            "fast_seq": fast_seq,
            "reader_applied": applied,
            "slow_entry_missed": slow_seq <= applied and not later,
        }
        # The fix: every feed writer takes the same transaction-scoped advisory lock first, so entries
        # commit in sequence order (what SQLite's single writer gives kb today).
        reader.execute("TRUNCATE feed")
        locked = "SELECT pg_advisory_xact_lock(%s)"
        slow.execute(locked, (FEED_LOCK,))
        slow_seq = slow.execute(insert, ("slow.md",)).fetchone()[0]
        fast.execute("SET lock_timeout = '200ms'")
        try:
            fast.execute(locked, (FEED_LOCK,))
            waited = False
        except psycopg.errors.LockNotAvailable:
            waited = True
        fast.rollback()
        slow.commit()
        out["advisory_lock"] = {"second_writer_waits_for_first_commit": waited}
    return out


# -- the server itself --------------------------------------------------------------------------------


def _exited(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie has: only its parent has not collected it yet)."""
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def main() -> None:
    """Start a throw-away server, run every probe, stop it, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--notifications", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1_000)
    parser.add_argument("--work-ms", type=float, default=2.0, help="simulated work per job, lock held")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    report: dict[str, Any] = {"pgserver": version("pgserver"), "psycopg": version("psycopg"), "uid": os.getuid()}
    parent = Path(tempfile.mkdtemp(prefix="pgprobe-"))
    server = None
    try:
        started = time.perf_counter()
        server = pgserver.get_server(parent / "pgdata", cleanup_mode="stop")
        report["cold_start_s"] = round(time.perf_counter() - started, 2)  # initdb + start
        uri = server.get_uri()
        report["uri_form"] = uri.split("?")[0].split("@")[0] + "@.../postgres?host=<socket dir>"
        report["vectors"] = probe_vectors(uri, args.rows, args.queries, args.seed)
        report["notify"] = probe_notify(uri, args.notifications)
        report["queue"] = probe_queue(uri, args.jobs, args.work_ms)
        report["outbox_order"] = probe_outbox_order(uri)
        postmaster = server.get_pid()
        started = time.perf_counter()
        server.cleanup()  # pg_ctl -w stop (the last handle)
        report["shutdown_s"] = round(time.perf_counter() - started, 2)
        report["postmaster_exited_after_stop"] = _exited(postmaster)
        started = time.perf_counter()
        server = pgserver.get_server(parent / "pgdata", cleanup_mode="stop")  # existing data: no initdb
        report["warm_start_s"] = round(time.perf_counter() - started, 2)
        with psycopg.connect(server.get_uri()) as conn:
            report["rows_after_restart"] = conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]
        server.cleanup()
        report["data_dir_mb"] = round(sum(f.stat().st_size for f in parent.rglob("*") if f.is_file()) / 2**20, 1)
    finally:
        if server is not None:
            server.cleanup()  # (stopped already: a no-op; interrupted: the server does not outlive the probe)
        shutil.rmtree(parent, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
