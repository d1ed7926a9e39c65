"""A test plugin (``KB_PLUGIN_MODULES=extractive_backend``): the backend ``extractive`` answers with the
text of evidence entry [#1], citing it, so its answers are grounded by kb's own checks."""

from __future__ import annotations

from kb_core.plugin import RegisterLanguageModel, hookimpl
from kb_core.testing import ScriptedLanguageModel, extractive


@hookimpl
def register_language_models(register: RegisterLanguageModel) -> None:
    """Register ``extractive``."""
    register("extractive", lambda _ctx: ScriptedLanguageModel(extractive))
