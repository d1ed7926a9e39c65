"""Table rows as cells: kb-tesseract's ``split_cells`` off and on, on scanned pages with known text.

    python plugins/kb-tesseract/bench/cells.py [--limit 40] [--offset 0] [--cjk 0] [--justified 0] [--json F]

Pages, each read by the engine with the option off and on:

- ``--limit`` documents spread evenly over ``../shared/datasets/tatqa-tune/scanned/`` (150-dpi
  grey scans of annual-report excerpts: justified paragraphs and a ruled table), ``--offset``
  files into each stride (another sample), against ``truth/<n>.txt`` (a table row is a line with
  its cells joined by `` | ``);
- ``--cjk`` Korean and as many Chinese pages from ``bench/ocr_engines.py``'s page generator
  (paragraphs and a ruled table of figures, degraded), made in memory;
- ``--justified`` pages of prose only, made here: tatqa's paragraphs justified in two narrow
  columns (420 px: about 18 ems of 23-px DejaVu Sans or Serif at 150 dpi, no hyphenation), so that
  many lines have their spaces stretched to one to six ems; lightly blurred.

The engine's lines go through kb-documents' layout for OCR'd pages (``OcrPage.layout``: lines
sharing a row become one row, cells joined by `` | ``) and its blocks. It prints, off and on:

- ``rows``: the truth's table rows with a figure (a cell of digits with signs, currency and
  separators: ``$(1,011)``, ``13%``); ``figures apart``: the share whose figures each come out as
  a cell of their own, in order, on one output row (exactly, after NFKC, whitespace removed);
  ``all cells``: the same for every non-empty cell of the row; ``in tables``: of the rows whose
  figures are apart, the share in a table block;
- ``prose rows with cells``: layout rows that are a piece of a paragraph of the truth (12
  characters or more) but have several cells; ``prose lines split``: the engine's lines (option
  off) that are a piece of a paragraph and that the option does not return whole;
- seconds per page (the engine's ``read``), median.

Needs Tesseract's data, kb-documents and Pillow (``pip install -e "plugins/kb-tesseract[test]"``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
import time
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "bench"))

import ocr_engines  # the benchmark's page loading and its Korean and Chinese page generator

from kb_core.plugin import OcrImage, OcrLine
from kb_documents.layout import Line
from kb_documents.ocr_pages import OcrPage, clean_lines, page_items
from kb_tesseract import make_engine

TATQA = REPO.parent / "shared" / "datasets" / "tatqa-tune"
FONTS = Path("/usr/share/fonts/truetype/dejavu")
MIN_PROSE = 12


def squeeze(text: str) -> str:
    """``text`` compared as the truth is: NFKC, no whitespace."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def documents(limit: int, offset: int, cjk: int) -> Iterator[tuple[str, list[OcrImage], str]]:
    """(name, page images, truth) for the tatqa documents and the generated Korean and Chinese pages."""
    files = sorted(p for p in (TATQA / "scanned").iterdir() if p.suffix in (".pdf", ".jpg"))
    picked = sorted({files[min((i * len(files)) // limit + offset, len(files) - 1)] for i in range(limit)})
    for path in picked:
        truth = (TATQA / "truth" / f"{path.stem}.txt").read_text(encoding="utf-8")
        images = [_ocr_image(image, ocr_engines.page_dpi(image)) for image in ocr_engines.load_pages(path)]
        yield path.stem, images, truth
    for lang in ("ko", "zh") if cjk else ():
        sources = sorted((ocr_engines.CJK_FIXTURES / lang).rglob("*.md"))
        for index in range(cjk):
            image, truth = ocr_engines.render_cjk_page(lang, index, sources[index % len(sources)])
            yield f"{lang}-{index + 1}", [_ocr_image(image.convert("RGB"), 150)], truth


def justified_pages(count: int) -> Iterator[tuple[str, list[OcrImage], str]]:
    """``count`` pages of tatqa's paragraphs justified in two narrow columns (see the docstring)."""
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    texts = [
        line
        for path in sorted((TATQA / "truth").glob("*.txt"))
        for line in path.read_text(encoding="utf-8").splitlines()[1:]
        if " | " not in line and len(line) > 200
    ]
    width, height, top, column, gutter = 1275, 1650, 120, 420, 60
    lefts = (135, 135 + column + gutter)
    for index in range(count):
        face = ImageFont.truetype(str(FONTS / ("DejaVuSerif.ttf" if index % 2 else "DejaVuSans.ttf")), 23)
        page = Image.new("L", (width, height), 250)
        draw = ImageDraw.Draw(page)
        placed: list[str] = []
        x_column, y = 0, top
        for text in texts[index * 6 :]:
            lines = _wrap(draw, text, face, column)
            if y + len(lines) * 34 > height - 120:
                if x_column == 1:
                    break
                x_column, y = 1, top
                if y + len(lines) * 34 > height - 120:
                    break
            for number, words in enumerate(lines):
                last = number == len(lines) - 1
                widths = [draw.textlength(word, font=face) for word in words]
                space = draw.textlength(" ", font=face)
                gap = space if last or len(words) < 2 else (column - sum(widths)) / (len(words) - 1)
                x = float(lefts[x_column])
                for word, word_width in zip(words, widths):
                    draw.text((x, y), word, font=face, fill=25)
                    x += word_width + gap
                y += 34
            y += 20
            placed.append(text)
        page = page.filter(ImageFilter.GaussianBlur(0.5)).convert("RGB")
        yield f"justified-{index + 1}", [_ocr_image(page, 150)], "title\n" + "\n".join(placed) + "\n"


def _wrap(draw: Any, text: str, face: Any, width: int) -> list[list[str]]:
    lines: list[list[str]] = [[]]
    for word in text.split():
        if lines[-1] and draw.textlength(" ".join([*lines[-1], word]), font=face) > width:
            lines.append([])
        lines[-1].append(word)
    return lines


def _ocr_image(image: Any, dpi: int) -> OcrImage:
    return OcrImage(image.tobytes(), image.width, image.height, dpi)


def layout(lines: Sequence[OcrLine], image: OcrImage) -> tuple[list[Line], set[int]]:
    """kb-documents' rows for the engine's lines (page units: pixels) and the rows in table blocks.
    A ``|`` the engine read (a table's rule taken for a letter) becomes ``¦``, so that only the
    layout's own separators split a row into cells here."""
    marked = [OcrLine(line.text.replace("|", "¦"), line.box, line.confidence) for line in lines]
    page = OcrPage(1, image.width, image.height, 1.0, clean_lines(marked, image.width, image.height))
    rows = page.layout()
    in_tables: set[int] = set()
    index = 0
    for item in page_items(rows):
        if item.kind == "table":
            in_tables.update(range(index, index + len(item.lines)))
        index += len(item.lines)
    return rows, in_tables


def is_figure(cell: str) -> bool:
    """Whether a (squeezed) cell is a figure: digits with signs, currency, separators (``$(1,011)``, ``13%``)."""
    return re.fullmatch(r"[-+−–—$€£¥(]*\d[\d,.]*[)%]*", cell) is not None


def table_rows(truth: str) -> list[list[str]]:
    """The truth's table rows with a figure: their non-empty cells, squeezed."""
    rows = []
    for line in truth.splitlines():
        if " | " not in line:
            continue
        cells = [squeeze(cell) for cell in line.split(" | ")]
        cells = [cell for cell in cells if cell]
        if len(cells) >= 2 and any(is_figure(cell) for cell in cells):
            rows.append(cells)
    return rows


def paragraphs(truth: str) -> list[str]:
    """The truth's lines that are not table rows, squeezed (the first, a title, included)."""
    return [squeeze(line) for line in truth.splitlines() if " | " not in line and line.strip()]


def _in_order(wanted: Sequence[str], cells: Sequence[str]) -> bool:
    position = 0
    for cell in wanted:
        try:
            position = cells.index(cell, position) + 1
        except ValueError:
            return False
    return True


def score_rows(truth: str, rows: Sequence[Line], in_tables: set[int]) -> dict[str, int]:
    """Counts of the truth's table rows found as cells (see the module's docstring)."""
    out = {"rows": 0, "figures_apart": 0, "all_cells": 0, "in_tables": 0}
    cells_of = [[squeeze(cell) for cell in row.text.split(" | ")] for row in rows]
    for wanted in table_rows(truth):
        figures = [cell for cell in wanted if is_figure(cell)]
        out["rows"] += 1
        found = [i for i, cells in enumerate(cells_of) if len(cells) > 1 and _in_order(figures, cells)]
        if found:
            out["figures_apart"] += 1
            out["in_tables"] += any(i in in_tables for i in found)
        out["all_cells"] += any(len(cells) > 1 and _in_order(wanted, cells) for cells in cells_of)
    return out


def is_prose(text: str, paras: Sequence[str]) -> bool:
    """Whether ``text`` is a piece of one of the truth's paragraphs."""
    squeezed = squeeze(text.replace(" | ", " "))
    return len(squeezed) >= MIN_PROSE and any(squeezed in para for para in paras)


def run(limit: int, offset: int, cjk: int, justified: int = 0) -> dict[str, Any]:
    """Both modes over the pages: the counts, per page set, and the examples of split prose."""
    engines = {"off": make_engine({"split_cells": False}), "on": make_engine({"split_cells": True})}
    totals: dict[str, dict[str, dict[str, int]]] = {}
    seconds: dict[str, list[float]] = {mode: [] for mode in engines}
    split_prose: list[str] = []
    for name, images, truth in itertools.chain(documents(limit, offset, cjk), justified_pages(justified)):
        group = totals.setdefault(name.split("-")[0] if "-" in name else "en", {m: {} for m in engines})
        paras = paragraphs(truth)
        read: dict[str, list[list[OcrLine]]] = {mode: [] for mode in engines}
        for mode, engine in engines.items():
            rows: list[Line] = []
            in_tables: set[int] = set()
            for image in images:
                started = time.perf_counter()
                read[mode].append(engine.read(image))
                seconds[mode].append(time.perf_counter() - started)
                page_rows, page_tables = layout(read[mode][-1], image)
                in_tables.update(len(rows) + i for i in page_tables)
                rows.extend(page_rows)
            counts = score_rows(truth, rows, in_tables)
            counts["prose_rows"] = sum(is_prose(row.text, paras) for row in rows)
            counts["prose_rows_with_cells"] = sum(row.cells > 1 and is_prose(row.text, paras) for row in rows)
            for key, value in counts.items():
                group[mode][key] = group[mode].get(key, 0) + value
        for off, on in zip(read["off"], read["on"]):
            prose = [line for line in off if is_prose(line.text, paras)]
            split = [line for line in prose if line not in on]
            group["on"]["prose_lines"] = group["on"].get("prose_lines", 0) + len(prose)
            group["on"]["prose_lines_split"] = group["on"].get("prose_lines_split", 0) + len(split)
            split_prose.extend(f"{name}: {line.text}" for line in split)
    for engine in engines.values():
        engine.close()
    return {
        "identity": {mode: engine.identity for mode, engine in engines.items()},
        "totals": totals,
        "p50_seconds": {mode: round(statistics.median(values), 2) for mode, values in seconds.items() if values},
        "split_prose": split_prose,
    }


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else "-"


def report(result: dict[str, Any]) -> None:
    """The figures as a table, one block per page set."""
    for group, modes in result["totals"].items():
        print(f"== {group}")
        for mode in ("off", "on"):
            c = modes[mode]
            rows, apart = c["rows"], c["figures_apart"]
            print(
                f"  {mode:3}  rows {rows}: figures apart {_share(apart, rows)}, "
                f"all cells {_share(c['all_cells'], rows)}, in tables {_share(c['in_tables'], apart)}; "
                f"prose rows with cells {_share(c['prose_rows_with_cells'], c['prose_rows'])}"
            )
        on = modes["on"]
        print(f"  prose lines split: {_share(on['prose_lines_split'], on['prose_lines'])}")
    print("p50 s/page", result["p50_seconds"])
    for line in result["split_prose"][:20]:
        print("  split prose:", line)


def main(argv: Sequence[str] | None = None) -> int:
    """Run and print (and write ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40, help="tatqa documents, spread evenly")
    parser.add_argument("--offset", type=int, default=0, help="files into each stride (another sample)")
    parser.add_argument("--cjk", type=int, default=0, help="generated Korean and Chinese pages, each")
    parser.add_argument("--justified", type=int, default=0, help="pages of justified prose in narrow columns")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    result = run(args.limit, args.offset, args.cjk, args.justified)
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
