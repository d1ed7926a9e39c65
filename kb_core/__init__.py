"""kb: a local knowledge base you can ask questions.

This module is kb's public surface: plugins and applications import from ``kb_core`` only,
never from its submodules, whose layout may change. Everything listed in ``__all__`` is stable
within a minor version. Open a knowledge base, ingest a folder, search it and ask it::

    import kb_core

    with kb_core.open_kb(kb_dir="~/kb") as kb:
        kb_core.ingest_paths(kb, [Path("~/notes").expanduser()])
        for hit in kb_core.search(kb, kb_core.SearchQuery(text="backups", mode="hybrid", k=5)).hits:
            print(hit.citation, hit.score)
        answer = kb_core.ask(kb, "How are backups verified?")
        print(answer.answer if answer.grounded else answer.note)
        turn = kb_core.ask_in_thread(kb, "How often?", thread_id=None)  # a thread; follow-ups pass its id

Write a plugin: a module with functions marked :data:`hookimpl`, found through the entry-point
group ``kb`` (``docs/plugins.md``), that registers factories of the contracts below. Three
submodules are public too: :mod:`kb_core.commands` (what a command added to ``kb`` needs),
:mod:`kb_core.testing` (fakes, the contract test kit, and a pytest plugin) and
:mod:`kb_core.writing_systems` (which scripts a text is written in).
"""

from importlib import metadata as _metadata

# The library: open, ingest, search, ask.
from kb_core.answers.pipeline import AskOptions, ask
from kb_core.app import KnowledgeBase, open_kb
from kb_core.config import Config, load_config
from kb_core.conversations import Turn, ask_in_thread

# What plugins fill in, and what they exchange.
from kb_core.errors import Cancelled, ConfigError, KbError, ModelUnavailableError, NotFoundError, WriterBusyError
from kb_core.extend.contracts import (
    AnswerChecker,
    ArrayEmbedder,
    BytesParser,
    Embedder,
    FactoryContext,
    Index,
    IndexContext,
    LanguageModel,
    Parser,
    Retriever,
    SearchIndex,
    SnippetMaker,
    StoreView,
    TokenStartsEmbedder,
    similarity_floor,
)
from kb_core.extend.hookspecs import (
    RegisterCommand,
    RegisterEmbedder,
    RegisterIndex,
    RegisterLanguageModel,
    RegisterParser,
    hookimpl,
)
from kb_core.extend.registry import PluginError, Registry, load_registry
from kb_core.ingest.pipeline import IngestReport, ingest_paths, remove_documents
from kb_core.ingest.source import ignored_part

# The bounds every interface shares.
from kb_core.limits import LIMITS, Limits, check_k, check_mode, check_path_glob, check_text
from kb_core.maintenance import inspect_target
from kb_core.retrieval.search import SearchResponse, search
from kb_core.retrieval.vectors import make_snippet, score_mapping, similarity_to_score
from kb_core.storage.answers import StoredAnswer, StoredAnswerNow, list_answers, stored_answer
from kb_core.storage.threads import delete_thread, list_threads, stored_thread
from kb_core.types import (
    SEARCH_MODES,
    Answer,
    Block,
    Chunk,
    Citation,
    Document,
    Done,
    GenerateRequest,
    Hit,
    IngestWarning,
    ModelRef,
    ParsedDocument,
    Problem,
    Progress,
    SearchMode,
    SearchQuery,
    StreamEvent,
    Token,
    VerdictOpening,
)

__version__ = _metadata.version("kb-core")

__all__ = [
    "LIMITS",
    "SEARCH_MODES",
    "Answer",
    "AnswerChecker",
    "ArrayEmbedder",
    "AskOptions",
    "Block",
    "BytesParser",
    "Cancelled",
    "Chunk",
    "Citation",
    "Config",
    "ConfigError",
    "Document",
    "Done",
    "Embedder",
    "FactoryContext",
    "GenerateRequest",
    "Hit",
    "Index",
    "IndexContext",
    "IngestReport",
    "IngestWarning",
    "KbError",
    "KnowledgeBase",
    "LanguageModel",
    "Limits",
    "ModelRef",
    "ModelUnavailableError",
    "NotFoundError",
    "ParsedDocument",
    "Parser",
    "PluginError",
    "Problem",
    "Progress",
    "RegisterCommand",
    "RegisterEmbedder",
    "RegisterIndex",
    "RegisterLanguageModel",
    "RegisterParser",
    "Registry",
    "Retriever",
    "SearchIndex",
    "SearchMode",
    "SearchQuery",
    "SearchResponse",
    "SnippetMaker",
    "StoreView",
    "StoredAnswer",
    "StoredAnswerNow",
    "StreamEvent",
    "Token",
    "TokenStartsEmbedder",
    "Turn",
    "VerdictOpening",
    "WriterBusyError",
    "ask",
    "ask_in_thread",
    "check_k",
    "check_mode",
    "check_path_glob",
    "check_text",
    "delete_thread",
    "hookimpl",
    "ignored_part",
    "ingest_paths",
    "inspect_target",
    "list_answers",
    "list_threads",
    "load_config",
    "load_registry",
    "make_snippet",
    "open_kb",
    "remove_documents",
    "score_mapping",
    "search",
    "similarity_floor",
    "similarity_to_score",
    "stored_answer",
    "stored_thread",
]
