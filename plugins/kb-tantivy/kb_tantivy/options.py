"""The options of ``[backends.tantivy]``, declared to kb when the plugin registers: checked at start."""

from __future__ import annotations

from kb_core.plugin.options import Option

OPTIONS: dict[str, Option] = {
    "heading_boost": Option.number(0, 100, 0.3, "how much a query term found in a chunk's heading path adds"),
    "title_boost": Option.number(0, 100, 0.3, "how much a query term found in the document's title adds"),
    "lock_timeout_s": Option.number(
        0, 86_400, 30.0, "seconds a writer waits for another process's ingest to finish", note="0 = do not wait"
    ),
}
