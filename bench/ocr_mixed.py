"""Scanned Korean pages that mix scripts, read by kb-tesseract: Hanja and Latin words kept?

Two page sets, read one page at a time by kb-tesseract's engine (OSD picks the model, as in kb):

- ``mixed``: bench/mixed_pages.py's pages (Hangul sentences with Hanja and Latin words, numbers, a
  ruled table; 150 dpi, degraded like the generated Korean pages), JPEG, under bench/out/ocr_pages/ko-mixed/;
- ``pure``: bench/ocr_engines.py's generated Korean pages (``cjk_docs("ko")``, half PDFs);
- ``zh`` and ``en``: its generated Chinese pages and its sample of scanned TAT-QA documents
  (``../shared/datasets/tatqa-tune``), to see that they read as before.

For each way of reading (``--ways``) and set it prints:

- ``bigrams lost``: the share of the truth's character bigrams missing from the text read, order-free
  (multisets of overlapping pairs of characters after NFKC, whitespace and ``|`` removed: Hangul,
  Hanja, Latin letters, digits and punctuation alike);
- ``CER``: character error rate as bench/ocr_kb.py counts it (edits / truth characters, same normalising);
- ``Hanja`` / ``Latin``: the share of the truth's runs of Han characters / Latin letters found in the text;
- ``s/page``: seconds per page, median (the engine's read only; models load on the first page), and
  ``CPU s/page``, the process's CPU seconds per page, median (the engine reads on one thread: a
  figure that the other jobs of a shared machine disturb less).

Ways: ``today`` (kb-tesseract 0.1: the page's model alone, OSD's script taken as is), ``reread``
(the default now: doubtful runs of words read again with HanT and eng, and a second opinion when
OSD is unsure of the script and the reading is poor), ``reread-only`` (without the second
opinion), and ``as:<models>``: a Korean page read with
a multi-model string instead of its model, e.g. ``as:Hangul+HanT+eng`` (Tesseract picks a model
per word).

    python bench/ocr_mixed.py --pages 12 --ways today,reread
    python bench/ocr_mixed.py --pages 6 --ways as:kor,as:kor+eng,as:Hangul+HanT,as:Hangul+HanT+eng
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mixed_pages import mixed_pages  # noqa: E402 - bench/ is the script's folder
from ocr_engines import OUT, cjk_docs, edit_distance, load_pages, normalise, page_dpi, tatqa_docs  # noqa: E402

from kb_core.plugin import OcrImage  # noqa: E402
from kb_tesseract import make_engine  # noqa: E402
from kb_tesseract.engine import TesseractEngine  # noqa: E402

HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
LATIN = re.compile("[A-Za-z]+")


def bigrams(text: str) -> Counter[str]:
    """Overlapping character pairs of ``text`` after NFKC, whitespace and ``|`` removed."""
    flat = normalise(text)
    return Counter(flat[i : i + 2] for i in range(len(flat) - 1))


def bigrams_lost(truth: str, text: str) -> tuple[int, int]:
    """(the truth's bigrams missing from ``text``, the truth's bigrams), order-free."""
    ref = bigrams(truth)
    return sum((ref - bigrams(text)).values()), sum(ref.values())


def runs_found(pattern: re.Pattern[str], truth: str, text: str) -> tuple[int, int]:
    """(runs of ``pattern`` in the truth found in ``text``, runs in the truth)."""
    flat = normalise(text)
    runs = pattern.findall(unicodedata.normalize("NFKC", truth))
    return sum(run in flat for run in runs), len(runs)


class ReadAs(TesseractEngine):
    """The engine with a Korean page read by other models than OSD's pick (``Hangul+HanT+eng``),
    or (``sure``) OSD's script always taken as is, as before the second opinion."""

    def __init__(self, options: dict[str, Any], models: str = "", sure: bool = False) -> None:
        super().__init__(make_engine(options).settings)
        self.models, self.sure = models, sure

    def _detect(self, pixels: bytes, width: int, height: int, dpi: int) -> tuple[str, int, bool]:
        model, quarters, sure = super()._detect(pixels, width, height, dpi)
        if self.models and model in ("Hangul", "kor"):
            model = self.models
        return model, quarters, sure or self.sure


