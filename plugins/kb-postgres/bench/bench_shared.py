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

Prints figures, asserts nothing about time. Needs ``pip install -e "plugins/kb-postgres[test]"`` and kb-tantivy.
"""

from __future__ import annotations

import argparse
import json
import os
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


def ingest_with(workers: int, url: str, docs: Path, work: Path) -> float:
    """Seconds for ``workers`` ``kb ingest`` processes of ``docs`` on a new schema (one knowledge base folder)."""
    env = environment(url, f"bench_{uuid.uuid4().hex[:10]}")
    began = time.perf_counter()
    command = [KB, "--kb", str(work / f"kb{workers}"), "ingest", str(docs)]
    processes = [subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL) for _ in range(workers)]
    codes = [process.wait() for process in processes]
    took = time.perf_counter() - began
    if any(codes):
        raise SystemExit(f"kb ingest failed with {workers} worker(s): exit codes {codes}")
    return took


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


def main() -> None:
    """Run both measures and print them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="an existing PostgreSQL server (default: one pgserver starts)")
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--probes", type=int, default=50)
    args = parser.parse_args()
    with postgres_server(args.url or "", prefix="kb-bench-pg-") as url:
        work = Path(tempfile.mkdtemp(prefix="kb-bench-shared-"))
        try:
            write_folder(work / "docs", args.documents)
            one = ingest_with(1, url, work / "docs", work)
            two = ingest_with(2, url, work / "docs", work)
            print(
                f"ingest of {args.documents} documents: 1 worker {one:.1f} s, 2 workers {two:.1f} s ({one / two:.2f} x)"
            )
            waited = sorted(delays(url, work, args.probes))
            p95 = waited[min(len(waited) - 1, round(0.95 * (len(waited) - 1)))]
            print(
                f"ingested through folder A, found by kb serve on folder B ({len(waited)} documents):"
                f" p50 {statistics.median(waited) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms,"
                f" max {waited[-1] * 1000:.0f} ms"
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
