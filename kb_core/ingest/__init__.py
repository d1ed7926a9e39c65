"""Ingest: walk source folders, parse and chunk files, write them to the store of record, bring the indexes up to date."""
