"""kb: a local knowledge base you can ask questions.

This module is kb's public surface: plugins and applications import from ``kb_core`` only,
never from its submodules, whose layout may change. Everything listed in ``__all__`` is stable
within a minor version.

Open a knowledge base, ingest a folder, search it and ask it::

    import kb_core

    with kb_core.open_kb(kb_dir="~/kb") as kb:
        kb_core.ingest_paths(kb, [Path("~/notes").expanduser()])
        for hit in kb_core.search(kb, kb_core.SearchQuery(text="backups", mode="hybrid", k=5)).hits:
            print(hit.citation, hit.score)
        answer = kb_core.ask(kb, "How are backups verified?")
        print(answer.answer if answer.grounded else answer.note)

Two submodules are public too: :mod:`kb_core.testing` (fakes and the contract test kit) and
:mod:`kb_core.writing_systems` (which scripts a text is written in).

Write a plugin: a module with functions marked :data:`hookimpl`, found through the
entry-point group ``kb`` (see :mod:`kb_core.extend.hookspecs` and ``docs/plugins.md``). A command a
plugin registers receives the global options through :data:`pass_session` (``session.kb()``
opens the knowledge base), prints with :func:`emit` and :func:`json_option`, and reports
mistakes by raising :class:`KbError`, which ``kb`` prints as one line with its exit code (2
unless the error names another).
"""

from importlib import metadata as _metadata

from kb_core.answers.pipeline import AskOptions, ask
from kb_core.app import KnowledgeBase, open_kb
from kb_core.cli.base import Session, emit, error_line, json_option, pass_session, terminal_progress
from kb_core.config import Config, load_config
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
    ModelContext,
    Parser,
    Retriever,
    SearchIndex,
    SnippetMaker,
    StoreView,
    TokenStartsEmbedder,
    modeled_scripts,
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
from kb_core.limits import GLOB_HELP, LIMITS, Limits, check_k, check_path_glob, check_text, glob_problem
from kb_core.maintenance import DoctorReport, doctor_report, inspect_target
from kb_core.output import dumps, envelope
from kb_core.retrieval.search import SearchResponse, search
from kb_core.retrieval.vectors import make_snippet, score_mapping, similarity_to_score
from kb_core.storage.sqlite_files import storage_error
from kb_core.terminal import shown
from kb_core.types import (
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
    "DoctorReport",
    "Document",
    "Done",
    "Embedder",
    "FactoryContext",
    "GLOB_HELP",
    "GenerateRequest",
    "Hit",
    "Index",
    "IndexContext",
    "IngestReport",
    "IngestWarning",
    "KbError",
    "KnowledgeBase",
    "LIMITS",
    "LanguageModel",
    "Limits",
    "ModelContext",
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
    "SearchMode",
    "SearchIndex",
    "SearchQuery",
    "SearchResponse",
    "Session",
    "SnippetMaker",
    "StoreView",
    "StreamEvent",
    "Token",
    "TokenStartsEmbedder",
    "VerdictOpening",
    "WriterBusyError",
    "ask",
    "check_k",
    "check_path_glob",
    "check_text",
    "doctor_report",
    "dumps",
    "emit",
    "envelope",
    "error_line",
    "glob_problem",
    "hookimpl",
    "ignored_part",
    "ingest_paths",
    "inspect_target",
    "json_option",
    "load_config",
    "load_registry",
    "make_snippet",
    "modeled_scripts",
    "open_kb",
    "pass_session",
    "remove_documents",
    "score_mapping",
    "search",
    "shown",
    "similarity_floor",
    "similarity_to_score",
    "storage_error",
    "terminal_progress",
]
