"""The watch loop: an initial ingest of the PATHs, then one update per debounced batch of changes.

Changes come from ``watchfiles`` (the Rust ``notify`` crate: inotify, FSEvents, kqueue,
ReadDirectoryChangesW), whose watcher starts before the initial ingest, so a change made while
it runs is not missed. A batch ends when no change has arrived for ``debounce_ms`` (at most
``MAX_BATCH_FACTOR`` times that while changes keep coming), so a burst of saves is one update.

Each update is one :func:`kb_core.ingest_paths` call (plus :func:`kb_core.remove_documents` for
a watched single file that is gone), which takes the knowledge base's writer lock only for its
own duration: between updates ``kb rm`` or ``kb ingest`` may run. When another process holds
the lock, the update waits and is retried (``trigger: "retry"``); other problems are reported
in one line and watching continues.

Stopping: :meth:`Watcher.run` returns when ``stop`` is set (the command sets it on SIGINT and
SIGTERM). A signal during an update lets that update finish (its transactions commit), then
the loop ends; nothing is half-written. Changes not yet ingested are picked up by the next
``kb watch`` (its initial ingest walks the PATHs again) or ``kb ingest``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import watchfiles
from watchfiles._rust_notify import RustNotify  # the watcher behind watchfiles.watch, started before ingesting

import kb_core
from kb_watch.events import WatchEvent, now_iso
from kb_watch.plan import Plan, make_plan, plan_changes

MAX_BATCH_FACTOR = 20


class Watcher:
    """Keeps one knowledge base in step with some folders and files."""

    def __init__(
        self,
        kb: kb_core.KnowledgeBase,
        paths: Sequence[Path],
        debounce_ms: int,
        emit: Callable[[WatchEvent], None],
        *,
        follow_symlinks: bool | None = None,
    ) -> None:
        self.kb = kb
        self.debounce_ms = debounce_ms
        self.emit = emit
        self.follow_symlinks = follow_symlinks
        resolved = [_absolute(p) for p in paths]
        for given, path in zip(paths, resolved):
            if not path.exists():
                raise kb_core.KbError(f"no such file or folder: {given}", hint="check the path")
        self.folder_roots = sorted({p for p in resolved if p.is_dir()})
        self.file_roots = sorted({p for p in resolved if not p.is_dir()})
        self.seq = 0
        self.documents = 0
        self.chunks = 0
        self._lost: set[Path] = set()
        self._failing: dict[str, str] = {}  # stored path -> reason, as last reported
        self._warned: set[tuple[str, str]] = set()  # (path, reason) of the warnings reported

    def watched(self) -> list[Path]:
        """What watchfiles watches: the folders, and the parent folder of each single file (editors replace files)."""
        targets = set(self.folder_roots) | {f.parent for f in self.file_roots}
        return sorted(t for t in targets if not any(o in t.parents for o in targets))

    def initial(self) -> None:
        """Ingest every PATH once (a KbError here, such as a missing path, ends the command)."""
        self._apply(make_plan(self.folder_roots, self.file_roots, ()), "initial", 0, raise_errors=True)

    def open(self) -> RustNotify:
        """Start watching (before the initial ingest, so that no change made meanwhile is missed)."""
        return RustNotify([str(p) for p in self.watched()], False, False, 300, True, True)

    def run(self, notify: RustNotify, stop: threading.Event) -> None:
        """Follow changes until ``stop`` is set."""
        keep = watchfiles.DefaultFilter(ignore_paths=[str(self.kb.directory)])
        pending = Plan()
        changes_seen = 0
        trigger = "change"
        touched: set[str] = set()
        while not stop.is_set():
            raw = notify.watch(self.debounce_ms * MAX_BATCH_FACTOR, self.debounce_ms, max(self.debounce_ms, 1000), stop)
            if isinstance(raw, str):  # "timeout", or "stop" / "signal" (then the loop ends)
                changes: set[str] = set()
                if raw != "timeout":
                    break
            else:
                changes = {p for c, p in raw if keep(watchfiles.Change(c), p)}
            if changes:
                plan, lost = plan_changes(changes, self.folder_roots, self.file_roots, skip=self.kb.directory)
                self._report_lost(lost)
                pending = pending.merge(plan)
                changes_seen += len(changes)
            if pending.empty:
                continue
            touched |= changes
            if self._apply(pending, trigger if changes else "retry", changes_seen, touched):
                pending, changes_seen, trigger, touched = Plan(), 0, "change", set()
            else:
                trigger = "retry"

    def stopped(self) -> None:
        """Report the end of watching."""
        self.seq += 1
        self.emit(WatchEvent("stopped", self.seq, "signal", now_iso(), documents=self.documents, chunks=self.chunks))

    def _apply(
        self, plan: Plan, trigger: str, changes: int, touched: set[str] | None = None, *, raise_errors: bool = False
    ) -> bool:
        """Run one update; False when it must wait for another writer (and should be retried)."""
        started = time.perf_counter()
        targets = [*plan.folders, *plan.files]
        try:
            removed = self._remove_gone(plan.gone_files)
            report = kb_core.ingest_paths(self.kb, targets, follow_symlinks=self.follow_symlinks) if targets else None
        except kb_core.KbError as exc:
            if raise_errors:
                raise
            busy = isinstance(exc, kb_core.WriterBusyError)
            self._error(f"{exc}" + ("; will retry" if busy else ""), trigger, changes)
            return not busy
        self.seq += 1
        self.documents = report.documents if report else self.kb.store.count_documents()
        self.chunks = report.chunks if report else self.kb.store.count_chunks()
        event = WatchEvent(
            "update",
            self.seq,
            trigger,
            now_iso(),
            changes=changes,
            ingested=[str(t) for t in targets],
            added=report.added if report else [],
            updated=report.updated if report else [],
            removed=sorted([*removed, *(report.removed if report else [])]),
            unchanged=report.unchanged if report else 0,
            failed=self._new_failures(report, touched or set()),
            warnings=self._new_warnings(report, touched or set()),
            documents=self.documents,
            chunks=self.chunks,
            took_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        if trigger == "initial" or event.changed_anything:
            self.emit(event)
        return True

    def _new_failures(self, report: kb_core.IngestReport | None, touched: set[str]) -> list[kb_core.IngestWarning]:
        """Failures to report: new ones, changed reasons, and files saved again; not the same bad file every update."""
        if report is None:
            return []
        for path in (*report.added, *report.updated, *report.removed):
            self._failing.pop(path, None)
        roots = [Path(r) for r in self.kb.store.source_roots()] + self.folder_roots
        fresh = []
        for problem in report.failed:
            saved = any(str(root / problem.path) in touched for root in roots)
            if saved or self._failing.get(problem.path) != problem.reason:
                fresh.append(problem)
            self._failing[problem.path] = problem.reason
        return fresh

    def _new_warnings(self, report: kb_core.IngestReport | None, touched: set[str]) -> list[kb_core.IngestWarning]:
        """Warnings to report: new ones, and those of files saved again; not the same one every update (a bad
        line of a folder's ``.kbignore`` is met again by every walk of the folder)."""
        if report is None:
            return []
        roots = [Path(r) for r in self.kb.store.source_roots()] + self.folder_roots
        fresh = []
        for note in report.warnings:
            saved = any(str(root / note.path) in touched for root in roots)
            if saved or (note.path, note.reason) not in self._warned:
                fresh.append(note)
            self._warned.add((note.path, note.reason))
        return fresh

    def _remove_gone(self, gone: Sequence[Path]) -> list[str]:
        """Remove the stored documents of watched single files that no longer exist."""
        stored = [p for p in (self._stored_path(f) for f in gone) if p is not None]
        return kb_core.remove_documents(self.kb, stored) if stored else []

    def _stored_path(self, file: Path) -> str | None:
        """The stored path of ``file`` (relative to the deepest stored root holding it), if it is stored."""
        roots = [Path(r) for r in self.kb.store.source_roots() if Path(r) in file.parents]
        for root in sorted(roots, key=lambda r: len(r.parts), reverse=True):
            relative = file.relative_to(root).as_posix()
            if self.kb.store.get_document(relative) is not None:
                return relative
        return None

    def _report_lost(self, lost: Sequence[Path]) -> None:
        for root in lost:
            if root not in self._lost:
                self._lost.add(root)
                self._error(f"the watched folder {root} is gone; its stored documents are kept", "change", 0)

    def _error(self, line: str, trigger: str, changes: int) -> None:
        self.seq += 1
        self.emit(
            WatchEvent(
                "error",
                self.seq,
                trigger,
                now_iso(),
                changes=changes,
                error=line,
                documents=self.documents,
                chunks=self.chunks,
            )
        )


def _absolute(path: Path) -> Path:
    """``path`` made absolute and resolved (symbolic links too), as the core stores source roots."""
    expanded = path.expanduser()
    try:
        return expanded.resolve(strict=True)
    except (OSError, RuntimeError):
        return expanded.absolute()
