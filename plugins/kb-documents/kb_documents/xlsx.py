"""Excel workbooks (.xlsx) read with openpyxl in read-only mode, its XML parsed through defusedxml.

Each sheet becomes the heading ``Sheet: NAME`` followed by one table: its first non-empty row is
the header, and every non-empty row is one line of the parsed text, its cells joined by `` | ``
(see :mod:`kb_documents.assemble`), so ``path#L4-L9`` names rows. Formulas give the value Excel
last stored (``data_only``); a whole number is written without ``.0``, a date as ISO 8601.

Why openpyxl: it is the maintained, MIT-licensed reader of the format, and ``read_only=True``
streams a sheet's rows instead of building every cell. It parses XML with defusedxml when that is
installed (a dependency of this plugin), which refuses entity expansion; the parser refuses to run
if openpyxl was told not to (``OPENPYXL_DEFUSEDXML=False``). Before openpyxl opens the archive, kb
checks it as it does a .docx (:func:`kb_documents.office.check_archive`): member count, each
member's declared size and compression ratio, and the total; zipfile never inflates a member past
its declared size, so a zip bomb costs nothing.
Reading stops, with a warning, after ``MAX_CELLS`` cells (empty ones counted) or ``MAX_SHEETS``
sheets; a cell's text is cut at ``MAX_CELL_CHARS``.
"""

from __future__ import annotations

import datetime as dt
import io
import warnings
import zipfile
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

import defusedxml

from kb_core import KbError
from kb_core.plugin import ParsedDocument
from kb_documents.assemble import Content, Heading, Page, assemble
from kb_documents.binary import BinaryParser
from kb_documents.limits import Limits
from kb_documents.office import OLE_MAGIC, check_archive

#: Sheets read at most; the rest are left out with a warning.
MAX_SHEETS = 200
#: Cells visited at most over the whole workbook (empty ones count: a sparse sheet is no cheaper).
MAX_CELLS = 2_000_000
#: Characters kept of one cell's text.
MAX_CELL_CHARS = 2000
WORKBOOK = "xl/workbook.xml"
SAVE_HINT = "open and save it again in a spreadsheet program as .xlsx"


def _check_archive(data: bytes, limits: Limits) -> None:
    """Refuse an archive whose declared member count, sizes or ratios are over the limits (before inflating)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, NotImplementedError, ValueError, OSError, EOFError):  # a damaged directory
        raise KbError("not a valid .xlsx (not a zip archive; truncated or another format?)", hint=SAVE_HINT) from None
    with archive:  # (openpyxl may read any member: every one is checked)
        check_archive(
            archive,
            limits,
            ".xlsx",
            main=WORKBOOK,
            missing="an Excel workbook",
            missing_hint="save it as .xlsx; .xls, .xlsb and .ods are not read",
        )


def cell_text(value: Any) -> str:
    """A cell's value as one line: whole numbers without ``.0``, dates in ISO 8601, booleans as Excel shows them."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return " ".join(str(value).split())[:MAX_CELL_CHARS]


class CellBudget:
    """The cells left to visit; says once, in a warning, where reading stopped."""

    def __init__(self, cells: int) -> None:
        self.left = cells
        self.warnings: list[str] = []

    def spend(self, count: int, sheet: str) -> bool:
        """Take ``count`` cells; False (and a warning) when the budget is spent."""
        self.left -= max(count, 1)
        if self.left >= 0:
            return True
        if not self.warnings:
            self.warnings.append(f"stopped reading at sheet {sheet!r}: the workbook has over {MAX_CELLS} cells")
        return False


def sheet_rows(values: Iterable[tuple[Any, ...]], sheet: str, budget: CellBudget) -> list[str]:
    """The sheet's non-empty rows as ``a | b | c`` lines.

    Trailing empty cells are dropped, and so are the leading columns that are empty in every row
    (a table that starts in column C), so every row keeps its cells in its header's columns.
    """
    rows: list[list[str]] = []
    for row in values:
        if not budget.spend(len(row), sheet):
            break
        cells = [cell_text(v) for v in row]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            rows.append(cells)
    lead = min((next(i for i, c in enumerate(cells) if c) for cells in rows), default=0)
    return [" | ".join(cells[lead:]) for cells in rows]


def _defused(exc: BaseException) -> BaseException | None:
    """The defusedxml refusal behind ``exc`` (openpyxl wraps it in a ValueError), if any."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return None
        if isinstance(seen, defusedxml.DefusedXmlException):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _openpyxl() -> Any:
    try:
        import openpyxl
    except ImportError:  # pragma: no cover - a dependency of this plugin
        raise KbError("reading .xlsx needs openpyxl", hint="pip install openpyxl defusedxml") from None
    if not openpyxl.DEFUSEDXML:
        raise KbError(
            "openpyxl is not using defusedxml, so kb will not open a workbook with it",
            hint="install defusedxml and leave OPENPYXL_DEFUSEDXML unset",
        )
    return openpyxl


class XlsxParser(BinaryParser):
    """Excel .xlsx workbooks: each sheet a heading and a table, one row per line."""

    kind = ".xlsx"

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Parse .xlsx bytes; every failure is a KbError."""
        self.check_size(data, self.limits.max_bytes)
        if data.startswith(OLE_MAGIC):
            raise KbError(
                "the .xlsx is password protected (or an old .xls file renamed): it is an OLE container, not a zip",
                hint="save an unprotected copy as .xlsx and ingest that",
            )
        openpyxl = _openpyxl()
        try:
            _check_archive(data, self.limits)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # openpyxl warns about styles and extensions it drops
                return self._parse(openpyxl, data, path)
        except KbError:
            raise
        except Exception as exc:  # noqa: BLE001 - openpyxl, zipfile and the XML parsers raise many types
            refused = _defused(exc)
            if refused is not None:
                raise KbError(
                    f"the .xlsx uses XML entities or a DTD, which kb refuses ({type(refused).__name__})",
                    hint=SAVE_HINT,
                ) from None
            message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            raise KbError(f"the .xlsx is damaged and cannot be read ({message})", hint=SAVE_HINT) from None

    def _parse(self, openpyxl: Any, data: bytes, path: str) -> ParsedDocument:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
        budget = CellBudget(MAX_CELLS)
        items: list[Heading | Content] = []
        try:
            sheets = [ws for ws in workbook.worksheets if hasattr(ws, "iter_rows")]  # chartsheets hold no cells
            if len(sheets) > MAX_SHEETS:
                budget.warnings.append(f"read the first {MAX_SHEETS} of {len(sheets)} sheets")
            for sheet in sheets[:MAX_SHEETS]:
                if budget.left <= 0:
                    break
                name = " ".join(str(sheet.title).split())
                sheet.reset_dimensions()  # the declared dimension may be wrong, or huge
                rows = sheet_rows(sheet.iter_rows(values_only=True), name, budget)
                if rows:
                    items.extend([Heading(1, f"Sheet: {name}"), Content("table", tuple(rows))])
            title = " ".join(str(workbook.properties.title or "").split())
        finally:
            workbook.close()
        assembled = assemble([Page(None, tuple(items))])
        if not assembled.blocks:
            raise KbError("the .xlsx has no cells with values", hint="nothing to index; remove it or .kbignore it")
        sheet_count = sum(isinstance(i, Heading) for i in items)
        metadata = {"format": "xlsx", "sheets": sheet_count, "lines": assembled.line_count}
        name = title or PurePosixPath(path.replace("\\", "/")).name or path
        return ParsedDocument(name[:200], assembled.blocks, metadata, tuple(budget.warnings))
