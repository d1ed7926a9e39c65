"""A person's grants as path prefixes: narrowing two sets of prefixes allows exactly the paths both allow
(hypothesis), and a search under ``restricted_to`` returns only the person's folders."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kb_core import KnowledgeBase, ingest_paths, load_config
from kb_core.plugin.stores import Access, current_access, restricted_to
from kb_core.retrieval.access import narrow_prefixes, under
from kb_core.retrieval.search import checked_search
from kb_core.testing import TestIndexesPlugin, load_registry
from kb_core.types import Hit, SearchQuery

PATH = st.text(alphabet="ab/", max_size=6)
PREFIXES = st.none() | st.lists(PATH, max_size=4).map(tuple)


@given(PREFIXES, PREFIXES, PATH)
def test_narrowed_prefixes_allow_what_both_allow(
    first: tuple[str, ...] | None, second: tuple[str, ...] | None, path: str
) -> None:
    both = narrow_prefixes(first, second)

    def allows(prefixes: tuple[str, ...] | None) -> bool:
        return prefixes is None or under(path, prefixes)

    assert allows(both) == (allows(first) and allows(second))


def test_access_reads_its_write_grants_too() -> None:
    access = Access("ann", read=("web/",), write=("notes/",))
    assert access.can_read("notes/a.md") and access.can_read("web/a.md") and not access.can_read("ko/a.md")
    assert access.can_write("notes/a.md") and not access.can_write("web/a.md")
    assert Access("bob").readable == () and Access("eve", read=("", "x/")).readable == ("",)


def test_restricted_to_sets_and_restores_the_context() -> None:
    assert current_access() is None
    with restricted_to(Access("ann", read=("web/",))):
        assert current_access() == Access("ann", read=("web/",))
    assert current_access() is None


def test_a_grant_of_every_path_reaches_the_indexes_as_no_restriction(tmp_path: Path) -> None:
    """checked_search turns a grant of "" (every path) into no prefixes at all, so no index filters for nothing;
    a narrower grant reaches them as its prefixes."""
    notes = tmp_path / "notes"
    (notes / "kept").mkdir(parents=True)
    (notes / "kept" / "a.md").write_text("The harbour lantern glows at dusk.\n", encoding="utf-8")
    (notes / "b.md").write_text("The harbour lantern is red.\n", encoding="utf-8")
    registry = load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin())])
    config = load_config(kb_dir=tmp_path / "kb", overrides={"indexes.enabled": ["test-lexical"]}, environ={})
    with KnowledgeBase(config, registry) as kb:
        assert ingest_paths(kb, [notes]).failed == []
        index = kb.retrievers("lexical")[0]
        seen: list[tuple[str, ...] | None] = []
        original = index.search

        def spy(query: SearchQuery) -> list[Hit]:
            seen.append(query.path_prefixes)
            return original(query)

        index.search = spy  # type: ignore[method-assign]
        query = SearchQuery("harbour lantern", k=5, mode="lexical")
        with restricted_to(Access("ann", read=("", "kept/"))):
            everything = checked_search(kb, query)
        with restricted_to(Access("bob", read=("kept/",))):
            kept = checked_search(kb, query)
    assert seen == [None, ("kept/",)]
    assert {h.doc_path for h in everything.hits} == {"kept/a.md", "b.md"}
    assert {h.doc_path for h in kept.hits} == {"kept/a.md"}
