"""Prove the ecosystem path from built artefacts alone: fresh virtual environments, no source tree.

Usage: python scripts/check_ecosystem.py DIST_DIR     (scripts/check-dist builds DIST_DIR first)

1. ``pip install --find-links dist kb-ollama kb-tantivy`` gives a ``kb`` whose ``kb plugins`` lists
   ollama and whose ``kb --backend ollama ask`` talks to a loopback server speaking Ollama's
   protocol (the kit's fake chat server, ``kb_core.testing.serve_chat``). Then kb-ollama is uninstalled: it is gone from
   ``kb plugins`` and choosing it is one line naming the package to install.
2. ``pip install --find-links dist kb-llamacpp`` in that environment gives a working ``kb ask``.
3. The core's own tests pass with kb-core alone installed (``pip install "kb-core[test,multilingual]"``,
   no plugin): every test in ``tests/`` but those marked ``needs_plugins`` (the real engines working
   with the core), run against the installed wheel, on the test indexes of ``kb_core.testing``.

Prints one line per step with its time; exits 1 at the first step that fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "fixtures" / "corpus"
QUESTION = "What TCP port does the Heliograph daemon listen on?"  # answerable from the corpus


def step(name: str, command: list[str], env: dict[str, str], cwd: Path, expect: tuple[int, ...] = (0,)) -> str:
    """Run one command; print its outcome and time; return its stdout (stderr when it fails on purpose)."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - started
    ok = done.returncode in expect
    print(f"{'ok ' if ok else 'FAIL'} {seconds:7.1f} s  {name}", flush=True)
    if not ok:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
        sys.exit(1)
    return done.stdout if done.returncode == 0 or done.stdout.strip() else done.stderr


def fresh_environment(work: Path) -> tuple[Path, dict[str, str]]:
    """A new virtual environment under ``work``: its bin folder, and an environment without kb's variables."""
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    return venv / "bin", {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "PYTHON", "VIRTUAL_ENV"))}


def main(dist: Path) -> None:
    from kb_core.testing import serve_chat  # the Ollama protocol server kb-ollama's own tests use

    with serve_chat(lifetime_s=1800) as fake, tempfile.TemporaryDirectory(prefix="kb-ecosystem-") as tmp:
        work = Path(tmp)
        bin_dir, env = fresh_environment(work)
        pip, kb = [str(bin_dir / "python"), "-m", "pip"], str(bin_dir / "kb")
        env |= {"KB_HOME": str(work / "kb"), "KB_INDEXES__ENABLED": '["tantivy"]', "KB_OLLAMA_URL": fake.url}
        env["KB_BACKENDS__OLLAMA__MODEL"] = fake.model
        find = ["--quiet", "--find-links", str(dist)]

        step(
            "pip install --find-links dist kb-ollama kb-tantivy",
            [*pip, "install", *find, "kb-ollama", "kb-tantivy"],
            env,
            work,
        )
        plugins = json.loads(step("kb plugins --json", [kb, "plugins", "--json"], env, work))
        names = {p["name"] for p in plugins["plugins"]}
        assert {"ollama", "tantivy", "parsers"} <= names, names
        assert str(REPO) not in step("kb --version", [kb, "--version"], env, work)
        step("kb ingest fixtures/corpus", [kb, "ingest", str(CORPUS)], env, work)
        answer = json.loads(
            step(
                "kb --backend ollama ask",
                [kb, "--backend", "ollama", "ask", "--json", QUESTION],
                env,
                work,
                expect=(0, 1),
            )
        )
        assert answer["model"]["provider"] == "ollama", answer  # it went to the protocol server
        assert any(r.path == "/api/chat" for r in fake.requests), fake.requests

        step("pip uninstall kb-ollama", [*pip, "uninstall", "--quiet", "-y", "kb-ollama"], env, work)
        plugins = json.loads(step("kb plugins --json (ollama gone)", [kb, "plugins", "--json"], env, work))
        assert "ollama" not in {p["name"] for p in plugins["plugins"]}
        error = step(
            "kb --backend ollama ask (not installed)", [kb, "--backend", "ollama", "ask", "q?"], env, work, expect=(2,)
        )
        assert error.count("\n") == 1 and "pip install kb-ollama" in error, error

        step("pip install --find-links dist kb-llamacpp", [*pip, "install", *find, "kb-llamacpp"], env, work)
        env.pop("KB_OLLAMA_URL")
        question = [kb, "ask", "--json", QUESTION]
        out = step("kb ask (llamacpp)", question, env, work, expect=(0, 1))
        assert json.loads(out)["model"]["provider"] == "llamacpp"
    core_tests_alone(dist)
    print("ecosystem path: ok")


def core_tests_alone(dist: Path) -> None:
    """Step 3: the core's tests in a fresh environment holding kb-core and no plugin."""
    with tempfile.TemporaryDirectory(prefix="kb-core-alone-") as tmp:
        work = Path(tmp)
        bin_dir, env = fresh_environment(work)
        python = str(bin_dir / "python")
        step(
            'pip install --find-links dist "kb-core[test,multilingual]"',
            [python, "-m", "pip", "install", "--quiet", "--find-links", str(dist), "kb-core[test,multilingual]"],
            env,
            work,
        )
        installed = step("pip list", [python, "-m", "pip", "list", "--format=freeze"], env, work)
        plugins = [line for line in installed.splitlines() if line.lower().startswith("kb-") and "kb-core" not in line]
        assert not plugins, plugins
        # from a folder outside the checkout, so kb_core is the installed wheel's
        pytest = [python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-m", "not needs_plugins"]
        pytest.append(str(REPO / "tests"))
        out = step("pytest tests -m 'not needs_plugins' (kb-core alone)", pytest, env, work)
        print("    " + out.strip().splitlines()[-1])


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
