"""The first word of an answer to a yes/no question, decided by a threshold on P(no) (``VerdictOpening``).

Small models open nearly every such answer with "Yes" whatever the evidence reports, though the
probability they give "No" still tells the two apart. :class:`OpenWithVerdict` is a llama-cpp-python
logits processor for the first sampled token only: when the model's most likely first token opens
the yes word or the no word, the no word is chosen when P(no) / (P(yes) + P(no)) reaches
``no_share``, else the yes word. A first token that opens one of the other allowed openings (a
refusal, "Mixed") is left alone; any other one (the model explaining before its verdict) is replaced
by the decided word, or, without allowed openings given, left alone too. Every later token is the
model's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kb_core.plugin import VerdictOpening


def spellings(word: str) -> tuple[str, ...]:
    """The ways a reply may open with ``word``: as written, lower and upper case, after a space."""
    return tuple(dict.fromkeys((word, word.lower(), word.upper(), " " + word, " " + word.lower())))


def yes_no_mass(scores: Any, yes_tokens: Sequence[int], no_tokens: Sequence[int]) -> tuple[float, float]:
    """P(yes) and P(no) of a first token, up to one common factor, from its logits ``scores``.

    Their ratio is what the answer check (P(yes) share) and the verdict opening (P(no) share) read.
    """
    import numpy as np  # here, not at import: kb loads this plugin on every start

    logits = np.asarray(scores, dtype=np.float64)
    top = logits[[*yes_tokens, *no_tokens]].max()
    return float(np.exp(logits[list(yes_tokens)] - top).sum()), float(np.exp(logits[list(no_tokens)] - top).sum())


class OpenWithVerdict:
    """A logits processor deciding the first token between the yes and the no word (see the module).

    ``alternative_tokens`` are the first tokens of the other openings the model may choose
    (``VerdictOpening.alternatives``); ``None`` decides only when the model opens with yes or no.
    """

    def __init__(
        self,
        verdict: VerdictOpening,
        yes_tokens: set[int],
        no_tokens: set[int],
        alternative_tokens: set[int] | None = None,
    ) -> None:
        self.no_share = verdict.no_share
        self.yes_tokens = sorted(yes_tokens - no_tokens)
        self.no_tokens = sorted(no_tokens - yes_tokens)
        self.alternative_tokens = alternative_tokens
        self.chosen: str | None = None  # "yes" or "no" once decided; None when the rule did not apply
        self.no_share_seen: float | None = None  # P(no) / (P(yes) + P(no)) of the first token, once decided
        self._first = True

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """``scores`` with the first token decided; later calls return them unchanged."""
        if not self._first:
            return scores
        self._first = False
        import numpy as np

        best = int(np.argmax(scores))
        if not self.yes_tokens or not self.no_tokens or not self._decides(best):
            return scores
        p_yes, p_no = yes_no_mass(scores, self.yes_tokens, self.no_tokens)
        self.no_share_seen = p_no / (p_yes + p_no)
        self.chosen = "no" if self.no_share_seen >= self.no_share else "yes"
        pool = self.no_tokens if self.chosen == "no" else self.yes_tokens
        pick = max(pool, key=lambda token: float(scores[token]))
        decided = np.array(scores, copy=True)
        decided[pick] = float(scores[best]) + 1.0  # the most likely token now: greedy decoding takes it
        return decided

    def _decides(self, best: int) -> bool:
        """Whether a reply whose most likely first token is ``best`` opens with the decided verdict."""
        if best in self.yes_tokens or best in self.no_tokens:
            return True
        return self.alternative_tokens is not None and best not in self.alternative_tokens
