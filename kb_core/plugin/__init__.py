"""What a plugin author needs to add an engine to kb: a parser, an embedder, an index, a language model,
an OCR engine or a command.

A plugin is a module with functions marked :data:`hookimpl`, named after kb's hooks and found
through the entry-point group ``kb``. Each hook receives a typed ``register`` callable; a plugin
registers a factory, which kb calls with a :class:`FactoryContext` only when the thing it makes is
chosen. The factory returns an object that fills one of the contracts below (``Parser``,
``Embedder``, ``SearchIndex``, ``LanguageModel``), exchanging the engine values below with the core::

    from kb_core.plugin import ParsedDocument, RegisterParser, hookimpl


    class OrgParser:
        def parse(self, text: str, path: str) -> ParsedDocument:
            ...  # the title, and a Block for each paragraph with its line span and heading path


    @hookimpl
    def register_parsers(register: RegisterParser) -> None:
        register("org", lambda ctx: OrgParser(), extensions=(".org",), licence="Apache-2.0")

and, in the plugin's ``pyproject.toml`` (``examples/kb-org`` in kb's repository is the whole plugin)::

    [project.entry-points.kb]
    org = "kb_org"

The values an application sees too (``Chunk``, ``Document``, ``SearchQuery``, ``Hit``,
``Citation``), the configuration (``Config``) and the errors (``KbError`` and its kinds) come from
:mod:`kb_core` itself. A backend that talks to a server over HTTP shares its messages through
:mod:`kb_core.plugin.remote`; a command's helpers are :mod:`kb_core.commands`; tests use
:mod:`kb_core.testing` (the contract test kit). Everything in ``__all__`` is stable within a minor
version; ``docs/plugins.md`` describes each name.
"""

from kb_core.extend.contracts import (
    AnswerChecker,
    ArrayEmbedder,
    BytesParser,
    Embedder,
    FactoryContext,
    Index,
    IndexContext,
    LanguageModel,
    OcrEngine,
    Parser,
    ParserContext,
    Preloadable,
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
    RegisterOcrEngine,
    RegisterParser,
    hookimpl,
)
from kb_core.retrieval.vectors import make_snippet, score_mapping, similarity_to_score
from kb_core.types import (
    Block,
    Done,
    GenerateRequest,
    ModelRef,
    OcrImage,
    OcrLine,
    ParsedDocument,
    Problem,
    Progress,
    StreamEvent,
    Token,
    VerdictOpening,
)

__all__ = [
    "AnswerChecker",
    "ArrayEmbedder",
    "Block",
    "BytesParser",
    "Done",
    "Embedder",
    "FactoryContext",
    "GenerateRequest",
    "Index",
    "IndexContext",
    "LanguageModel",
    "ModelRef",
    "OcrEngine",
    "OcrImage",
    "OcrLine",
    "ParsedDocument",
    "Parser",
    "ParserContext",
    "Preloadable",
    "Problem",
    "Progress",
    "RegisterCommand",
    "RegisterEmbedder",
    "RegisterIndex",
    "RegisterLanguageModel",
    "RegisterOcrEngine",
    "RegisterParser",
    "Retriever",
    "SearchIndex",
    "SnippetMaker",
    "StoreView",
    "StreamEvent",
    "Token",
    "TokenStartsEmbedder",
    "VerdictOpening",
    "hookimpl",
    "make_snippet",
    "score_mapping",
    "similarity_floor",
    "similarity_to_score",
]
