"""Several kb processes on one PostgreSQL schema: ingest workers sharing a folder, and a document ingested through
one knowledge base folder found by a search on a server of another.

1. ``kb ingest`` of a folder of ``--documents`` small text files (500) into a new schema: one worker, then two
   ``kb ingest`` processes started together on the same folder (the queue shares the files out). Wall time from
   start to the last exit, the lexical index (kb-tantivy) only, so the figure is the ingest's own work.
2. ``kb serve`` on folder B; ``--probes`` times (50) a new document is ingested in this process through folder A
   (``kb_core.ingest_paths``), and B's ``/search`` is asked every 20 ms until it finds it: the delay from the
   ingest's return (its commit) to the first search that finds it (B hears of it by LISTEN/NOTIFY).

    python plugins/kb-postgres/bench/bench_shared.py                   # starts PostgreSQL with pgserver
    python plugins/kb-postgres/bench/bench_shared.py --url postgresql://...   # an existing server (new schemas)

Options for the workers' measure on real files: ``--folder PATH`` ingests a copy of that folder's files (``--first N``:
its first N, sorted) instead of generated notes; ``--vectors`` keeps the default indexes (kb-tantivy and the vector
index, so the embedder runs); ``--one-thread`` measures both again with ``OMP_THREAD_LIMIT=1`` in each worker
(Tesseract's OpenMP threads); ``--probes 0`` skips the second measure. Each ingest also gives the CPU seconds its
workers used (``RUSAGE_CHILDREN``: their own children, such as OCR, included) and how busy the whole machine was.

    python plugins/kb-postgres/bench/bench_shared.py --folder /work/shared/datasets/tatqa-tune/scanned --first 40 \
        --vectors --one-thread --probes 0

Prints figures, asserts nothing about time. Needs ``pip install -e "plugins/kb-postgres[test]"`` and kb-tantivy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import attrs
import psutil
from kb_postgres.testing import postgres_server

import kb_core

KB = str(Path(sys.executable).parent / "kb")
WORDS = "backup restore schedule verify archive retention snapshot replica ledger invoice".split()


def environment(url: str, schema: str) -> dict[str, str]:
    """A ``kb`` process on ``schema``, with the lexical index only."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | {
        "KB_STORE__BACKEND": "postgres",
        "KB_BACKENDS__POSTGRES__URL": url,
        "KB_BACKENDS__POSTGRES__SCHEMA": schema,
        "KB_INDEXES__ENABLED": json.dumps(["tantivy"]),
    }


def write_folder(folder: Path, count: int) -> None:
    """``count`` small documents of a few paragraphs."""
    folder.mkdir(parents=True)
    for number in range(count):
        paragraphs = [
            f"Document {number}, part {part}: " + " ".join(WORDS[(number + part + i) % len(WORDS)] for i in range(40))
            for part in range(4)
        ]
        (folder / f"doc{number:04d}.md").write_text(f"# Note {number}\n\n" + "\n\n".join(paragraphs) + "\n")


@attrs.frozen
class Ingested:
    """One measured ingest: wall seconds, the CPU seconds its workers used, and how busy the machine was (%)."""

    seconds: float
    cpu_seconds: float
    machine_busy: float


def ingest_with(
    workers: int, url: str, docs: Path, work: Path, *, vectors: bool = False, extra: dict[str, str] | None = None
) -> Ingested:
    """``workers`` ``kb ingest`` processes of ``docs`` on a new schema (one knowledge base folder), with the lexical
    index only unless ``vectors``; ``extra``: more environment variables for each."""
    env = environment(url, f"bench_{uuid.uuid4().hex[:10]}") | (extra or {})
    if vectors:
        del env["KB_INDEXES__ENABLED"]  # (the default indexes, as a user has them)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine = psutil.cpu_times()
    began = time.perf_counter()
    command = [KB, "--kb", str(work / f"kb{workers}-{uuid.uuid4().hex[:6]}"), "ingest", str(docs)]
    processes = [subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL) for _ in range(workers)]
    codes = [process.wait() for process in processes]
    took = time.perf_counter() - began
    after, machine_after = resource.getrusage(resource.RUSAGE_CHILDREN), psutil.cpu_times()
    if any(codes):
        raise SystemExit(f"kb ingest failed with {workers} worker(s): exit codes {codes}")
    cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    total = sum(machine_after) - sum(machine)
    idle = (machine_after.idle - machine.idle) + (machine_after.iowait - machine.iowait)
    return Ingested(took, cpu, 100 * (1 - idle / total) if total else 0.0)


