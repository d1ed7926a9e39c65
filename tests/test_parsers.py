"""The built-in parsers: exact line spans, heading paths, frontmatter, and never raising on any text."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core.builtin.parsers import (
    CsvParser,
    HtmlParser,
    MarkdownParser,
    TextParser,
    delimited,
    read_frontmatter,
    split_lines,
)
from kb_core.extend.contracts import Parser
from kb_core.extend.registry import load_registry
from kb_core.types import Block, ParsedDocument

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CORPUS = FIXTURES / "corpus"
BAD = FIXTURES / "bad"
PARSERS: dict[str, Parser] = {"text": TextParser(), "markdown": MarkdownParser(), "html": HtmlParser()}
BY_SUFFIX = {".txt": "text", ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}
CORPUS_FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in BY_SUFFIX)
BAD_FILES = sorted(p for p in BAD.iterdir() if p.is_file() and p.name != "README.md")
PROPERTY = settings(max_examples=150, deadline=None)


# ---------------------------------------------------------------------------------------------
# helpers


def parse(path: Path) -> tuple[ParsedDocument, list[str]]:
    """Parse a fixture with the parser its suffix selects; also return its lines."""
    text = path.read_text(encoding="utf-8")
    return PARSERS[BY_SUFFIX[path.suffix]].parse(text, path.relative_to(FIXTURES).as_posix()), split_lines(text)


def block_with(doc: ParsedDocument, needle: str) -> Block:
    """The one block whose text contains ``needle``."""
    found = [b for b in doc.blocks if needle in b.text]
    assert len(found) == 1, f"{needle!r} is in {len(found)} blocks"
    return found[0]


def assert_well_formed(doc: ParsedDocument, text: str, *, shared_lines: bool = False) -> None:
    """Spans inside the document, in order and not overlapping (HTML blocks may share a line)."""
    line_count = len(split_lines(text))
    previous_end = 0
    for block in doc.blocks:
        assert 1 <= block.start_line <= block.end_line <= line_count, block
        assert block.start_line >= previous_end if shared_lines else block.start_line > previous_end, block
        assert block.text.strip(), block
        assert all(part.strip() for part in block.heading_path), block
        previous_end = block.end_line
    assert isinstance(doc.title, str) and doc.title


def assert_text_in_span(doc: ParsedDocument, lines: list[str], *, verbatim: bool) -> None:
    """Every block's text comes from its own lines: verbatim, or word by word for HTML."""
    for block in doc.blocks:
        source = "\n".join(lines[block.start_line - 1 : block.end_line])
        if verbatim:
            assert block.text == source, block
        else:
            unescaped = html.unescape(source)
            missing = [w for w in block.text.split() if w not in unescaped and w != "-" and w != "|"]
            assert not missing, (block, missing)


# ---------------------------------------------------------------------------------------------
# registration and the corpus


def test_entry_point_registers_the_four_parsers_with_their_extensions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KB_LOAD_PLUGINS", "parsers")
    registry = load_registry()
    assert registry.names("parsers") == ["csv", "html", "markdown", "text"]
    assert set(registry.get("parsers", "csv").info["extensions"]) == {".csv", ".tsv"}
    assert set(registry.get("parsers", "markdown").info["extensions"]) == {".md", ".markdown", ".mdx"}
    assert set(registry.get("parsers", "html").info["extensions"]) >= {".html", ".htm"}
    assert ".txt" in registry.get("parsers", "text").info["extensions"]
    parser = registry.get("parsers", "markdown").factory(None)
    assert isinstance(parser, Parser)
    doc = parser.parse((CORPUS / "notes" / "heliograph.md").read_text(encoding="utf-8"), "notes/heliograph.md")
    assert doc.title == "Heliograph Controller Guide"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.relative_to(CORPUS).as_posix())
def test_every_corpus_file_parses_into_exact_spans(path: Path) -> None:
    doc, lines = parse(path)
    kind = BY_SUFFIX[path.suffix]
    assert doc.blocks and not doc.warnings
    assert_well_formed(doc, path.read_text(encoding="utf-8"), shared_lines=kind == "html")
    assert_text_in_span(doc, lines, verbatim=kind != "html")


def test_corpus_has_the_promised_shape() -> None:
    names = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    assert 8 <= len(names) <= 14
    assert {n.split("/")[0] for n in names} >= {"notes", "ko", "zh", "web"}
    assert any(not n.isascii() for n in names), "one file name must be non-ASCII"
    assert {Path(n).suffix for n in names} >= {".md", ".markdown", ".txt", ".html", ".htm"}


