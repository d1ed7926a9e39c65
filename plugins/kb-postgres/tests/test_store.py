"""What the PostgreSQL store does beyond the contract kit: the feed's commit order under its lock, a busy writer,
two first opens at once, a newer schema, a dropped connection, and each failure as one line naming the server."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from kb_postgres import open_store
from kb_postgres.store import PostgresStore

from kb_core import Config, Document, KbError, WriterBusyError
from kb_core.plugin.stores import StoreContext
from kb_core.testing import store_document

OpenStore = Callable[..., PostgresStore]


@pytest.fixture
def open_pg(postgres_options: dict[str, object], tmp_path: Path) -> Iterator[OpenStore]:
    """``open_pg(**options)``: a handle on the test's schema (options override ``[backends.postgres]``)."""
    opened: list[PostgresStore] = []

    def open_one(create: bool = True, **options: object) -> PostgresStore:
        context = StoreContext(Config(), postgres_options | options, directory=tmp_path / "kb", create=create)
        opened.append(open_store(context))
        return opened[-1]

    yield open_one
    for handle in opened:
        handle.close()


def backend_pid(store: PostgresStore) -> int:
    return int(store._exec("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]


def wait_until_blocked(watcher: PostgresStore, pid: int) -> None:
    """Return once the session ``pid`` waits for a lock (polls the server; no clock involved)."""
    query = "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s"
    while (row := watcher._exec(query, (pid,)).fetchone()) is None or row[0] != "Lock":
        threading.Event().wait(0.01)


def test_a_feed_writer_waits_for_the_one_before_so_seqs_become_visible_in_order(open_pg: OpenStore) -> None:
    first, second, reader = open_pg(), open_pg(), open_pg()
    blocked_pid = backend_pid(second)
    done: list[BaseException | None] = []

    def write_second() -> None:
        try:
            store_document(second, "b.md", ("two",))
            done.append(None)
        except BaseException as exc:  # reported below
            done.append(exc)

    with first.transaction():
        store_document_in(first, "a.md")
        worker = threading.Thread(target=write_second)
        worker.start()
        wait_until_blocked(reader, blocked_pid)  # the second writer waits for the feed lock
        assert reader.pending_paths(0, 10) == [] and reader.last_seq() == 0  # nothing of either is visible
    worker.join()
    assert done == [None]
    assert reader.pending_paths(0, 10) == [(1, "a.md"), (2, "b.md")] and reader.last_seq() == 2


def store_document_in(store: PostgresStore, path: str) -> None:
    store.replace_document(Document(path, "h", 1, path, "text", "/src"), [])


def test_a_writer_that_waits_longer_than_lock_timeout_is_told_the_store_is_busy(open_pg: OpenStore) -> None:
    holder, impatient = open_pg(), open_pg(lock_timeout_s=0.05)
    with holder.transaction():
        store_document_in(holder, "a.md")
        busy = pytest.raises(WriterBusyError, match=r"is busy: another writer .*\(wait for the other kb process")
        with busy, impatient.transaction():
            store_document_in(impatient, "b.md")
    assert impatient.pending_paths(0, 10) == [(1, "a.md")]  # nothing of the refused write, and the handle works


def test_two_first_opens_at_once_apply_each_migration_once(open_pg: OpenStore) -> None:
    opened: list[PostgresStore | BaseException] = []

    def open_one() -> None:
        try:
            opened.append(open_pg())
        except BaseException as exc:  # reported below
            opened.append(exc)

    workers = [threading.Thread(target=open_one) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stores = [s for s in opened if isinstance(s, PostgresStore)]
    assert len(stores) == 3, opened
    versions = stores[0]._exec("SELECT version FROM kb_migrations ORDER BY version").fetchall()
    assert [v[0] for v in versions] == list(range(1, stores[0].schema_version + 1))


def test_opening_makes_the_knowledge_base_folder_private_and_without_create_makes_nothing(
    open_pg: OpenStore, tmp_path: Path
) -> None:
    with pytest.raises(KbError, match=r"^no knowledge base in PostgreSQL at .*\(run 'kb init'"):
        open_pg(create=False)
    assert not (tmp_path / "kb").exists()
    open_pg()
    assert (tmp_path / "kb").stat().st_mode & 0o777 == 0o700 and list((tmp_path / "kb").iterdir()) == []


def test_a_document_whose_text_holds_a_nul_is_refused_in_one_line_naming_it(open_pg: OpenStore) -> None:
    store = open_pg()
    with pytest.raises(KbError, match=r"^cannot store 'a\.md' in PostgreSQL: its text holds a NUL character"):
        store_document(store, "a.md", ("fine", "x\x00y"))
    assert store.count_documents() == 0 and store.last_seq() == 0


def test_a_schema_written_by_a_newer_kb_postgres_is_refused(open_pg: OpenStore) -> None:
    store = open_pg()
    store._exec("INSERT INTO kb_migrations (version) VALUES (%s)", (store.schema_version + 5,))
    with pytest.raises(KbError, match=r"written by a newer kb-postgres \(schema \d+\) \(upgrade kb-postgres\)"):
        open_pg()


def test_the_texts_kb_orders_by_sort_by_code_point_whatever_the_database_collation(open_pg: OpenStore) -> None:
    store = open_pg()
    rows = store._exec(
        "SELECT table_name || '.' || column_name, collation_name FROM information_schema.columns"
        " WHERE table_schema = %s AND column_name IN ('path', 'doc_path', 'chunk_id', 'source_root', 'answer_id',"
        " 'thread_id', 'created_at', 'name')",
        (store.settings.schema,),
    ).fetchall()
    assert len(rows) >= 12 and {column: collation for column, collation in rows if collation != "C"} == {}


def test_a_dropped_connection_is_one_error_and_the_next_call_connects_again(open_pg: OpenStore) -> None:
    store, admin = open_pg(), open_pg()
    store_document(store, "a.md", ("one",))
    admin._exec("SELECT pg_terminate_backend(%s)", (backend_pid(store),))
    with pytest.raises(KbError, match=r"^lost the connection to PostgreSQL at postgresql://") as lost:
        store.count_documents()
    assert "\n" not in str(lost.value)
    assert store.count_documents() == 1  # a new connection
    victim = backend_pid(store)

    def fail_midway() -> None:
        with store.transaction():
            store_document_in(store, "b.md")
            admin._exec("SELECT pg_terminate_backend(%s)", (victim,))
            store_document_in(store, "c.md")

    with pytest.raises(KbError, match="lost the connection"):
        fail_midway()
    assert store.document_hashes() == {"a.md": store.document_hashes()["a.md"]}  # nothing of the transaction


def test_a_server_that_is_not_there_is_one_line_naming_it_without_its_password(
    open_pg: OpenStore, closed_port: int
) -> None:
    url = f"postgresql://ann:hunter2secret@127.0.0.1:{closed_port}/kb"
    with pytest.raises(KbError) as refused:
        open_pg(url=url)
    text = str(refused.value)
    assert text.startswith(f"cannot reach PostgreSQL at postgresql://ann@127.0.0.1:{closed_port}/kb (schema kb_test")
    assert "hunter2secret" not in text and "\n" not in text and "start the server" in text


def test_a_database_that_is_not_there_is_named_as_such(open_pg: OpenStore, postgres_url: str) -> None:
    info = psycopg.conninfo.conninfo_to_dict(postgres_url) | {"dbname": "no_such_database"}
    with pytest.raises(KbError, match=r"has no such database: .*\(create it"):
        open_pg(url=psycopg.conninfo.make_conninfo("", **info))
