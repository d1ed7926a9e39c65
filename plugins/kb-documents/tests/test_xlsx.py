"""The XLSX parser: each sheet a heading and a table (a row a line, the header first), hostile workbooks refused."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core import KbError
from kb_core.plugin import ParsedDocument
from kb_documents import xlsx
from kb_documents.assemble import parsed_text
from kb_documents.limits import Limits
from kb_documents.xlsx import XlsxParser, cell_text

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _workbook(sheets: dict[str, list[list[Any]]], title: str = "") -> bytes:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    if title:
        book.properties.title = title
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _rewritten(data: bytes, replace: dict[str, bytes], add: dict[str, bytes] | None = None) -> bytes:
    """The archive with some members replaced and others added."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, replace.get(info.filename, source.read(info.filename)))
        for name, body in (add or {}).items():
            target.writestr(name, body)
    return out.getvalue()


PRICES = {
    "Prices": [
        ["Item", "Price", "Delivered"],
        ["Apple", 1.5, dt.datetime(2024, 1, 2)],
        [],
        ["Pear", 3.0, dt.datetime(2024, 1, 3, 14, 30)],
        ["Plum", None, True],
    ],
    "Empty": [],
    "Notes": [[None, None], [None, "Remark", "By"], [None, "check the\nscales", "Eve"]],
}


def test_each_sheet_is_a_heading_and_a_table_of_rows() -> None:
    doc = XlsxParser().parse_bytes(_workbook(PRICES, title="Fruit prices"), "shop/prices.xlsx")
    assert doc.title == "Fruit prices"
    assert parsed_text(doc.blocks).split("\n") == [
        "Sheet: Prices",
        "Item | Price | Delivered",
        "Apple | 1.5 | 2024-01-02",
        "Pear | 3 | 2024-01-03 14:30:00",
        "Plum | | TRUE",  # an empty cell keeps its place
        "Sheet: Notes",
        "Remark | By",  # the empty first column is dropped, so the header names the columns
        "check the scales | Eve",
    ]
    heading, table = doc.blocks[:2]
    assert (heading.kind, heading.text, heading.start_line) == ("heading", "Sheet: Prices", 1)
    assert (table.kind, table.start_line, table.end_line, table.verbatim) == ("table", 2, 5, True)
    assert table.heading_path == ("Sheet: Prices",) and table.text.startswith("Item | Price | Delivered\n")
    assert doc.blocks[3].heading_path == ("Sheet: Notes",)
    assert doc.metadata == {"format": "xlsx", "sheets": 2, "lines": 8} and doc.warnings == ()


def test_title_falls_back_to_the_file_name_and_formulas_give_their_stored_value() -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["a", "b"])
    sheet.append([1, "=A2*2"])  # openpyxl stores no computed value: data_only reads none
    out = io.BytesIO()
    book.save(out)
    doc = XlsxParser().parse_bytes(out.getvalue(), "dir/book.xlsx")
    assert doc.title == "book.xlsx" and doc.blocks[-1].text == "a | b\n1"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (3.0, "3"),
        (0.1, "0.1"),
        (1e20, "1e+20"),
        (False, "FALSE"),
        (dt.date(2024, 5, 6), "2024-05-06"),
        (dt.time(7, 5), "07:05:00"),
        ("  two\n lines ", "two lines"),
    ],
)
def test_cell_text(value: Any, text: str) -> None:
    assert cell_text(value) == text


def test_a_long_sheet_is_chunked_with_its_header_on_every_chunk() -> None:
    from kb_core.plugin import Block

    rows: list[list[Any]] = [["Sensor", "Power", "State"], *([f"sensor {i}", i * 1.5, "ok"] for i in range(200))]
    doc = XlsxParser().parse_bytes(_workbook({"Readings": rows}), "r.xlsx")
    table = next(b for b in doc.blocks if b.kind == "table")
    assert isinstance(table, Block) and table.text.split("\n")[0] == "Sensor | Power | State"
    assert table.end_line - table.start_line == 200


def test_the_cell_budget_stops_reading_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xlsx, "MAX_CELLS", 10)
    doc = XlsxParser().parse_bytes(_workbook({"A": [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12]]}), "a.xlsx")
    assert parsed_text(doc.blocks).split("\n") == ["Sheet: A", "1 | 2", "3 | 4", "5 | 6", "7 | 8", "9 | 10"]
    assert "over 10 cells" in doc.warnings[0]