def delays(url: str, work: Path, probes: int) -> list[float]:
    """Seconds from each ingest's return on folder A to the first search on B's server that finds the document."""
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    env = environment(url, schema)
    subprocess.run([KB, "--kb", str(work / "b"), "init"], env=env, check=True, stdout=subprocess.DEVNULL)
    server = subprocess.Popen(
        [KB, "--kb", str(work / "b"), "serve", "--port", "0", "--json"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "}\n":
            lines.append(server.stdout.readline() or "}\n")
        address = json.loads("".join(lines))["url"]
        overrides = {
            "store.backend": "postgres",
            "backends.postgres": {"url": url, "schema": schema},
            "indexes.enabled": ["tantivy"],
        }
        found: list[float] = []
        with kb_core.KnowledgeBase(kb_core.load_config(kb_dir=work / "a", overrides=overrides, environ={})) as kb:
            for number in range(probes):
                word = f"probe{number}x{uuid.uuid4().hex[:6]}"
                note = work / "probes" / f"{word}.md"
                note.parent.mkdir(exist_ok=True)
                note.write_text(f"# Probe {number}\n\nThe word {word} is in this note only.\n")
                kb_core.ingest_paths(kb, [note])
                began = time.perf_counter()
                while not search(address, word):
                    time.sleep(0.02)
                found.append(time.perf_counter() - began)
        return found
    finally:
        server.terminate()
        server.wait(30)


def search(address: str, word: str) -> bool:
    query = urllib.parse.urlencode({"q": word, "mode": "lexical", "k": 1})
    with urllib.request.urlopen(f"{address}/search?{query}", timeout=60) as response:
        return bool(json.load(response)["hits"])


def copy_folder(source: Path, first: int | None, into: Path) -> int:
    """Copy the first ``first`` files of ``source`` (sorted by name; all when None) into ``into``; how many."""
    into.mkdir(parents=True)
    files = sorted(path for path in source.iterdir() if path.is_file())[:first]
    for path in files:
        shutil.copy2(path, into / path.name)
    return len(files)


def workers_line(label: str, one: Ingested, two: Ingested) -> str:
    """One line of figures: both wall times, the speed-up and the CPU they used."""

    def cpu(run: Ingested) -> str:
        return (
            f"{run.cpu_seconds:.0f} CPU s ({run.cpu_seconds / run.seconds:.2f} cores), machine {run.machine_busy:.0f}%"
        )

    return (
        f"{label}: 1 worker {one.seconds:.1f} s [{cpu(one)}], 2 workers {two.seconds:.1f} s [{cpu(two)}]"
        f" ({one.seconds / two.seconds:.2f} x)"
    )


def main() -> None:
    """Run both measures and print them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="an existing PostgreSQL server (default: one pgserver starts)")
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--probes", type=int, default=50)
    parser.add_argument("--folder", type=Path, help="ingest a copy of this folder's files instead of generated notes")
    parser.add_argument("--first", type=int, help="with --folder: only its first N files, sorted by name")
    parser.add_argument("--vectors", action="store_true", help="keep the default vector index (the embedder runs)")
    parser.add_argument("--one-thread", action="store_true", help="measure again with OMP_THREAD_LIMIT=1 per worker")
    args = parser.parse_args()
    with postgres_server(args.url or "", prefix="kb-bench-pg-") as url:
        work = Path(tempfile.mkdtemp(prefix="kb-bench-shared-"))
        try:
            if args.folder:
                count = copy_folder(args.folder, args.first, work / "docs")
                what = f"{count} files of {args.folder}"
            else:
                write_folder(work / "docs", args.documents)
                what = f"{args.documents} documents"
            indexes = "kb-tantivy and the vector index" if args.vectors else "kb-tantivy only"
            print(f"ingest of {what} ({indexes}), load average before: {Path('/proc/loadavg').read_text().strip()}")
            variants: list[tuple[str, dict[str, str]]] = [("as installed", {})] + (
                [("OMP_THREAD_LIMIT=1", {"OMP_THREAD_LIMIT": "1"})] * args.one_thread
            )
            for label, extra in variants:
                one = ingest_with(1, url, work / "docs", work, vectors=args.vectors, extra=extra)
                two = ingest_with(2, url, work / "docs", work, vectors=args.vectors, extra=extra)
                print(workers_line(label, one, two), flush=True)
            if args.probes:
                waited = sorted(delays(url, work, args.probes))
                p95 = waited[min(len(waited) - 1, round(0.95 * (len(waited) - 1)))]
                print(
                    f"ingested through folder A, found by kb serve on folder B ({len(waited)} documents):"
                    f" p50 {statistics.median(waited) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms,"
                    f" max {waited[-1] * 1000:.0f} ms"
                )
            print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
