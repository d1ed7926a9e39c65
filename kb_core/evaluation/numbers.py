"""Scoring of answers whose gold is a number worked out from the documents (tatqa-tune's numbers sets).

A golden row with a numeric ``answer`` and a ``scale`` (``""``, ``thousand``, ``million``, ``billion``,
``percent``) is scored by the numbers its answer writes: citation markers ``[#n]`` removed; commas,
``$``, ``%`` and a parenthesised negative understood; ``1.2 million`` also read as 1,200,000. The
answer states the gold when one of them equals the gold in absolute value (the sign is not required:
"fell by 5" states -5) within 0.5 % (at least 0.01), or equals the gold times its scale's factor
(``percent``: 0.01, so 0.2222 states 22.22 %). It is *right* when it is also grounded and cites an
expected document; a grounded answer that does not state the gold is a wrong number stated with kb's
backing.
"""

from __future__ import annotations

import math
import re

#: The factor of each scale a golden number may carry.
SCALE_FACTORS: dict[str, float] = {"": 1.0, "thousand": 1e3, "million": 1e6, "billion": 1e9, "percent": 0.01}

#: Relative tolerance of a stated number, and the least absolute one.
RELATIVE_TOLERANCE = 0.005
ABSOLUTE_TOLERANCE = 0.01

_WORD_FACTORS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_MARKER = re.compile(r"\[#\s*\d+\s*\]")
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])"  # not the tail of a word or of another number
    r"(?P<number>\d{1,3}(?:,\d{3})+(?![\d,])(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\)?\s*(?P<word>thousand|million|billion|trillion)\b)?",
    re.IGNORECASE,
)


def numbers_in(text: str) -> tuple[float, ...]:
    """The absolute values of the numbers ``text`` writes (a scaled one also multiplied out); never raises.

    >>> numbers_in("Revenue fell by $(1,234.5) million [#1], or 3.5%.")
    (1234.5, 1234500000.0, 3.5)
    """
    found: list[float] = []
    for match in _NUMBER.finditer(_MARKER.sub(" ", text)):
        try:
            value, word = float(match["number"].replace(",", "")), match["word"]
        except ValueError:  # digits of other scripts float() does not take
            continue
        if not math.isfinite(value):
            continue
        found.append(value)
        if word:
            scaled = value * _WORD_FACTORS[word.casefold()]
            if math.isfinite(scaled):
                found.append(scaled)
    return tuple(found)


def _close(value: float, target: float) -> bool:
    return abs(value - target) <= max(RELATIVE_TOLERANCE * target, ABSOLUTE_TOLERANCE)


def states_number(text: str, gold: float, scale: str = "") -> bool:
    """True when some number ``text`` writes equals ``|gold|`` (or ``|gold|`` times its scale's factor)."""
    if not math.isfinite(gold):
        return False
    targets = {abs(gold), abs(gold) * SCALE_FACTORS.get(scale, 1.0)}
    return any(_close(value, target) for value in numbers_in(text) for target in targets)