# ---------------------------------------------------------------------------------------------
# Markdown


def test_markdown_yaml_frontmatter_becomes_json_ready_metadata_and_title() -> None:
    doc, _ = parse(CORPUS / "notes" / "heliograph.md")
    assert doc.title == "Heliograph Controller Guide"
    assert doc.metadata["version"] == "2.3.0"
    assert doc.metadata["tags"] == ["solar", "tracking", "controller"]
    assert doc.metadata["updated"] == "2024-06-18"  # a YAML date, stored as an ISO string
    assert all("maintainer: Ines" not in b.text for b in doc.blocks)


def test_markdown_toml_frontmatter() -> None:
    doc, _ = parse(CORPUS / "notes" / "release-process.md")
    assert doc.title == "Heliograph Release Process"
    assert doc.metadata == {
        "title": "Heliograph Release Process",
        "owner": "release team",
        "cadence_weeks": 6,
        "reviewed": "2024-05-02",
    }
    assert doc.blocks[0].start_line == 8  # the first line after the frontmatter and a blank line


def test_markdown_heading_paths_nest_three_levels_and_pop() -> None:
    doc, lines = parse(CORPUS / "notes" / "heliograph.md")
    assert block_with(doc, "0.15 degrees").heading_path == ("Heliograph",)
    assert block_with(doc, "pip install heliograph").heading_path == ("Heliograph", "Installation", "From a package")
    assert block_with(doc, "stow angle of 12").heading_path == ("Heliograph", "Operation", "Wind protection")
    assert block_with(doc, "signalling mirrors").heading_path == ("Heliograph", "Project")
    port = block_with(doc, "port = 7341")
    assert lines.index("port = 7341") + 1 in range(port.start_line, port.end_line + 1)


def test_markdown_comment_lines_inside_fences_are_not_headings() -> None:
    doc, _ = parse(CORPUS / "notes" / "heliograph.md")
    fence = block_with(doc, "# install the controller")
    assert fence.kind == "code" and fence.text.rstrip().endswith("```")
    toml = block_with(doc, "# heliograph.toml")
    assert toml.kind == "code" and toml.heading_path == ("Heliograph", "Installation", "Configuration file")
    all_headings = {h for b in doc.blocks for h in b.heading_path}
    assert not any("install the controller" in h or h == "heliograph.toml" for h in all_headings)


def test_markdown_tables_and_lists_stay_whole_with_their_heading() -> None:
    doc, lines = parse(CORPUS / "notes" / "heliograph.md")
    table = block_with(doc, "| follow |")
    assert table.kind == "table"
    assert "| stow |" in table.text and "| night |" in table.text
    assert lines[table.start_line - 1].startswith("| ")  # a table's first line is its header row
    before = doc.blocks[doc.blocks.index(table) - 2 : doc.blocks.index(table)]  # its headings stay blocks of their own
    assert [(b.kind, b.text) for b in before] == [("heading", "## Operation"), ("heading", "### Tracking modes")]
    assert table.heading_path == ("Heliograph", "Operation", "Tracking modes")
    steps = block_with(parse(CORPUS / "notes" / "release-process.md")[0], "1. Run the hardware")
    assert steps.kind == "list" and "4. Announce" in steps.text


def test_markdown_setext_headings_and_title_from_first_h1() -> None:
    doc, _ = parse(CORPUS / "notes" / "ops" / "runbook.markdown")
    assert doc.title == "Heliograph operations runbook"
    assert block_with(doc, "4.5 amperes").heading_path == ("Heliograph operations runbook", "Alerts", "Motor stall")
    assert block_with(doc, "helio-hw").heading_path == ("Heliograph operations runbook", "Escalation")


def test_markdown_cjk_headings() -> None:
    doc, _ = parse(CORPUS / "ko" / "김치찌개.md")
    assert doc.title == "김치찌개 끓이는 법"
    assert block_with(doc, "15분 동안").heading_path == ("김치찌개", "만드는 법", "끓이기")
    tea, _ = parse(CORPUS / "zh" / "tea.md")
    assert block_with(tea, "80至85摄氏度").heading_path == ("中国茶", "冲泡方法", "绿茶")