def test_a_sparse_sheet_costs_no_more_than_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell at row 1,000,000 and column XFD: the empty rows before it count against the budget."""
    data = _workbook({"Sparse": [["a", "b"]]})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        sheet_xml = archive.read("xl/worksheets/sheet1.xml")
    far = b'<row r="1000000"><c r="XFD1000000" t="inlineStr"><is><t>far</t></is></c></row></sheetData>'
    sparse = _rewritten(data, {"xl/worksheets/sheet1.xml": sheet_xml.replace(b"</sheetData>", far)})
    monkeypatch.setattr(xlsx, "MAX_CELLS", 50_000)
    doc = XlsxParser().parse_bytes(sparse, "s.xlsx")
    assert parsed_text(doc.blocks).split("\n") == ["Sheet: Sparse", "a | b"] and "over 50000 cells" in doc.warnings[0]


def test_too_many_sheets_are_left_out_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xlsx, "MAX_SHEETS", 2)
    doc = XlsxParser().parse_bytes(_workbook({f"S{i}": [[f"v{i}"]] for i in range(4)}), "m.xlsx")
    assert [b.text for b in doc.blocks if b.kind == "heading"] == ["Sheet: S0", "Sheet: S1"]
    assert doc.warnings == ("read the first 2 of 4 sheets",)


def test_zip_bombs_and_oversized_archives_are_refused_before_inflating() -> None:
    data = _workbook(PRICES)
    bomb = _rewritten(data, {}, {"xl/media/zeros.bin": b"\0" * 5_000_000})
    with pytest.raises(KbError, match="would inflate [0-9]+ times") as caught:
        XlsxParser().parse_bytes(bomb, "bomb.xlsx")
    assert "zip bomb" in (caught.value.hint or "")
    with pytest.raises(KbError, match="would inflate to .* over the limit of 1000"):
        XlsxParser(Limits(max_docx_inflated_bytes=1000)).parse_bytes(data, "p.xlsx")
    with pytest.raises(KbError, match="parts, over the limit of 3"):
        XlsxParser(Limits(max_docx_entries=3)).parse_bytes(data, "p.xlsx")
    with pytest.raises(KbError, match="over the limit of 100"):
        XlsxParser(Limits(max_bytes=100)).parse_bytes(data, "p.xlsx")


@pytest.mark.parametrize("member", ["xl/worksheets/sheet1.xml", "xl/workbook.xml"])
def test_xml_entities_are_refused(member: str) -> None:
    data = _workbook(PRICES)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        body = archive.read(member)
    dtd = b'<!DOCTYPE s [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    start = body.index(b"?>") + 2 if b"?>" in body else 0
    laughs = body[:start] + dtd + body[start:].replace(b"Apple", b"&b;")
    with pytest.raises(KbError, match="XML entities or a DTD"):
        XlsxParser().parse_bytes(_rewritten(data, {member: laughs}), "e.xlsx")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not a valid .xlsx"),
        (b"PK\x03\x04 truncated", "not a valid .xlsx"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100, "password protected"),
    ],
)
def test_what_is_not_a_workbook_is_one_line_of_reason(data: bytes, reason: str) -> None:
    with pytest.raises(KbError, match=reason):
        XlsxParser().parse_bytes(data, "x.xlsx")


def test_a_zip_without_a_workbook_and_a_workbook_without_values() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("word/document.xml", "<w/>")
    with pytest.raises(KbError, match="not an Excel workbook"):
        XlsxParser().parse_bytes(out.getvalue(), "x.xlsx")
    with pytest.raises(KbError, match="no cells with values"):
        XlsxParser().parse_bytes(_workbook({"Empty": []}), "x.xlsx")


def test_openpyxl_without_defusedxml_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openpyxl, "DEFUSEDXML", False)
    with pytest.raises(KbError, match="not using defusedxml"):
        XlsxParser().parse_bytes(_workbook(PRICES), "p.xlsx")


def test_the_plugin_registers_the_xlsx_parser() -> None:
    from kb_core.testing import load_registry

    entry = load_registry().get("parsers", "xlsx")
    assert list(entry.info["extensions"]) == [".xlsx"] and entry.info["licence"] == "MIT"


def _only_kb_errors(parse: Callable[[], ParsedDocument]) -> None:
    try:
        doc = parse()
    except KbError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        for block in doc.blocks:
            assert block.start_line <= block.end_line
            assert block.text.count("\n") == block.end_line - block.start_line


SEED = _workbook(PRICES)
MEMBERS = ["xl/sharedStrings.xml", "xl/worksheets/sheet1.xml", "xl/workbook.xml", "xl/styles.xml"]


@FUZZ
@given(data=st.binary(max_size=4096))
def test_arbitrary_bytes_raise_only_kb_errors(data: bytes) -> None:
    _only_kb_errors(lambda: XlsxParser().parse_bytes(data, "x.xlsx"))


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, len(SEED) - 1), st.binary(min_size=1, max_size=8)), max_size=6))
def test_damaged_workbooks_raise_only_kb_errors(edits: list[tuple[int, bytes]]) -> None:
    data = bytearray(SEED)
    for at, patch in edits:
        data[at : at + len(patch)] = patch
    _only_kb_errors(lambda: XlsxParser().parse_bytes(bytes(data), "x.xlsx"))


@FUZZ
@given(
    member=st.sampled_from(["xl/sharedStrings.xml", "xl/worksheets/sheet1.xml", "xl/workbook.xml"]), body=st.binary()
)
def test_any_xml_inside_a_valid_archive_raises_only_kb_errors(member: str, body: bytes) -> None:
    _only_kb_errors(lambda: XlsxParser().parse_bytes(_rewritten(SEED, {member: body}), "x.xlsx"))


def test_ingest_then_search_finds_a_row_with_its_header_and_its_own_line(tmp_path: Path, config_file: Path) -> None:
    import kb_core

    docs = tmp_path / "docs"
    docs.mkdir()
    rows: list[list[Any]] = [["Sensor", "Power (kW)", "State"], *([f"sensor{i}", i * 1.5, "ok"] for i in range(300))]
    rows[200][2] = "overheated"
    (docs / "readings.xlsx").write_bytes(_workbook({"Readings": rows}))
    with kb_core.open_kb(config_path=config_file, kb_dir=tmp_path / "kb") as kb:
        report = kb_core.ingest_paths(kb, [docs])
        assert report.added == ["readings.xlsx"] and not report.failed
        hit = kb_core.search(kb, kb_core.SearchQuery(text="overheated", mode="lexical", k=1)).hits[0]
        text = kb.store.get_chunks([hit.chunk_id])[hit.chunk_id].text
        assert text.startswith("Sensor | Power (kW) | State\n")  # the header repeated in a later chunk
        line = 1 + 1 + 200  # "Sheet: Readings", the header, then the 200th row
        assert hit.citation.start_line <= line <= hit.citation.end_line
        assert text.split("\n")[1 + line - hit.citation.start_line] == "sensor199 | 298.5 | overheated"


@pytest.mark.parametrize(
    ("reply", "grounded", "start"),
    [("CALC: 2950 - 3100 [#1]", True, "-150 (2950 - 3100) [#1]"), ("CALC: 6046 - 5200 [#1]", False, "Insufficient")],
)
def test_a_sheets_table_is_worked_out_from_as_stored(tmp_path: Path, reply: str, grounded: bool, start: str) -> None:
    """Issue 43, deliver 4: a computed answer over a sheet's rows as kb stores them (the header's years name the
    columns), through kb's public API; an operand from another row is refused."""
    import kb_core
    from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, load_registry

    folder = tmp_path / "docs"
    folder.mkdir()
    sales = {"Sales": [["Region", 2018, 2019], ["North America", 5200, 6046], ["Europe", 3100, 2950]]}
    (folder / "sales.xlsx").write_bytes(_workbook(sales))
    registry = load_registry(extra_plugins=[("indexes", TestIndexesPlugin()), ("llm", ScriptedPlugin([reply]))])
    overrides = {"indexes.enabled": ["test-lexical"], "search.mode": "lexical", "rag.computations": True}
    config = kb_core.load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={})
    with kb_core.KnowledgeBase(config, registry) as kb:
        assert kb_core.ingest_paths(kb, [folder]).added == ["sales.xlsx"]
        question = "By how much did sales in Europe change from 2018 to 2019?"
        answer = kb_core.ask(kb, question, kb_core.AskOptions(backend="scripted"))
    assert (answer.grounded, answer.answer.startswith(start)) == (grounded, True), answer.note
    assert grounded or answer.refusal_detail == "operand_off_question"
