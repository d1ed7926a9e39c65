"""kb: a local knowledge base you can ask questions; ``kb_core`` is the library for applications.

Open a knowledge base, ingest a folder, search it, ask it and follow up; read the questions kept::

    import kb_core

    with kb_core.open_kb(kb_dir="~/kb") as kb:
        kb_core.ingest_paths(kb, [Path("~/notes").expanduser()])
        for hit in kb_core.search(kb, kb_core.SearchQuery(text="backups", mode="hybrid", k=5)).hits:
            print(hit.citation, hit.score)
        answer = kb_core.ask(kb, "How are backups verified?")
        print(answer.answer if answer.grounded else answer.note)
        turn = kb_core.ask_in_thread(kb, "How often?", thread_id=None)  # a thread; follow-ups pass its id

Everything in ``__all__`` is stable within a minor version (``docs/python-api.md`` describes each
name). The public modules are this one and :mod:`kb_core.plugin` (what a plugin that adds an engine
implements and exchanges), :mod:`kb_core.plugin.remote` (what a backend that talks to a server over
HTTP shares), :mod:`kb_core.plugin.options` (a plugin's ``[backends.<table>]`` options, declared once),
:mod:`kb_core.plugin.containers` (a parser of files that hold documents: an mbox, a zip),
:mod:`kb_core.plugin.pages` (a parser that renders a page to show: a scan, a photo),
:mod:`kb_core.plugin.stores` (a store of record other than the core's SQLite file),
:mod:`kb_core.service` (the answer service every front end runs questions through, and kb's words about an
answer), :mod:`kb_core.commands` (what a command added to ``kb`` needs), :mod:`kb_core.bounds`
(the range of every number a person or a request gives kb) and
:mod:`kb_core.testing` (fakes, the contract test kit, and a pytest plugin; :mod:`kb_core.testing.hostile`
its generators of hostile inputs, :mod:`kb_core.testing.shared_store` the kit for a store several processes
share, :mod:`kb_core.testing.access_store` the kit for a store of people and grants); every other submodule
is private and may change (``kb_core.extend.surface.PUBLIC_MODULES`` lists the public ones). The engine names
this module exported before 0.2 still resolve, with a ``DeprecationWarning``, until kb-core 0.3:
``kb_core.Index`` is ``kb_core.plugin.Index``.
"""

import importlib as _importlib
import sys as _sys
import warnings as _warnings
from importlib import metadata as _metadata
from typing import TYPE_CHECKING

from kb_core import plugin as _plugin

#: Where each public name lives: imported on first use (:func:`__getattr__`), so that importing a light module of
#: the package (``kb_core.plugin.pages`` in a page-render child, ``kb_core.errors``) does not load the pipeline.
_PUBLIC: dict[str, str] = {
    **dict.fromkeys(("AskOptions", "ask"), "kb_core.answers.pipeline"),
    **dict.fromkeys(("KnowledgeBase", "open_kb"), "kb_core.app"),
    **dict.fromkeys(("Config", "load_config"), "kb_core.config"),
    **dict.fromkeys(("Turn", "ask_in_thread"), "kb_core.conversations"),
    **dict.fromkeys(
        ("Cancelled", "ConfigError", "KbError", "ModelUnavailableError", "NotFoundError", "WriterBusyError"),
        "kb_core.errors",
    ),
    **dict.fromkeys(("IngestReport", "ingest_paths", "remove_documents"), "kb_core.ingest.pipeline"),
    **dict.fromkeys(("LIMITS", "check_k", "check_mode", "check_path_glob", "check_text"), "kb_core.limits"),
    "inspect_target": "kb_core.maintenance",
    **dict.fromkeys(("SearchResponse", "search"), "kb_core.retrieval.search"),
    **dict.fromkeys(("StoredAnswer", "StoredAnswerNow", "list_answers", "stored_answer"), "kb_core.storage.answers"),
    **dict.fromkeys(("delete_thread", "list_threads", "stored_thread"), "kb_core.storage.threads"),
    **dict.fromkeys(
        ("SEARCH_MODES", "Answer", "Chunk", "Citation", "Document", "Hit", "IngestWarning", "SearchQuery"),
        "kb_core.types",
    ),
}

