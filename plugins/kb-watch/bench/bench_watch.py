"""Print the time from a file save to its content being searchable through ``kb watch`` (p50 / p95).

Starts a real ``kb watch --json`` on a temporary folder of notes (the fixture corpus copied, or
--corpus DIR), then N times writes a new note holding a unique word and waits for the
``watch_event.v1`` line that lists it: that line is printed after the ingest committed and every
index was brought up to date, so the word is searchable from then on (each time checked with a
real lexical search, outside the timing). The figure includes the debounce quiet time.

    python plugins/kb-watch/bench/bench_watch.py [--saves N] [--debounce-ms MS] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from queue import Queue

import kb_core

ROOT = Path(__file__).resolve().parents[3]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=10)
    parser.add_argument("--debounce-ms", type=int, default=500)
    parser.add_argument("--corpus", type=Path, default=ROOT / "fixtures" / "corpus")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        notes = Path(folder) / "notes"
        shutil.copytree(args.corpus, notes)
        kb_dir = Path(folder) / "kb"
        command = [
            str(Path(sys.executable).parent / "kb"),
            "--kb",
            str(kb_dir),
            "watch",
            str(notes),
            "--json",
            "--debounce-ms",
            str(args.debounce_ms),
        ]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: Queue[tuple[float, dict[str, object]]] = Queue()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                lines.put((time.perf_counter(), json.loads(line)))

        threading.Thread(target=read, daemon=True).start()
        _, initial = lines.get(timeout=300)
        print(f"initial ingest: {len(initial['added'])} documents in {initial['took_ms']} ms")  # type: ignore[arg-type]
        latencies: list[float] = []
        ingest_ms: list[float] = []
        try:
            for n in range(args.saves):
                word = f"benchword{n}x{int(time.time())}"
                started = time.perf_counter()
                (notes / f"bench-{n}.md").write_text(f"# Bench {n}\n\nThis note mentions {word}.\n", encoding="utf-8")
                while True:
                    arrived, event = lines.get(timeout=60)
                    if f"bench-{n}.md" in event.get("added", []):  # type: ignore[operator]
                        break
                latencies.append((arrived - started) * 1000)
                ingest_ms.append(float(event["took_ms"]))  # type: ignore[arg-type]
                with kb_core.open_kb(kb_dir=kb_dir, create=False) as kb:
                    hits = kb_core.search(kb, kb_core.SearchQuery(text=word, k=1, mode="lexical")).hits
                assert hits and hits[0].doc_path == f"bench-{n}.md", f"{word} is not searchable"
                time.sleep(0.2)
        finally:
            process.terminate()
            process.wait(timeout=60)
    print(
        f"save -> searchable, debounce {args.debounce_ms} ms, n={len(latencies)}:"
        f" p50 {percentile(latencies, 0.5):.0f} ms"
        f"  p95 {percentile(latencies, 0.95):.0f} ms  mean {statistics.fmean(latencies):.0f} ms"
        f"  (of which the ingest itself: p50 {percentile(ingest_ms, 0.5):.0f} ms)"
    )


if __name__ == "__main__":
    main()