def test_markdown_title_falls_back_to_first_h1_then_file_name() -> None:
    parser = MarkdownParser()
    assert parser.parse("intro\n\n## Two\n\n# One *big*\n", "a/b.md").title == "One big"
    assert parser.parse("just text\n", "docs/notes.md").title == "notes.md"
    assert parser.parse("---\ntitle: 42\n---\n# H\n", "x.md").title == "42"


def test_markdown_heading_without_content_is_its_own_block() -> None:
    doc = MarkdownParser().parse("# A\n\n## B\n\n# C\n\ntext\n", "x.md")
    assert [(b.kind, b.start_line, b.end_line, b.heading_path) for b in doc.blocks] == [
        ("heading", 1, 1, ("A",)),
        ("heading", 3, 3, ("A", "B")),
        ("paragraph", 5, 7, ("C",)),
    ]


def test_byte_order_mark_does_not_hide_the_first_heading_or_title() -> None:
    doc = MarkdownParser().parse("\ufeff# Title\n\ntext\n", "x.md")
    assert doc.title == "Title" and doc.blocks[0].heading_path == ("Title",)
    assert HtmlParser().parse("\ufeff<h1>T</h1>", "x.html").blocks[0].text == "T"
    assert TextParser().parse("\ufeffFirst line\n", "x.txt").title == "First line"


def test_markdown_list_spans_end_at_their_last_item_not_the_blank_line_after() -> None:
    doc = MarkdownParser().parse("- a\n\n- b\n\nc\n", "x.md")
    assert [(b.kind, b.start_line, b.end_line) for b in doc.blocks] == [("list", 1, 3), ("paragraph", 5, 5)]


def test_markdown_line_endings_crlf_and_cr_count_as_one_line_each() -> None:
    doc = MarkdownParser().parse("# T\r\n\r\npara\rmore\r\n\r\n```\r\n# x\r\n```\r\n", "x.md")
    assert [(b.start_line, b.end_line, b.kind) for b in doc.blocks] == [(1, 4, "paragraph"), (6, 8, "code")]


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ('---\ntitle: "unclosed\n---\n# After\n\nbody\n', "invalid YAML"),
        ("---\n- a\n- b\n---\n# After\n\nbody\n", "not a mapping"),
        ("+++\ntitle = \n+++\n# After\n\nbody\n", "invalid TOML"),
        ("---\nwhen: 2024-13-45\n---\n# After\n\nbody\n", "invalid YAML"),
        (
            "---\na: &a [1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
            "d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\n---\n# After\n\nbody\n",
            "too large",
        ),
        ("---\nself: &s {me: *s}\n---\n# After\n\nbody\n", "too large"),
    ],
)
def test_markdown_malformed_frontmatter_is_skipped_with_a_warning(source: str, reason: str) -> None:
    doc = MarkdownParser().parse(source, "x.md")
    assert len(doc.warnings) == 1 and reason in doc.warnings[0]
    assert doc.metadata == {}
    assert doc.title == "After"
    assert [(b.text, b.heading_path) for b in doc.blocks][-1] == ("# After\n\nbody", ("After",))


def test_markdown_unclosed_frontmatter_is_parsed_as_text() -> None:
    doc, lines = parse(BAD / "unclosed-frontmatter.md")
    assert "never closed" in doc.warnings[0]
    assert block_with(doc, "must still be indexed").heading_path == ("Heading after unclosed frontmatter",)
    assert block_with(doc, "title: Never closed").start_line == 2
    assert_text_in_span(doc, lines, verbatim=True)


def test_frontmatter_reader_reports_the_lines_it_used() -> None:
    assert read_frontmatter(["---", "a: 1", "...", "body"]).line_count == 3
    assert read_frontmatter(["\ufeff+++", "a = 1", "+++"]).metadata == {"a": 1}
    assert read_frontmatter(["# no frontmatter"]).line_count == 0
    assert read_frontmatter([]).warning is None


# ---------------------------------------------------------------------------------------------
# HTML


def test_html_title_metadata_and_removed_chrome() -> None:
    doc, _ = parse(CORPUS / "web" / "tomatoes.html")
    assert doc.title == "Growing Tomatoes at Greenhill Allotments"
    assert doc.metadata == {"lang": "en", "description": "The Greenhill Allotment Society's guide to growing tomatoes."}
    everything = "\n".join(b.text for b in doc.blocks)
    for removed in ("Plot rental", "analytics", "not a heading", "font-family"):
        assert removed not in everything


