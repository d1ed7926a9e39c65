"""Where a mailbox ingest's memory goes: bench/mail.py's mbox ingested in this process, the resident set
(current and high-water) printed at each stage of the progress (reading, indexing tantivy, indexing sqlitevec).

``--batch-tokens`` overrides the ONNX embedder's ``BATCH_TOKENS`` (a huge number gives the batches of 32
texts it had before), to compare both in one session.

    python bench/mail_memory.py [--messages N] [--indexes tantivy,sqlitevec] [--batch-tokens N]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import psutil
from mail import write_mbox

import kb_core.builtin.embedders.minilm as minilm
from kb_core.app import open_kb
from kb_core.ingest.pipeline import ingest_paths


def _memory() -> str:
    current = psutil.Process().memory_info().rss / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return f"RSS {current:.0f} MiB, peak {peak:.0f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--indexes", default="", help="comma-separated index names (default: kb's default indexes)")
    parser.add_argument("--batch-tokens", type=int, default=0, help="override minilm.BATCH_TOKENS")
    args = parser.parse_args()
    if args.batch_tokens:
        minilm.BATCH_TOKENS = args.batch_tokens
    shown: dict[str, float] = {}
    started = time.perf_counter()

    def progress(stage: str, done: int, total: int) -> None:
        key, now = stage.split(" ")[0] + stage.split(" ")[-1], time.perf_counter() - started
        if now - shown.get(key, -60.0) >= 30 or done == total:
            shown[key] = now
            print(f"{now:8.1f} s  {stage[:32]:32s} {done:>6}/{total:<6} {_memory()}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mail"
        folder.mkdir()
        write_mbox(folder / "inbox.mbox", args.messages)
        overrides = {"indexes": {"enabled": args.indexes.split(",")}} if args.indexes else None
        kb = open_kb(kb_dir=Path(tmp) / "kb", overrides=overrides)
        started = time.perf_counter()
        report = ingest_paths(kb, [folder], progress)
        wall = time.perf_counter() - started
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    tokens = args.batch_tokens or minilm.BATCH_TOKENS
    print(f"{args.messages} messages, {report.chunks} chunks, batch tokens {tokens}: {wall:.1f} s wall, {_memory()}")
    print(f"load average {load}")


if __name__ == "__main__":
    main()
