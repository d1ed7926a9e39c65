"""A stored question asked again: what changed in its answer (``kb ask --again ID``)."""

from __future__ import annotations

import attrs

from kb_core.storage.answers import StoredAnswerNow
from kb_core.types import Answer


@attrs.frozen
class AskedAgain:
    """The previous answer as it stands now, the new one, and what changed (``answer_again.v1``)."""

    previous: StoredAnswerNow
    answer: Answer
    changes: tuple[str, ...]


def changes_since(previous: StoredAnswerNow, answer: Answer) -> tuple[str, ...]:
    """What differs between ``previous`` and ``answer``, one line each (empty: the same answer)."""
    changes: list[str] = []
    if previous.grounded != answer.grounded:
        now = "grounded" if answer.grounded else f"refused ({answer.refusal_reason})"
        changes.append(f"was {'grounded' if previous.grounded else f'refused ({previous.refusal_reason})'}, now {now}")
    if previous.answer.strip() != answer.answer.strip():
        changes.append("the answer's text changed")
    before = {f"{c.path}#L{c.start_line}-L{c.end_line}" for c in previous.citations}
    after = {c.ref for c in answer.citations}
    changes += [f"no longer cites {ref}" for ref in sorted(before - after)]
    changes += [f"now cites {ref}" for ref in sorted(after - before)]
    if previous.state in ("stale", "unverifiable"):
        changes.append(f"the previous answer was {previous.state}")
    return tuple(changes)