def test_html_headings_set_paths_and_spans_point_at_the_source() -> None:
    doc, lines = parse(CORPUS / "web" / "tomatoes.html")
    spacing = block_with(doc, "45 cm apart")
    assert spacing.heading_path == ("Growing tomatoes", "Planting out", "Spacing")
    assert lines[spacing.start_line - 1].strip() == "<h2>Planting out</h2>"
    assert "Plant cordon tomatoes" in lines[spacing.end_line - 1]
    feeding = block_with(doc, "high-potash")
    assert feeding.kind == "list" and feeding.heading_path[-1] == "Watering & feeding"
    assert "- Water deeply, about 2.5 cm of water a week." in feeding.text.splitlines()
    assert "Pinch out side shoots" in lines[feeding.end_line - 1]  # spans follow the text, not the tags
    table = block_with(doc, "Brandywine | beefsteak | 90")
    assert table.kind == "table" and "Brandywine" in lines[table.end_line - 1]
    code = block_with(doc, "# blight check")
    assert code.kind == "code" and code.text.endswith("look under the lowest leaves first")
    assert block_with(doc, "brown patches").kind == "quote"
    assert block_with(doc, "6 mm deep, at 21°C").heading_path == ("Growing tomatoes", "Sowing")


def test_html_without_title_or_closing_tags() -> None:
    doc, lines = parse(CORPUS / "web" / "composting.htm")
    assert doc.title == "Hot composting in 18 days"
    assert all("tracking pixel" not in b.text and "Compost\n" not in b.text for b in doc.blocks)
    first = block_with(doc, "Berkeley method")
    assert (first.start_line, first.end_line) == (4, 5)  # <h1> folded in; the unclosed <p> ends at its text
    assert block_with(doc, "1 metre high").start_line == 6
    avoid = block_with(doc, "dairy products")
    assert avoid.text.splitlines()[1:] == ["- meat or fish", "- dairy products", "- diseased plants"]
    assert block_with(doc, "55 to 65 °C").heading_path == ("Hot composting in 18 days", "Turning")
    assert_text_in_span(doc, lines, verbatim=False)


def test_html_blocks_on_one_line_share_it() -> None:
    text = "<h1>T</h1><p>a</p><p>b</p>\n<p>c</p>"
    doc = HtmlParser().parse(text, "x.html")
    assert [(b.text, b.start_line, b.end_line) for b in doc.blocks] == [("T\na", 1, 1), ("b", 1, 1), ("c", 2, 2)]
    assert_well_formed(doc, text, shared_lines=True)


def test_html_nested_lists_are_indented() -> None:
    doc = HtmlParser().parse("<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>", "x.html")
    assert doc.blocks[0].text == "- a\n  - b\n- c"


def test_html_pre_keeps_indentation_and_lists_cap_theirs() -> None:
    doc = HtmlParser().parse("<pre>\n    x = 1\n      y</pre>\n" + "<ul><li>" * 20 + "deep", "x.html")
    assert (doc.blocks[0].text, doc.blocks[0].start_line, doc.blocks[0].end_line) == ("    x = 1\n      y", 2, 3)
    assert doc.blocks[1].text.splitlines()[-1] == "  " * 8 + "- deep"


def test_html_markup_that_trips_the_tokenizer_is_defused_line_for_line() -> None:
    text = "<p>a</p>\n<![if !IE]>b<![endif]>\n<p>c < d\n<!-- never closed\n<p>hidden</p>"
    doc = HtmlParser().parse(text, "x.html")
    assert [(b.text, b.start_line) for b in doc.blocks] == [("a", 1), ("b", 2), ("c < d", 3)]
    assert doc.warnings == ()


# ---------------------------------------------------------------------------------------------
# plain text


def test_text_paragraphs_and_title() -> None:
    doc, lines = parse(CORPUS / "notes" / "CHANGELOG.txt")
    assert doc.title == "Heliograph changelog"
    assert block_with(doc, "bifacial").start_line == 3
    assert_text_in_span(doc, lines, verbatim=True)


def test_text_counts_only_cr_and_lf_as_line_breaks() -> None:
    doc = TextParser().parse("a\r\nb\r\n\r\nc\x0cstill c\u2028still c\rd\n", "x.txt")
    assert [(b.text, b.start_line, b.end_line) for b in doc.blocks] == [
        ("a\nb", 1, 2),
        ("c\x0cstill c\u2028still c\nd", 4, 5),
    ]
    assert split_lines("a\r\n\rb\n") == ["a", "", "b"] and split_lines("") == []


