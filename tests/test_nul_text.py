"""NUL (U+0000) in what the ingest reads: one rule for every store (issue 45; review finding 1).

A text file with a NUL byte anywhere is binary (before: only in its first 8 KiB, so SQLite stored a file that
PostgreSQL refused, stopping the ingest); a NUL a parser writes is removed, with a warning, the lines kept.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kb_core import KnowledgeBase, ingest_paths, load_config
from kb_core.ingest.prepared import without_nul
from kb_core.testing import TestIndexesPlugin, load_registry
from kb_core.types import Block, ParsedDocument

texts = st.text(alphabet=st.sampled_from("ab \n\x00é"), max_size=40)
blocks = st.builds(
    Block,
    text=texts,
    start_line=st.just(1),
    end_line=st.just(1),
    heading_path=st.lists(texts, max_size=2).map(tuple),
    header=texts,
)


@given(st.builds(ParsedDocument, title=texts, blocks=st.lists(blocks, max_size=4).map(tuple)))
def test_without_nul_removes_every_nul_and_counts_them(parsed: ParsedDocument) -> None:
    clean, count = without_nul(parsed)
    every = [parsed.title] + [t for b in parsed.blocks for t in (b.text, b.header, *b.heading_path)]
    kept = [clean.title] + [t for b in clean.blocks for t in (b.text, b.header, *b.heading_path)]
    assert count == sum(text.count("\x00") for text in every)
    assert kept == [text.replace("\x00", "") for text in every]  # nothing else changed: lines stay where they were
    assert (clean is parsed) == (count == 0)


def test_a_text_file_with_a_nul_past_8_kib_is_binary_and_the_others_are_stored(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Alpha notes.\n")
    (docs / "b.txt").write_bytes(b"Plain text line.\n" * 600 + b"then a NUL \x00 here.\n")
    plugins = load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin())])
    config = load_config(kb_dir=tmp_path / "kb", overrides={"indexes.enabled": ["test-lexical"]}, environ={})
    with KnowledgeBase(config, plugins) as kb:
        report = ingest_paths(kb, [docs])
    assert report.added == ["a.md"]
    assert [(w.path, w.reason) for w in report.failed] == [("b.txt", "binary file (NUL bytes); skipped")]