def engine_for(way: str) -> TesseractEngine:
    """``today``: kb-tesseract 0.1 (no re-reading, OSD's script as is); ``reread``: the default;
    ``reread-only``: re-reading without the second opinion (OSD's script as is);
    ``as:<models>``: Korean pages read with ``<models>`` (OSD's script as is, no re-reading)."""
    if way == "today":
        return ReadAs({"reread": []}, sure=True)
    if way == "reread":
        return make_engine({})
    if way == "reread-only":
        return ReadAs({}, sure=True)
    if way.startswith("as:"):
        return ReadAs({"reread": []}, way[3:], sure=True)
    raise SystemExit(f"unknown way {way!r}: today, reread, reread-only or as:<models>")


def page_set(name: str, pages: int) -> list[tuple[Path, str]]:
    if name == "mixed":
        return mixed_pages(pages, OUT / "ko-mixed")
    if name == "pure":
        return [(doc.path, doc.truth) for doc in cjk_docs("ko", pages)]
    if name == "zh":
        return [(doc.path, doc.truth) for doc in cjk_docs("zh", pages)]
    if name == "en":
        return [(doc.path, doc.truth) for doc in tatqa_docs(pages)]
    raise SystemExit(f"unknown set {name!r}: mixed, pure, zh or en")


def measure(engine: TesseractEngine, docs: list[tuple[Path, str]]) -> dict[str, Any]:
    lost = bigram_total = errors = characters = 0
    han, latin = [0, 0], [0, 0]
    seconds, cpu = [], []
    for path, truth in docs:
        texts = []
        for image in load_pages(path):
            began, began_cpu = time.perf_counter(), time.process_time()
            lines = engine.read(OcrImage(image.tobytes(), image.width, image.height, page_dpi(image)))
            seconds.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
            texts.extend(line.text for line in lines)
        text = "\n".join(texts)
        missing, total = bigrams_lost(truth, text)
        lost, bigram_total = lost + missing, bigram_total + total
        errors += edit_distance(normalise(truth), normalise(text))
        characters += len(normalise(truth))
        for counts, pattern in ((han, HAN), (latin, LATIN)):
            found, runs = runs_found(pattern, truth, text)
            counts[0], counts[1] = counts[0] + found, counts[1] + runs
    return {
        "pages": len(seconds),
        "bigrams_lost": round(lost / bigram_total, 4),
        "cer": round(errors / characters, 4),
        "hanja_found": round(han[0] / han[1], 3) if han[1] else None,
        "latin_found": round(latin[0] / latin[1], 3) if latin[1] else None,
        "seconds_per_page": round(statistics.median(seconds), 2),
        "cpu_seconds_per_page": round(statistics.median(cpu), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=12, help="pages per set")
    parser.add_argument("--sets", default="mixed,pure")
    parser.add_argument("--ways", default="today,reread")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    docs = {name: page_set(name, args.pages) for name in args.sets.split(",")}
    results: dict[str, dict[str, Any]] = {}
    print("| way | set | pages | bigrams lost | CER | Hanja found | Latin found | s/page | CPU s/page |")
    print("|---|---|---|---|---|---|---|---|---|")
    for way in args.ways.split(","):
        engine = engine_for(way)
        try:
            for name, pages in docs.items():
                row = results.setdefault(way, {})[name] = measure(engine, pages)
                cells = [row["bigrams_lost"], row["cer"], row["hanja_found"], row["latin_found"]]
                shown = " | ".join("" if v is None else f"{100 * v:.1f} %" for v in cells)
                speed = f"{row['seconds_per_page']} | {row['cpu_seconds_per_page']}"
                print(f"| {way} | {name} | {row['pages']} | {shown} | {speed} |", flush=True)
        finally:
            engine.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