# ---------------------------------------------------------------------------------------------
# inputs that must never stop an ingest


@pytest.mark.parametrize("path", BAD_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_bad_inputs_never_raise(path: Path, name: str) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    doc = PARSERS[name].parse(text, f"bad/{path.name}")
    assert_well_formed(doc, text, shared_lines=name == "html")
    if not text.strip():
        assert doc.blocks == () and doc.title == path.name


def test_bad_markdown_frontmatter_still_indexes_the_body() -> None:
    doc, lines = parse(BAD / "malformed-frontmatter.md")
    assert "invalid YAML frontmatter (lines 1-5)" in doc.warnings[0]
    assert block_with(doc, "blue heron").heading_path == ("Still parsed",)
    assert all("Unclosed quote" not in b.text for b in doc.blocks)
    assert_text_in_span(doc, lines, verbatim=True)


def test_broken_html_keeps_what_it_can() -> None:
    doc, lines = parse(BAD / "broken.html")
    assert doc.title == "Broken page"
    table = block_with(doc, "cell one | cell two")
    assert table.kind == "table" and table.start_line == 4
    after = block_with(doc, "after the table &bogus;")  # inside the unclosed table; entities decoded or kept
    assert after.end_line == 5 and "\ufffd" in after.text
    assert block_with(doc, "marked section").start_line == 3
    assert all("never closed" not in b.text for b in doc.blocks)


# ---------------------------------------------------------------------------------------------
# properties: never raise, exact and ordered spans, real headings only

ANY_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from("가나다한국어中文長城茶\x00\x0b\x0c\x1c\x85\u2028\u2029\ufeff\r\n\t #-=|`~<>&;+*_[]()!"),
    ),
    max_size=400,
)
NEWLINES = st.sampled_from(["\n", "\r\n", "\r"])
WORD = st.sampled_from(["alpha", "beta", "서울", "김치", "长城", "茶", "x_y", "a*b", "`c`", "&amp;", "&#65;"])
MD_LINE = st.one_of(
    st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 7), WORD),
    st.sampled_from(
        [
            "===",
            "---",
            "***",
            "+++",
            "...",
            "```",
            "```py",
            "~~~",
            "    indented",
            "> quote",
            ">",
            "- item",
            "* item",
            "1. item",
            "  - nested",
            "| a | b |",
            "|---|---|",
            "",
            " ",
            "<div>",
            "</div>",
            "<!-- c",
            "-->",
            "[ref]: http://x",
            "title: x",
            "a = 1",
            "\t# tab",
            "#",
            "# #",
        ]
    ),
    WORD,
    ANY_TEXT.map(lambda s: s.replace("\n", " ").replace("\r", " ")),
)
MARKDOWN_SHAPED = st.tuples(st.lists(MD_LINE, max_size=40), NEWLINES).map(lambda t: t[1].join(t[0]))
TAG = st.sampled_from(
    [
        "p",
        "div",
        "h1",
        "h2",
        "h3",
        "h6",
        "ul",
        "ol",
        "li",
        "table",
        "tr",
        "td",
        "th",
        "pre",
        "code",
        "blockquote",
        "script",
        "style",
        "nav",
        "title",
        "head",
        "body",
        "br",
        "b",
        "span",
        "dl",
        "dt",
        "dd",
        "template",
        "svg",
    ]
)
HTML_PIECE = st.one_of(
    TAG.map(lambda t: f"<{t}>"),
    TAG.map(lambda t: f"</{t}>"),
    TAG.map(lambda t: f"<{t}/>"),
    st.sampled_from(
        [
            "<![if !IE]>",
            "<![endif]>",
            "<![CDATA[x]]>",
            "<!--",
            "-->",
            "<!DOCTYPE html>",
            "<?xml?>",
            "&amp;",
            "&nbsp;",
            "&#99999999;",
            "&#x0;",
            "&bogus;",
            "<a href='x",
            "<",
            ">",
            "</",
            '<p class="a">',
        ]
    ),
    WORD,
    ANY_TEXT,
    NEWLINES,
)
HTML_SHAPED = st.lists(HTML_PIECE, max_size=60).map("".join)


def check_any(name: str, text: str) -> None:
    doc = PARSERS[name].parse(text, "dir/file")
    assert isinstance(doc, ParsedDocument)
    assert_well_formed(doc, text, shared_lines=name == "html")


@PROPERTY
@given(text=ANY_TEXT)
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_property_any_text_never_raises(name: str, text: str) -> None:
    check_any(name, text)


