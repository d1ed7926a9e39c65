"""The contract of a store several kb processes share (:class:`~kb_core.extend.record_store.SharedRecordStore`).

A shared store passes :class:`~kb_core.testing.RecordStoreContract` and this kit, which adds what sharing
needs: each knowledge base folder's own index positions, trimming that keeps what another folder still has
to apply, the ingest queue (a file taken by one worker at a time, finished or returned only by its holder, or set
aside until released) and waiting
for the feed to move. The SQLite store is not shared (one writer, one folder) and does not run it::

    class TestAcmeShared(SharedStoreContract):
        @pytest.fixture
        def store_factory(self):
            return open_acme

        @pytest.fixture
        def store_options(self, acme_database):
            return {"url": acme_database.url}
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from kb_core.extend.record_store import IngestJob, RecordStore, SetAsideFile, SharedRecordStore
from kb_core.testing.fakes import store_document
from kb_core.testing.store_kit import StoreKit

#: How long a test waits for another thread before it fails (a guard, not a timing target).
GUARD_S = 60.0


class SharedStoreContract(StoreKit):
    """What a store of record several processes share must do. Provide ``store_factory`` and ``store_options``
    as for :class:`~kb_core.testing.RecordStoreContract`."""

    @pytest.fixture
    def open_in(self, open_store: Callable[..., RecordStore]) -> Callable[[str], SharedRecordStore]:
        """``open_in("a")``: a handle on the test's store from knowledge base folder ``a`` (closed after the test)."""

        def open_one(folder: str) -> SharedRecordStore:
            store = open_store(folder=folder)
            assert isinstance(store, SharedRecordStore)
            return store

        return open_one

    def test_each_folder_keeps_its_own_index_positions(self, open_in: Callable[[str], SharedRecordStore]) -> None:
        one, two, one_again = open_in("one"), open_in("two"), open_in("one")
        store_document(one, "a.md", ("alpha",))
        one.set_index_state("lexical", one.last_seq(), "tok-1")
        assert one_again.index_state("lexical") == (one.last_seq(), "tok-1")  # the same folder, the same indexes
        assert two.index_state("lexical") == (0, "")  # another folder has its own, never built yet
        two.set_index_state("lexical", 0, "tok-1")
        assert one.index_state("lexical") == (one.last_seq(), "tok-1")

    def test_trimming_keeps_what_another_folder_has_not_applied(
        self, open_in: Callable[[str], SharedRecordStore]
    ) -> None:
        one, two = open_in("one"), open_in("two")
        store_document(one, "a.md", ("alpha",))
        first = one.last_seq()
        store_document(one, "b.md", ("beta",))
        two.set_index_state("lexical", first, "tok-1")
        one.set_index_state("lexical", one.last_seq(), "tok-1")
        one.trim_outbox(["lexical"])
        assert two.pending_paths(first, 10) == [(one.last_seq(), "b.md")]
        assert two.index_state("lexical") == (first, "tok-1")
        two.set_index_state("lexical", two.last_seq(), "tok-1")
        two.trim_outbox(["lexical"])
        assert one.pending_paths(0, 10) == []

    def test_a_queued_file_is_taken_by_one_worker_and_finished_by_it_alone(
        self, open_in: Callable[[str], SharedRecordStore]
    ) -> None:
        one, two = open_in("kb"), open_in("kb")
        paths = [f"n{i}.md" for i in range(5)]
        one.queue_files("/src", paths)
        one.queue_files("/src", paths[:2])  # queued again: left as it is
        assert one.files_in_progress("/src") == 5 and one.files_in_progress("/elsewhere") == 0
        mine, theirs = one.take_files("/src", 3), two.take_files("/src", 10)
        assert sorted(j.path for j in mine + theirs) == paths and len(mine) == 3
        assert one.take_files("/src", 10) == [] and one.files_in_progress("/src") == 5  # held, not free
        with one.transaction():
            assert not one.finish_file(type(theirs[0])(theirs[0].root, theirs[0].path, "not-the-token"))
            assert all(one.finish_file(job) for job in mine)
        with two.transaction():
            assert all(two.finish_file(job) for job in theirs)
        assert one.files_in_progress("/src") == 0

    def test_a_file_set_aside_is_taken_by_no_worker_until_released(
        self, open_in: Callable[[str], SharedRecordStore]
    ) -> None:
        one, two = open_in("kb"), open_in("kb")
        one.queue_files("/src", ["a.md", "b.md"])
        jobs = one.take_files("/src", 10)
        assert [(job.path, job.taken_before) for job in jobs] == [("a.md", 0), ("b.md", 0)]
        assert not two.set_aside(IngestJob("/src", "a.md", "not-the-token"), "h", "why")
        assert one.set_aside(jobs[0], "hash-a", "it crashed its worker")
        with one.transaction():
            assert one.finish_file(jobs[1])
        aside = [SetAsideFile("/src", "a.md", "hash-a", "it crashed its worker")]
        assert two.files_set_aside("/src") == aside and two.files_set_aside() == aside
        assert two.files_set_aside("/elsewhere") == []
        two.queue_files("/src", ["a.md"])  # queued again: still set aside, neither taken nor waited for
        assert two.take_files("/src", 10) == [] and two.files_in_progress("/src") == 0
        assert two.release_files("/src", ["b.md"]) == 0 and two.release_files("/elsewhere") == 0
        assert two.release_files("/src") == 1 and two.files_set_aside() == []
        two.queue_files("/src", ["a.md"])
        assert [(job.path, job.taken_before) for job in two.take_files("/src", 10)] == [("a.md", 0)]

    def test_a_returned_file_is_untaken_and_its_taking_not_counted(
        self, open_in: Callable[[str], SharedRecordStore]
    ) -> None:
        one, two = open_in("kb"), open_in("kb")
        one.queue_files("/src", ["a.md", "b.md"])
        jobs = one.take_files("/src", 10)
        assert two.return_files([IngestJob("/src", "a.md", "not-the-token")]) == 0
        assert one.return_files(jobs[:1]) == 1 and one.return_files(jobs[:1]) == 0
        assert [(job.path, job.taken_before) for job in two.take_files("/src", 10)] == [("a.md", 0)]
        assert one.files_in_progress("/src") == 2  # b.md is still the first worker's, a.md the second's
        assert one.return_files(jobs[1:]) == 1
        assert [job.path for job in two.take_files("/src", 10)] == ["b.md"]

    def test_workers_taking_at_once_never_take_a_file_twice(self, open_in: Callable[[str], SharedRecordStore]) -> None:
        handles = [open_in("kb") for _ in range(3)]
        paths = [f"n{i:02d}.md" for i in range(60)]
        handles[0].queue_files("/src", paths)
        taken: list[list[str]] = [[], [], []]

        def work(number: int) -> None:
            while jobs := handles[number].take_files("/src", 2):
                taken[number].extend(job.path for job in jobs)
                with handles[number].transaction():
                    assert all(handles[number].finish_file(job) for job in jobs)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(GUARD_S)
        every = [path for part in taken for path in part]
        assert sorted(every) == paths  # each once
        assert handles[0].files_in_progress("/src") == 0

    def test_a_wait_for_change_ends_when_another_handle_writes(
        self, open_in: Callable[[str], SharedRecordStore]
    ) -> None:
        follower, writer = open_in("one"), open_in("two")
        seen: list[int] = []
        waiting = threading.Thread(target=lambda: seen.append(follower.wait_for_change(0, GUARD_S)))
        waiting.start()
        store_document(writer, "a.md", ("alpha",))
        waiting.join(GUARD_S + 5)
        assert seen == [writer.last_seq()] and seen[0] > 0
        assert follower.wait_for_change(0, GUARD_S) == seen[0]  # already past: at once


__all__ = ["SharedStoreContract"]
