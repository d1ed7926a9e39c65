"""Nothing phones home: ingest, search and ask write only to the knowledge base and the model cache,
and open no network connection (the default backend runs in-process)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kbtest import CORPUS

from kb_core.privacy import QUIET_ENVIRONMENT, quiet_dependencies

STRACE = shutil.which("strace")


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def test_quiet_dependencies_sets_only_what_the_user_left_unset() -> None:
    environ = {"HF_HUB_OFFLINE": "0"}
    quiet_dependencies(environ)
    assert environ["HF_HUB_OFFLINE"] == "0"
    assert environ["ORT_DISABLE_TELEMETRY"] == "1"
    assert set(environ) == set(QUIET_ENVIRONMENT)


@pytest.mark.needs_plugins
@pytest.mark.slow
def test_ingest_search_and_ask_touch_nothing_outside_the_knowledge_base_and_open_no_socket(tmp_path: Path) -> None:
    from kb_llamacpp.packaged import cache_dir  # the model cache of this machine, where the model is joined once

    model_cache = cache_dir()
    model_cache.mkdir(parents=True, exist_ok=True)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "XDG_", "ORT_", "HF_"))}
    env.update(HOME=str(home), KB_HOME=str(home / "kb"), KB_MODEL_CACHE=str(model_cache), TMPDIR=str(work))
    kb = str(Path(sys.executable).parent / "kb")
    trace = tmp_path / "connect.trace"
    prefix = [STRACE, "-f", "-qq", "-e", "trace=connect", "-o", str(trace)] if STRACE else []
    cache_before = _files(model_cache)

    for args in (
        ["ingest", str(CORPUS)],
        ["search", "how are backups verified"],
        ["ask", "--backend", "llamacpp", "How often are backups verified?"],
    ):
        done = subprocess.run([*prefix, kb, *args], env=env, cwd=work, capture_output=True, text=True, timeout=900)
        assert done.returncode in (0, 1), done.stderr  # 1: a refused answer is still a finished run
        if STRACE:
            calls = trace.read_text()
            network = [line for line in calls.splitlines() if re.search(r"AF_INET6?\b", line)]
            assert network == [], f"kb {args[0]} opened network connections: {network[:3]}"

    outside = {p for p in _files(home) if not p.is_relative_to(home / "kb")}
    assert outside == set(), f"files written outside the knowledge base: {sorted(map(str, outside))[:5]}"
    assert _files(work) <= {trace}, "files written to the working or temporary folder"
    new_in_cache = {p.name for p in _files(model_cache) - cache_before}
    assert all(name.endswith((".gguf", ".kvstate", ".lock", ".part")) for name in new_in_cache), new_in_cache


def _environment_after(code: str) -> dict[str, str]:
    """The QUIET_ENVIRONMENT variables set after running ``code`` in a fresh interpreter with none of them set."""
    env = {k: v for k, v in os.environ.items() if k not in QUIET_ENVIRONMENT}
    probe = (
        f"{code}\nimport json, os\nprint(json.dumps({{k: os.environ.get(k) for k in {sorted(QUIET_ENVIRONMENT)!r}}}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: v for k, v in seen.items() if v is not None}


def test_importing_kb_core_changes_nothing_in_the_process() -> None:
    assert _environment_after("import kb_core, kb_core.testing") == {}


@pytest.mark.slow
def test_the_switches_are_set_where_kb_starts(tmp_path: Path) -> None:
    assert _environment_after(f"import kb_core\nkb_core.open_kb(kb_dir={str(tmp_path / 'kb')!r})") == QUIET_ENVIRONMENT
    cli = "from kb_core.cli.main import main\nmain(['--version'])"
    assert _environment_after(cli) == QUIET_ENVIRONMENT
