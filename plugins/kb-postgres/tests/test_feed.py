"""The PostgreSQL store's feed positions per folder and their leases, and the ingest queue's leases."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from kb_postgres.feed import CONSUMER_FILE, consumer_of
from kb_postgres.settings import PostgresSettings
from kb_postgres.store import PostgresStore

from kb_core.testing import store_document


@pytest.fixture
def open_in(postgres_options: dict[str, object], tmp_path: Path) -> Iterator[Callable[[str], PostgresStore]]:
    opened: list[PostgresStore] = []

    def open_one(folder: str) -> PostgresStore:
        settings = PostgresSettings.resolve(postgres_options, {})
        opened.append(PostgresStore(settings, tmp_path / folder))
        return opened[-1]

    yield open_one
    for store in opened:
        store.close()


def sql(options: dict[str, object], query: str) -> None:
    with psycopg.connect(str(options["url"]), autocommit=True) as conn:
        conn.execute(f"SET search_path TO {options['schema']}")
        conn.execute(query)


def test_a_folder_away_past_its_lease_is_not_waited_for_and_rebuilds(
    open_in: Callable[[str], PostgresStore], postgres_options: dict[str, object]
) -> None:
    here, away = open_in("here"), open_in("away")
    store_document(here, "a.md", ("alpha",))
    away.set_index_state("lexical", away.last_seq(), "tok-1")
    store_document(here, "b.md", ("beta",))
    here.set_index_state("lexical", here.last_seq(), "tok-1")
    here.trim_outbox(["lexical"])
    assert [path for _, path in here.pending_paths(0, 10)] == ["b.md"]  # kept for the folder away
    sql(postgres_options, "UPDATE feed_positions SET seen_at = now() - interval '200 hours' WHERE folder LIKE '%away'")
    here.trim_outbox(["lexical"])
    assert here.pending_paths(0, 10) == []  # its lease ran out: not waited for
    back = open_in("away")
    assert back.index_state("lexical") == (0, "")  # trimmed past it: rebuilt from the store, not followed
    assert here.index_state("lexical") == (here.last_seq(), "tok-1")


def test_a_folder_keeps_its_consumer_id_and_a_copy_elsewhere_gets_its_own(tmp_path: Path) -> None:
    first = consumer_of(tmp_path / "kb")
    assert consumer_of(tmp_path / "kb") == first and (tmp_path / "kb" / CONSUMER_FILE).is_file()
    shutil.copytree(tmp_path / "kb", tmp_path / "copy")
    copied = consumer_of(tmp_path / "copy")
    assert copied.consumer_id != first.consumer_id and consumer_of(tmp_path / "copy") == copied
    assert consumer_of(tmp_path / "kb") == first


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_folder_that_cannot_be_written_gets_an_id_derived_from_its_place(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb").chmod(0o500)
    try:
        assert consumer_of(tmp_path / "kb") == consumer_of(tmp_path / "kb")
    finally:
        (tmp_path / "kb").chmod(0o700)


def test_a_job_whose_lease_ran_out_is_taken_again_and_its_first_taker_writes_nothing(
    open_in: Callable[[str], PostgresStore], postgres_options: dict[str, object]
) -> None:
    stalled, other = open_in("kb"), open_in("kb")
    stalled.queue_files("/src", ["a.md", "b.md"])
    held = stalled.take_files("/src", 1)
    assert [job.path for job in held] == ["a.md"]
    assert [job.path for job in other.take_files("/src", 5)] == ["b.md"]  # a.md is held
    sql(postgres_options, "UPDATE ingest_jobs SET lease_until = now() - interval '1 second' WHERE path = 'a.md'")
    (again,) = other.take_files("/src", 5)
    assert again.path == "a.md" and again.token != held[0].token
    with stalled.transaction():
        assert not stalled.finish_file(held[0])  # no longer its own: it must write nothing of it
    with other.transaction():
        assert other.finish_file(again)
