"""The store of record: documents, chunks, the index outbox and stored answers, in one SQLite file."""
