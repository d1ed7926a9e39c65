"""Scanned Korean pages that mix scripts: Hangul sentences with Hanja words (大韓民國, 首都) and Latin
words (Tesseract, PostgreSQL), numbers and a ruled table, drawn and degraded like
bench/ocr_engines.py's generated Korean pages (150 dpi, Noto Sans/Serif CJK KR, grey, turned by up to
0.6 degrees, blurred, noise, JPEG quality 70). Each page is built from the sentences below, picked
by a seeded random generator, so page ``n`` is the same on every run; its truth is the text drawn
(table rows with `` | `` between cells).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from ocr_engines import NOTO, _wrap

TITLES = [
    "大韓民國 데이터 基盤 사업 보고서",
    "가람大學校 情報技術 硏究所 소개",
    "首都 서울의 交通 統計와 API 공개",
    "地方自治團體의 文書 검색 시스템",
    "人工知能 敎育 과정 運營 계획",
    "經濟 指標와 Python 분석 도구",
    "文化財 記錄의 OCR 디지털화",
    "環境 監視 센서와 PostgreSQL 저장소",
    "醫學 論文 검색을 위한 RAG 실험",
    "産業 安全 점검 보고서 要約",
    "歷史 資料館 전산화 사업",
    "法律 相談 기록 관리 방안",
]
HEADINGS = ["背景", "目的", "방법", "結果", "향후 計劃", "참고 事項", "예산과 人力", "시스템 構成"]
SENTENCES = [
    "대한민국(大韓民國)의 首都는 서울이며, 정부는 2023년부터 공공 문서를 PDF와 JSON으로 공개한다.",
    "연구진은 Tesseract 5.5와 PostgreSQL 16을 이용해 스캔 文書를 검색할 수 있게 만들었다.",
    "이 사업의 目的은 地方 行政 기록을 RAG 방식의 질의응답 시스템으로 찾는 것이다.",
    "서버는 Linux 위에서 돌아가며, 한 페이지를 읽는 데 CPU 2개로 약 1.8초가 걸린다.",
    "經濟 統計는 해마다 3월에 발표되며, 2022년 성장률은 2.6%였다.",
    "文化財廳은 古文書 1,240건을 OCR로 읽고 원문 이미지와 함께 보관한다.",
    "환경부(環境部)는 센서 자료를 HTTP API로 받아 SQLite 파일에 하루 단위로 모은다.",
    "교육 과정은 Python 기초, 데이터 분석, 人工知能 윤리의 세 부분으로 나뉜다.",
    "參加者 48명 가운데 31명이 GitHub에 결과물을 올렸다.",
    "醫學 論文 2만 편의 초록을 Unicode 정규화 후 색인하였다.",
    "국립중앙도서관(國立中央圖書館)은 Docker 컨테이너로 검색 서비스를 운영한다.",
    "産業 現場의 安全 점검표는 Excel에서 CSV로 바꾸어 저장한다.",
    "歷史 자료 가운데 漢字가 섞인 문서는 전체의 약 37%를 차지한다.",
    "法律 相談 기록은 개인정보를 지운 뒤 Markdown 형식으로 남긴다.",
    "시스템은 질문을 받으면 관련 문단을 찾고, 모델이 근거를 인용하여 답한다.",
    "서울特別市의 버스 노선 정보는 매일 오전 5시에 갱신된다.",
    "硏究所는 GPU 없이도 돌아가는 작은 모델을 우선 검토했다.",
    "會議 자료는 HTML과 DOCX로 받아 같은 색인에 넣는다.",
    "民主主義와 言論 自由에 관한 기사 520건을 표본으로 골랐다.",
    "각 페이지의 해상도는 150 dpi이며, 표와 숫자가 함께 들어 있다.",
    "政府 예산 가운데 情報化 사업비는 4,310억 원으로 집계되었다.",
    "연구 결과는 KB 형식의 보고서와 CSV 표로 함께 배포한다.",
    "검색 품질은 Recall과 Precision으로 측정하였고, 둘 다 0.9를 넘었다.",
    "地域 住民 1,200명을 대상으로 설문 調査를 실시하였다.",
    "大學校 도서관은 Open Access 논문을 PostgreSQL에 모아 둔다.",
    "작업자는 Tesseract가 틀린 글자를 직접 고치고 그 기록을 남긴다.",
    "이 보고서의 數値는 모두 2024년 12월 31일 기준이다.",
    "韓國語 문장 속의 English 단어와 漢字를 모두 바르게 읽어야 한다.",
    "交通 사고 件數는 전년보다 8.4% 줄었다.",
    "서비스는 REST API와 MCP 서버의 두 가지 방식으로 제공된다.",
    "傳統 市場 상인 회의는 매달 첫째 週 月曜日에 열린다.",
    "자료의 출처(出處)와 저작권(著作權)은 각 문서의 끝에 적었다.",
]
TABLE_HEADER = ["구분", "2022年", "2023年", "2024年"]
TABLE_LABELS = [
    "文書 수(건)",
    "OCR 페이지",
    "API 호출(만 회)",
    "PostgreSQL 용량(GB)",
    "利用者 수(명)",
    "檢索 정확도(%)",
    "豫算(억 원)",
    "GPU 사용 시간",
    "CPU 평균(%)",
    "職員 수(명)",
]
WIDTH, HEIGHT, MARGIN = 1275, 1650, 135


def render_mixed_page(index: int) -> tuple[Any, str]:
    """Mixed page ``index`` (grey PIL image, degraded) and its truth text."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    rng = random.Random(f"mixed-{index}")
    face = "Serif" if index % 3 == 2 else "Sans"
    regular = ImageFont.truetype(str(NOTO / f"Noto{face}CJK-Regular.ttc"), 23, index=1)  # the KR face
    bold = ImageFont.truetype(str(NOTO / f"Noto{face}CJK-Bold.ttc"), 23, index=1)
    title_font = ImageFont.truetype(str(NOTO / f"Noto{face}CJK-Bold.ttc"), 31, index=1)
    text_width = WIDTH - 2 * MARGIN
    page = Image.new("L", (WIDTH, HEIGHT), 246)
    draw = ImageDraw.Draw(page)
    truth: list[str] = []
    y = 120

    def paragraph(text: str, font: Any, gap_after: int = 14) -> None:
        nonlocal y
        for line in _wrap(draw, text, font, text_width, "ko"):
            draw.text((MARGIN, y), line, font=font, fill=25)
            y += int(font.size * 1.5)
        y += gap_after
        truth.append(text)

    sentences = rng.sample(SENTENCES, 12)
    headings = rng.sample(HEADINGS, 3)
    paragraph(TITLES[index % len(TITLES)], title_font, 22)
    for heading, part in zip(headings[:2], (sentences[0:3], sentences[3:6])):
        paragraph(heading, bold, 4)
        paragraph(" ".join(part), regular)
    header_row = [TABLE_HEADER]
    rows = header_row + [[label, *(_figure(rng) for _ in range(3))] for label in rng.sample(TABLE_LABELS, 4)]
    col_widths = [int(text_width * 0.46)] + [int(text_width * 0.18)] * 3
    row_height = 38
    y += 6
    for r, row in enumerate(rows):
        x = MARGIN
        for c, cell in enumerate(row):
            draw.rectangle([x, y, x + col_widths[c], y + row_height], outline=40, width=2)
            font = bold if r == 0 else regular
            left = x + 10 if c == 0 else x + col_widths[c] - 10 - draw.textlength(cell, font=font)
            draw.text((left, y + 6), cell, font=font, fill=25)
            x += col_widths[c]
        y += row_height
        truth.append(" | ".join(row))
    y += 26
    paragraph(headings[2], bold, 4)
    for part in (sentences[6:9], sentences[9:12]):
        if y > HEIGHT - 240:
            break
        paragraph(" ".join(part), regular)
    page = page.rotate(rng.uniform(-0.6, 0.6), resample=Image.Resampling.BICUBIC, fillcolor=246)
    page = page.filter(ImageFilter.GaussianBlur(0.6))
    pixels = np.asarray(page, dtype=np.float32) + np.random.default_rng(1000 + index).normal(0, 7, (HEIGHT, WIDTH))
    page = Image.fromarray(np.clip(pixels, 0, 255).astype("uint8"), "L")
    return page, "\n".join(truth) + "\n"


def _figure(rng: random.Random) -> str:
    return f"{rng.randint(10, 9999):,}" if rng.random() < 0.7 else f"{rng.uniform(1, 99):.1f}"


def mixed_pages(count: int, folder: Path) -> list[tuple[Path, str]]:
    """``count`` mixed pages as JPEG files under ``folder`` (made once) with their truth."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = []
    for index in range(count):
        path, truth_path = folder / f"{index + 1:03d}.jpg", folder / f"{index + 1:03d}.txt"
        if not path.exists() or not truth_path.exists():
            page, truth = render_mixed_page(index)
            page.save(path, "JPEG", quality=70, dpi=(150, 150))
            truth_path.write_text(truth, encoding="utf-8")
        pages.append((path, truth_path.read_text(encoding="utf-8")))
    return pages
