"""The feed follower of a server neither dies nor spins (issue 45; review finding 6).

Before: only a KbError was caught, so any other exception in a round ended the thread silently and the server
stopped following the feed; and indexes that stayed behind made ``wait_for_change`` return at once, round after
round. Now every failure is reported to ``on_error`` and the thread goes on, backing off
(``kb_core.bounds.FOLLOW_BACKOFF_S``, doubled each time) after a failure or a round that applied nothing while behind.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kb_core import KbError, KnowledgeBase, load_config
from kb_core.plugin.stores import FeedFollower
from kb_core.testing import TestIndexesPlugin, load_registry, store_document

GUARD_S = 60.0  # (a guard against a hang, not a timing target)


class Waits(threading.Event):
    """The follower's stop event, recording each back-off it waits (returning at once) and set after ``most``."""

    def __init__(self, most: int) -> None:
        super().__init__()
        self.most = most
        self.timeouts: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is not None and not self.is_set():
            self.timeouts.append(timeout)
            if len(self.timeouts) >= self.most:
                self.set()
        return self.is_set()


@pytest.fixture
def make_kb(postgres_options: dict[str, object], tmp_path: Path) -> Iterator[Callable[..., KnowledgeBase]]:
    plugins = load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin())])
    overrides = {
        "store.backend": "postgres",
        "backends.postgres": dict(postgres_options),
        "indexes.enabled": ["test-lexical"],
    }
    config = load_config(kb_dir=tmp_path / "served", overrides=overrides, environ={})
    opened: list[KnowledgeBase] = []

    def make(patch: Callable[[Any], None] = lambda store: None) -> KnowledgeBase:
        opened.append(KnowledgeBase(config, plugins))
        patch(opened[-1].store)  # (the follower's own store: a failure injected in it)
        return opened[-1]

    yield make
    for kb in opened:
        kb.close()


def following(make_kb: Callable[[], KnowledgeBase], waits: Waits) -> tuple[FeedFollower, list[BaseException]]:
    errors: list[BaseException] = []
    follower = FeedFollower(make_kb, errors.append)
    follower._stop = waits
    return follower.start(), errors


def until(condition: Callable[[], Any]) -> None:
    deadline = time.monotonic() + GUARD_S
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert condition()


def test_the_follower_reports_an_exception_and_goes_on(make_kb: Callable[..., KnowledgeBase]) -> None:
    writer = make_kb()
    store_document(writer.store, "a.md", ("alpha",))

    def failing_once(store: Any) -> None:
        real, calls = store.index_state, []

        def index_state(name: str) -> Any:
            calls.append(name)
            if len(calls) == 1:
                raise RuntimeError("an index's bug")
            return real(name)

        store.index_state = index_state

    waits = Waits(most=1000)
    follower, errors = following(lambda: make_kb(failing_once), waits)
    until(lambda: follower.synced == 1)
    assert [type(exc) for exc in errors] == [RuntimeError] and str(errors[0]) == "an index's bug"
    assert len(waits.timeouts) == 1 and waits.timeouts[0] > 0  # one back-off after the failure, none once it moved
    store_document(writer.store, "b.md", ("beta",))  # still following: the next change is applied too
    until(lambda: follower.synced == 2)
    waits.set()
    store_document(writer.store, "c.md", ("gamma",))  # (wakes its wait for the feed: it ends)
    follower._thread.join(GUARD_S)
    assert not follower._thread.is_alive()


def test_indexes_that_stay_behind_back_off_and_are_reported_once(make_kb: Callable[..., KnowledgeBase]) -> None:
    store_document(make_kb().store, "a.md", ("alpha",))

    def forgetful(store: Any) -> None:  # it applies the changes but never records how far: it stays behind
        store.set_index_state = lambda *args: None

    waits = Waits(most=8)
    follower, errors = following(lambda: make_kb(forgetful), waits)
    follower._thread.join(GUARD_S)
    assert not follower._thread.is_alive()
    first, *rest = waits.timeouts
    assert first > 0 and len(rest) == 7  # never at once
    assert all(earlier < later <= earlier * 2 or later == earlier for earlier, later in zip(waits.timeouts, rest))
    assert rest[-1] > first and rest[-1] == rest[-2]  # (doubled each round, up to a cap)
    assert follower.failures == 8 and follower.synced == 9  # (the first round waited for the feed: it was ahead)
    assert [type(exc) for exc in errors] == [KbError]  # said once, not every round
    assert "stay behind the store's changes (at change 0)" in str(errors[0])
