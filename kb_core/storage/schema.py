"""The store of record's schema, as the migrations that build it (``PRAGMA user_version`` counts them).

A migration is only ever appended: a knowledge base written by an older kb is brought up to date
on its first writable open, and nothing stored is lost.
"""

MIGRATIONS: list[str] = [
    # 1: documents, chunks, the index outbox and index state
    """
    CREATE TABLE documents (
        path TEXT PRIMARY KEY,
        content_hash TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL DEFAULT 0,
        title TEXT NOT NULL DEFAULT '',
        parser TEXT NOT NULL,
        source_root TEXT NOT NULL,
        metadata_json TEXT NOT NULL DEFAULT '{}',
        chunk_count INTEGER NOT NULL DEFAULT 0,
        ingested_at TEXT NOT NULL
    );
    CREATE INDEX documents_source ON documents(source_root);
    CREATE TABLE chunks (
        chunk_id TEXT PRIMARY KEY,
        doc_path TEXT NOT NULL REFERENCES documents(path) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        text TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        heading_path_json TEXT NOT NULL DEFAULT '[]',
        token_count INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX chunks_doc ON chunks(doc_path, ordinal);
    CREATE TABLE index_outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        doc_path TEXT NOT NULL
    );
    CREATE TABLE index_state (
        name TEXT PRIMARY KEY,
        applied_seq INTEGER NOT NULL DEFAULT 0,
        fingerprint TEXT NOT NULL DEFAULT '',
        updated_at TEXT NOT NULL
    );
    """,
    # 2: answers (every answer, refusals included) and evaluation runs
    """
    CREATE TABLE answers (
        answer_id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        question TEXT NOT NULL,
        answer TEXT NOT NULL,
        grounded INTEGER NOT NULL,
        refusal_reason TEXT,
        citations_json TEXT NOT NULL DEFAULT '[]',
        model_json TEXT NOT NULL DEFAULT '{}',
        embedding_json TEXT,
        prompt_template_version TEXT NOT NULL,
        retrieval_json TEXT NOT NULL DEFAULT '{}',
        usage_json TEXT NOT NULL DEFAULT '{}',
        packed_chunks_json TEXT
    );
    CREATE TABLE eval_runs (
        run_id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        kind TEXT NOT NULL,
        config_json TEXT NOT NULL DEFAULT '{}',
        metrics_json TEXT NOT NULL DEFAULT '{}',
        report_path TEXT
    );
    """,
    # 3: what each stored answer's citations rest on, re-checked when their documents change. Answers
    # stored before get their rows "unchecked", without the cited text: the first check reads it
    # from the chunk the citation names, or marks the citation "unverifiable" when that chunk is gone.
    """
    CREATE TABLE answer_citations (
        answer_id TEXT NOT NULL REFERENCES answers(answer_id) ON DELETE CASCADE,
        marker INTEGER NOT NULL,
        chunk_id TEXT NOT NULL,
        doc_path TEXT NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        cited_text TEXT,
        fingerprint TEXT,
        doc_hash TEXT,
        state TEXT NOT NULL DEFAULT 'unchecked',
        reason TEXT NOT NULL DEFAULT '',
        now_text TEXT,
        checked_at TEXT,
        PRIMARY KEY (answer_id, marker)
    );
    CREATE INDEX answer_citations_doc ON answer_citations(doc_path);
    INSERT OR IGNORE INTO answer_citations (answer_id, marker, chunk_id, doc_path, start_line, end_line)
        SELECT a.answer_id, json_extract(c.value, '$.marker'), json_extract(c.value, '$.chunk_id'),
               json_extract(c.value, '$.citation.path'), json_extract(c.value, '$.citation.start_line'),
               json_extract(c.value, '$.citation.end_line')
        FROM answers AS a, json_each(a.citations_json) AS c
        WHERE a.grounded = 1 AND json_extract(c.value, '$.marker') IS NOT NULL
    """,
    # 4: threads of follow-up questions; a turn keeps its question as asked, the standalone question
    # searched with, how that was made, and the whole answer (answer.v1). Deleting a stored answer
    # deletes its turn.
    """
    CREATE TABLE threads (
        thread_id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE turns (
        thread_id TEXT NOT NULL REFERENCES threads(thread_id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        answer_id TEXT NOT NULL REFERENCES answers(answer_id) ON DELETE CASCADE,
        asked TEXT NOT NULL,
        standalone TEXT NOT NULL,
        method TEXT NOT NULL,
        rewrite_ms REAL NOT NULL DEFAULT 0,
        rewrite_prompt_tokens INTEGER NOT NULL DEFAULT 0,
        answer_json TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (thread_id, position)
    );
    CREATE INDEX turns_answer ON turns(answer_id);
    """,
    # 5: people, groups, grants and who owns an answer or a thread (kb_core.storage.access)
    """
    CREATE TABLE access_people (
        name TEXT PRIMARY KEY,
        token_hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL
    );
    CREATE TABLE access_groups (
        name TEXT PRIMARY KEY,
        created_at TEXT NOT NULL
    );
    CREATE TABLE access_members (
        group_name TEXT NOT NULL REFERENCES access_groups(name) ON DELETE CASCADE,
        person TEXT NOT NULL REFERENCES access_people(name) ON DELETE CASCADE,
        PRIMARY KEY (group_name, person)
    );
    CREATE INDEX access_members_person ON access_members(person);
    CREATE TABLE access_grants (
        group_name TEXT NOT NULL REFERENCES access_groups(name) ON DELETE CASCADE,
        prefix TEXT NOT NULL,
        can_write INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (group_name, prefix)
    );
    CREATE TABLE access_owners (
        kind TEXT NOT NULL,
        item_id TEXT NOT NULL,
        person TEXT NOT NULL,
        PRIMARY KEY (kind, item_id)
    );
    CREATE INDEX access_owned ON access_owners(kind, person)
    """,
    # 6: an owner is a person who exists: removing them removes what they owned with them (a name given again
    # inherits nothing), and owners of answers and threads deleted before, or of people removed before, go now
    """
    CREATE TABLE access_owners_new (
        kind TEXT NOT NULL,
        item_id TEXT NOT NULL,
        person TEXT NOT NULL REFERENCES access_people(name) ON DELETE CASCADE,
        PRIMARY KEY (kind, item_id)
    );
    INSERT INTO access_owners_new (kind, item_id, person) SELECT kind, item_id, person FROM access_owners
        WHERE person IN (SELECT name FROM access_people)
        AND ((kind = 'answer' AND item_id IN (SELECT answer_id FROM answers))
            OR (kind = 'thread' AND item_id IN (SELECT thread_id FROM threads)));
    DROP TABLE access_owners;
    ALTER TABLE access_owners_new RENAME TO access_owners;
    CREATE INDEX access_owned ON access_owners(person, kind)
    """,
]