@PROPERTY
@given(text=MARKDOWN_SHAPED)
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_property_markdown_shaped_text_never_raises(name: str, text: str) -> None:
    check_any(name, text)


@PROPERTY
@given(text=HTML_SHAPED)
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_property_html_shaped_text_never_raises(name: str, text: str) -> None:
    check_any(name, text)


@PROPERTY
@given(text=MARKDOWN_SHAPED)
def test_property_markdown_blocks_are_verbatim_source(text: str) -> None:
    doc = MarkdownParser().parse(text, "x.md")
    lines = split_lines(text)
    assert_text_in_span(doc, lines, verbatim=True)
    assert all(lines[b.start_line - 1].strip() and lines[b.end_line - 1].strip() for b in doc.blocks)


@PROPERTY
@given(text=ANY_TEXT)
def test_property_text_covers_every_non_blank_line_once(text: str) -> None:
    doc = TextParser().parse(text, "x.txt")
    lines = split_lines(text)
    covered = [n for b in doc.blocks for n in range(b.start_line, b.end_line + 1)]
    assert covered == [n for n, line in enumerate(lines, start=1) if line.strip()]
    assert_text_in_span(doc, lines, verbatim=True)


Section = tuple[str, int, str]
HEADING_WORDS = ["Alpha", "Beta", "Gamma", "Delta", "서울", "长城"]
SECTION = st.one_of(
    st.tuples(st.just("heading"), st.integers(1, 6), st.sampled_from(HEADING_WORDS)),
    st.tuples(st.just("para"), st.just(0), st.sampled_from(["lorem ipsum", "본문 텍스트", "正文内容"])),
    st.tuples(st.just("fence"), st.just(0), st.sampled_from(["FencedOne", "FencedTwo"])),
)


def expected_paths(sections: list[Section]) -> list[tuple[str, ...]]:
    """The heading path each paragraph should get: a reference model of heading nesting."""
    stack: list[tuple[int, str]] = []
    paths = []
    for kind, level, word in sections:
        if kind == "heading":
            stack = [(lv, w) for lv, w in stack if lv < level] + [(level, word)]
        elif kind == "para":
            paths.append(tuple(w for _, w in stack))
    return paths


def markdown_of(sections: list[Section]) -> str:
    rendered = {
        "heading": lambda lv, w: "#" * lv + " " + w,
        "para": lambda lv, w: w,
        "fence": lambda lv, w: f"```\n# {w}\n## {w}\n```",
    }
    return "\n\n".join(rendered[kind](level, word) for kind, level, word in sections) + "\n"


def html_of(sections: list[Section]) -> str:
    rendered = {
        "heading": lambda lv, w: f"<h{lv}>{w}</h{lv}>",
        "para": lambda lv, w: f"<p>{w}</p>",
        "fence": lambda lv, w: f"<pre><code>\n<h1>{w}</h1></code></pre>",
    }
    return "\n".join(rendered[kind](level, word) for kind, level, word in sections)


@PROPERTY
@given(sections=st.lists(SECTION, max_size=25))
@pytest.mark.parametrize(("name", "render"), [("markdown", markdown_of), ("html", html_of)])
def test_property_heading_paths_follow_the_document_outline(
    name: str, render: Callable[[list[Section]], str], sections: list[Section]
) -> None:
    text = render(sections)
    doc = PARSERS[name].parse(text, "x")
    paragraphs = [b for b in doc.blocks if b.kind == "paragraph"]
    assert [b.heading_path for b in paragraphs] == expected_paths(sections)
    used = {h for b in doc.blocks for h in b.heading_path}
    assert used <= {w for kind, _, w in sections if kind == "heading"}
    assert_well_formed(doc, text, shared_lines=name == "html")


# ---------------------------------------------------------------------------------------------
# tables: one row per line, the header row first


