"""From a batch of file-system changes to the smallest set of ingests that brings the knowledge base in step.

A changed, created, moved or deleted path inside a watched folder is handled by re-ingesting the
nearest folder that still exists above it (its parent, or higher when the parent is gone too),
through :func:`kb_core.ingest_paths`. Ingesting a folder walks it with the core's own rules
(ignore files, symbolic-link policy, parsers by extension), skips unchanged files by hash, and
removes the stored documents of files that disappeared from it; what cannot be read is kept.
So creations, edits, renames (a deletion plus a creation) and deletions all take the same path,
and nothing here second-guesses which files kb would take in. Folders inside another chosen
folder are dropped, since the outer walk covers them.

A watched single file is re-ingested when it exists and removed (with
:func:`kb_core.remove_documents`) when it is gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs


@attrs.frozen
class Plan:
    """What one update does: folders and files to ingest, watched files to remove."""

    folders: tuple[Path, ...] = ()
    files: tuple[Path, ...] = ()
    gone_files: tuple[Path, ...] = ()

    @property
    def empty(self) -> bool:
        """Nothing to do."""
        return not (self.folders or self.files or self.gone_files)

    def merge(self, other: Plan) -> Plan:
        """Both plans' work (an update that had to wait, plus new changes)."""
        return make_plan(self.folders + other.folders, self.files + other.files, self.gone_files + other.gone_files)


def make_plan(folders: Iterable[Path], files: Iterable[Path], gone: Iterable[Path]) -> Plan:
    """A plan with duplicates and folders covered by another folder removed, in a stable order."""
    unique = set(folders)
    outer = sorted(f for f in unique if not any(other in f.parents for other in unique))
    gone_set = set(gone)
    present = sorted(set(files) - gone_set)
    return Plan(tuple(outer), tuple(present), tuple(sorted(gone_set)))


def owner(path: Path, roots: Iterable[Path]) -> Path | None:
    """The deepest watched root that is ``path`` or holds it (None: not ours)."""
    holders = [r for r in roots if r == path or r in path.parents]
    return max(holders, key=lambda r: len(r.parts)) if holders else None


def nearest_folder(path: Path, root: Path) -> Path | None:
    """The nearest existing folder at or above ``path``'s parent, not above ``root`` (None: the root is gone)."""
    if path == root:
        return root if root.is_dir() else None
    candidate = path.parent
    while candidate != root and root in candidate.parents:
        if candidate.is_dir():
            return candidate
        candidate = candidate.parent
    return root if root.is_dir() else None


def plan_changes(
    paths: Iterable[str], folder_roots: Iterable[Path], file_roots: Iterable[Path], skip: Path | None = None
) -> tuple[Plan, list[Path]]:
    """The plan for changed ``paths`` (absolute), and the watched folders found gone.

    ``skip`` (the knowledge base directory) and everything under it is ignored, so a knowledge
    base kept inside a watched folder does not trigger updates of itself.
    """
    folder_roots = list(folder_roots)
    file_set = set(file_roots)
    folders: set[Path] = set()
    files: set[Path] = set()
    gone: set[Path] = set()
    lost: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if skip is not None and (path == skip or skip in path.parents):
            continue
        if path in file_set:
            (files if path.is_file() else gone).add(path)
            continue
        root = owner(path, folder_roots)
        if root is None:
            continue
        folder = nearest_folder(path, root)
        if folder is None:
            lost.add(root)
        else:
            folders.add(folder)
    return make_plan(folders, files, gone), sorted(lost)
