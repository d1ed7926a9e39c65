"""The names ``kb_core`` exported before it became the library for applications resolve until kb-core 0.3.

Each one of the 80 of ``kb_core.__all__`` in 0.1 that is no longer there is the very same object as in its new
home, and every use warns once (``DeprecationWarning``) saying where it went; so does ``kb_core.remote``, now
``kb_core.plugin.remote``. docs/plugins.md ("Moving to kb_core.plugin") lists them for plugin authors.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import kb_core
import kb_core.plugin
import kb_core.testing
from kb_core.plugin import remote

#: ``kb_core.__all__`` before the split.
BEFORE = set(
    "LIMITS SEARCH_MODES Answer AnswerChecker ArrayEmbedder AskOptions Block BytesParser Cancelled Chunk Citation"
    " Config ConfigError Document Done Embedder FactoryContext GenerateRequest Hit Index IndexContext IngestReport"
    " IngestWarning KbError KnowledgeBase LanguageModel Limits ModelRef ModelUnavailableError NotFoundError"
    " ParsedDocument Parser PluginError Problem Progress RegisterCommand RegisterEmbedder RegisterIndex"
    " RegisterLanguageModel RegisterParser Registry Retriever SearchIndex SearchMode SearchQuery SearchResponse"
    " SnippetMaker StoreView StoredAnswer StoredAnswerNow StreamEvent Token TokenStartsEmbedder Turn VerdictOpening"
    " WriterBusyError ask ask_in_thread check_k check_mode check_path_glob check_text delete_thread hookimpl"
    " ignored_part ingest_paths inspect_target list_answers list_threads load_config load_registry make_snippet"
    " open_kb remove_documents score_mapping search similarity_floor similarity_to_score stored_answer"
    " stored_thread".split()
)
REMOVED = sorted(BEFORE - set(kb_core.__all__))
#: ``kb_core.plugin``'s names that ``kb_core`` never had (added with it or later).
NEW_IN_PLUGIN = {"OcrEngine", "OcrImage", "OcrLine", "ParserContext", "Preloadable", "RegisterOcrEngine"}
#: Where each removed name that is not kb_core.plugin's lives now, and the start of what its warning says.
ELSEWHERE = {
    "load_registry": ("kb_core.testing", "moved to kb_core.testing.load_registry"),
    "Registry": ("kb_core.extend.registry", "is private"),
    "PluginError": ("kb_core.extend.registry", "is private"),
    "Limits": ("kb_core.limits", "is private"),
    "SearchMode": ("kb_core.types", "is private"),
    "ignored_part": ("kb_core.ingest.source", "is private"),
}


def _recorded(code: str) -> tuple[object, list[warnings.WarningMessage]]:
    namespace: dict[str, object] = {"kb_core": kb_core}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(code, namespace)
    return namespace.get("found"), caught


def test_the_split() -> None:
    assert len(BEFORE) == 80 and set(kb_core.__all__) < BEFORE and len(kb_core.__all__) == 40
    assert set(REMOVED) == (set(kb_core.plugin.__all__) - NEW_IN_PLUGIN) | set(ELSEWHERE)


@pytest.mark.parametrize("name", REMOVED)
def test_every_old_name_resolves_warns_once_and_is_the_same_object(name: str) -> None:
    home, said = ELSEWHERE.get(name, ("kb_core.plugin", f"moved to kb_core.plugin.{name}"))
    found, caught = _recorded(f"found = kb_core.{name}")
    assert found is getattr(importlib.import_module(home), name)
    assert [w.category for w in caught] == [DeprecationWarning]
    message = str(caught[0].message)
    assert message.startswith(f"kb_core.{name} {said}") and message.endswith("; the old name goes in kb-core 0.3")
    assert caught[0].filename == "<string>", "the warning points at the code that used the old name"


@pytest.mark.parametrize("name", ["Index", "hookimpl", "load_registry", "SearchMode"])
def test_importing_an_old_name_warns_once_too(name: str) -> None:
    found, caught = _recorded(f"from kb_core import {name} as found")
    assert found is not None and [w.category for w in caught] == [DeprecationWarning]
    assert f"kb_core.{name} " in str(caught[0].message)


def test_the_current_names_do_not_warn() -> None:
    found, caught = _recorded("from kb_core import KbError, open_kb\nfound = kb_core.search, kb_core.plugin.Index")
    assert caught == [] and found == (kb_core.search, kb_core.plugin.Index)


def test_a_name_that_never_was_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Indexx'"):
        kb_core.Indexx  # noqa: B018


def test_the_old_remote_module_warns_and_gives_the_same_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "kb_core.remote", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = importlib.import_module("kb_core.remote")
    assert [str(w.message) for w in caught] == [
        "kb_core.remote moved to kb_core.plugin.remote; the old module goes in kb-core 0.3"
    ]
    assert all(getattr(old, name) is getattr(remote, name) for name in remote.__all__)
    assert old.TIMEOUT_KEYS is remote.TIMEOUT_KEYS
