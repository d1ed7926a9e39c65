"""The options of ``[backends.sqlitevec]``, declared to kb when the plugin registers (no numpy imported)."""

from __future__ import annotations

from kb_core.plugin.options import Option

#: The options of ``[backends.sqlitevec]`` (the README's "Large indexes"), declared to kb: checked at start.
OPTIONS: dict[str, Option] = {
    "exact_threshold": Option.whole(
        0, 2**40, 20_000, "below this many chunks, search scans every vector exactly (0: a graph always)"
    ),
    "expansion": Option.whole(1, 65_536, 512, "HNSW search breadth (ef): more = better recall, slower"),
    "oversample": Option.whole(
        1, 1000, 4, "filtered searches ask the graph for k * oversample * (chunks / matching chunks)"
    ),
    "connectivity": Option.whole(
        2, 256, 32, "HNSW links per node (M): more = better recall, bigger; applies when the graph is rebuilt"
    ),
}
