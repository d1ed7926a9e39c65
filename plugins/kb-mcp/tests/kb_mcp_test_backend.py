"""A test-only kb plugin: the scripted language model ``scripted``, for ``kb mcp`` subprocesses in tests.

Never installed. The tests write a ``.dist-info`` folder whose ``entry_points.txt`` names this
module in the group ``kb`` and put it, with this folder, on the subprocess's PYTHONPATH, so the
real plugin loader finds it like any installed plugin. The script answers with the text of
evidence entry [#1], citing [#1] (as tests/test_eval_answers.py does), so answers are grounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kb_core import GenerateRequest, hookimpl
from kb_core.testing import ScriptedLanguageModel


def extractive(request: GenerateRequest) -> list[str]:
    """The first line-joined text of evidence entry [#1], then the marker [#1]."""
    entry = re.split(
        r"\n\n\[#2[\] ]|\n\n(?:Question|질문|问题)[:：]", re.split(r"\[#1[\] ]", request.user, maxsplit=1)[1]
    )[0]
    return [" ".join(entry.split("\n", 1)[1].split()), " [#1]"]


@hookimpl
def register_language_models(register: Callable[..., None]) -> None:
    """Register ``scripted``."""
    register("scripted", lambda _ctx: ScriptedLanguageModel(extractive))
