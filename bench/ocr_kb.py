"""OCR through kb itself: generated Korean and Chinese scans (and photos) ingested, the stored text
against the truth the pages were drawn from.

The pages are bench/ocr_engines.py's (a letter page at 150 dpi: title, paragraphs, a ruled table,
then blur, noise, a slight turn and JPEG; half saved as image-only PDFs, half as JPEG photos). Each
language goes into a fresh knowledge base under bench/out/ with the installed OCR engine; the
figures are documents stored, seconds per page, and the character error rate of what kb stored
(whitespace and ``|`` ignored) overall and per document (median, worst).

    python bench/ocr_kb.py --pages 12
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ocr_engines import cjk_docs, edit_distance, normalise  # noqa: E402 - bench/ is the script's folder
from tatqa import stored_text  # noqa: E402

from kb_core.app import KnowledgeBase  # noqa: E402
from kb_core.config import load_config  # noqa: E402
from kb_core.ingest.pipeline import ingest_paths  # noqa: E402

OUT = REPO / "bench" / "out"


def measure(lang: str, pages: int) -> dict[str, object]:
    """Ingest ``pages`` generated pages of ``lang``; the figures."""
    docs = cjk_docs(lang, pages)
    kb_dir = OUT / f"kb-ocr-{lang}"
    shutil.rmtree(kb_dir, ignore_errors=True)
    with tempfile.TemporaryDirectory() as folder:
        for doc in docs:
            shutil.copy(doc.path, Path(folder) / doc.path.name)
        with KnowledgeBase(load_config(kb_dir=kb_dir, environ={})) as kb:
            began = time.perf_counter()
            report = ingest_paths(kb, [Path(folder)])
            seconds = time.perf_counter() - began
            rates, errors, characters = [], 0, 0
            for doc in docs:
                truth, text = normalise(doc.truth), normalise(stored_text(kb, doc.path.name))
                distance = edit_distance(truth, text)
                errors, characters = errors + distance, characters + len(truth)
                rates.append(distance / len(truth))
    return {
        "documents": len(docs),
        "stored": len(report.added),
        "refused": [f"{f.path}: {f.reason}" for f in report.failed],
        "seconds_per_page": round(seconds / len(docs), 2),
        "cer": round(errors / characters, 4),
        "cer_median_document": round(statistics.median(rates), 4),
        "cer_worst_document": round(max(rates), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=12, help="pages per language")
    parser.add_argument("--langs", default="ko,zh")
    args = parser.parse_args()
    print(json.dumps({lang: measure(lang, args.pages) for lang in args.langs.split(",")}, indent=2))


if __name__ == "__main__":
    main()
