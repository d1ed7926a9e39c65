"""Ingest: walk source folders, parse and chunk files, store them, bring the indexes up to date."""
