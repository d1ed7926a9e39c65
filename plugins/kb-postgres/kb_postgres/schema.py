"""The PostgreSQL store's schema, as migrations counted in ``kb_migrations`` (one row per migration applied).

A migration is only ever appended. The first builds what the SQLite store's four migrations build
(``kb_core/storage/schema.py``), with three differences:

- every key and every text kb orders by is ``COLLATE "C"``: code point order (UTF-8 byte order) as in
  SQLite, whatever the database's own collation (``en_US.UTF-8`` would sort ``B.md`` after ``a.md``);
- insertion order, which SQLite reads from ``rowid``, is an identity column ``stored`` (``row_id`` in
  ``answer_citations``, which a re-check updates by it);
- the outbox's sequence numbers come from the one row of ``outbox_head``, counted up in the writing
  transaction: a rolled-back write takes no number, and a trimmed one is never given again.

The second replaces ``index_state`` (one position per index) with ``feed_positions``: one per knowledge base
folder (a consumer) and index, since every folder keeps its own indexes; the folders' indexes built before
are rebuilt from the store on their first sync. ``ingest_jobs`` is the queue ``kb ingest`` workers share.

The third keeps people, groups, grants and owners (``access_*``), as the SQLite store's fifth. The fourth sets
aside a file of the queue that every worker taking it stopped in (``failed_hash``, ``failed_reason``). The fifth
ties an owner to a person who exists (removed with them).
"""

