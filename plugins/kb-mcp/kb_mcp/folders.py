"""Which files the MCP ``ingest`` tool may read: only those inside folders the user allowed.

The agent chooses the path, so without a limit it could make kb read any file the user can
(``{"path": "/etc"}``) and then ``fetch`` it. ``kb mcp`` ingests no file or folder by default
(text with a name is always accepted); the user allows folders with ``kb mcp --ingest-folder DIR``
(repeatable) or in the configuration::

    [backends.mcp]
    ingest_folders = ["~/notes", "/srv/manuals"]

A path is allowed when, with ``~``, ``..`` and every symbolic link resolved, it is one of those
folders or inside one. Walking an allowed folder then follows ``kb ingest``'s own rules for
links (those leading outside the ingested folder are skipped unless ``[ingest] follow_symlinks``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import attrs

import kb_core
from kb_core.plugin.options import Option, checked_options

BACKEND = "mcp"  # the plugin's table: [backends.mcp]
KEY = "ingest_folders"
PATH_MAX = 4096  # Linux's PATH_MAX: no usable path given to `ingest` is longer
#: The options of ``[backends.mcp]``, declared to kb (``register_options``): checked at start.
OPTIONS: dict[str, Option] = {
    KEY: Option.texts(
        [],
        "folders whose files the ingest tool may read (also kb mcp --ingest-folder DIR)",
        pattern="[/~][^\x00]*",
        shape="an absolute folder (starting with / or ~)",
    ),
}
HOW_TO_ALLOW = f'allow a folder with kb mcp --ingest-folder DIR, or {KEY} = ["DIR"] in [backends.{BACKEND}]'


def configured_folders(config: kb_core.Config) -> list[Path]:
    """The folders of ``[backends.mcp] ingest_folders`` (absolute, ``~`` expanded); a ConfigError if malformed."""
    values = checked_options(BACKEND, OPTIONS, config.backend_options(BACKEND), config.sources)
    try:
        return [Path(entry).expanduser() for entry in values[KEY]]
    except RuntimeError as exc:  # ~nobody: no such user
        raise kb_core.ConfigError(f"[backends.{BACKEND}] {KEY}: {exc}", hint="start each folder with / or ~/") from None


@attrs.frozen
class IngestFolders:
    """The folders ``ingest`` may read, resolved once when the server starts."""

    folders: tuple[Path, ...] = ()

    @classmethod
    def of(cls, folders: Iterable[Path | str]) -> IngestFolders:
        """``folders`` with ``~`` and symbolic links resolved, duplicates dropped (order kept)."""
        resolved = (Path(os.path.realpath(Path(folder).expanduser())) for folder in folders)
        return cls(tuple(dict.fromkeys(resolved)))

    def check(self, path: str) -> Path:
        """``path`` resolved, when it lies in an allowed folder; else a one-line KbError saying how to allow it.

        Nothing outside the folders is looked at first, so a refusal never tells whether a file exists.
        """
        if not path.strip():
            raise kb_core.KbError("the path is empty", hint="give a file or folder to ingest")
        if not self.folders:
            raise kb_core.KbError(
                "kb mcp may not ingest files or folders: no folder is allowed",
                hint=f"send text with a name instead, or {HOW_TO_ALLOW}",
            )
        if len(path) > PATH_MAX or "\x00" in path:
            raise kb_core.KbError(
                f"the path is not usable ({'NUL character' if len(path) <= PATH_MAX else 'too long'})",
                hint="give a file or folder inside an allowed folder",
            )
        resolved = Path(os.path.realpath(Path(path).expanduser()))
        if not any(resolved == folder or folder in resolved.parents for folder in self.folders):
            allowed = ", ".join(str(folder) for folder in self.folders)
            raise kb_core.KbError(
                f"{path[:200]!r} is outside the folders kb mcp may ingest ({allowed})", hint=HOW_TO_ALLOW
            )
        return resolved
