"""Slides (.pptx, .odp): each slide a part ``Slide N``, its title the heading, tables as rows, notes kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from part_formats import odf, pptx, slide_xml

from kb_core import KbError
from kb_documents.assemble import page_of_line, parsed_text
from kb_documents.odf import OdfParser
from kb_documents.parts import NOTES_HEADING
from kb_documents.pptx import PptxParser

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "samples" / "python-pptx-deck.pptx"
DECK = pptx(
    [
        (slide_xml("Quarterly Review", [["Heliograph Systems, Q3"]]), ["Welcome everyone."]),
        (
            slide_xml(
                "Output by plant",
                [["Lakeside led the quarter", "Ridgeback had a transformer fault"]],
                [["Plant", "MWh"], ["Lakeside", "4210"], ["Ridgeback", "3105"]],
            ),
            ["The fault was fixed on 14 September by the duty engineer."],
        ),
        (slide_xml("", [["A slide without a title"]]), []),
    ],
    title="Q3 review",
)


def test_each_slide_is_a_part_with_its_title_table_and_notes() -> None:
    doc = PptxParser().parse_bytes(DECK, "deck.pptx")
    assert doc.title == "Q3 review"
    assert parsed_text(doc.blocks).split("\n") == [
        "Slide 1",
        "Quarterly Review",
        "Heliograph Systems, Q3",
        NOTES_HEADING,
        "Welcome everyone.",
        "Slide 2",
        "Output by plant",
        "Lakeside led the quarter",
        "Ridgeback had a transformer fault",
        "Plant | MWh",
        "Lakeside | 4210",
        "Ridgeback | 3105",
        NOTES_HEADING,
        "The fault was fixed on 14 September by the duty engineer.",
        "Slide 3",
        "A slide without a title",
    ]  # (the slide-number placeholder is left out)
    assert doc.metadata == {"format": "pptx", "slides": 3, "lines": 16, "page_lines": [1, 6, 15], "page_unit": "slide"}
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text.split("\n")[0] == "Plant | MWh" and table.heading_path == ("Slide 2", "Output by plant")
    notes = next(b for b in doc.blocks if "duty engineer" in b.text)
    assert notes.heading_path == ("Slide 2", "Output by plant", NOTES_HEADING)
    assert page_of_line(doc.metadata["page_lines"], notes.start_line) == 2
    untitled = doc.blocks[-1]
    assert untitled.heading_path == ("Slide 3",)  # a slide's title never carries over to the next


def test_slides_follow_the_deck_order_not_the_file_names() -> None:
    deck = pptx([(slide_xml("First file"), []), (slide_xml("Second file"), [])], order=[2, 1])
    doc = PptxParser().parse_bytes(deck, "order.pptx")
    assert parsed_text(doc.blocks).split("\n") == ["Slide 1", "Second file", "Slide 2", "First file"]
    assert doc.blocks[-1].heading_path == ("Slide 2", "First file")


def test_groups_and_alternate_content_are_read_once() -> None:
    group = (
        '<p:grpSp><p:nvGrpSpPr><p:cNvPr id="9" name="g"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
        '<p:sp><p:nvSpPr><p:cNvPr id="3" name="b"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr><p:spPr/>'
        "<p:txBody><a:bodyPr/><a:p><a:r><a:t>Inside a group</a:t></a:r></a:p></p:txBody></p:sp></p:grpSp>"
    )
    alternate = (
        '<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">'
        f"<mc:Choice Requires='p14'>{group.replace('Inside a group', 'Chosen')}</mc:Choice>"
        f"<mc:Fallback>{group.replace('Inside a group', 'Fallback')}</mc:Fallback></mc:AlternateContent>"
    )
    doc = PptxParser().parse_bytes(pptx([(slide_xml("Shapes", extra=group + alternate), [])]), "g.pptx")
    text = parsed_text(doc.blocks)
    assert "Inside a group" in text and "Chosen" in text and "Fallback" not in text


def test_a_deck_python_pptx_wrote_is_read() -> None:
    doc = PptxParser().parse_bytes(SAMPLE.read_bytes(), "python-pptx-deck.pptx")
    lines = parsed_text(doc.blocks).split("\n")
    assert lines[:5] == ["Slide 1", "Quarterly Review", "Heliograph Systems, Q3", NOTES_HEADING, lines[4]]
    assert "Plant | MWh" in lines and "Inside a group" in lines
    notes = next(b for b in doc.blocks if "14 September" in b.text)
    assert notes.heading_path == ("Slide 2", "Output by plant", NOTES_HEADING)


def _odp(pages: str) -> bytes:
    return odf("presentation", pages, title="Site visit")


def _frame(cls: str, *lines: str) -> str:
    paragraphs = "".join(f"<text:p>{line}</text:p>" for line in lines)
    return f'<draw:frame presentation:class="{cls}"><draw:text-box>{paragraphs}</draw:text-box></draw:frame>'


ODP = _odp(
    '<draw:page draw:name="p1">'
    + _frame("title", "Arrival")
    + _frame("outline", "Badge at the gate", "Hard hats on")
    + _frame("page-number", "1")
    + "<draw:frame><table:table><table:table-row><table:table-cell><text:p>Room</text:p></table:table-cell>"
    "<table:table-cell><text:p>Floor</text:p></table:table-cell></table:table-row><table:table-row>"
    "<table:table-cell><text:p>Control</text:p></table:table-cell><table:table-cell><text:p>2</text:p>"
    "</table:table-cell></table:table-row></table:table></draw:frame>"
    + "<presentation:notes><draw:page-thumbnail/>"
    + _frame("notes", "Remind them the lift is out of order.")
    + "</presentation:notes></draw:page>"
    + '<draw:page draw:name="p2">'
    + _frame("title", "Departure")
    + "<draw:g><draw:custom-shape><text:p>Sign out</text:p></draw:custom-shape></draw:g></draw:page>"
)


def test_an_odp_deck_reads_as_slides_with_notes() -> None:
    doc = OdfParser(".odp").parse_bytes(ODP, "visit.odp")
    assert doc.title == "Site visit"
    assert parsed_text(doc.blocks).split("\n") == [
        "Slide 1",
        "Arrival",
        "Badge at the gate",
        "Hard hats on",
        "Room | Floor",
        "Control | 2",
        NOTES_HEADING,
        "Remind them the lift is out of order.",
        "Slide 2",
        "Departure",
        "Sign out",
    ]
    assert doc.metadata["page_lines"] == [1, 9] and doc.metadata["page_unit"] == "slide"
    notes = next(b for b in doc.blocks if "lift" in b.text)
    assert notes.heading_path == ("Slide 1", "Arrival", NOTES_HEADING)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not a valid .pptx"),
        (b"PK\x03\x04 truncated", "not a valid .pptx"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504), "the .pptx is password protected"),
        (pptx([]), "the .pptx has no text"),
        (pptx([("<p:sld", [])]), "not well-formed XML"),
    ],
)
def test_bad_decks_are_one_line(data: bytes, message: str) -> None:
    with pytest.raises(KbError, match=message) as caught:
        PptxParser().parse_bytes(data, "bad.pptx")
    assert "\n" not in str(caught.value)


def test_the_slide_limit_is_max_pages() -> None:
    from kb_documents.limits import Limits

    deck = pptx([(slide_xml(f"S{n}"), []) for n in range(3)])
    with pytest.raises(KbError, match="the .pptx has 3 slides, over the limit of 2"):
        PptxParser(Limits(max_pages=2)).parse_bytes(deck, "many.pptx")
