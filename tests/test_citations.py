"""The strict [#n] citation grammar, special-token removal and the constrained-generation grammar."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core.answers.citations import (
    MAX_SPECIAL_TOKEN_CHARS,
    SpecialTokenFilter,
    citation_grammar,
    cited_markers,
    find_markers,
    strip_special_tokens,
)

LOOSE_FORMS = [
    "[1]",
    "[ #1 ]",
    "[#1a]",
    "[#1234]",
    "vec![1]",
    "[label][1]",
    "[# 1]",
    "[#]",
    "[#-1]",
    "[#1.5]",
    "［#1］",
    "[#١]",
    "(#1)",
    "[[#12",
    "#1]",
]


@pytest.mark.parametrize("text", LOOSE_FORMS)
def test_loose_forms_are_never_markers(text: str) -> None:
    assert find_markers(text) == []
    assert find_markers(f"prose {text} more prose") == []


def test_strict_markers_in_order_with_repeats() -> None:
    text = "A [#2] and B [#10], again [#2]; code vec![1] and [#999] but not [#1000]."
    assert find_markers(text) == [2, 10, 2, 999]
    assert cited_markers(text) == (2, 10, 999)


def test_markdown_reference_style_links_are_not_citations() -> None:
    text = "See [the docs][1] and [2].\n\n[1]: https://example.org\n[2]: https://example.com"
    assert find_markers(text) == []


# Noise that contains no "]" cannot form a marker by itself, even next to a marker; noise without
# "#" cannot either. Both alphabets are full of brackets, digits and hashes to tempt the parser.
NOISE_NO_CLOSE = st.text(alphabet=st.sampled_from(list("[#0123456789 ab가中!\n(vec)")), max_size=12)
NOISE_NO_HASH = st.text(alphabet=st.sampled_from(list("[]0123456789 ab가中!\n(vec)")), max_size=12)


@settings(max_examples=300)
@given(
    st.lists(st.tuples(st.one_of(NOISE_NO_CLOSE, NOISE_NO_HASH), st.integers(0, 999)), max_size=8),
    st.one_of(NOISE_NO_CLOSE, NOISE_NO_HASH),
)
def test_finds_exactly_the_inserted_markers(parts: list[tuple[str, int]], tail: str) -> None:
    text = "".join(f"{noise}[#{n}]" for noise, n in parts) + tail
    assert find_markers(text) == [n for _, n in parts]


@settings(max_examples=300)
@given(st.text())
def test_never_raises_and_agrees_with_the_spec_regex(text: str) -> None:
    markers = find_markers(text)
    assert all(0 <= m <= 999 for m in markers)
    assert markers == [int(m) for m in re.findall(r"\[#([0-9]{1,3})\]", text)]
    assert set(cited_markers(text)) == set(markers)


@settings(max_examples=200)
@given(st.lists(st.sampled_from(LOOSE_FORMS + [" ", "x", "\n"]), max_size=10))
def test_loose_forms_never_combine_into_a_marker_with_spaces_between(parts: list[str]) -> None:
    assert find_markers(" ".join(parts)) == []


# -- special tokens -------------------------------------------------------------------------------


def test_special_and_tool_tokens_are_removed() -> None:
    text = '<|im_start|>assistant\nParis [#1]<|im_end|><|eot_id|> <tool_call>{"x":1}</tool_call><｜end▁of▁sentence｜>'
    assert strip_special_tokens(text) == 'assistant\nParis [#1] {"x":1}'


def test_ordinary_angle_brackets_stay() -> None:
    text = "if a < b and c > d: use <div> or Vec<u8>; x <| y |> z"
    assert strip_special_tokens(text) == text


SPECIAL_PIECES = ["<|im_end|>", "<|eot_id|>", "<tool_call>", "</tool_call>", "<｜end▁of▁sentence｜>", "</s>"]
STREAM_TEXT = st.lists(
    st.one_of(st.sampled_from(SPECIAL_PIECES + ["<", ">", "|", "<|", "|>", "<<", "a [#1]"]), st.text(max_size=6)),
    max_size=12,
).map("".join)


@settings(max_examples=300)
@given(STREAM_TEXT, st.lists(st.integers(1, 7), max_size=30))
def test_streaming_filter_matches_whole_text_removal_for_any_chunking(text: str, sizes: list[int]) -> None:
    pieces, at = [], 0
    for size in sizes:
        pieces.append(text[at : at + size])
        at += size
    pieces.append(text[at:])
    cleaner = SpecialTokenFilter()
    shown = "".join(cleaner.feed(p) for p in pieces) + cleaner.flush()
    assert shown == strip_special_tokens(text)


def test_streaming_filter_holds_back_only_a_possible_special_token() -> None:
    cleaner = SpecialTokenFilter()
    assert cleaner.feed("Paris <|im") == "Paris "
    assert cleaner.feed("_end|> done") == " done"
    assert cleaner.feed("a < b") == "a < b"[:2]  # "< b" might still become a token
    assert cleaner.feed(" " * MAX_SPECIAL_TOKEN_CHARS) == "< b" + " " * MAX_SPECIAL_TOKEN_CHARS
    assert cleaner.flush() == ""


# -- the constrained-generation grammar ---------------------------------------------------------------


def test_grammar_allows_exactly_the_packed_markers() -> None:
    grammar = citation_grammar(3)
    assert 'cite ::= "[#" ("1" | "2" | "3") "]"' in grammar
    assert r"item ::= [^\x5B] | cite" in grammar
    assert grammar.startswith("root ::= item*")
    with pytest.raises(ValueError, match="."):
        citation_grammar(0)


@pytest.mark.needs_plugins
def test_llama_cpp_parses_the_grammar() -> None:
    import llama_cpp

    parsed = llama_cpp.LlamaGrammar.from_string(citation_grammar(12), verbose=False)
    assert parsed is not None
