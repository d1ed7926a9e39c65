"""The README's test command prints its summary line even when a test's process is killed.

``scripts/test`` runs pytest with workers (pytest-xdist): a test that crashes its worker (a native
engine's segmentation fault) fails that test, a new worker takes the rest, and the run ends with
its summary line as always.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from kbtest import REPO

CRASHING_TESTS = """
import os, signal

def test_before():
    assert True

def test_crashes():
    os.kill(os.getpid(), signal.SIGSEGV)

def test_after():
    assert True
"""


def test_the_test_command_runs_tests_in_worker_processes() -> None:
    command = (REPO / "scripts" / "test").read_text()
    assert re.search(r"python -m pytest .*-n \d", command), "scripts/test runs pytest with -n N (pytest-xdist)"


@pytest.mark.slow
def test_a_crashing_test_fails_alone_and_the_summary_is_printed(tmp_path: Path) -> None:
    (tmp_path / "test_native.py").write_text(CRASHING_TESTS)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "no:cacheprovider", "test_native.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 1
    assert "crashed while running 'test_native.py::test_crashes'" in run.stdout
    assert run.stdout.strip().splitlines()[-1].startswith("1 failed, 2 passed")
