"""Helpers for the benchmarks: SciFact as a folder, running `kb` with per-process rusage, and the store a bench
runs on (SQLite, or PostgreSQL with ``--postgres``)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SCIFACT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "scifact"


def write_scifact_folder(target: Path, limit: int | None = None) -> int:
    """Write SciFact's corpus as `<_id>.md` files (`# title\\n\\ntext`); returns the count."""
    target.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            (target / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")
            count += 1
            if limit and count >= limit:
                break
    return count


def run_kb(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run `kb ARGS`; return (wall seconds, peak RSS in MiB, stdout)."""
    kb = str(Path(sys.executable).parent / "kb")
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")} | env
    with tempfile.TemporaryFile("w+") as out_file, tempfile.TemporaryFile("w+") as err_file:
        started = time.perf_counter()  # files, not pipes: a large report would fill a pipe and block
        process = subprocess.Popen([kb, *args], env=full_env, stdout=out_file, stderr=err_file, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read(), err_file.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"kb {' '.join(args)} failed: {err.strip()}")
    return wall, usage.ru_maxrss / 1024, out


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """``--postgres`` and ``--postgres-url URL``, as bench/access_probe.py has them."""
    parser.add_argument("--postgres", action="store_true", help="on PostgreSQL (pgserver unless --postgres-url)")
    parser.add_argument("--postgres-url", default="", help="an existing PostgreSQL server (implies --postgres)")


def wants_postgres(args: argparse.Namespace) -> bool:
    """Whether the arguments chose PostgreSQL."""
    return bool(args.postgres or args.postgres_url)


@contextmanager
def store_overrides(args: argparse.Namespace, prefix: str) -> Iterator[dict[str, Any]]:
    """The config overrides of the store the arguments chose: none for SQLite (kb's default); for PostgreSQL a new
    schema ``kb_<prefix>_<random>`` on the server given by ``--postgres-url``, or on one pgserver starts in a temporary
    folder for the time of the ``with`` (so its knowledge base is ingested afresh each run). The indexes stay
    kb's defaults beside the store, in the knowledge base folder: Tantivy and sqlite-vec (kb-postgres has no
    pgvector index)."""
    if not wants_postgres(args):
        yield {}
        return
    from kb_postgres.testing import postgres_server

    with postgres_server(args.postgres_url, prefix=f"kb-{prefix}-") as url:
        yield {
            "store.backend": "postgres",
            "backends.postgres.url": url,
            "backends.postgres.schema": f"kb_{prefix}_{uuid.uuid4().hex[:10]}",
        }
