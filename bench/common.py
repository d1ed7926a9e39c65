"""Helpers for the benchmarks: SciFact as a folder, and running `kb` with per-process rusage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
