"""Which writing systems (scripts) a text is written in, and whether an embedder models them.

Embedders declare the scripts they were trained on (``Embedder.scripts``, see
:mod:`kb_core.extend.contracts`); a query or a corpus in a script outside that set gets vectors that
carry no meaning (all-MiniLM-L6-v2, English-only, finds every Korean or Chinese text alike).

A text's script profile counts *words*, not characters, so that languages weigh alike: a run of
letters of an alphabetic script (Latin, Hangul, Cyrillic, ...) is one word (Korean separates
words by spaces), a run of ``n`` Han or Kana characters counts ``n / 2`` words (about the length
of a Chinese or Japanese word; at least one). Digits, punctuation and symbols are not counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# Unicode blocks of each script kb tells apart (ISO 15924 names, lower case).
_RANGES: dict[str, str] = {
    "latin": "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff",
    "hangul": "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff",
    "han": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f",
    "kana": "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f",
    "cyrillic": "\u0400-\u04ff",
    "greek": "\u0370-\u03ff",
    "arabic": "\u0600-\u06ff",
    "hebrew": "\u0590-\u05ff",
    "thai": "\u0e00-\u0e7f",
    "devanagari": "\u0900-\u097f",
}
#: Every script name kb recognises; letters of any other script count as ``other``.
SCRIPTS: tuple[str, ...] = (*_RANGES, "other")
#: Scripts written without spaces between words, whose runs count ``n / 2`` words.
UNSPACED = frozenset({"han", "kana"})

_RUN = re.compile("|".join(f"(?P<{name}>[{chars}]+)" for name, chars in _RANGES.items()) + r"|(?P<other>[^\W\d_]+)")


def script_profile(text: str) -> dict[str, float]:
    """Words per script in ``text`` (see the module docstring); empty when it has no letters."""
    profile: dict[str, float] = {}
    for match in _RUN.finditer(text):
        script = match.lastgroup or "other"
        length = match.end() - match.start()
        profile[script] = profile.get(script, 0.0) + (max(1.0, length / 2) if script in UNSPACED else 1.0)
    return profile


def coverage(profile: Mapping[str, float], scripts: Iterable[str] | None) -> float:
    """The share of a profile's words written in ``scripts``, in [0, 1].

    ``None`` (an embedder that does not say what it models) and a profile without words give 1.0:
    there is nothing to hold against the model.
    """
    total = sum(profile.values())
    if scripts is None or total <= 0:
        return 1.0
    modeled = set(scripts)
    return sum(words for script, words in profile.items() if script in modeled) / total


def text_coverage(text: str, scripts: Iterable[str] | None) -> float:
    """The share of ``text``'s words written in ``scripts`` (see :func:`coverage`)."""
    return coverage(script_profile(text), scripts)


def dominant_script(profile: Mapping[str, float]) -> str | None:
    """The script with the most words (ties: the first in :data:`SCRIPTS`), or None without words."""
    if not profile or sum(profile.values()) <= 0:
        return None
    return max(SCRIPTS, key=lambda script: profile.get(script, 0.0))


def merge(profiles: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """The sum of several profiles (a corpus's profile from its chunks')."""
    total: dict[str, float] = {}
    for profile in profiles:
        for script, words in profile.items():
            total[script] = total.get(script, 0.0) + words
    return total


def shares(profile: Mapping[str, float]) -> dict[str, float]:
    """Each script's share of the words, largest first."""
    total = sum(profile.values())
    if total <= 0:
        return {}
    return {script: words / total for script, words in sorted(profile.items(), key=lambda kv: -kv[1])}
