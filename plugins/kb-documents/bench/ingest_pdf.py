"""PDF throughput: text extraction alone, and a whole ``kb ingest`` of a folder of PDFs.

    python plugins/kb-documents/bench/ingest_pdf.py [--pages 200] [--files 20]

Generates ``--pages`` report-like pages split over ``--files`` PDFs in a temporary folder (needs
fpdf2), then prints: pages/s of ``PdfParser`` alone; pages/s of ``kb_core.ingest_paths`` into a
new knowledge base (default indexes: tantivy and sqlite-vec, default embedder); and the share of
the ingest spent in the parser, in the embedder (vectors) and in its tokenizer (chunk sizing),
measured by timing wrappers around those calls. Run it under ``flock /tmp/kb-heavy.lock``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kb_core
from kb_documents.binary import BinaryParser
from kb_documents.pdf import PdfParser

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "scripts"))
from make_fixtures import bench_pdf

SPENT: dict[str, float] = defaultdict(float)


def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` adding its wall time to ``SPENT[name]``."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[name] += time.perf_counter() - started

    return wrapper


def main() -> None:
    """Generate the folder, time the parser alone, then a whole ingest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--files", type=int, default=20)
    args = parser.parse_args()
    per_file = max(1, args.pages // args.files)
    with tempfile.TemporaryDirectory(prefix="kb-documents-bench-") as tmp:
        folder = Path(tmp) / "pdfs"
        folder.mkdir()
        for index in range(args.files):
            (folder / f"bench-{index:03d}.pdf").write_bytes(bench_pdf(per_file))
        pages = per_file * args.files
        files = sorted(folder.iterdir())

        started = time.perf_counter()
        chunks_of_text = 0
        for path in files:
            doc = PdfParser().parse_bytes(path.read_bytes(), path.name)
            chunks_of_text += len(doc.blocks)
        alone = time.perf_counter() - started
        print(f"parser alone: {pages} pages in {alone:.2f} s = {pages / alone:.1f} pages/s ({chunks_of_text} blocks)")

        BinaryParser.parse = timed("parser", BinaryParser.parse)  # type: ignore[method-assign]
        config = Path(tmp) / "config.toml"
        config.write_text("")
        with kb_core.open_kb(config_path=config, kb_dir=Path(tmp) / "kb") as kb:
            embedder = kb.embedder()  # loaded before the clock starts: a model load is not ingest work
            embedder.embed_documents = timed("embedder (vectors)", embedder.embed_documents)  # type: ignore[method-assign]
            if hasattr(embedder, "embed_array"):  # what the sqlite-vec index calls when the embedder has it
                embedder.embed_array = timed("embedder (vectors)", embedder.embed_array)
            embedder.count_tokens = timed("tokenizer (chunk sizing)", embedder.count_tokens)  # type: ignore[method-assign]
            if hasattr(embedder, "token_starts"):
                embedder.token_starts = timed("tokenizer (chunk sizing)", embedder.token_starts)
            started = time.perf_counter()
            report = kb_core.ingest_paths(kb, [folder])
            total = time.perf_counter() - started
        assert not report.failed, report.failed
        print(
            f"ingest: {len(report.added)} files, {pages} pages, {report.chunks} chunks in {total:.2f} s "
            f"= {pages / total:.1f} pages/s"
        )
        rest = total - sum(SPENT.values())
        for name, spent in [*sorted(SPENT.items()), ("everything else (store, indexes)", rest)]:
            print(f"  {name:34} {spent:7.2f} s  {100 * spent / total:5.1f} %")


if __name__ == "__main__":
    main()
