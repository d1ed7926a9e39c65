"""The filesystem source: which files under a folder belong to the knowledge base.

Recursive; never enters a directory twice (loops are safe); skips ``.git/`` and other tool
folders by default, plus the patterns of a ``.kbignore`` file at the root (gitignore syntax) and
of ``[ingest] ignore`` (:mod:`kb_core.ingest.ignores`): a line kb cannot use is yielded as an
:class:`IgnoreProblem` first and skipped, never the end of the walk. Paths are
relative to the root, with ``/`` separators and NFC-normalised, so the same note has the same id on
every platform.

Symbolic links: by default a link is followed only when its target stays inside the root (so a
link to ``/etc/passwd`` or to ``/etc`` is skipped with a reason); ``follow_symlinks=True``
(``kb ingest --follow-symlinks``, ``[ingest] follow_symlinks``) follows every link.

Every problem says whether the documents stored at (or under) its path must be *kept*: a folder
that cannot be listed or a file behind a broken link is a read failure, not a deletion.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from kb_core.errors import KbError
from kb_core.ingest.ignores import DEFAULT_IGNORES as DEFAULT_IGNORES
from kb_core.ingest.ignores import IGNORE_FILE as IGNORE_FILE
from kb_core.ingest.ignores import IgnoreProblem as IgnoreProblem
from kb_core.ingest.ignores import folders_of as folders_of
from kb_core.ingest.ignores import ignore_line_problem as ignore_line_problem
from kb_core.ingest.ignores import ignore_rules, normalise
from kb_core.limits import as_typed, check_unicode

OUTSIDE = "symbolic link to {target}, outside the folder; skipped (kb ingest --follow-symlinks follows it)"


@attrs.frozen
class SourceFile:
    """A file found under a root."""

    path: str  # relative, '/'-separated, NFC
    absolute: Path
    size: int


@attrs.frozen
class SourceProblem:
    """A file or folder the walk could not use, and why.

    ``path`` ends with '/' for a folder ('' for the root itself); ``keep`` means the documents
    stored at or under it must be kept, because it could not be *read* (it was not removed).
    """

    path: str
    reason: str
    keep: bool = False


@attrs.frozen
class PassedOver:
    """A file no parser reads (``.svg`` with no plugin for it), not ignored: counted, and named in one warning."""

    path: str
    extension: str


def ignored_part(root: Path, relative: str, extra_ignores: Sequence[str] = ()) -> str | None:
    """The folder (ending in '/') or file of ``relative`` that ingesting ``root`` skips, or None.

    The walk's own rules: kb's defaults (``.git/``, ``node_modules/``, ...), ``extra_ignores``
    (``[ingest] ignore``) and ``root/.kbignore``. For a front end that writes a file and must know
    first whether ingest will take it in::

        ignored_part(Path("notes"), ".git/h.md")   # ".git/"
    """
    skipped = ignore_rules(root, extra_ignores).skipped_part(relative)
    return None if skipped is None else skipped[0]


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _link_problem(entry: os.DirEntry[str], relative: str, root_real: Path, follow: bool) -> SourceProblem | None:
    """Why a symbolic link must not be followed (None when it may be)."""
    try:
        target = Path(entry.path).resolve(strict=True)
    except FileNotFoundError:
        return SourceProblem(normalise(relative), "broken symbolic link; skipped", keep=True)
    except (RuntimeError, OSError) as exc:  # RuntimeError: a link loop (Python < 3.13)
        if isinstance(exc, OSError) and exc.errno != errno.ELOOP:
            reason = f"cannot resolve symbolic link: {exc.strerror}"
        else:
            reason = "symbolic link loop; skipped"
        return SourceProblem(normalise(relative), reason, keep=True)
    if not follow and not _inside(target, root_real):
        return SourceProblem(normalise(relative), OUTSIDE.format(target=target))
    return None


def walk(
    root: Path,
    extensions: Sequence[str],
    extra_ignores: Sequence[str] = (),
    skip_dirs: Sequence[Path] = (),
    *,
    follow_symlinks: bool = False,
    start: str = "",
) -> Iterator[SourceFile | SourceProblem | IgnoreProblem | PassedOver]:
    """Yield the files under ``root`` with a wanted extension, and problems met on the way: first the ignore
    lines kb cannot use (skipped; the walk goes on with the others). A file with an extension no parser reads,
    not hidden and not ignored, is yielded as :class:`PassedOver`.

    ``start`` (a relative folder ending in '/') limits the walk to that part of the root.
    """
    rules = ignore_rules(root, extra_ignores)
    yield from rules.problems
    spec = rules.spec
    wanted = {e.lower() for e in extensions}
    skip = {p.resolve() for p in skip_dirs}
    root_real = root.resolve()
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Path, str]] = [(root / start if start else root, start)]
    while stack:
        folder, prefix = stack.pop()
        try:
            info = folder.stat()
        except OSError as exc:
            yield SourceProblem(normalise(prefix), f"cannot read folder: {exc.strerror}", keep=True)
            continue
        if (info.st_dev, info.st_ino) in seen:
            yield SourceProblem(normalise(prefix), "symlink loop or folder reached twice; skipped")
            continue
        seen.add((info.st_dev, info.st_ino))
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError as exc:
            yield SourceProblem(normalise(prefix), f"cannot list folder: {exc.strerror}", keep=True)
            continue
        for entry in entries:
            relative = f"{prefix}{entry.name}"
            wanted_name = Path(entry.name).suffix.lower() in wanted
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = not is_dir and entry.is_file(follow_symlinks=True)
            except OSError as exc:  # a link loop, or no permission to look
                reason = "symbolic link loop" if exc.errno == errno.ELOOP else f"cannot stat: {exc.strerror}"
                yield SourceProblem(normalise(relative), f"{reason}; skipped", keep=True)
                continue
            if is_dir and spec.match_file(relative + "/"):
                continue
            if not is_dir and (not wanted_name or spec.match_file(relative)):
                extension = Path(entry.name).suffix.lower()
                if not wanted_name and extension and not entry.name.startswith(".") and not spec.match_file(relative):
                    yield PassedOver(relative, extension)
                continue
            unnamed = name_problem(relative + ("/" if is_dir else ""))
            if unnamed is not None:
                yield unnamed
                continue
            if is_link:
                problem = _link_problem(entry, relative + ("/" if is_dir else ""), root_real, follow_symlinks)
                if problem is not None:
                    yield problem
                    continue
            if is_dir:
                if Path(entry.path).resolve() not in skip:
                    stack.append((Path(entry.path), relative + "/"))
            elif is_file:
                try:
                    size = entry.stat(follow_symlinks=True).st_size
                except OSError as exc:
                    yield SourceProblem(normalise(relative), f"cannot stat: {exc.strerror}", keep=True)
                    continue
                yield SourceFile(normalise(relative), Path(entry.path), size)
            else:
                yield SourceProblem(normalise(relative), "not a regular file; skipped")


def name_problem(relative: str) -> SourceProblem | None:
    """Why ``relative`` cannot be stored, when a part of it is not UTF-8 (Python decodes such a byte to a lone
    surrogate, which no UTF-8 text holds): skipped, and what is stored under it is kept."""
    try:
        check_unicode(relative, "name")
    except KbError:
        shown_as = normalise(as_typed(relative))
        return SourceProblem(shown_as, "the name is not valid UTF-8; skipped (rename it to ingest it)", keep=True)
    return None


def single_file(
    base: Path, relative: str, given: Path, *, follow_symlinks: bool = False
) -> Iterator[SourceFile | SourceProblem]:
    """The one file ``given`` (stored as ``relative`` under ``base``), or why it cannot be used."""
    unnamed = name_problem(relative)
    if unnamed is not None:
        yield unnamed
        return
    path = normalise(relative)
    try:
        target = given.resolve(strict=True)
        size = target.stat().st_size
    except (OSError, RuntimeError) as exc:
        yield SourceProblem(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}", keep=True)
        return
    if given.is_symlink() and not follow_symlinks and not _inside(target, base.resolve()):
        yield SourceProblem(path, OUTSIDE.format(target=target))
        return
    yield SourceFile(path, given, size)
