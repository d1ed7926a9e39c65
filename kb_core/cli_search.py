"""Commands for searching: `kb search` and `kb eval retrieval`."""
