"""Generate the PDF and DOCX fixtures of kb-documents (deterministic; run from anywhere).

    python plugins/kb-documents/scripts/make_fixtures.py [--out DIR] [--pages N]

Needs ``pip install 'kb-documents[fixtures]'`` (fpdf2, python-docx). Writes into
``plugins/kb-documents/fixtures/`` by default:

good/   report.pdf (3 pages: outline, heading lines, a table, a two-column page, running lines),
        columns.pdf (one two-column page whose content stream interleaves the columns),
        brochure.pdf (compressed, binary: needs a core that hands parsers bytes),
        handbook.docx (heading styles, a table)
bad/    encrypted.pdf, scanned.pdf (an image, no text layer), truncated.pdf, corrupt.pdf,
        bomb.docx (a 64 MB document.xml deflated to ~64 KB), corrupt.docx

The text PDFs except brochure.pdf are written uncompressed and all-ASCII (the binary marker comment in the header is
replaced by ASCII of the same length), so even a core that hands parsers decoded text loses no
byte of them. ``--pages N`` writes ``bench/pages-N/`` instead: N generated report pages.
"""

from __future__ import annotations

import argparse
import io
import zipfile
from datetime import UTC, datetime
from pathlib import Path

from docx import Document as DocxDocument
from fpdf import FPDF

HERE = Path(__file__).resolve().parent.parent
FIXED_DATE = datetime(2026, 1, 1, tzinfo=UTC)
LOREM = (
    "Heliograph tracks the sun with a pair of stepper motors and reports every reading to the "
    "plant controller, which keeps the readings for ninety days before it rolls them up."
)


def _ascii(pdf: FPDF) -> bytes:
    """The PDF's bytes with the binary header comment replaced by ASCII of the same length."""
    data = bytes(pdf.output())
    marker_end = data.index(b"\n", 9)
    return data[:9] + b"%" + b"A" * (marker_end - 10) + data[marker_end:]


def _new_pdf(title: str) -> FPDF:
    pdf = FPDF(format="A4")
    pdf.set_compression(False)
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title(title)
    pdf.set_auto_page_break(False)
    return pdf


def _heading(pdf: FPDF, text: str, level: int, y: float) -> None:
    pdf.start_section(text, level=level)
    pdf.set_font("Helvetica", "B", 18 if level == 0 else 14)
    pdf.set_xy(20, y)
    pdf.cell(text=text)


def _paragraph(pdf: FPDF, text: str, x: float, y: float, width: float) -> float:
    pdf.set_font("Helvetica", size=10)
    pdf.set_xy(x, y)
    pdf.multi_cell(width, 5, text)
    return pdf.get_y()


def _two_columns(pdf: FPDF, left: list[str], right: list[str], y: float) -> None:
    """Write two columns line by line, alternating left and right (the hard case for reading order)."""
    pdf.set_font("Helvetica", size=10)
    for row in range(max(len(left), len(right))):
        for x, lines in ((20, left), (110, right)):
            if row < len(lines):
                pdf.set_xy(x, y + row * 5)
                pdf.cell(text=lines[row])


LEFT = [
    "The left column starts here. Panels",
    "are cleaned every second Tuesday by",
    "the site crew, who log the work in",
    "the maintenance book. Cleaning raises",
    "the yield by about four percent.",
    "The left column ends here.",
]
RIGHT = [
    "The right column starts here. The",
    "inverter firmware is updated during",
    "the winter shutdown, never in summer.",
    "The current firmware is version 7.2",
    "and it was certified in March.",
    "The right column ends here.",
]


RUNNING_HEADER = "Heliograph Solar - Q3 Operations Report - internal"


def _running_lines(pdf: FPDF, number: int, total: int) -> None:
    """A small running header and a "Page N of M" footer, as most real reports have."""
    pdf.set_font("Helvetica", size=8)
    pdf.set_xy(20, 8)
    pdf.cell(text=RUNNING_HEADER)
    pdf.set_xy(95, 285)
    pdf.cell(text=f"Page {number} of {total}")