def test_html_table_rows_keep_their_columns() -> None:
    page = """<html><body><h1>Prices</h1>
<table><caption>Fruit, per kilo</caption>
<thead><tr><th>Fruit</th><th>Price</th><th>Origin</th></tr></thead>
<tbody><tr><td>Apple</td><td>2
  EUR</td><td>Norway</td></tr>
<tr><td>Pear</td><td><p>3 EUR</p><p>(ripe)</p></td></tr>
<tr><td></td><td>4 EUR</td><td>Spain</td></tr>
<tr><td colspan="2">Mixed box</td><td>Italy</td></tr>
<tr><td><table><tr><td>a</td><td>b</td></tr></table></td><td>5 EUR</td></tr>
<tr><td></td><td></td></tr>
</tbody></table></body></html>"""
    doc = HtmlParser().parse(page, "p.html")
    caption, table = doc.blocks  # the caption is a paragraph of its own (the heading folds into it)
    assert (caption.kind, caption.text, caption.end_line) == ("paragraph", "Prices\nFruit, per kilo", 2)
    assert table.kind == "table" and (table.start_line, table.end_line) == (3, 9)
    assert table.text.split("\n") == [
        "Fruit | Price | Origin",
        "Apple | 2 EUR | Norway",
        "Pear | 3 EUR (ripe)",  # paragraphs inside a cell stay on the row's line
        " | 4 EUR | Spain",  # an empty cell keeps its place
        "Mixed box |  | Italy",  # so does a column a colspan covers
        "a b | 5 EUR",  # a table nested in a cell is that cell's text
    ]
    assert table.heading_path == ("Prices",)
    bare = HtmlParser().parse("<h2>Sizes</h2><table><tr><th>Size</th></tr><tr><td>XL</td></tr></table>", "s.html")
    assert [(b.kind, b.text) for b in bare.blocks] == [("heading", "Sizes"), ("table", "Size\nXL")]  # never folded


def test_a_long_markdown_table_is_chunked_with_its_header_on_every_chunk(embedder) -> None:
    from kb_core.ingest.chunker import Chunker, ChunkLimits

    rows = [f"| sensor {i} | {i * 1.5} kW | ok |" for i in range(60)]
    text = "# Readings\n\nDaily values.\n\n| Sensor | Power | State |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    doc = MarkdownParser().parse(text, "r.md")
    lines = split_lines(text)
    chunks = Chunker(embedder.count_tokens, ChunkLimits(target=60, hard_max=80, overlap=10)).chunk("r.md", doc.blocks)
    assert len(chunks) > 3
    assert chunks[0].text.startswith("# Readings\n\nDaily values.\n\n| Sensor | Power | State |\n|---|---|---|\n")
    for chunk in chunks[1:]:
        own = chunk.text.split("\n")
        assert own[0] == "| Sensor | Power | State |"  # the delimiter row is not repeated
        assert own[1:] == lines[chunk.start_line - 1 : chunk.end_line]
    covered = [n for c in chunks for n in range(c.start_line, c.end_line + 1) if n >= 7]
    assert covered == list(range(7, 7 + len(rows)))  # every row in exactly one chunk's span


def test_html_table_rows_are_cited_by_their_own_lines(embedder) -> None:
    from kb_core.ingest.chunker import Chunker, ChunkLimits

    rows = "\n".join(f"<tr><td>sensor {i}</td><td>{i * 1.5} kW</td></tr>" for i in range(60))
    page = f"<table>\n<tr><th>Sensor</th><th>Power</th></tr>\n{rows}\n</table>"
    (table,) = HtmlParser().parse(page, "r.html").blocks
    assert table.line_spans == tuple((n, n) for n in range(2, 63))
    chunks = Chunker(embedder.count_tokens, ChunkLimits(target=60, hard_max=80, overlap=10)).chunk("r.html", [table])
    assert len(chunks) > 3
    for chunk in chunks[1:]:
        assert chunk.text.startswith("Sensor | Power\nsensor ")
        assert chunk.end_line - chunk.start_line + 2 == len(chunk.text.split("\n"))  # the rows' own lines


# ---------------------------------------------------------------------------------------------
# CSV and TSV


def test_csv_rows_are_lines_under_their_header_with_their_own_lines() -> None:
    text = 'id;name;note\r\n1;Ann;"two\nlines"\r\n\r\n2;Bob;;\r\n3;"Cy";x\n;;\n4;Eve;ok\n'
    doc = CsvParser().parse(text, "people/staff.csv")
    (table,) = doc.blocks
    assert doc.title == "staff.csv" and doc.metadata == {"delimiter": ";", "rows": 5} and not doc.warnings
    assert (table.kind, table.verbatim, table.heading_path) == ("table", False, ())
    assert table.text.split("\n") == [
        "id | name | note",
        "1 | Ann | two lines",
        "2 | Bob",
        "3 | Cy | x",
        "4 | Eve | ok",
    ]
    assert table.line_spans == ((1, 1), (2, 3), (5, 5), (6, 6), (8, 8))  # a quoted line break: the row spans both
    assert (table.start_line, table.end_line) == (1, 8)


