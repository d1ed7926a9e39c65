"""What kb-audio's fixture recording says, and a transcriber that hears it: for tests, here and in other plugins.

``heron.ogg`` (kb-audio's ``fixtures/``, made by ``fixtures/make.sh``) speaks :data:`SPOKEN`. Whisper's small
model hears it right (kb-audio's own test), but a test of what kb does with a transcript needs no model:
:func:`scripted_words` gives the same words at their moments, as a transcriber would.

>>> [w.text for w in scripted_words(np.zeros(16000 * 2))][:3]
[' The', ' heron', ' pump']
"""

from __future__ import annotations

import numpy as np

from kb_audio.transcript import Word

__all__ = ["SPOKEN", "ScriptedTranscriber", "scripted_words"]

#: What ``heron.ogg`` and ``heron.mp4`` say, and when each sentence starts, in seconds.
SPOKEN = (
    ("The heron pump by the weir was serviced on Tuesday.", 1.0),
    ("Its seals were replaced and the filter was cleaned.", 6.405),
    ("The next inspection is planned for the spring.", 12.075),
)


def scripted_words(samples: np.ndarray) -> list[Word]:
    """The words of :data:`SPOKEN` at their moments, a quarter of a second apart, those inside ``samples``
    (16 kHz mono)."""
    out: list[Word] = []
    for sentence, start in SPOKEN:
        for n, text in enumerate(sentence.split()):
            at = start + n * 0.25
            if at < len(samples) / 16000:
                out.append(Word(" " + text, at, at + 0.2))
    return out


class ScriptedTranscriber:
    """A transcriber that hears :data:`SPOKEN`, whatever the sound."""

    name = "scripted"
    language = "en"

    def words(self, samples: np.ndarray) -> list[Word]:
        """:data:`SPOKEN`'s words inside ``samples``."""
        return scripted_words(samples)
