"""The filesystem source: which files under a folder belong to the knowledge base.

Recursive; never enters a directory twice (loops are safe); skips ``.git/`` and other tool
folders by default, plus the patterns of a ``.kbignore`` file at the root (gitignore syntax) and
of ``[ingest] ignore``. An ignore line kb cannot use (``!``, a lone trailing ``\\``, ``[z-a]``, more
wildcards than :data:`~kb_core.bounds.IGNORE_WILDCARDS`) is skipped and reported, never the end of the
walk: anyone who can write a file into a folder must not be able to stop kb from reading it. Paths are
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
import re
import stat
import unicodedata
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pathspec

from kb_core.bounds import IGNORE_FILE_BYTES, IGNORE_RULES, IGNORE_WILDCARDS, shown
from kb_core.errors import KbError
from kb_core.limits import as_typed, check_unicode

DEFAULT_IGNORES = (
    ".git/",
    ".hg/",
    ".svn/",
    ".venv/",
    "venv/",
    "node_modules/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".tox/",
    ".idea/",
    ".vscode/",
    ".DS_Store",
    "Thumbs.db",
    "*.pyc",
    "*.swp",
    "*~",
    ".kbignore",
)
IGNORE_FILE = ".kbignore"
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


def normalise(relative: str) -> str:
    """The stored form of a relative path: '/' separators, NFC."""
    return unicodedata.normalize("NFC", relative.replace(os.sep, "/"))


def folders_of(relative: str) -> list[str]:
    """The folders the walk enters to reach ``relative``, stored form and ending in '/', outermost first."""
    parts = normalise(relative).split("/")
    return ["/".join(parts[:end]) + "/" for end in range(1, len(parts))]


@attrs.frozen
class IgnoreProblem:
    """A line of an ignore list kb cannot use: skipped (the other rules are used), reported once per ingest.

    ``origin`` is ``.kbignore`` or ``[ingest] ignore``; ``number`` the line (or entry), from 1.
    """

    origin: str
    number: int
    line: str
    why: str

    @property
    def path(self) -> str:
        """What a report names: the ignore file (or the configuration key)."""
        return self.origin

    @property
    def reason(self) -> str:
        """One line: which rule, and why it is skipped."""
        where = "line" if self.origin == IGNORE_FILE else "entry"
        return f"{where} {self.number} {shown(self.line)}: {self.why}"


@attrs.frozen
class IgnoreRules:
    """The ignore rules of a walk as one gitignore spec, where each of its patterns comes from (the group's name
    and the rule as written, by the spec's pattern index), and the lines left out, each with why."""

    spec: pathspec.GitIgnoreSpec
    origins: tuple[tuple[str, str], ...]
    problems: tuple[IgnoreProblem, ...]

    def skipped_part(self, relative: str) -> tuple[str, int] | None:
        """The folder (ending in '/') or file of ``relative`` these rules skip, with the index of the rule
        that does (see ``origins``), or None."""
        for candidate in [*folders_of(relative), normalise(relative)]:
            result = self.spec.check_file(candidate)
            if result.include:
                return candidate, -1 if result.index is None else result.index
        return None


def _single_stars(line: str) -> str:
    """``line`` with each run of '*' that is not a whole ``**`` part written as one '*': the same rule (gitignore
    reads ``a**b`` and ``***`` as so many '*'), whose match does not try every way to share a name among them."""
    out: list[str] = []
    position, starts = 0, {0, 1} if line.startswith("!") else {0}
    while position < len(line):
        char = line[position]
        if char == "\\":
            out.append(line[position : position + 2])
            position += 2
            continue
        if char != "*":
            out.append(char)
            position += 1
            continue
        end = position
        while end < len(line) and line[end] == "*":
            end += 1
        whole_part = (position in starts or line[position - 1] == "/") and (end == len(line) or line[end] == "/")
        out.append("**" if whole_part and end - position == 2 else "*")
        position = end
    return "".join(out)


def _wildcards(line: str) -> int:
    """The runs of unescaped '*' in ``line``."""
    count, position, previous = 0, 0, ""
    while position < len(line):
        char = line[position]
        if char == "*" and previous != "*":
            count += 1
        previous = char if char != "\\" else ""
        position += 2 if char == "\\" else 1
    return count


def _why(line: str, exc: Exception) -> str:
    """What is wrong with ``line``, which pathspec refused with ``exc``, in one short phrase."""
    if line.strip() == "!":
        return "a '!' with nothing to un-ignore (write '\\!' for a name that starts with '!')"
    end = line.rstrip()
    if (len(end) - len(end.rstrip("\\"))) % 2 == 1:
        return "ends with a '\\' that escapes nothing (write '\\\\' for a backslash)"
    if isinstance(exc, re.error):
        return f"not a usable pattern ({exc.msg})"
    if isinstance(exc, ValueError):  # pathspec's GitIgnorePatternError
        return "not a gitignore pattern"
    return f"not a gitignore pattern ({type(exc).__name__})"


def _compiled(line: object) -> tuple[pathspec.GitIgnoreSpec | None, str]:
    """The spec of one ignore line, or None and why kb cannot use it."""
    if not isinstance(line, str):
        return None, f"not text but {type(line).__name__}"
    simpler = _single_stars(line)
    wildcards = _wildcards(simpler)
    if not IGNORE_WILDCARDS.holds(wildcards):
        return None, (
            f"{wildcards} wildcards ('*'), over {IGNORE_WILDCARDS.high:.0f}: a long name would take too long to"
            " match; split it into simpler rules"
        )
    try:
        with warnings.catch_warnings():  # re's FutureWarning on '[[' is no news to the person who runs kb
            warnings.simplefilter("ignore")
            spec = pathspec.GitIgnoreSpec.from_lines([simpler])
        spec.check_file("a/b")  # nothing known fails here, but a rule that did would stop every walk
    except Exception as exc:  # pathspec's own errors, re.error, whatever a later version raises
        return None, _why(line, exc)
    return spec, ""


def ignore_line_problem(line: str) -> str:
    """'' when ``line`` is a gitignore rule kb can use, else why not, in one short phrase::

    ignore_line_problem("drafts/")  # ''
    ignore_line_problem("!")        # "a '!' with nothing to un-ignore (...)"
    """
    return _compiled(line)[1]


def compile_ignores(groups: Sequence[tuple[str, Sequence[str]]], problems: Sequence[IgnoreProblem] = ()) -> IgnoreRules:
    """The rules of all ``groups`` (name, lines), in order, as one spec; a line kb cannot use is left out
    and named in ``problems`` (after the ``problems`` given), as are the lines past the bound of one list."""
    found = list(problems)
    patterns: list[Any] = []
    origins: list[tuple[str, str]] = []
    limit = int(IGNORE_RULES.high)
    for origin, lines in groups:
        rules = 0
        for number, line in enumerate(lines, start=1):
            spec, why = _compiled(line)
            if spec is None:
                found.append(IgnoreProblem(origin, number, str(line), f"{why}; the rule is skipped"))
                continue
            kept = [pattern for pattern in spec.patterns if pattern.include is not None]  # not a comment
            if kept and rules == limit:
                found.append(
                    IgnoreProblem(
                        origin, number, line, f"more than {limit:,} rules: this one and those after it are skipped"
                    )
                )
                break
            rules += len(kept)
            patterns.extend(kept)
            origins.extend((origin, line) for _ in kept)
    return IgnoreRules(pathspec.GitIgnoreSpec(patterns), tuple(origins), tuple(found))


def _read_ignore_file(path: Path) -> tuple[list[str], list[IgnoreProblem]] | None:
    """The lines of the ignore file ``path`` (at most :data:`IGNORE_FILE_BYTES`), or None when there is no
    regular file to read (a FIFO is not waited on)."""
    limit = int(IGNORE_FILE_BYTES.high)
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        with os.fdopen(os.dup(handle), "rb") as file:
            data = file.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(handle)
    problems = []
    if len(data) > limit:
        data = data[: data.rfind(b"\n", 0, limit) + 1]
        lines = data.decode("utf-8", errors="replace").splitlines()
        problems.append(
            IgnoreProblem(
                IGNORE_FILE, len(lines) + 1, "", f"the file is over {limit:,} bytes; what follows is not read"
            )
        )
        return lines, problems
    return data.decode("utf-8", errors="replace").splitlines(), problems


def ignore_rules(root: Path, extra: Sequence[str] = ()) -> IgnoreRules:
    """The ignore rules of the walk of ``root``, in its order: kb's defaults, ``[ingest] ignore`` (``extra``)
    and ``root/.kbignore`` (when there is one to read); lines kb cannot use are skipped and named."""
    groups: list[tuple[str, Sequence[str]]] = [("kb's defaults", DEFAULT_IGNORES), ("[ingest] ignore", extra)]
    problems: list[IgnoreProblem] = []
    read = _read_ignore_file(root / IGNORE_FILE)
    if read is not None:
        groups.append((IGNORE_FILE, read[0]))
        problems = read[1]
    rules = compile_ignores(groups)
    return attrs.evolve(rules, problems=(*rules.problems, *problems))


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
) -> Iterator[SourceFile | SourceProblem | IgnoreProblem]:
    """Yield the files under ``root`` with a wanted extension, and problems met on the way: first the ignore
    lines kb cannot use (skipped; the walk goes on with the others).

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
