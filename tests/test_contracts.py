"""The core's own plugins, and the kit's fakes, pass the contract test kit that third parties use."""

from __future__ import annotations

import functools

import pytest

from kb_core import Config
from kb_core.builtin.embedders.minilm import _minilm
from kb_core.builtin.parsers import CsvParser, HtmlParser, MarkdownParser, TextParser
from kb_core.plugin import Embedder, FactoryContext, LanguageModel, Parser
from kb_core.testing import (
    EmbedderContract,
    HashingEmbedder,
    LanguageModelContract,
    ParserContract,
    ScriptedLanguageModel,
)


class TestTextParser(ParserContract):
    has_headings = False

    @pytest.fixture
    def parser(self) -> Parser:
        return TextParser()


class TestMarkdownParser(ParserContract):
    samples = ("---\ntitle: Herons\n---\n# Herons\n\nThey nest in wetlands.\n\n## Chicks\n\n- fledge late\n",)
    sample_path = "notes/herons.md"

    @pytest.fixture
    def parser(self) -> Parser:
        return MarkdownParser()


class TestHtmlParser(ParserContract):
    samples = ("<html><head><title>Herons</title></head><body><h1>Herons</h1><p>They nest.</p></body></html>",)
    sample_path = "notes/herons.html"

    @pytest.fixture
    def parser(self) -> Parser:
        return HtmlParser()


class TestCsvParser(ParserContract):
    samples = ('Bird,Wingspan (cm),Habitat\nGrey heron,"185"\nLittle egret,95,"wetlands,\ncoasts"\n',)
    sample_path = "notes/herons.csv"
    has_headings = False

    @pytest.fixture
    def parser(self) -> Parser:
        return CsvParser()


@functools.cache
def _default_embedder() -> Embedder:
    return _minilm(FactoryContext(Config()))


class TestMiniLmEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        return _default_embedder()


class TestHashingEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        return HashingEmbedder()


class TestScriptedLanguageModel(LanguageModelContract):
    """The fake the core's tests use keeps the same contract as real backends."""

    @pytest.fixture
    def language_model(self) -> LanguageModel:
        return ScriptedLanguageModel(lambda request: ["one ", "two ", "three"])

    @pytest.fixture
    def unavailable_language_model(self):  # type: ignore[no-untyped-def]
        return lambda: ScriptedLanguageModel((), finish_reason="error", error="the script has no backend")
