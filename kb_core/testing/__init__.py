"""Test support for kb and its plugins: the contract test kit and fakes. Needs ``pip install kb-core[test]``.

Nothing on kb's runtime path imports this package. A plugin proves the role it fills by
subclassing a contract in its own tests (see ``docs/plugins.md``)::

    from kb_core.testing import IndexContract, LanguageModelContract, ParserContract, EmbedderContract

and tests the core's answer pipeline with a scripted model::

    from kb_core.testing import ScriptedLanguageModel  # CheckingLanguageModel also answers the answer check

and runs ingest, search and answers without an index engine installed (``TestIndexesPlugin``
registers ``test-lexical`` and ``test-vector``, a :class:`WordIndex` each). An index's own tests
get the real parts it works with: :class:`StoreOfRecord` (an index's ``IndexContext.store``) and
:func:`real_embedder` (an installed embedder, by name); :func:`load_registry` loads the installed plugins
(and, in process, ``extra_plugins``) as kb does, for a test that looks a registration up or hands
``KnowledgeBase`` a registry. An OCR engine proves itself with :class:`OcrEngineContract`; a parser
reads page images without one through :class:`ScriptedOcr` (registered by :class:`ScriptedOcrPlugin`), and
a parser that renders its pages to show proves it with :class:`PageRendererContract`; a store of
record (``register_stores``) with :class:`RecordStoreContract`, which the core's SQLite store passes too, and
a store several kb processes share (PostgreSQL) with :mod:`kb_core.testing.shared_store`'s
``SharedStoreContract`` as well.
Its pytest plugin (``pytest_plugin``) isolates every test's environment when a project asks for it.
"""

from kb_core.extend.registry import load_registry
from kb_core.testing.chat_server import FakeChatServer, Received, serve_chat
from kb_core.testing.contracts import (
    BytesParserContract,
    EmbedderContract,
    ParserContract,
    check_blocks,
    check_parsed,
)
from kb_core.testing.fakes import (
    CountingEmbedder,
    HashingEmbedder,
    default_ctrl_c,
    document_chunks,
    free_port,
    isolate_environment,
    store_document,
    unanswered_port,
)
from kb_core.testing.index_contract import CORPUS, IndexContract
from kb_core.testing.indexes import TestIndexesPlugin, WordIndex
from kb_core.testing.language_models import (
    CheckingLanguageModel,
    Script,
    ScriptedLanguageModel,
    ScriptedPlugin,
    extractive,
    following_up,
)
from kb_core.testing.model_contract import LanguageModelContract
from kb_core.testing.ocr import OcrEngineContract, ScriptedOcr, ScriptedOcrPlugin, blank_image
from kb_core.testing.real import StoreOfRecord, real_embedder
from kb_core.testing.render_contract import PageRendererContract
from kb_core.testing.store_contract import RecordStoreContract
from kb_core.testing.vector_index_contract import (
    OFF_TOPIC,
    ON_TOPIC,
    VECTOR_CORPUS,
    VectorIndexContract,
)

__all__ = [
    "CORPUS",
    "OFF_TOPIC",
    "ON_TOPIC",
    "VECTOR_CORPUS",
    "BytesParserContract",
    "CheckingLanguageModel",
    "CountingEmbedder",
    "EmbedderContract",
    "FakeChatServer",
    "HashingEmbedder",
    "IndexContract",
    "LanguageModelContract",
    "OcrEngineContract",
    "PageRendererContract",
    "ParserContract",
    "Received",
    "RecordStoreContract",
    "Script",
    "ScriptedLanguageModel",
    "ScriptedOcr",
    "ScriptedOcrPlugin",
    "ScriptedPlugin",
    "StoreOfRecord",
    "TestIndexesPlugin",
    "VectorIndexContract",
    "WordIndex",
    "blank_image",
    "check_blocks",
    "check_parsed",
    "default_ctrl_c",
    "document_chunks",
    "extractive",
    "following_up",
    "free_port",
    "isolate_environment",
    "load_registry",
    "real_embedder",
    "serve_chat",
    "store_document",
    "unanswered_port",
]
