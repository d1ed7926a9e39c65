"""A test plugin (``KB_PLUGIN_MODULES=extractive_backend``): the backend ``extractive`` answers with the
text of evidence entry [#1], citing it, so its answers are grounded by kb's own checks."""

from __future__ import annotations

import re

from kb_core import GenerateRequest, RegisterLanguageModel, hookimpl
from kb_core.testing import ScriptedLanguageModel


def extractive(request: GenerateRequest) -> list[str]:
    """The words of entry [#1] (after its header line), then ``[#1]``."""
    after = re.split(r"\[#1[\] ]", request.user, maxsplit=1)[1]
    entry = re.split(r"\n\n\[#2[\] ]|\n\n(?:Question|질문|问题)[:：]", after)[0]
    words = entry.split("\n", 1)[1].split()
    return [w if i == 0 else " " + w for i, w in enumerate(words)] + [" [#1]"]


@hookimpl
def register_language_models(register: RegisterLanguageModel) -> None:
    """Register ``extractive``."""
    register("extractive", lambda _ctx: ScriptedLanguageModel(extractive))