def report_pdf() -> bytes:
    """Three pages: title and overview; results with a table; a two-column page; running header and footer."""
    pdf = _new_pdf("Q3 Operations Report")
    pdf.add_page()
    _running_lines(pdf, 1, 3)
    _heading(pdf, "Q3 Operations Report", 0, 20)
    _heading(pdf, "Overview", 1, 35)
    y = _paragraph(pdf, LOREM + " The third quarter closed with no unplanned outage.", 20, 45, 170)
    _paragraph(
        pdf, "The Lakeside plant was commissioned on 14 July and ran at full output from August.", 20, y + 4, 170
    )
    pdf.add_page()
    _running_lines(pdf, 2, 3)
    _heading(pdf, "Results", 1, 20)
    _paragraph(pdf, "Output per plant in the third quarter, in megawatt hours:", 20, 32, 170)
    pdf.set_font("Helvetica", size=10)
    pdf.set_xy(20, 42)
    with pdf.table(col_widths=(60, 40, 40), width=140, align="LEFT", text_align="LEFT") as table:
        for cells in (
            ("Plant", "Output MWh", "Availability"),
            ("Lakeside", "4210", "99.1%"),
            ("Ridgeback", "3875", "97.4%"),
            ("Saltmarsh", "2950", "98.8%"),
        ):
            row = table.row()
            for cell in cells:
                row.cell(cell)
    _paragraph(pdf, "Ridgeback lost two days of output to a transformer fault in September.", 20, 85, 170)
    pdf.add_page()
    _running_lines(pdf, 3, 3)
    _heading(pdf, "Maintenance", 1, 20)
    _two_columns(pdf, LEFT, RIGHT, 35)
    return _ascii(pdf)


def columns_pdf() -> bytes:
    """One page: a full-width title, then two columns interleaved in the content stream."""
    pdf = _new_pdf("Site Notes")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.set_xy(20, 20)
    pdf.cell(text="Site Notes")
    _two_columns(pdf, LEFT, RIGHT, 35)
    _paragraph(
        pdf,
        "A full-width closing paragraph follows both columns; it runs across the gutter to the right margin.",
        20,
        75,
        170,
    )
    return _ascii(pdf)


def brochure_pdf() -> bytes:
    """A compressed PDF with the usual binary header: real-world bytes that only ``parse_bytes`` can read."""
    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title("Visitor Brochure")
    pdf.add_page()
    _heading(pdf, "Visitor Brochure", 0, 20)
    _paragraph(
        pdf, "Guided tours of the Saltmarsh plant start at 10:30 every Saturday from the north gate.", 20, 35, 170
    )
    return bytes(pdf.output())


def bench_pdf(pages: int) -> bytes:
    """``pages`` report-like pages (heading, paragraphs, a small table) for the benchmarks."""
    pdf = _new_pdf("Bench")
    for number in range(1, pages + 1):
        pdf.add_page()
        _heading(pdf, f"Section {number}", 1, 20)
        y = 32.0
        for paragraph in range(4):
            y = _paragraph(pdf, f"Paragraph {paragraph} of page {number}. " + LOREM * 2, 20, y + 3, 170)
        _two_columns(pdf, LEFT, RIGHT, y + 6)
    return _ascii(pdf)


def encrypted_pdf() -> bytes:
    """A PDF that needs a user password to open."""
    pdf = _new_pdf("Secret")
    pdf.add_page()
    _paragraph(pdf, "The vault code is 4417.", 20, 20, 170)
    pdf.set_encryption(owner_password="owner", user_password="user")
    return bytes(pdf.output())


