"""Jupyter notebooks (.ipynb) read with the standard library's json.

Each cell is a part (:mod:`kb_documents.parts`) whose first line is ``Cell N``: N is the cell's
position in the notebook, from 1, as Jupyter lists them (trailing empty cells are left out), so
``analysis.ipynb#cell=4&L30-L41`` names cell 4 and its lines. A markdown cell's ``#`` headings are
headings (they carry over to the cells after them, as sections of the notebook); its other lines are
paragraphs. A code cell is a fenced code block in the notebook's language, its indentation kept;
its text outputs (streams, ``text/plain`` results, an error's name and message) follow under
``Output:`` when ``[backends.documents] notebook_outputs`` is true (the default), at most
:data:`MAX_OUTPUT_LINES` lines per cell; images and HTML outputs are never read. nbformat 4 is
read, and nbformat 3 (``worksheets``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from kb_core import KbError
from kb_core.plugin import ParsedDocument
from kb_documents.assemble import Content, Heading, Page
from kb_documents.binary import BinaryParser
from kb_documents.limits import Limits
from kb_documents.office import damaged
from kb_documents.parts import parted_document

#: Lines of output kept per code cell (a training loop's log is cut, with a warning).
MAX_OUTPUT_LINES = 200
SAVE_HINT = "open it in Jupyter and save it again, or check it with: python -m json.tool FILE"
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_LANGUAGE = re.compile(r"[A-Za-z0-9+#._-]{1,30}")


def _text(value: Any) -> str:
    """A notebook string: one string, or a list of strings (nbformat's multiline form)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""


def _markdown(source: str) -> Iterator[Heading | Content]:
    """A markdown cell: ``#`` headings, fenced code blocks, and paragraphs between blank lines."""
    paragraph: list[str] = []
    code: list[str] | None = None
    for line in source.splitlines():
        if code is not None:
            code.append(line)
            if _FENCE.match(line):
                yield Content("code", tuple(code))
                code = None
            continue
        heading = _HEADING.match(line)
        if heading or _FENCE.match(line) or not line.strip():
            if paragraph:
                yield Content("paragraph", tuple(paragraph))
                paragraph = []
            if heading:
                yield Heading(len(heading.group(1)), heading.group(2))
            elif line.strip():
                code = [line]
            continue
        paragraph.append(line)
    if paragraph:
        yield Content("paragraph", tuple(paragraph))
    if code:
        yield Content("code", tuple(code))


def _outputs(outputs: Any) -> list[str]:
    lines: list[str] = []
    for output in outputs if isinstance(outputs, list) else []:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            text = _text(output.get("text"))
        elif kind in ("execute_result", "display_data", "pyout"):
            data = output.get("data")
            text = _text(data.get("text/plain")) if isinstance(data, dict) else _text(output.get("text"))
        elif kind in ("error", "pyerr"):
            text = f"{output.get('ename', '')}: {output.get('evalue', '')}"
        else:
            continue
        lines.extend(_ANSI.sub("", text).splitlines())
    return lines


def _cells(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    if isinstance(notebook.get("cells"), list):
        cells = notebook["cells"]
    elif isinstance(notebook.get("worksheets"), list):  # nbformat 3
        cells = [c for w in notebook["worksheets"] if isinstance(w, dict) for c in w.get("cells") or []]
    else:
        raise KbError("not a Jupyter notebook (it has no cells)", hint=SAVE_HINT)
    return [cell for cell in cells if isinstance(cell, dict)]


def _metadata(notebook: dict[str, Any]) -> dict[str, Any]:
    metadata = notebook.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _language(notebook: dict[str, Any]) -> str:
    metadata = _metadata(notebook)
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        holder = metadata.get(key)
        value = holder.get(field) if isinstance(holder, dict) else None
        if isinstance(value, str) and _LANGUAGE.fullmatch(value):
            return value.lower()
    return ""


class NotebookParser(BinaryParser):
    """Jupyter notebooks: each cell a part (``Cell N``), markdown as text, code as code blocks."""

    kind = ".ipynb"

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    def parse_bytes(self, data: bytes, path: str) -> ParsedDocument:
        """Parse notebook bytes (JSON); every failure is a KbError."""
        self.check_size(data, self.limits.max_bytes)
        return damaged(".ipynb", SAVE_HINT, lambda: self._parse(data, path))

    def _parse(self, data: bytes, path: str) -> ParsedDocument:
        try:
            notebook = json.loads(data.decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise KbError(f"the .ipynb is not UTF-8 text (byte {exc.start})", hint=SAVE_HINT) from None
        except json.JSONDecodeError as exc:
            raise KbError(
                f"the .ipynb is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", hint=SAVE_HINT
            ) from None
        except RecursionError:
            raise KbError("the .ipynb nests its JSON too deeply to be a notebook", hint=SAVE_HINT) from None
        if not isinstance(notebook, dict):
            raise KbError("not a Jupyter notebook (its JSON is not an object)", hint=SAVE_HINT)
        cells = _cells(notebook)
        language = _language(notebook)
        warnings: list[str] = []
        pages = []
        for number, cell in enumerate(cells, start=1):
            items = list(self._cell(cell, language, number, warnings))
            pages.append(Page(number, tuple(items), unit="Cell"))
        while pages and not pages[-1].items:
            pages.pop()
        title = _metadata(notebook).get("title")
        title = title if isinstance(title, str) else ""
        first = next((i.text for p in pages for i in p.items if isinstance(i, Heading) and i.level == 1), "")
        return parted_document(pages, path, title or first, "ipynb", "cell", warnings)

    def _cell(
        self, cell: dict[str, Any], language: str, number: int, warnings: list[str]
    ) -> Iterator[Heading | Content]:
        kind = cell.get("cell_type")
        source = _text(cell.get("source", cell.get("input")))
        if kind == "markdown":
            yield from _markdown(source)
        elif kind == "heading":  # nbformat 3
            level = cell.get("level")
            yield Heading(min(max(level, 1), 6) if isinstance(level, int) else 1, source)
        elif kind == "code":
            lines = source.splitlines()
            if any(line.strip() for line in lines):
                yield Content("code", (f"```{language}", *lines, "```"))
            output = _outputs(cell.get("outputs")) if self.limits.notebook_outputs else []
            if len(output) > MAX_OUTPUT_LINES:
                warnings.append(f"cell {number}: kept {MAX_OUTPUT_LINES} of its {len(output)} lines of output")
                output = output[:MAX_OUTPUT_LINES]
            if any(line.strip() for line in output):
                yield Content("code", ("Output:", *output))
        elif source.strip():  # a raw cell
            yield Content("paragraph", tuple(source.splitlines()))
