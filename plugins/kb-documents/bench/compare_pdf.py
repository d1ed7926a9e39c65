"""Compare PDF text extractors on the kb-documents fixtures: speed (pages/s) and text quality.

    python plugins/kb-documents/bench/compare_pdf.py [--pages 200]

Extractors: pdfium's own text order (pypdfium2 ``get_text_range``), kb-documents (pdfium glyphs +
its reading-order layout), pdfplumber (pdfminer.six) and pypdf. Quality checks on the fixtures:
the two columns of ``columns.pdf`` read one after the other (not interleaved line by line), the
table rows of ``report.pdf`` stay on one line each, and a set of phrases is found verbatim (no
split or glued words). Speed is measured on a generated PDF of ``--pages`` pages (needs fpdf2).
Needs ``pip install 'kb-documents[bench,fixtures]'``.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pdfplumber
import pypdf
import pypdfium2 as pdfium

from kb_documents.assemble import parsed_text
from kb_documents.pdf import PdfParser

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "scripts"))
from make_fixtures import bench_pdf

PHRASES = [
    "commissioned on 14 July",
    "Ridgeback lost two days of output to a transformer fault",
    "The current firmware is version 7.2",
    "Output per plant in the third quarter",
]
ROWS = ["Lakeside", "4210", "99.1%"]


def pdfium_plain(data: bytes) -> tuple[str, int]:
    """pdfium's text in its own order, page by page."""
    document = pdfium.PdfDocument(data)
    try:
        pages = [document[i].get_textpage().get_text_range() for i in range(len(document))]
        return "\n".join(p.replace("\r\n", "\n") for p in pages), len(pages)
    finally:
        document.close()


def kb_documents(data: bytes) -> tuple[str, int]:
    """kb-documents: pdfium glyphs in reading order, page lines, tables as rows."""
    doc = PdfParser().parse_bytes(data, "bench.pdf")
    return parsed_text(doc.blocks), int(doc.metadata["pages"])


def plumber(data: bytes) -> tuple[str, int]:
    """pdfplumber's extract_text per page."""
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        pages = [page.extract_text() or "" for page in pdf.pages]
    return "\n".join(pages), len(pages)


def pypdf_text(data: bytes) -> tuple[str, int]:
    """pypdf's extract_text per page."""
    reader = pypdf.PdfReader(io.BytesIO(data))
    pages = [page.extract_text() or "" for page in reader.pages]
    return "\n".join(pages), len(pages)


EXTRACTORS: dict[str, Callable[[bytes], tuple[str, int]]] = {
    "pdfium (own order)": pdfium_plain,
    "kb-documents (pdfium + layout)": kb_documents,
    "pdfplumber": plumber,
    "pypdf": pypdf_text,
}


def columns_ok(text: str) -> bool:
    """Left column read completely before the right one."""
    marks = ["left column starts", "left column ends", "right column starts", "right column ends"]
    found = [text.find(m) for m in marks]
    return -1 not in found and found == sorted(found)


def rows_ok(text: str) -> bool:
    """The Lakeside row's cells on one line, in order."""
    for line in text.split("\n"):
        positions = [line.find(cell) for cell in ROWS]
        if -1 not in positions and positions == sorted(positions):
            return True
    return False


def phrases_found(text: str) -> int:
    """How many of the check phrases appear verbatim (whitespace-normalised)."""
    flat = " ".join(text.split())
    return sum(phrase in flat for phrase in PHRASES)


def main() -> None:
    """Print one row per extractor: quality checks, then speed on the generated PDF."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    report = (HERE / "fixtures" / "good" / "report.pdf").read_bytes()
    columns = (HERE / "fixtures" / "good" / "columns.pdf").read_bytes()
    big = bench_pdf(args.pages)
    print(f"speed on a generated PDF of {args.pages} pages ({len(big)} bytes), best of {args.repeat}")
    print(f"{'extractor':32} {'columns':>8} {'rows':>5} {'phrases':>8} {'pages/s':>9}")
    for name, extract in EXTRACTORS.items():
        report_text, _ = extract(report)
        columns_text, _ = extract(columns)
        best = float("inf")
        for _ in range(args.repeat):
            started = time.perf_counter()
            _, pages = extract(big)
            best = min(best, time.perf_counter() - started)
        quality = (
            columns_ok(columns_text) and columns_ok(report_text),
            rows_ok(report_text),
            phrases_found(report_text),
        )
        print(
            f"{name:32} {'ok' if quality[0] else 'MIXED':>8} {'ok' if quality[1] else 'split':>5} "
            f"{quality[2]:>5}/{len(PHRASES)} {pages / best:>9.1f}"
        )


if __name__ == "__main__":
    main()
