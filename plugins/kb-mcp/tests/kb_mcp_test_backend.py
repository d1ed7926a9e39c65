"""A test-only kb plugin: the scripted language model ``scripted``, for ``kb mcp`` subprocesses in tests.

Never installed. The tests write a ``.dist-info`` folder whose ``entry_points.txt`` names this
module in the group ``kb`` and put it, with this folder, on the subprocess's PYTHONPATH, so the
real plugin loader finds it like any installed plugin. The script answers with the text of
evidence entry [#1], citing [#1], so answers are grounded; asked what a follow-up is about (the
``model`` way of making it standalone), it names :data:`TOPIC` (``kb_core.testing.following_up``).
"""

from __future__ import annotations

from collections.abc import Callable

from kb_core.plugin import hookimpl
from kb_core.testing import ScriptedLanguageModel, following_up

TOPIC = "the Heliograph release"
#: Entry [#1]'s text, cited; asked what a follow-up is about, :data:`TOPIC`.
SCRIPT = following_up(TOPIC)


#: An answer whose first sentence no passage supports (``withdrawing``): kb refuses it.
WITHDRAWN = "The daemon was written by Ada Lovelace in 1843 [#1]. It keeps daily backups for 35 days [#1]."


@hookimpl
def register_language_models(register: Callable[..., None]) -> None:
    """Register ``scripted`` and ``withdrawing`` (:data:`WITHDRAWN`, a word at a time)."""
    register("scripted", lambda _ctx: ScriptedLanguageModel(SCRIPT))
    words = [word if index == 0 else f" {word}" for index, word in enumerate(WITHDRAWN.split())]
    register("withdrawing", lambda _ctx: ScriptedLanguageModel(lambda _request: words))
