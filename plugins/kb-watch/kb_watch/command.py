"""``kb watch PATH...``: ingest the PATHs, then follow their changes until Ctrl-C."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import click

from kb_core.commands import Session, json_option, pass_session

EXIT_INTERRUPTED = 130


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[dict[str, int]]:
    """SIGINT and SIGTERM set ``stop`` (an update in progress finishes); a second SIGINT interrupts at once."""
    received: dict[str, int] = {}
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, _frame: FrameType | None) -> None:
        received.setdefault("signal", signum)
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@click.command("watch")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--debounce-ms",
    type=click.IntRange(min=10, max=60_000),
    default=500,
    show_default=True,
    help="Quiet time that ends a batch of changes: a burst of saves closer than this is one update.",
)
@click.option(
    "--follow-symlinks/--no-follow-symlinks",
    default=None,
    help="Follow symbolic links that lead outside the folder (default: [ingest] follow_symlinks, off).",
)
@json_option
@pass_session
def watch_command(
    session: Session, paths: tuple[Path, ...], debounce_ms: int, follow_symlinks: bool | None, as_json: bool
) -> int:
    """Keep the knowledge base in step with PATHS (folders or files) as files are created, changed, moved and deleted.

    Ingests the PATHS once, then re-ingests what changes after each quiet spell of --debounce-ms.
    Status lines go to stderr; --json prints one watch_event.v1 JSON line per update on stdout.
    A file that cannot be ingested is one line (its stored version is kept) and watching goes on.
    Ctrl-C (SIGINT) lets the update in progress finish, then exits with 130; SIGTERM the same, exit 0.
    """
    from kb_watch.events import report
    from kb_watch.runner import Watcher

    watcher = Watcher(
        session.kb(create=True),
        list(paths),
        debounce_ms,
        lambda event: report(event, as_json),
        follow_symlinks=follow_symlinks,
    )
    stop = threading.Event()
    with stop_on_signals(stop) as received, watcher.open() as notify:
        watcher.initial()
        if not as_json:
            shown = ", ".join(str(p) for p in watcher.watched())
            click.echo(f"kb watch: watching {shown} (debounce {debounce_ms} ms; Ctrl-C to stop)", err=True)
        watcher.run(notify, stop)
        watcher.stopped()
    return EXIT_INTERRUPTED if received.get("signal", signal.SIGINT) == signal.SIGINT else 0
