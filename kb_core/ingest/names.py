"""Names a front end writes a new file under before ingesting it (kb serve's uploads, kb mcp's inbox).

A client's name is untrusted. :func:`check_new_file` says, before anything is written, whether a
file of that name can be stored in a folder and then taken in by ``kb ingest`` of that folder:

* it is a plain relative path (NFC, '/'-separated, no '.' or '..' parts, no control or invisible
  character but ZWJ and ZWNJ, which spell words in several scripts), whose extension a parser reads;
* it fits :data:`kb_core.LIMITS` in characters (``path_chars``, ``path_part_chars``) and each part
  fits a file system's name limit, 255 *bytes* of UTF-8 (``NAME_MAX`` on ext4, XFS, btrfs, APFS):
  ingest can only store what a file system holds, so bytes are what decides;
* the walk of ``kb ingest`` would not skip it: kb's default ignores (``.git/``, ``node_modules/``,
  ...), ``[ingest] ignore`` and the folder's ``.kbignore``; the refusal names the rule;
* it does not clash with what is on disk: a part that must be a folder is a file (``a.md`` then
  ``a.md/b.md``), the file's place is a folder, or a symbolic link is on the way.

Every refusal is a :class:`NameRefused` (a :class:`~kb_core.errors.KbError`) whose ``kind`` lets a
front end pick its status: ``"invalid"`` and ``"ignored"`` (a bad request), ``"no_parser"``,
``"clash"`` (a conflict with what is stored).
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Literal

from kb_core.errors import KbError
from kb_core.ingest.ignores import ignore_rules
from kb_core.limits import LIMITS

#: A file or folder name's limit on common file systems (NAME_MAX), in bytes of UTF-8.
NAME_MAX_BYTES = 255
NAME_HINT = "use a relative name such as notes/meeting.md (letters, digits, '/', no '..')"
# Unicode categories a name may not use: controls, format characters (bidi overrides, zero-width
# spaces), surrogates, private use, unassigned, line and paragraph separators.
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
_ALLOWED_FORMAT = {"\u200c", "\u200d"}  # ZWNJ and ZWJ spell words in several scripts (and emoji)

RefusalKind = Literal["invalid", "no_parser", "ignored", "clash"]


class NameRefused(KbError):
    """A name a new file cannot have; ``kind``: ``invalid``, ``no_parser``, ``ignored`` or ``clash``."""

    def __init__(self, kind: RefusalKind, message: str, *, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.kind: RefusalKind = kind


def _refused_character(text: str) -> str | None:
    for char in text:
        if char == "\\" or (unicodedata.category(char) in _REFUSED_CATEGORIES and char not in _ALLOWED_FORMAT):
            return char
    return None


def clean_name(name: str, extensions: Iterable[str]) -> str:
    """``name`` as a stored relative path (NFC, '/'-separated), or a :class:`NameRefused` saying why not.

    Checks the name alone (see :func:`check_new_file` for the ignore rules and what is on disk).
    """
    clean = unicodedata.normalize("NFC", name.strip())
    if not clean:
        raise NameRefused("invalid", "the name is empty", hint=NAME_HINT)
    if len(clean) > LIMITS.path_chars:
        raise NameRefused(
            "invalid", f"the name is {len(clean)} characters long, over {LIMITS.path_chars}", hint="use a shorter name"
        )
    bad = _refused_character(clean)
    if bad is not None:
        what = "a backslash" if bad == "\\" else f"the invisible or control character U+{ord(bad):04X}"
        raise NameRefused("invalid", f"the name contains {what}", hint=NAME_HINT)
    parts = clean.split("/")
    if clean.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise NameRefused(
            "invalid", f"the name {clean!r} must be a relative path without '.' or '..' parts", hint=NAME_HINT
        )
    for part in parts:
        size = len(part.encode("utf-8"))
        if len(part) > LIMITS.path_part_chars or size > NAME_MAX_BYTES:
            raise NameRefused(
                "invalid",
                f"the part {part[:40]!r}... of the name is {len(part)} characters ({size} bytes) long,"
                f" over {LIMITS.path_part_chars} characters or {NAME_MAX_BYTES} bytes",
                hint="use shorter folder and file names",
            )
    known = sorted({str(e).lower() for e in extensions})
    suffix = PurePosixPath(parts[-1]).suffix.lower()  # as the ingest walk tells
    if suffix not in known:
        raise NameRefused(
            "no_parser",
            f"no parser for {parts[-1]!r}: none reads {suffix or 'files without an extension'}",
            hint=f"end the name with one of: {', '.join(known)}",
        )
    return clean


def ignore_rule(folder: Path, relative: str, extra_ignores: Sequence[str] = ()) -> tuple[str, str, str] | None:
    """What of ``relative`` ingesting ``folder`` skips, as (the folder or file skipped, the rule, where the
    rule comes from), or None. The walk's own rules, read as it reads them (:mod:`kb_core.ingest.source`):
    a line of ``.kbignore`` that kb cannot use skips nothing here either."""
    rules = ignore_rules(folder, extra_ignores)
    skipped = rules.skipped_part(relative)
    if skipped is None:
        return None
    part, index = skipped
    origin, rule = rules.origins[index] if 0 <= index < len(rules.origins) else ("the ignore rules", "?")
    return part, rule, origin


def _clash(folder: Path, relative: str) -> str | None:
    """Why a file cannot be written at ``folder/relative`` given what is there (None: it can)."""
    parts = relative.split("/")
    current = folder
    for index, part in enumerate(parts):
        current = current / part
        so_far = "/".join(parts[: index + 1])
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return f"{'/'.join(parts[:index])!r} is a document, not a folder"
        except OSError as exc:
            return f"{so_far!r} cannot be looked at: {exc.strerror}"
        last = index == len(parts) - 1
        if stat.S_ISLNK(mode):
            return f"{so_far!r} is a symbolic link"
        if not last and not stat.S_ISDIR(mode):
            return f"{so_far!r} is a document, not a folder"
        if last and stat.S_ISDIR(mode):
            return f"{so_far!r} is a folder"
        if last and not stat.S_ISREG(mode):
            return f"{so_far!r} is not a regular file"
    return None


def clash_between(names: Sequence[str]) -> str | None:
    """Why files of all ``names`` (clean, as :func:`clean_name` returns) cannot be written together:
    one of them is a folder of another (``a.md`` and ``a.md/b.md``); None when they can."""
    files = set(names)
    for name in names:
        parts = name.split("/")
        for end in range(1, len(parts)):
            folder = "/".join(parts[:end])
            if folder in files:
                return f"cannot store {name!r}: {folder!r} is a document of the same request, not a folder"
    return None


def check_new_file(folder: Path, name: str, extensions: Iterable[str], extra_ignores: Sequence[str] = ()) -> str:
    """``name`` as the stored path of a file written into ``folder`` and ingested from it, or a
    :class:`NameRefused` (nothing is written here): see the module's docstring for the rules.

    ``extensions``: those the installed parsers read; ``extra_ignores``: ``[ingest] ignore``.
    """
    clean = clean_name(name, extensions)
    skipped = ignore_rule(folder, clean, extra_ignores)
    if skipped is not None:
        part, rule, origin = skipped
        raise NameRefused(
            "ignored",
            f"the name {clean!r} would not be stored: the ingest ignore rules skip {part!r}"
            f" (rule {rule!r} of {origin})",
            hint="choose another name (no .git/, node_modules/, ... folders)",
        )
    problem = _clash(folder, clean)
    if problem is not None:
        raise NameRefused("clash", f"cannot store {clean!r}: {problem}", hint="choose another name")
    return clean
