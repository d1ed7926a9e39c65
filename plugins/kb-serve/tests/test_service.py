"""The service's parts on their own: the query-vector cache and the generation gate."""

from __future__ import annotations

import threading

import pytest

from kb_core import Cancelled
from kb_core.service import CachingEmbedder, GenerationBusy, GenerationGate
from kb_serve.errors import headers_of, status_of

#: The longest a test waits for an event it expects (a limit against hangs, not a measure of speed).
WAIT_S = 60.0


class AskedEvent(threading.Event):
    """An event that records, in ``asked``, that someone has asked whether it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()

    def is_set(self) -> bool:
        self.asked.set()
        return super().is_set()


class Counting:
    """An embedder stand-in that counts the queries it embeds."""

    dimensions = 3
    model_ref = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return [float(len(text)), 1.0, 0.0]


def test_repeated_queries_are_embedded_once_and_the_oldest_are_forgotten() -> None:
    inner = Counting()
    cached = CachingEmbedder(inner, size=2)
    first = cached.embed_query("wind")
    first.append(99.0)  # a caller changing its copy changes nothing cached
    assert cached.embed_query("wind") == [4.0, 1.0, 0.0] and inner.calls == 1
    cached.embed_query("a")
    cached.embed_query("bb")  # "wind" is now the least recent of three: forgotten
    cached.embed_query("wind")
    assert inner.calls == 4 and (cached.hits, cached.misses) == (1, 4)
    assert cached.dimensions == 3 and cached.model_ref == "counting"  # the rest is the inner embedder's


def test_the_gate_lets_one_through_queues_the_limit_and_refuses_the_rest() -> None:
    gate = GenerationGate(waiting=1, wait_s=5)
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gate.turn():
            inside.set()
            release.wait(WAIT_S)

    gate.admit()
    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(WAIT_S) and gate.busy
    gate.admit()  # one may wait
    with pytest.raises(GenerationBusy) as refused:
        gate.admit()
    assert status_of(refused.value) == 503 and "Retry-After" in headers_of(refused.value)
    release.set()
    holder.join(WAIT_S)
    assert gate.waiting == 1 and not gate.busy  # the admitted one has not taken its turn yet
    with gate.turn():
        assert gate.busy and gate.waiting == 0
    assert not gate.busy


def test_a_waiter_whose_client_left_gives_its_place_back() -> None:
    gate = GenerationGate(waiting=1, wait_s=WAIT_S)
    inside, release, gone = threading.Event(), threading.Event(), AskedEvent()

    def hold() -> None:
        with gate.turn():
            inside.set()
            release.wait(WAIT_S)

    gate.admit()
    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(WAIT_S)
    gate.admit()
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            with gate.turn(gone):
                raise AssertionError("the abandoned question got the model")
        except BaseException as exc:
            errors.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert gone.asked.wait(WAIT_S)  # the waiter is in its turn, asking whether its client left
    assert gate.waiting == 1
    gone.set()
    waiter.join(WAIT_S)
    assert not waiter.is_alive() and isinstance(errors[0], Cancelled) and gate.waiting == 0
    release.set()
    holder.join(WAIT_S)
    assert not gate.busy
