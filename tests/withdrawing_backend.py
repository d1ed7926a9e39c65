"""A test plugin (``KB_PLUGIN_MODULES=withdrawing_backend``): the backend ``withdrawing`` answers with a first
sentence no passage supports, then a true one, so kb refuses the answer and a front end must show none of it."""

from __future__ import annotations

from kb_core.plugin import GenerateRequest, RegisterLanguageModel, hookimpl
from kb_core.testing import ScriptedLanguageModel

#: What the model writes, word by word: kb refuses at the first sentence.
WITHDRAWN = "The daemon was written by Ada Lovelace in 1843 [#1]. It listens on TCP port 7341 [#1]."


def withdrawn(request: GenerateRequest) -> list[str]:
    """:data:`WITHDRAWN`, a word at a time."""
    return [word if index == 0 else f" {word}" for index, word in enumerate(WITHDRAWN.split())]


@hookimpl
def register_language_models(register: RegisterLanguageModel) -> None:
    """Register ``withdrawing``."""
    register("withdrawing", lambda _ctx: ScriptedLanguageModel(withdrawn))