MIGRATIONS: list[str] = [
    # 1: documents, chunks, the change feed, the answer ledger, threads
    """
    CREATE TABLE documents (
        path text COLLATE "C" PRIMARY KEY,
        content_hash text NOT NULL,
        size bigint NOT NULL,
        mtime_ns bigint NOT NULL DEFAULT 0,
        title text NOT NULL DEFAULT '',
        parser text NOT NULL,
        source_root text COLLATE "C" NOT NULL,
        metadata_json text NOT NULL DEFAULT '{}',
        chunk_count integer NOT NULL DEFAULT 0,
        ingested_at text NOT NULL
    );
    CREATE INDEX documents_source ON documents (source_root);
    CREATE TABLE chunks (
        chunk_id text COLLATE "C" PRIMARY KEY,
        doc_path text COLLATE "C" NOT NULL REFERENCES documents (path) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        text text NOT NULL,
        content_hash text NOT NULL,
        start_line integer NOT NULL,
        end_line integer NOT NULL,
        heading_path_json text NOT NULL DEFAULT '[]',
        token_count integer NOT NULL DEFAULT 0
    );
    CREATE INDEX chunks_doc ON chunks (doc_path, ordinal, chunk_id);
    CREATE TABLE outbox_head (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        seq bigint NOT NULL
    );
    INSERT INTO outbox_head (seq) VALUES (0);
    CREATE TABLE index_outbox (
        seq bigint PRIMARY KEY,
        doc_path text COLLATE "C" NOT NULL
    );
    CREATE TABLE index_state (
        name text COLLATE "C" PRIMARY KEY,
        applied_seq bigint NOT NULL DEFAULT 0,
        fingerprint text NOT NULL DEFAULT '',
        updated_at text NOT NULL
    );
    CREATE TABLE answers (
        answer_id text COLLATE "C" PRIMARY KEY,
        stored bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        created_at text COLLATE "C" NOT NULL,
        question text NOT NULL,
        answer text NOT NULL,
        grounded boolean NOT NULL,
        refusal_reason text,
        citations_json text NOT NULL DEFAULT '[]',
        model_json text NOT NULL DEFAULT '{}',
        embedding_json text,
        prompt_template_version text NOT NULL,
        retrieval_json text NOT NULL DEFAULT '{}',
        usage_json text NOT NULL DEFAULT '{}',
        packed_chunks_json text
    );
    CREATE INDEX answers_listed ON answers (created_at DESC, stored DESC);
    CREATE TABLE eval_runs (
        run_id text COLLATE "C" PRIMARY KEY,
        created_at text COLLATE "C" NOT NULL,
        kind text NOT NULL,
        config_json text NOT NULL DEFAULT '{}',
        metrics_json text NOT NULL DEFAULT '{}',
        report_path text
    );
    CREATE TABLE answer_citations (
        row_id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        answer_id text COLLATE "C" NOT NULL REFERENCES answers (answer_id) ON DELETE CASCADE,
        marker integer NOT NULL,
        chunk_id text COLLATE "C" NOT NULL,
        doc_path text COLLATE "C" NOT NULL,
        start_line integer NOT NULL,
        end_line integer NOT NULL,
        cited_text text,
        fingerprint text,
        doc_hash text,
        state text NOT NULL DEFAULT 'unchecked',
        reason text NOT NULL DEFAULT '',
        now_text text,
        checked_at text,
        PRIMARY KEY (answer_id, marker)
    );
    CREATE INDEX answer_citations_doc ON answer_citations (doc_path);
    CREATE TABLE threads (
        thread_id text COLLATE "C" PRIMARY KEY,
        stored bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        created_at text COLLATE "C" NOT NULL,
        updated_at text COLLATE "C" NOT NULL
    );
    CREATE TABLE turns (
        thread_id text COLLATE "C" NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
        position integer NOT NULL,
        stored bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        answer_id text COLLATE "C" NOT NULL REFERENCES answers (answer_id) ON DELETE CASCADE,
        asked text NOT NULL,
        standalone text NOT NULL,
        method text NOT NULL,
        rewrite_ms double precision NOT NULL DEFAULT 0,
        rewrite_prompt_tokens integer NOT NULL DEFAULT 0,
        answer_json text NOT NULL,
        created_at text COLLATE "C" NOT NULL,
        PRIMARY KEY (thread_id, position)
    );
    CREATE INDEX turns_answer ON turns (answer_id)
    """,
    # 2: each knowledge base folder follows the feed on its own (its indexes' positions, seen lately or not),
    # the feed remembers how far it was trimmed, and ingest work is shared out through a queue
    """
    DROP TABLE index_state;
    CREATE TABLE feed_positions (
        consumer_id text COLLATE "C" NOT NULL,
        name text COLLATE "C" NOT NULL,
        folder text NOT NULL,
        host text NOT NULL,
        applied_seq bigint NOT NULL DEFAULT 0,
        fingerprint text NOT NULL DEFAULT '',
        updated_at timestamptz NOT NULL DEFAULT now(),
        seen_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (consumer_id, name)
    );
    ALTER TABLE outbox_head ADD COLUMN trimmed bigint NOT NULL DEFAULT 0;
    CREATE TABLE ingest_jobs (
        root text COLLATE "C" NOT NULL,
        path text COLLATE "C" NOT NULL,
        token text,
        lease_until timestamptz,
        tries integer NOT NULL DEFAULT 0,
        queued_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (root, path)
    )
    """,
    # 3: people, groups, grants and who owns an answer or a thread (kb_postgres.access), as SQLite's migration 5
    """
    CREATE TABLE access_people (
        name text COLLATE "C" PRIMARY KEY,
        token_hash text NOT NULL UNIQUE,
        created_at text COLLATE "C" NOT NULL
    );
    CREATE TABLE access_groups (
        name text COLLATE "C" PRIMARY KEY,
        created_at text COLLATE "C" NOT NULL
    );
    CREATE TABLE access_members (
        group_name text COLLATE "C" NOT NULL REFERENCES access_groups (name) ON DELETE CASCADE,
        person text COLLATE "C" NOT NULL REFERENCES access_people (name) ON DELETE CASCADE,
        PRIMARY KEY (group_name, person)
    );
    CREATE INDEX access_members_person ON access_members (person);
    CREATE TABLE access_grants (
        group_name text COLLATE "C" NOT NULL REFERENCES access_groups (name) ON DELETE CASCADE,
        prefix text COLLATE "C" NOT NULL,
        can_write boolean NOT NULL DEFAULT false,
        PRIMARY KEY (group_name, prefix)
    );
    CREATE TABLE access_owners (
        kind text COLLATE "C" NOT NULL,
        item_id text COLLATE "C" NOT NULL,
        person text COLLATE "C" NOT NULL,
        PRIMARY KEY (kind, item_id)
    );
    CREATE INDEX access_owned ON access_owners (kind, person)
    """,
    # 4: a file every taker stopped in (a parser that kills its process) is set aside: the hash of its bytes then,
    # and why; kb_postgres.queue takes no such file
    """
    ALTER TABLE ingest_jobs ADD COLUMN IF NOT EXISTS failed_hash text;
    ALTER TABLE ingest_jobs ADD COLUMN IF NOT EXISTS failed_reason text
    """,
    # 5: an owner is a person who exists (as SQLite's migration 6): removing them removes what they owned with them
    # (a name given again inherits nothing); owners of answers, threads and people deleted before go now
    """
    DELETE FROM access_owners AS o WHERE NOT EXISTS (SELECT 1 FROM access_people WHERE name = o.person)
        OR (o.kind = 'answer' AND NOT EXISTS (SELECT 1 FROM answers WHERE answer_id = o.item_id))
        OR (o.kind = 'thread' AND NOT EXISTS (SELECT 1 FROM threads WHERE thread_id = o.item_id));
    ALTER TABLE access_owners ADD CONSTRAINT access_owners_person FOREIGN KEY (person)
        REFERENCES access_people (name) ON DELETE CASCADE;
    DROP INDEX access_owned;
    CREATE INDEX access_owned ON access_owners (person, kind)
    """,
]

#: The table counting the migrations applied (made with the schema, before the first migration).
VERSION_TABLE = """
    CREATE TABLE IF NOT EXISTS kb_migrations (
        version integer PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
    )
"""
