"""The filesystem source: which files under a folder belong to the knowledge base.

Recursive; follows symbolic links but never enters a directory twice (loops are safe); skips
``.git/`` and other tool folders by default, plus the patterns of a ``.kbignore`` file at the
root (gitignore syntax) and of ``[ingest] ignore``. Paths are relative to the root, with ``/``
separators and NFC-normalised, so the same note has the same id on every platform.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import pathspec

DEFAULT_IGNORES = (
    ".git/", ".hg/", ".svn/", ".venv/", "venv/", "node_modules/", "__pycache__/", ".mypy_cache/",
    ".pytest_cache/", ".tox/", ".idea/", ".vscode/", ".DS_Store", "Thumbs.db", "*.pyc", "*.swp", "*~",
    ".kbignore",
)
IGNORE_FILE = ".kbignore"


@attrs.frozen
class SourceFile:
    """A file found under a root."""

    path: str  # relative, '/'-separated, NFC
    absolute: Path
    size: int


@attrs.frozen
class SourceProblem:
    """A file or folder the walk could not use, and why."""

    path: str
    reason: str


def normalise(relative: str) -> str:
    """The stored form of a relative path: '/' separators, NFC."""
    return unicodedata.normalize("NFC", relative.replace(os.sep, "/"))


def _ignore_spec(root: Path, extra: Sequence[str]) -> pathspec.PathSpec:
    lines = list(DEFAULT_IGNORES) + list(extra)
    ignore_file = root / IGNORE_FILE
    if ignore_file.is_file():
        lines += ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def walk(root: Path, extensions: Sequence[str], extra_ignores: Sequence[str] = (),
         skip_dirs: Sequence[Path] = ()) -> Iterator[SourceFile | SourceProblem]:
    """Yield the files under ``root`` with a wanted extension, and problems met on the way."""
    spec = _ignore_spec(root, extra_ignores)
    wanted = {e.lower() for e in extensions}
    skip = {p.resolve() for p in skip_dirs}
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            info = folder.stat()
        except OSError as exc:
            yield SourceProblem(prefix or ".", f"cannot read folder: {exc.strerror}")
            continue
        if (info.st_dev, info.st_ino) in seen:
            yield SourceProblem(prefix or ".", "symlink loop or folder reached twice; skipped")
            continue
        seen.add((info.st_dev, info.st_ino))
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError as exc:
            yield SourceProblem(prefix or ".", f"cannot list folder: {exc.strerror}")
            continue
        for entry in entries:
            relative = f"{prefix}{entry.name}"
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = not is_dir and entry.is_file(follow_symlinks=True)
            except OSError as exc:
                yield SourceProblem(normalise(relative), f"cannot stat: {exc.strerror}")
                continue
            if is_dir:
                if not spec.match_file(relative + "/") and Path(entry.path).resolve() not in skip:
                    stack.append((Path(entry.path), relative + "/"))
            elif is_file and Path(entry.name).suffix.lower() in wanted and not spec.match_file(relative):
                try:
                    size = entry.stat(follow_symlinks=True).st_size
                except OSError as exc:
                    yield SourceProblem(normalise(relative), f"cannot stat: {exc.strerror}")
                    continue
                yield SourceFile(normalise(relative), Path(entry.path), size)
            elif not is_dir and not is_file and entry.is_symlink() and Path(entry.name).suffix.lower() in wanted:
                yield SourceProblem(normalise(relative), "broken symbolic link; skipped")
