"""What bench_load.py and bench_faults.py share: a ``kb serve`` started and stopped, and the store of a schema
checked through kb's Python API (every document whole and stored once, the feed in step with the documents).

Not a bench: imported by the benches beside it (they run as scripts, so this folder is on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_shared import environment
from kb_postgres.settings import PostgresSettings
from kb_postgres.store import PostgresStore

KB = str(Path(sys.executable).parent / "kb")
#: The scripted language model of kb_core.testing, loaded into a ``kb`` subprocess (``--backend scripted``).
SCRIPTED = "kb_core.testing.language_models:ScriptedPlugin"


def serve_environment(url: str, schema: str) -> dict[str, str]:
    """A ``kb serve`` on ``schema`` with the lexical index only and the scripted model loadable."""
    return environment(url, schema) | {"KB_PLUGIN_MODULES": SCRIPTED}


class Server:
    """A real ``kb --backend scripted serve`` on one knowledge base folder; its stderr kept in a file."""

    def __init__(self, folder: Path, env: dict[str, str], *options: str) -> None:
        self.folder = folder
        self.log = folder.parent / f"{folder.name}-serve.log"
        command = [KB, "--kb", str(folder), "--backend", "scripted", "serve", "--port", "0", "--json", *options]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
        self.url = self._listening()

    def _listening(self) -> str:
        assert self.process.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "}\n":
            line = self.process.stdout.readline()
            if not line:
                said = self.log.read_text(errors="replace").strip().splitlines()[-1:]
                raise SystemExit(f"kb serve on {self.folder} stopped before listening: {said}")
            lines.append(line)
        threading.Thread(target=self.process.stdout.read, daemon=True).start()  # (drain what else it prints)
        return str(json.loads("".join(lines))["url"])

    def kill(self) -> None:
        """SIGKILL: no handler of the server runs."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        """Stop it as Ctrl-C would (SIGTERM), or kill it if it does not stop."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def tracebacks(self) -> int:
        """How many Python tracebacks the server wrote to its stderr."""
        return self.log.read_text(errors="replace").count("Traceback (most recent call last)")


@contextmanager
def opened_store(url: str, schema: str, folder: Path) -> Iterator[PostgresStore]:
    """The store of ``schema`` through kb-postgres's own class (no index is opened)."""
    store = PostgresStore(PostgresSettings.resolve({"url": url, "schema": schema}, {}), folder, create=False)
    try:
        yield store
    finally:
        store.close()


def store_figures(store: PostgresStore) -> dict[str, Any]:
    """The documents of the store and what is wrong with them: chunks missing or without their document, a
    document written more than once (the feed counts every write: with no document changed or removed, one
    sequence number per document), files left in the ingest queue or set aside."""
    documents = store.list_documents()
    paths = [document.path for document in documents]
    per_document: Counter[str] = Counter()
    for batch in store.iter_chunks(500):
        per_document.update(chunk.doc_path for chunk in batch)
    half = sorted(d.path for d in documents if per_document.get(d.path, 0) != d.chunk_count)
    orphans = sorted(set(per_document) - set(paths))
    feed = store.pending_paths(0, 1_000_000)
    written_twice = sorted(path for path, count in Counter(path for _, path in feed).items() if count > 1)
    queued = store._exec("SELECT count(*) FROM ingest_jobs").fetchone()  # (no API lists the whole queue)
    return {
        "documents": len(documents),
        "distinct_paths": len(set(paths)),
        "chunks": sum(per_document.values()),
        "half_stored": half,
        "chunks_without_document": orphans,
        "feed_last_seq": store.last_seq(),
        "feed_entries_kept": len(feed),
        "written_twice_in_feed": written_twice,
        "queue_left": int(queued[0]) if queued else -1,
        "set_aside": [file.path for file in store.files_set_aside()],
    }


def anomalies(figures: dict[str, Any], expected: int) -> list[str]:
    """What :func:`store_figures` shows wrong for a store that should hold ``expected`` documents, each written
    once (nothing changed or removed)."""
    found = []
    if figures["documents"] != expected:
        found.append(f"{figures['documents']} documents stored, {expected} expected")
    if figures["feed_last_seq"] != figures["documents"]:
        found.append(f"{figures['feed_last_seq']} writes in the feed for {figures['documents']} documents")
    for key in ("half_stored", "chunks_without_document", "written_twice_in_feed", "set_aside"):
        if figures[key]:
            found.append(f"{key}: {figures[key][:5]}")
    if figures["queue_left"]:
        found.append(f"{figures['queue_left']} files left in the ingest queue")
    return found


def load_average() -> str:
    """``/proc/loadavg``'s first three figures."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])
