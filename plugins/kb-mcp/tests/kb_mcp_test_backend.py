"""A test-only kb plugin: the scripted language model ``scripted``, for ``kb mcp`` subprocesses in tests.

Never installed. The tests write a ``.dist-info`` folder whose ``entry_points.txt`` names this
module in the group ``kb`` and put it, with this folder, on the subprocess's PYTHONPATH, so the
real plugin loader finds it like any installed plugin. The script answers with the text of
evidence entry [#1], citing [#1] (as tests/test_eval_answers.py does), so answers are grounded; asked
what a follow-up is about (the ``model`` way of making it standalone), it names :data:`TOPIC`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kb_core import GenerateRequest, hookimpl
from kb_core.conversations.converse import HISTORY_HEADER
from kb_core.conversations.standalone import TOPIC_SYSTEM
from kb_core.testing import ScriptedLanguageModel

TOPIC = "the Heliograph release"
_AFTER_ENTRY_1 = re.compile(rf"\n\n\[#2[\] ]|\n\n(?:Question|질문|问题)[:：]|\n\n{re.escape(HISTORY_HEADER)}")


def extractive(request: GenerateRequest) -> list[str]:
    """The text of evidence entry [#1] on one line, then the marker [#1] (or :data:`TOPIC`, when asked for it)."""
    if request.system == TOPIC_SYSTEM:
        return [TOPIC]
    entry = _AFTER_ENTRY_1.split(re.split(r"\[#1[\] ]", request.user, maxsplit=1)[1])[0]  # not the earlier turns
    return [" ".join(entry.split("\n", 1)[1].split()), " [#1]"]


@hookimpl
def register_language_models(register: Callable[..., None]) -> None:
    """Register ``scripted``."""
    register("scripted", lambda _ctx: ScriptedLanguageModel(extractive))
