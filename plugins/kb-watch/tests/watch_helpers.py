"""Helpers for kb-watch's tests: a real ``kb watch --json`` subprocess whose JSON lines are read as they come.

The tests wait on events (a JSON line, a file a test plugin creates, a process seen stopped), never on a
sleep: the waits' limits are generous and only end a test that would otherwise hang, so that a slow or
loaded machine passes the same tests a fast one does.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from kb_core.testing import default_ctrl_c

KB = str(Path(sys.executable).parent / "kb")
SCHEMA = json.loads(resources.files("kb_watch.schemas").joinpath("watch_event.v1.json").read_text(encoding="utf-8"))
#: The longest a test waits for an event it expects (a limit against hangs, not a measure of speed).
WAIT_S = 120.0


def kb_env() -> dict[str, str]:
    """The environment of a ``kb`` subprocess: this test's isolated config and data folders, no KB_* variables."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KB_")}


def run_kb(kb_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``kb`` CLI on ``kb_dir``."""
    return subprocess.run(
        [KB, "--kb", str(kb_dir), *args], check=False, capture_output=True, text=True, env=kb_env(), timeout=120
    )


def listed(kb_dir: Path) -> list[str]:
    """The stored paths, from ``kb list --json``."""
    done = run_kb(kb_dir, "list", "--json")
    return [d["path"] for d in json.loads(done.stdout)["documents"]] if done.stdout else []


def search_paths(kb_dir: Path, query: str) -> list[str]:
    """The document paths ``kb search --mode lexical --json`` finds for ``query``."""
    done = run_kb(kb_dir, "search", query, "--mode", "lexical", "--json")
    return [hit["doc_path"] for hit in json.loads(done.stdout)["hits"]]


class WatchProcess:
    """``kb --kb KB watch PATHS --json``, with its stdout lines parsed and validated as they arrive."""

    def __init__(
        self,
        kb_dir: Path,
        *paths: Path,
        debounce_ms: int = 200,
        json_lines: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        args = [KB, "--kb", str(kb_dir), "watch", *map(str, paths), "--debounce-ms", str(debounce_ms)]
        self.process = subprocess.Popen(
            [*args, "--json"] if json_lines else args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=kb_env() | (env or {}),
            preexec_fn=default_ctrl_c,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def event(self, timeout: float = WAIT_S) -> dict[str, Any]:
        """The next JSON line, validated against watch_event.v1."""
        line = self.lines.get(timeout=timeout)
        assert line is not None, f"kb watch ended: {self.finish()} {self.stderr}"
        event = json.loads(line)
        jsonschema.validate(event, SCHEMA)
        return event

    def interrupt(self, sig: int = signal.SIGINT) -> int:
        """Send ``sig`` and wait for the exit code."""
        self.process.send_signal(sig)
        return self.finish()

    def finish(self, timeout: float = WAIT_S) -> int:
        """Wait for the process; keep its stderr (stdout belongs to the reader thread)."""
        self.process.wait(timeout=timeout)
        assert self.process.stderr is not None
        self.stderr += self.process.stderr.read()
        return self.process.returncode

    def close(self) -> None:
        """Kill the process if it still runs."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    """Return once ``condition()`` holds; fail naming ``what`` if it never does."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.01)


def _stopped(pid: int) -> bool:
    """Whether every thread of process ``pid`` is stopped (state T in /proc; true where there is no /proc)."""
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.exists():
        return True
    states = []
    for task in tasks.iterdir():
        try:
            states.append((task / "stat").read_text().rpartition(")")[2].split()[0])
        except (OSError, IndexError):
            continue  # a thread that just ended
    return all(state in ("T", "t") for state in states)


@contextmanager
def frozen(watch: WatchProcess) -> Iterator[None]:
    """Stop ``watch``'s process (SIGSTOP) for the block, then let it go on (SIGCONT).

    What the block does to files reaches the watcher as one queue of file-system events when it
    goes on, however long the block took: "changes closer than the debounce" without timing them.
    """
    pid = watch.process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: _stopped(pid), "kb watch stopped by SIGSTOP")
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
