"""Migration 5: an owner is a person who exists. A schema that migration 4 left, holding owners of people, answers
and threads deleted before, keeps only the owners that still name both; afterwards removing a person removes what
they owned (the foreign key), so a name given again inherits nothing."""

from __future__ import annotations

from pathlib import Path

from kb_postgres import open_store
from kb_postgres.schema import MIGRATIONS

from kb_core import Config
from kb_core.plugin.stores import StoreContext


def test_migration_5_keeps_only_owners_of_what_still_exists(
    postgres_options: dict[str, object], tmp_path: Path
) -> None:
    context = StoreContext(Config(), postgres_options, directory=tmp_path / "kb", create=True)
    store = open_store(context)
    for statement in (  # the schema as migration 4 left it, with what a kb-postgres before 5 could leave behind
        "ALTER TABLE access_owners DROP CONSTRAINT access_owners_person",
        f"DELETE FROM kb_migrations WHERE version = {len(MIGRATIONS)}",
        "INSERT INTO access_people VALUES ('ann', 'h1', 't')",
        "INSERT INTO answers (answer_id, created_at, question, answer, grounded, prompt_template_version)"
        " VALUES ('ans_kept', 't', 'q', 'a', true, 'v1'), ('ans_orphan', 't', 'q', 'a', true, 'v1')",
        "INSERT INTO threads (thread_id, created_at, updated_at) VALUES ('thr_kept', 't', 't')",
        "INSERT INTO access_owners VALUES ('answer', 'ans_kept', 'ann'), ('thread', 'thr_kept', 'ann'),"
        " ('answer', 'ans_orphan', 'removed'), ('answer', 'ans_purged', 'ann'), ('thread', 'thr_gone', 'ann')",
    ):
        store._exec(statement)
    store.close()
    store = open_store(context)
    try:
        assert store.schema_version == len(MIGRATIONS)
        rows = store._exec("SELECT kind, item_id, person FROM access_owners ORDER BY 1, 2").fetchall()
        assert rows == [("answer", "ans_kept", "ann"), ("thread", "thr_kept", "ann")]
        assert store.remove_person("ann") and store.owner_of("answer", "ans_kept") is None  # the foreign key holds
    finally:
        store.close()
