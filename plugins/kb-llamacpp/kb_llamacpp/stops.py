"""Stop strings over a stream of text pieces: emit text as soon as it cannot start a stop string."""

from __future__ import annotations

from collections.abc import Sequence

import attrs


def _held_back(text: str, stops: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of some stop string."""
    longest = 0
    for stop in stops:
        for size in range(min(len(stop) - 1, len(text)), longest, -1):
            if text.endswith(stop[:size]):
                longest = size
                break
    return longest


@attrs.define
class StopScanner:
    """Feeds pieces of generated text and releases what is safe to show.

    Text is never released while it could still be the start of a stop string; once a stop
    string appears, everything before it is released and ``stopped`` becomes true.
    """

    stops: tuple[str, ...]
    stopped: bool = False
    _pending: str = ""

    def feed(self, piece: str) -> str:
        """Add ``piece``; return the text that can be shown now."""
        if self.stopped:
            return ""
        self._pending += piece
        hits = [i for i in (self._pending.find(s) for s in self.stops if s) if i >= 0]
        if hits:
            self.stopped = True
            out, self._pending = self._pending[: min(hits)], ""
            return out
        keep = _held_back(self._pending, [s for s in self.stops if s])
        cut = len(self._pending) - keep
        out, self._pending = self._pending[:cut], self._pending[cut:]
        return out

    def flush(self) -> str:
        """The text still held back, released because generation ended without a stop string."""
        out, self._pending = ("" if self.stopped else self._pending), ""
        return out
