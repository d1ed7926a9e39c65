"""Run the README's first set-up command as a newcomer would, and check its answer.

Usage: python scripts/check_readme.py      (.ci/run calls it after scripts/setup)

The command is read from the README (the first ``bash`` block of "Set up" that runs ``kb ask``),
not copied here, and run with ``bash -e`` in a fresh copy of the repository's tracked files, so it
makes its own virtual environment, installs from the source tree, ingests ``fixtures/corpus`` into
a new knowledge base and asks its question. It must exit 0 with a grounded answer that cites
``notes/CHANGELOG.txt``. Prints one line with the outcome and the time; exits 1 otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXPECTED_CITATION = "notes/CHANGELOG.txt#L"


def readme_command(readme: str) -> str:
    """The first fenced ``bash`` block after the "Set up" heading whose command runs ``kb ask``."""
    section = readme.split("## Set up", 1)[-1]
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        if "kb ask" in block:
            return block.strip()
    raise SystemExit("check_readme: the README's Set up section has no bash block that runs kb ask")


def fresh_copy(target: Path) -> None:
    """The repository's tracked files (as in the working tree) copied to ``target``: no venv, no caches."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def main() -> int:
    """Copy, run, check; one line of outcome."""
    command = readme_command((REPO / "README.md").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="kb-readme-") as tmp:
        work = Path(tmp) / "kb"
        fresh_copy(work)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "VIRTUAL_ENV", "PYTHONPATH"))}
        env["KB_HOME"] = str(Path(tmp) / "knowledge-base")
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
        started = time.perf_counter()
        done = subprocess.run(
            ["bash", "-e", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=3600
        )
        seconds = time.perf_counter() - started
    answer = done.stdout
    grounded = any(line.startswith("grounded") for line in answer.splitlines())
    ok = done.returncode == 0 and grounded and EXPECTED_CITATION in answer
    print(f"{'ok ' if ok else 'FAIL'} {seconds:7.1f} s  the README's first command, in a fresh venv", flush=True)
    if not ok:
        print(f"exit {done.returncode}\n{answer[-3000:]}\n{done.stderr[-3000:]}", file=sys.stderr)
        return 1
    print("\n".join("    " + line for line in answer.strip().splitlines()[-5:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
