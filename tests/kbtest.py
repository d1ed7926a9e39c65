"""Helpers shared by tests (importable because pytest puts tests/ on sys.path)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
CORPUS = FIXTURES / "corpus"


def run_kb(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the real ``kb`` console command in a subprocess."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
    full_env.update(env or {})
    kb = Path(sys.executable).parent / "kb"
    return subprocess.run([str(kb), *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout)


def save_answer_row(store: object, row: dict[str, object]) -> None:
    """Insert a hand-made row into the ``answers`` table (tests of history and purging)."""
    conn = store.conn  # type: ignore[attr-defined]
    conn.execute(f"INSERT INTO answers ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
