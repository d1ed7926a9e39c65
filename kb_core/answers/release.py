"""Only checked text is shown: the answer's text reaches ``on_token`` a checked stretch at a time.

While the model writes, :class:`CheckedRelease` holds its text back and releases it only as far as
kb has checked it: each time a sentence is complete (the next one has begun), the text up to there
is validated as a whole answer would be (:func:`kb_core.answers.validation.validate`, every claim
supported, every marker packed, no refusal phrase); when it is grounded, its checked text (citations
repaired) goes out. Once a sentence fails after text went out, nothing more does, and the answer is
the text that went out (:meth:`CheckedRelease.settle`): a reader never sees a claim kb then refuses
or removes. Nothing goes out before the answer check said the passages state the answer (it reads
the passages and the question, not the answer, so it is asked before the model writes), nor for a
yes/no question, whose opening verdict is decided on the whole answer: that text goes out at the end,
as checked. A refused answer shows nothing but its refusal.

``on_token`` is also called with ``""`` while text is held, so a caller can stop the answer
(:class:`~kb_core.errors.Cancelled`) at any token. Without ``on_token`` nothing is shown, nothing is
released, and the answer is checked whole, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs

from kb_core.answers.attribution import split_sentences
from kb_core.answers.streaming import TokenCallback
from kb_core.answers.validation import Verdict
from kb_core.errors import Cancelled

log = logging.getLogger(__name__)

#: How the answer is checked: the text so far (a whole answer) to its verdict.
Check = Callable[[str], Verdict]


def complete_part(text: str) -> str:
    """``text`` up to the start of its last sentence (which may still grow): the part whose sentences are done."""
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return ""
    return text[: text.rstrip().rfind(sentences[-1])]


class CheckedRelease:
    """The model's text, released to ``sink`` only as far as ``check`` finds it grounded (see the module)."""

    def __init__(self, sink: TokenCallback | None, check: Check, *, hold: bool = False) -> None:
        self.sink = sink
        self.check = check
        self.hold = hold  # nothing is released before the end
        self.raw = ""  # what the model wrote so far
        self.shown = ""  # the checked text released
        self.stopped = False  # a sentence after the released ones failed its check
        self._checked = 0  # characters of ``raw`` checked so far

    def feed(self, text: str) -> None:
        """The model's next piece of text: held, or released with what it completes once checked."""
        self.raw += text
        out = ""
        if not (self.hold or self.stopped or self.sink is None):  # (no one to show it to: nothing to check yet)
            done = complete_part(self.raw)
            if len(done) > self._checked:
                self._checked = len(done)
                out = self._release(self.check(done.strip()))
        if self.sink is not None:
            try:
                self.sink(out)
            except Cancelled:
                raise
            except Exception:  # stream_answer's rule: a callback that fails is dropped, generation goes on
                self.sink = None
                raise

    def _release(self, verdict: Verdict) -> str:
        if not verdict.grounded:
            self.stopped = bool(self.shown)  # none shown yet: a later sentence may still make it an answer
            return ""
        if not verdict.text.startswith(self.shown):
            self.stopped = True  # (a repair reread what went out: nothing more)
            return ""
        out = verdict.text[len(self.shown) :]
        out = out if not self.shown or out[:1].isspace() else " " + out
        self.shown = verdict.text
        return out

    def settle(self, verdict: Verdict) -> Verdict:
        """The answer's verdict given what went out: a refused or changed answer after released text is the
        released text, checked (its note says what was held back)."""
        if not self.shown or (verdict.grounded and verdict.text.startswith(self.shown)):
            return verdict
        why = verdict.note or "the rest did not pass kb's checks"
        return attrs.evolve(self.check(self.shown), note=f"kb stopped the answer after the text it had shown ({why})")

    def finish(self, text: str, grounded: bool) -> None:
        """The end: the rest of a grounded answer's ``text`` goes out (a refusal adds nothing)."""
        if self.sink is None or not grounded or not text.startswith(self.shown):
            return
        rest = text[len(self.shown) :]
        if rest.strip():
            try:
                self.sink(rest if not self.shown or rest[:1].isspace() else " " + rest)
            except Cancelled:
                raise
            except Exception as exc:  # a closed terminal: the answer is kept all the same
                log.info("token callback failed (%s)", exc)
            self.shown = text
