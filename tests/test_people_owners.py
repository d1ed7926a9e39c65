"""A person's listings and re-check, as :mod:`kb_core.service.people` makes them: each reads the person's own
rows in the store's query (never everyone's, filtered after), and an ingest's re-check of a person's answers is
one query of the citations of the changed documents."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

import kb_core
from kb_core.app import KnowledgeBase
from kb_core.extend.access_store import AccessStore
from kb_core.retrieval.access import Access, restricted_to
from kb_core.service import people
from kb_core.testing.store_ledger_contract import citation, ledger_answer, turn

ANN = Access("ann", read=("",))


def _calls(monkeypatch: pytest.MonkeyPatch, store: Any, name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Record every call of ``store.name`` (still made)."""
    seen: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    real = getattr(store, name)

    def record(*args: Any, **kwargs: Any) -> Any:
        seen.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(store, name, record)
    return seen


def _owned(kb: KnowledgeBase, answer_id: str, person: str | None, at: str, *cites: str) -> None:
    store = kb.store
    assert isinstance(store, AccessStore)
    with kb.store.transaction():
        kb.store.insert_answer(ledger_answer(answer_id, at))
        kb.store.insert_citations([citation(answer_id, n, path) for n, path in enumerate(cites, start=1)])
        kb.store.create_thread(f"thr_{answer_id}", at)
        kb.store.append_turn(f"thr_{answer_id}", turn(answer_id, "asked", at))
        if person is not None:
            store.set_owner("answer", answer_id, person)
            store.set_owner("thread", f"thr_{answer_id}", person)


@pytest.fixture
def kb(make_kb: Callable[..., KnowledgeBase]) -> KnowledgeBase:
    opened = make_kb()
    assert isinstance(opened.store, AccessStore)
    opened.store.add_person("ann", "h1", "t")
    opened.store.add_person("bob", "h2", "t")
    return opened


def test_a_persons_listings_are_the_stores_query_of_their_own(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(6):
        _owned(kb, f"ans_{n}", ("ann", "bob", None)[n % 3], f"2026-01-0{n + 1}T00:00:00Z")
    entries = _calls(monkeypatch, kb.store, "answer_entries")
    summaries = _calls(monkeypatch, kb.store, "thread_summaries")
    with restricted_to(ANN):
        answers, total = people.own_answers(kb, 1)
        threads = people.own_threads(kb, 5)
    assert [a.answer_id for a in answers] == ["ans_3"] and total == 2
    assert [t.thread_id for t in threads] == ["thr_ans_3", "thr_ans_0"]
    assert entries == [((1,), {"stale_only": False, "owner": "ann"})]  # ann's newest one, not everyone's rows
    assert summaries == [((5,), {"owner": "ann"})]
    assert len(people.own_answers(kb, 10)[0]) == 6 and len(people.own_threads(kb, 10)) == 6  # outside: everyone's


def test_an_ingests_recheck_of_a_persons_answers_is_one_query(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\ncited words\n\nmore words\n", encoding="utf-8")
    kb_core.ingest_paths(kb, [folder])
    _owned(kb, "ans_1", "ann", "2026-01-01", "a.md")
    _owned(kb, "ans_2", "ann", "2026-01-02", "a.md")
    _owned(kb, "ans_3", "bob", "2026-01-03", "a.md")
    _owned(kb, "ans_4", "ann", "2026-01-04", "elsewhere.md")  # cites nothing that changed
    (folder / "a.md").write_text("# A\n\nother words entirely\n", encoding="utf-8")
    report = kb_core.ingest_paths(kb, [folder])
    assert report.answers is not None and report.answers.answers_checked == 3
    citing = _calls(monkeypatch, kb.store, "citations_citing")
    one_by_one = [_calls(monkeypatch, kb.store, name) for name in ("answer_entry", "citations_of")]
    with restricted_to(ANN):
        shown = people.own_recheck(kb, report).answers
    assert citing == [((["a.md"],), {})] and one_by_one == [[], []]  # never a query per answer
    assert shown is not None and shown.answers_checked == 2
    counts = attrs.asdict(shown, filter=lambda a, _v: a.name in ("valid", "reanchored", "stale", "unverifiable"))
    assert sum(counts.values()) == 2
    assert shown.stale == 2 and {a.answer_id for a in shown.stale_answers} == {"ans_1", "ans_2"}  # (not bob's)
