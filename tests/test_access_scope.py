"""A person's grants as path prefixes: narrowing two sets of prefixes allows exactly the paths both allow
(hypothesis), and a search under ``restricted_to`` returns only the person's folders."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kb_core.plugin.stores import Access, current_access, restricted_to
from kb_core.retrieval.access import narrow_prefixes, under

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
