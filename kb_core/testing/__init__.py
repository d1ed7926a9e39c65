"""Test support for kb and its plugins: fakes for the core's own tests and the contract test kit.

Nothing on kb's runtime path imports this package. Plugin authors use it from pytest::

    from kb_core.testing import ScriptedLanguageModel
"""

from kb_core.testing.language_models import Script, ScriptedLanguageModel, ScriptedPlugin

__all__ = ["Script", "ScriptedLanguageModel", "ScriptedPlugin"]
