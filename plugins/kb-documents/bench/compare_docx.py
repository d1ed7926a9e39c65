"""Compare reading a .docx with python-docx and with kb-documents (zipfile + defusedxml).

    python plugins/kb-documents/bench/compare_docx.py [--repeat 50]

Prints documents/s on ``fixtures/good/handbook.docx`` (body paragraphs and tables in document
order, heading styles) and what each does with ``fixtures/bad/bomb.docx`` (a 64 MB
document.xml deflated to ~100 KB): time and peak memory (tracemalloc) until it gives up or
finishes. Needs ``pip install 'kb-documents[bench]'``.
"""

from __future__ import annotations

import argparse
import io
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import docx

from kb_documents.docx import DocxParser

HERE = Path(__file__).resolve().parent.parent


def with_python_docx(data: bytes) -> int:
    """Lines (paragraphs and table rows) in body order, through python-docx (lxml)."""
    document = docx.Document(io.BytesIO(data))
    lines = 0
    for item in document.iter_inner_content():
        if isinstance(item, docx.table.Table):
            lines += len(item.rows)
        elif item.text.strip():
            lines += 1
    return lines


def with_kb_documents(data: bytes) -> int:
    """Lines of the parsed text, through kb-documents."""
    return DocxParser().parse_bytes(data, "bench.docx").metadata["paragraphs"]


READERS: dict[str, Callable[[bytes], int]] = {"python-docx": with_python_docx, "kb-documents": with_kb_documents}


def main() -> None:
    """Speed on the handbook, then behaviour on the zip bomb."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    handbook = (HERE / "fixtures" / "good" / "handbook.docx").read_bytes()
    bomb = (HERE / "fixtures" / "bad" / "bomb.docx").read_bytes()
    print(f"{'reader':14} {'lines':>5} {'docs/s':>8}   bomb.docx")
    for name, read in READERS.items():
        lines = read(handbook)
        started = time.perf_counter()
        for _ in range(args.repeat):
            read(handbook)
        speed = args.repeat / (time.perf_counter() - started)
        tracemalloc.start()
        started = time.perf_counter()
        try:
            outcome = f"read {read(bomb)} lines"
        except Exception as exc:  # noqa: BLE001 - reporting whatever each reader does
            outcome = f"refused ({type(exc).__name__}: {str(exc)[:60]})"
        spent = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"{name:14} {lines:>5} {speed:>8.1f}   {outcome} in {spent:.2f} s, peak {peak / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