def scanned_pdf() -> bytes:
    """An image-only page (what a scanner without OCR produces): hand-written PDF syntax."""
    pixels = "".join("00" if (x // 8 + y // 8) % 2 else "ff" for y in range(64) for x in range(64))
    content = f"q 400 0 0 400 100 300 cm\nBI /W 64 /H 64 /CS /G /BPC 8 /F /AHx ID\n{pixels}>\nEI\nQ\n"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}endstream",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode("ascii"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode("ascii"))
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode("ascii"))
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode("ascii"))
    return out.getvalue()


def handbook_docx() -> bytes:
    """Heading styles (two levels), paragraphs and a table."""
    doc = DocxDocument()
    doc.core_properties.title = "Operator Handbook"
    doc.core_properties.created = FIXED_DATE.replace(tzinfo=None)
    doc.core_properties.modified = FIXED_DATE.replace(tzinfo=None)
    doc.add_heading("Operator Handbook", level=0)
    doc.add_heading("Safety", level=1)
    doc.add_paragraph("Always isolate the string before opening a combiner box.")
    doc.add_paragraph("Wear class 0 gloves when measuring open-circuit voltage.")
    doc.add_heading("Lockout procedure", level=2)
    doc.add_paragraph("Lock the DC isolator, tag it with your name, and test for zero voltage.")
    doc.add_heading("Contacts", level=1)
    doc.add_paragraph("Call the control room first; it is staffed around the clock.")
    table = doc.add_table(rows=3, cols=2)
    for row, cells in zip(table.rows, (("Role", "Extension"), ("Control room", "2201"), ("Site manager", "2245"))):
        for cell, text in zip(row.cells, cells):
            cell.text = text
    doc.add_paragraph("Out of hours, the duty engineer carries the pager 7788.")
    out = io.BytesIO()
    doc.save(out)
    return _fixed_zip_dates(out.getvalue())


def _fixed_zip_dates(data: bytes) -> bytes:
    """Rewrite a zip with fixed member dates, so regenerating gives identical bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


def bomb_docx(handbook: bytes, inflated_bytes: int = 64 * 1024 * 1024) -> bytes:
    """The handbook with word/document.xml replaced by ``inflated_bytes`` of spaces (ratio ~1000:1)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(handbook)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            if info.filename == "word/document.xml":
                with dst.open(fixed, "w") as member:
                    chunk = b" " * (1024 * 1024)
                    for _ in range(inflated_bytes // len(chunk)):
                        member.write(chunk)
            else:
                dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


def write_all(out: Path) -> dict[str, int]:
    """Write every fixture under ``out``; return their sizes by relative path."""
    report = report_pdf()
    handbook = handbook_docx()
    files = {
        "good/report.pdf": report,
        "good/columns.pdf": columns_pdf(),
        "good/brochure.pdf": brochure_pdf(),
        "good/handbook.docx": handbook,
        "bad/encrypted.pdf": encrypted_pdf(),
        "bad/scanned.pdf": scanned_pdf(),
        "bad/truncated.pdf": report[: len(report) // 2],
        "bad/corrupt.pdf": b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF\n",
        "bad/bomb.docx": bomb_docx(handbook),
        "bad/corrupt.docx": b"PK\x03\x04 this is not really a zip archive",
    }
    for name, data in files.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return {name: len(data) for name, data in files.items()}


def main() -> None:
    """Command line: write the fixtures, or a bench folder of generated pages."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--pages", type=int, default=0, help="write one bench PDF of N pages instead")
    parser.add_argument("--files", type=int, default=1, help="with --pages: split the pages over this many PDFs")
    args = parser.parse_args()
    if args.pages:
        out = args.out or HERE / "bench" / f"pages-{args.pages}"
        out.mkdir(parents=True, exist_ok=True)
        per_file = max(1, args.pages // args.files)
        for index in range(args.files):
            (out / f"bench-{index:03d}.pdf").write_bytes(bench_pdf(per_file))
        print(f"wrote {args.files} PDF(s) of {per_file} pages to {out}")
        return
    for name, size in write_all(args.out or HERE / "fixtures").items():
        print(f"{size:>10}  {name}")


if __name__ == "__main__":
    main()
