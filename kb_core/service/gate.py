"""One generation at a time: the queue every front end's questions wait in for the language model."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kb_core.errors import Cancelled, KbError

#: Seconds between two looks, while a question waits for the model, at whether its asker is still there.
POLL_S = 0.1


class GenerationBusy(KbError):
    """The language model is generating and its queue is full, or a question waited too long: retry later.

    A front end says so as it says "busy" (``kb serve``: a 503 with ``Retry-After``).
    """


class GenerationGate:
    """One generation at a time; at most ``waiting`` callers wait for it, each for at most ``wait_s`` seconds."""

    def __init__(self, waiting: int, wait_s: float) -> None:
        self.limit = waiting
        self.wait_s = wait_s
        self._lock = threading.Lock()
        self._count = threading.Lock()
        self.waiting = 0
        self.busy = False

    def admit(self) -> None:
        """Take a place in the queue, or raise :class:`GenerationBusy` when it is full."""
        with self._count:
            if self.waiting + self.busy > self.limit:  # one generating plus ``limit`` waiting
                raise GenerationBusy(
                    f"the language model is busy and {self.waiting} question(s) are waiting",
                    hint="retry in a moment (one question is answered at a time)",
                )
            self.waiting += 1

    def withdraw(self) -> None:
        """Give back a place :meth:`admit` took, for a question that will not take its turn."""
        with self._count:
            self.waiting -= 1

    @contextmanager
    def turn(self, gone: threading.Event | None = None) -> Iterator[None]:
        """Wait (after :meth:`admit`) for the model: :class:`GenerationBusy` after ``wait_s``,
        :class:`~kb_core.errors.Cancelled` once ``gone`` is set. The place in the queue is given back in every case."""
        deadline = time.monotonic() + self.wait_s
        acquired = False
        while not acquired and not (gone is not None and gone.is_set()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            acquired = self._lock.acquire(timeout=left if gone is None else min(left, POLL_S))
        with self._count:
            self.waiting -= 1
            if acquired:
                self.busy = True
        if not acquired:
            if gone is not None and gone.is_set():
                raise Cancelled("the client left while waiting for the language model")
            raise GenerationBusy(f"waited {self.wait_s:g} s for the language model", hint="retry later")
        try:
            yield
        finally:
            with self._count:
                self.busy = False
            self._lock.release()
