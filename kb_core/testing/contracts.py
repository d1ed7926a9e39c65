"""The contract test kit: pytest classes that prove a plugin honours the role it fills.

Subclass one in your plugin's tests, give it the fixture it asks for, and pytest runs every
property the core relies on against your implementation::

    import pytest
    from kb_core.testing import ParserContract

    class TestOrgParser(ParserContract):
        samples = ("* Heading\\nSome text.\\n",)

        @pytest.fixture
        def parser(self):
            return OrgParser()

The classes are named ``...Contract`` (not ``Test...``) so pytest collects only your subclasses.
Index and language-model contracts live in :mod:`kb_core.testing.index_contract` and
:mod:`kb_core.testing.model_contract`; all four are exported by :mod:`kb_core.testing`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.errors import KbError
from kb_core.extend.contracts import BytesParser, Embedder, Parser
from kb_core.types import Block, ParsedDocument
from kb_core.writing_systems import SCRIPTS


def _line_count(text: str) -> int:
    from kb_core.builtin.parsers.blocks import split_lines

    return max(len(split_lines(text)), 1)


def check_parsed(document: ParsedDocument, text: str) -> None:
    """Assert what the core relies on from any parse of ``text``: a title, and blocks whose spans are real lines."""
    assert isinstance(document, ParsedDocument)
    assert isinstance(document.title, str)
    lines = _line_count(text)
    previous_start = 0
    for block in document.blocks:
        assert isinstance(block.text, str)
        assert 1 <= block.start_line <= block.end_line <= lines, (block.start_line, block.end_line, lines)
        assert block.start_line >= previous_start, "blocks come in document order"
        previous_start = block.start_line
        assert all(isinstance(h, str) and h for h in block.heading_path)
        assert not block.header or (block.kind == "table" and "\n" not in block.header), "header: a table's, one line"
        check_line_spans(block)
    assert all(isinstance(w, str) for w in document.warnings)


def check_line_spans(block: Block) -> None:
    """Assert that a block's ``line_spans``, when it has them, give each line of its text a span inside its own."""
    if not block.line_spans:
        return
    assert len(block.line_spans) == block.text.count("\n") + 1, "one span for each line of the text"
    assert block.line_spans_fit(), (block.line_spans, block.start_line, block.end_line)


class ParserContract:
    """What every Parser must do. Provide a ``parser`` fixture and ``samples`` in your format."""

    #: Realistic documents in the parser's format; at least one should have a heading.
    samples: Sequence[str] = ("Title\n\nA first paragraph.\n\nA second one.\n",)
    #: Whether the format has headings that the parser turns into heading paths.
    has_headings: bool = True
    #: The path the samples are parsed under (its extension may matter to the parser).
    sample_path: str = "notes/sample.txt"

    @pytest.fixture
    def parser(self) -> Parser:
        """The parser under test."""
        raise NotImplementedError("define a 'parser' fixture in your ParserContract subclass")

    def test_samples_parse_to_blocks_with_real_line_spans(self, parser: Parser) -> None:
        for text in self.samples:
            document = parser.parse(text, self.sample_path)
            check_parsed(document, text)
            assert document.blocks, "a sample with content gives at least one block"

    def test_headings_become_heading_paths(self, parser: Parser) -> None:
        paths = [b.heading_path for text in self.samples for b in parser.parse(text, self.sample_path).blocks]
        assert any(paths) == self.has_headings

    def test_verbatim_blocks_are_exactly_their_source_lines(self, parser: Parser) -> None:
        from kb_core.builtin.parsers.blocks import split_lines

        for text in self.samples:
            lines = split_lines(text)
            for block in parser.parse(text, self.sample_path).blocks:
                if block.verbatim:
                    assert block.text == "\n".join(lines[block.start_line - 1 : block.end_line])

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(text=st.text(max_size=400))
    def test_any_text_parses_without_raising(self, parser: Parser, text: str) -> None:
        check_parsed(parser.parse(text, self.sample_path), text)


