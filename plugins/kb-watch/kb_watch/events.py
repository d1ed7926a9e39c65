"""What ``kb watch`` reports: one :class:`WatchEvent` per update, as a status line or a ``watch_event.v1`` JSON line."""

from __future__ import annotations

import json
import sys
import time
from typing import TextIO

import attrs
import click

import kb_core
from kb_core.commands import envelope, shown

SCHEMA_VERSION = "watch_event.v1"


@attrs.frozen
class WatchEvent:
    """One update of the knowledge base (``kind="update"``), a problem (``"error"``), or the end (``"stopped"``)."""

    kind: str
    seq: int
    trigger: str  # initial: the first ingest of the PATHs; change: file-system changes; retry: a delayed update
    at: str  # UTC, ISO 8601
    changes: int = 0  # file-system changes in the batch behind this update
    ingested: list[str] = attrs.field(factory=list)  # folders and files re-ingested (absolute paths)
    added: list[str] = attrs.field(factory=list)
    updated: list[str] = attrs.field(factory=list)
    removed: list[str] = attrs.field(factory=list)
    unchanged: int = 0
    failed: list[kb_core.IngestWarning] = attrs.field(factory=list)
    warnings: list[kb_core.IngestWarning] = attrs.field(factory=list)
    documents: int = 0
    chunks: int = 0
    error: str | None = None
    took_ms: float = 0.0

    @property
    def changed_anything(self) -> bool:
        """Whether the update stored, removed or refused something (a no-op update is not reported)."""
        return bool(self.added or self.updated or self.removed or self.failed or self.warnings or self.error)


def now_iso() -> str:
    """The current UTC time, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def json_line(event: WatchEvent) -> str:
    """The event as one line of JSON (every non-ASCII character escaped, so it is inert on a terminal)."""
    return json.dumps(envelope(SCHEMA_VERSION, event), ensure_ascii=True, separators=(",", ":"))


def report(event: WatchEvent, as_json: bool, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """Print ``event``: a JSON line on stdout (``as_json``), else status lines on stderr."""
    out = out or sys.stdout
    err = err or sys.stderr
    if as_json:
        out.write(json_line(event) + "\n")
        out.flush()
        return
    clock = event.at[11:19]
    if event.kind == "stopped":
        click.echo(f"kb watch: {clock} stopped ({event.documents} documents)", file=err)
    elif event.kind == "error":
        click.echo(f"kb watch: {clock} {shown(event.error)}", file=err)
    else:
        what = "ingested" if event.trigger == "initial" else "updated"
        click.echo(
            f"kb watch: {clock} {what}: added {len(event.added)}, updated {len(event.updated)}, removed"
            f" {len(event.removed)}, failed {len(event.failed)}  ({event.documents} documents,"
            f" {event.took_ms / 1000:.1f} s)",
            file=err,
        )
        for problem in event.failed:
            click.echo(f"  failed: {shown(problem.path)}: {shown(problem.reason)}", file=err)
        for note in event.warnings:
            click.echo(f"  warning: {shown(note.path)}: {shown(note.reason)}", file=err)
    err.flush()