if TYPE_CHECKING:  # the public names, typed for type checkers; at run time __getattr__ imports them
    from kb_core.answers.pipeline import AskOptions, ask
    from kb_core.app import KnowledgeBase, open_kb
    from kb_core.config import Config, load_config
    from kb_core.conversations import Turn, ask_in_thread
    from kb_core.errors import (
        Cancelled,
        ConfigError,
        KbError,
        ModelUnavailableError,
        NotFoundError,
        WriterBusyError,
    )
    from kb_core.ingest.pipeline import IngestReport, ingest_paths, remove_documents
    from kb_core.limits import LIMITS, check_k, check_mode, check_path_glob, check_text
    from kb_core.maintenance import inspect_target
    from kb_core.retrieval.search import SearchResponse, search
    from kb_core.storage.answers import StoredAnswer, StoredAnswerNow, list_answers, stored_answer
    from kb_core.storage.threads import delete_thread, list_threads, stored_thread
    from kb_core.types import SEARCH_MODES, Answer, Chunk, Citation, Document, Hit, IngestWarning, SearchQuery

if TYPE_CHECKING:  # the deprecated names, typed for type checkers; at run time __getattr__ gives them, warning
    from kb_core.extend.registry import PluginError, Registry, load_registry  # noqa: F401
    from kb_core.ingest.source import ignored_part  # noqa: F401
    from kb_core.limits import Limits  # noqa: F401
    from kb_core.plugin import (  # noqa: F401
        AnswerChecker,
        ArrayEmbedder,
        Block,
        BytesParser,
        Done,
        Embedder,
        FactoryContext,
        GenerateRequest,
        Index,
        IndexContext,
        LanguageModel,
        ModelRef,
        ParsedDocument,
        Parser,
        Problem,
        Progress,
        RegisterCommand,
        RegisterEmbedder,
        RegisterIndex,
        RegisterLanguageModel,
        RegisterParser,
        Retriever,
        SearchIndex,
        SnippetMaker,
        StoreView,
        StreamEvent,
        Token,
        TokenStartsEmbedder,
        VerdictOpening,
        hookimpl,
        make_snippet,
        score_mapping,
        similarity_floor,
        similarity_to_score,
    )
    from kb_core.types import SearchMode  # noqa: F401

__version__ = _metadata.version("kb-core")

__all__ = [
    "LIMITS",
    "SEARCH_MODES",
    "Answer",
    "AskOptions",
    "Cancelled",
    "Chunk",
    "Citation",
    "Config",
    "ConfigError",
    "Document",
    "Hit",
    "IngestReport",
    "IngestWarning",
    "KbError",
    "KnowledgeBase",
    "ModelUnavailableError",
    "NotFoundError",
    "SearchQuery",
    "SearchResponse",
    "StoredAnswer",
    "StoredAnswerNow",
    "Turn",
    "WriterBusyError",
    "ask",
    "ask_in_thread",
    "check_k",
    "check_mode",
    "check_path_glob",
    "check_text",
    "delete_thread",
    "ingest_paths",
    "inspect_target",
    "list_answers",
    "list_threads",
    "load_config",
    "open_kb",
    "remove_documents",
    "search",
    "stored_answer",
    "stored_thread",
]

#: Names this module exported before 0.2 and no longer does, each with the module that holds the same
#: object and what the warning says: every name of ``kb_core.plugin`` (all of them moved from here), and a
#: few that went private. They resolve until kb-core 0.3 (see ``__getattr__``).
_DEPRECATED: dict[str, tuple[str, str]] = {
    **{name: ("kb_core.plugin", f"moved to kb_core.plugin.{name}") for name in _plugin.__all__},
    "load_registry": ("kb_core.extend.registry", "moved to kb_core.testing.load_registry"),
    "Registry": ("kb_core.extend.registry", "is private; kb_core.testing.load_registry returns one"),
    "PluginError": ("kb_core.extend.registry", "is private; catch kb_core.KbError, its base"),
    "Limits": ("kb_core.limits", "is private; kb_core.LIMITS is the limits in force"),
    "SearchMode": ("kb_core.types", "is private; a mode is a str, one of kb_core.SEARCH_MODES"),
    "ignored_part": ("kb_core.ingest.source", "is private; kb_core.ingest_paths skips what .kbignore names"),
}


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use; an old name: the same object as its new home's,
    with a ``DeprecationWarning`` on every use."""
    if name in _PUBLIC:
        value = getattr(_importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # looked up once
        return value
    if name not in _DEPRECATED:
        raise AttributeError(f"module 'kb_core' has no attribute {name!r}")
    module, where = _DEPRECATED[name]
    caller = _sys._getframe(1)
    if caller.f_code.co_name != "_handle_fromlist":  # not the import system's look before ``from kb_core import``
        _warnings.warn(f"kb_core.{name} {where}; the old name goes in kb-core 0.3", DeprecationWarning, stacklevel=2)
    return getattr(_importlib.import_module(module), name)


def __dir__() -> list[str]:
    """The module's names, the public ones not imported yet included."""
    return sorted({*globals(), *_PUBLIC})