def check_blocks(document: ParsedDocument) -> None:
    """Assert the block invariants that hold whatever the source: spans from 1, in order, named headings."""
    assert isinstance(document, ParsedDocument) and isinstance(document.title, str)
    previous_start = 0
    for block in document.blocks:
        assert 1 <= block.start_line <= block.end_line and block.start_line >= previous_start
        previous_start = block.start_line
        assert all(isinstance(h, str) and h for h in block.heading_path)
        assert not block.header or (block.kind == "table" and "\n" not in block.header), "header: a table's, one line"
        check_line_spans(block)


class BytesParserContract:
    """What a parser of a binary format (a :class:`~kb_core.extend.contracts.BytesParser`) must do.

    Provide a ``parser`` fixture and ``samples``: real files of the format, as bytes. Any bytes
    either parse or fail with one :class:`~kb_core.errors.KbError` line (the reason kb shows).
    """

    samples: Sequence[bytes] = ()
    sample_path: str = "docs/sample.bin"

    @pytest.fixture
    def parser(self) -> Any:
        """The parser under test (it has ``parse_bytes``)."""
        raise NotImplementedError("define a 'parser' fixture in your BytesParserContract subclass")

    def test_it_reads_bytes(self, parser: Any) -> None:
        assert isinstance(parser, BytesParser)
        assert self.samples, "give at least one sample file"

    def test_samples_parse_to_ordered_blocks(self, parser: Any) -> None:
        for data in self.samples:
            document = parser.parse_bytes(data, self.sample_path)
            check_blocks(document)
            assert document.blocks, "a sample with content gives at least one block"

    @staticmethod
    def _parses_or_fails_in_one_line(parser: Any, data: bytes, path: str) -> None:
        try:
            document = parser.parse_bytes(data, path)
        except KbError as error:
            assert error.message.strip() and "\n" not in error.message
        else:
            check_blocks(document)

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(data=st.binary(max_size=2000), cut=st.floats(0, 1), flips=st.lists(st.integers(0, 2**31), max_size=8))
    def test_any_bytes_parse_or_fail_in_one_line(self, parser: Any, data: bytes, cut: float, flips: list[int]) -> None:
        self._parses_or_fails_in_one_line(parser, data, self.sample_path)
        for sample in self.samples:
            damaged = bytearray(sample[: max(1, int(len(sample) * cut))])
            for flip in flips:
                damaged[flip % len(damaged)] ^= 0xFF
            self._parses_or_fails_in_one_line(parser, bytes(damaged), self.sample_path)


class EmbedderContract:
    """What every Embedder must do. Provide an ``embedder`` fixture."""

    texts: Sequence[str] = ("Herons nest in the wetlands.", "The lighthouse keeper logs every ship.", "x")

    @pytest.fixture
    def embedder(self) -> Embedder:
        """The embedder under test."""
        raise NotImplementedError("define an 'embedder' fixture in your EmbedderContract subclass")

    @staticmethod
    def _assert_unit(vector: Sequence[float], dimensions: int) -> None:
        assert len(vector) == dimensions
        assert math.isclose(math.sqrt(sum(float(x) * float(x) for x in vector)), 1.0, abs_tol=1e-3)

    def test_declares_what_it_is(self, embedder: Embedder) -> None:
        assert embedder.model_ref.id
        assert embedder.max_tokens > 0
        assert embedder.scripts is None or set(embedder.scripts) <= set(SCRIPTS)
        assert all(-1.0 <= float(v) <= 1.0 for v in embedder.similarity_floors.values())

    def test_documents_and_queries_are_unit_vectors_of_the_declared_dimension(self, embedder: Embedder) -> None:
        vectors = embedder.embed_documents(list(self.texts))
        assert len(vectors) == len(self.texts)
        for vector in [*vectors, embedder.embed_query(self.texts[0])]:
            self._assert_unit(vector, embedder.dimensions)

    def test_the_same_text_gives_the_same_vector(self, embedder: Embedder) -> None:
        first, second = embedder.embed_documents([self.texts[0], self.texts[0]])
        assert all(math.isclose(float(a), float(b), abs_tol=1e-5) for a, b in zip(first, second))

    def test_token_counts_are_per_text_and_grow_with_the_text(self, embedder: Embedder) -> None:
        short, long = embedder.count_tokens(["heron", "heron " * 40])
        assert 0 <= short < long
        assert embedder.count_tokens([]) == []