@pytest.mark.parametrize(
    ("text", "path", "delimiter"),
    [
        ("a,b,c\n1,2,3\n", "x.csv", ","),
        ("a;b;c\n1;2,5;3\n", "x.csv", ";"),
        ("a\tb\n1\t2\n", "x.csv", "\t"),
        ("a|b\n1|2\n", "x.csv", "|"),
        ("only one column\nsecond\n", "x.tsv", "\t"),
        ("only one column\nsecond\n", "x.csv", ","),
        ('"a,b";c\n"1,2";3\n"4,5";6\n', "x.csv", ";"),
    ],
)
def test_the_delimiter_is_the_one_that_splits_rows_evenly(text: str, path: str, delimiter: str) -> None:
    assert CsvParser().parse(text, path).metadata["delimiter"] == delimiter


def test_csv_caps_and_damage_give_warnings_not_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delimited, "MAX_ROWS", 3)
    monkeypatch.setattr(delimited, "MAX_CELL_CHARS", 5)
    monkeypatch.setattr(delimited, "MAX_CELLS_PER_ROW", 2)
    doc = CsvParser().parse("h1,h2,h3\nabcdefgh,2\n3,4\n5,6\n7,8\n", "x.csv")
    assert doc.blocks[0].text == "h1 | h2\nabcde | 2\n3 | 4"
    assert len(doc.warnings) == 3 and "first 3 rows" in doc.warnings[0] and "line 4" in doc.warnings[0]
    nul = CsvParser().parse("a,b\n1,\x002\n", "x.csv")
    assert nul.blocks[0].text == "a | b\n1 | 2"
    unclosed = CsvParser().parse('a,b\n"never closed,1\n' + "x,y\n" * 150, "x.csv")
    assert unclosed.blocks[0].line_spans[-1] == (2, 152) and "quote never closed" in unclosed.warnings[0]
    huge = CsvParser().parse('a,b\n"' + "x" * 200_000 + '"\n1,2\n', "x.csv")  # over the csv module's field limit
    assert huge.blocks[0].text.endswith("1 | 2") and "cannot read" in huge.warnings[0]


def test_a_long_csv_is_chunked_with_its_header_and_rows_cited_by_line(embedder) -> None:
    from kb_core.ingest.chunker import Chunker, ChunkLimits

    text = "sensor,power,state\n" + "".join(f'sensor {i},"{i}\nkW",ok\n' for i in range(40))
    (table,) = CsvParser().parse(text, "r.csv").blocks
    chunks = Chunker(embedder.count_tokens, ChunkLimits(target=60, hard_max=80, overlap=10)).chunk("r.csv", [table])
    assert len(chunks) > 3
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert lines[0] == "sensor | power | state"
        rows = lines[1:] if chunk.ordinal else lines[1:]
        first = int(rows[0].split(" | ")[0].removeprefix("sensor "))
        assert chunk.start_line == (1 if chunk.ordinal == 0 else 2 + 2 * first)  # a row spans its two lines
        assert chunk.end_line == 1 + 2 * (first + len(rows))
    assert [a.end_line + 1 for a in chunks[:-1]] == [b.start_line for b in chunks[1:]]  # rows tile the file
    assert chunks[-1].end_line == 81


LOOSE_CSV = st.text(alphabet=st.sampled_from(list(',;|\t"\n\r ab1\x00é')), max_size=300)


@PROPERTY
@given(text=st.one_of(st.text(max_size=400), LOOSE_CSV), tsv=st.booleans())
def test_any_text_parses_as_csv_into_rows_with_real_spans(text: str, tsv: bool) -> None:
    doc = CsvParser().parse(text, "x.tsv" if tsv else "x.csv")
    line_count = len(split_lines(text))
    assert doc.title in ("x.csv", "x.tsv") and len(doc.blocks) <= 1
    for block in doc.blocks:
        rows = block.text.split("\n")
        assert block.kind == "table" and not block.verbatim and len(rows) == len(block.line_spans)
        assert all(row.strip() and "\r" not in row for row in rows)
        assert 1 <= block.start_line <= block.end_line <= line_count
        assert block.line_spans[0][0] == block.start_line and block.line_spans[-1][1] == block.end_line
        for (_, last), (first, _) in zip(block.line_spans, block.line_spans[1:]):
            assert last < first
