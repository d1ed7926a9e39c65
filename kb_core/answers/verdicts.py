"""How sure kb is of the verdict that opens an answer to a yes/no question.

The verdict is the first word the model gives ("Yes."/"No."), decided on the first token's
P(no) share against ``[rag] verdict_no_share`` (see :class:`~kb_core.types.VerdictOpening`).
Its confidence is how far that share lies from the threshold, on the side of the verdict:
0 at the threshold, 1 when the model gave the other word no probability at all.
"""

from __future__ import annotations


def opening_confidence(verdict: str | None, no_share: float | None, threshold: float) -> float | None:
    """The confidence in a ``yes`` or ``no`` opening from the first token's P(no) share; else None.

    >>> opening_confidence("no", 0.55, 0.1)
    0.5
    >>> opening_confidence("yes", 0.05, 0.1)
    0.5
    """
    if verdict not in ("yes", "no") or no_share is None or not 0.0 < threshold < 1.0:
        return None
    margin = (no_share - threshold) / (1.0 - threshold) if verdict == "no" else (threshold - no_share) / threshold
    return round(min(1.0, max(0.0, margin)), 4)
