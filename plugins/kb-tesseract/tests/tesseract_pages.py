"""Test pages of known text, rendered with Pillow. (A test that reads them with the real engine is marked
``needs_ocr_data``: the repository's conftest.py skips it when Tesseract's data is not installed.)

Each page is a 150-dpi letter page (1275 x 1650 px) with body text at 11 pt (23 px); it remembers
where each line was drawn, so tests can check the boxes the engine returns.
"""

from __future__ import annotations

from pathlib import Path

import attrs
from PIL import Image, ImageDraw, ImageFont

from kb_core.plugin import OcrImage

DPI = 150
PAGE = (1275, 1650)
MARGIN = 135
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
NOTO_CJK = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
#: Faces of NotoSansCJK-Regular.ttc: 0 JP, 1 KR, 2 SC, 3 TC, 4 HK.
NOTO_FACE = {"ko": 1, "zh": 2}
Box = tuple[int, int, int, int]


@attrs.frozen
class Page:
    """A rendered page and, for each line of text, where it was drawn (``x, y, w, h``)."""

    image: Image.Image
    lines: dict[str, Box]

    def ocr_image(self, dpi: int = DPI) -> OcrImage:
        """The page as the engine receives it."""
        return OcrImage(self.image.tobytes(), self.image.width, self.image.height, dpi)

    def turned(self, degrees: int) -> Page:
        """The page turned counter-clockwise by 90, 180 or 270 degrees, its boxes turned with it."""
        width, height = self.image.size
        return Page(
            self.image.rotate(degrees, expand=True),
            {text: turn_box(box, width, height, degrees) for text, box in self.lines.items()},
        )


def turn_box(box: Box, width: int, height: int, degrees: int) -> Box:
    """Where ``box`` on a ``width`` x ``height`` image lands when Pillow rotates it by ``degrees``."""
    x, y, w, h = box
    if degrees == 90:
        return y, width - x - w, h, w
    if degrees == 180:
        return width - x - w, height - y - h, w, h
    if degrees == 270:
        return height - y - h, x, h, w
    return box


def font(path: Path, size: int, index: int = 0) -> ImageFont.FreeTypeFont:
    """A TrueType font; a clear failure when it is not installed."""
    if not path.exists():
        raise AssertionError(f"the test font {path} is missing (apt-get install fonts-dejavu-core fonts-noto-cjk)")
    return ImageFont.truetype(str(path), size, index=index)


def render(lines: list[str], face: ImageFont.FreeTypeFont, table: list[list[str]] | None = None) -> Page:
    """A white page with ``lines`` of text top to bottom, then an optional ruled ``table``."""
    image = Image.new("RGB", PAGE, "white")
    draw = ImageDraw.Draw(image)
    drawn: dict[str, Box] = {}
    y = 120
    for line in lines:
        left, top, right, bottom = (round(v) for v in draw.textbbox((MARGIN, y), line, font=face))
        draw.text((MARGIN, y), line, font=face, fill=(20, 20, 20))
        drawn[line] = (left, top, right - left, bottom - top)
        y += int(face.size * 1.6)
    y += 30
    widths = [420, 180, 180, 180]
    for row in table or []:
        x = MARGIN
        for width, cell in zip(widths, row):
            draw.rectangle([x, y, x + width, y + 40], outline=(60, 60, 60), width=2)
            draw.text((x + 10, y + 8), cell, font=face, fill=(20, 20, 20))
            x += width
        y += 40
    return Page(image, drawn)


ENGLISH = [
    "Annual report excerpt for the year ended December 31.",
    "Revenue grew by twelve percent while operating costs held steady,",
    "and the board proposed a dividend of 1.25 per share.",
]
ENGLISH_TABLE = [["Item", "2021", "2022", "2023"], ["Net revenue", "4,711", "5,090", "93.20"]]
KOREAN = [
    "가람우주연구원은 올해 새로운 위성을 발사했다.",
    "연구원은 소형 인공위성 설계와 위성 영상 처리를 연구한다.",
    "이용객 수는 작년보다 크게 늘었다.",
]
KOREAN_TABLE = [["구분", "2021년", "2022년", "2023년"], ["운행 횟수", "4,081", "261", "5,090"]]
#: Korean with Hanja and Latin words, as Korean documents write them.
MIXED = [
    "대한민국(大韓民國)의 首都는 서울이며, 정부는 공공 문서를 PDF와 JSON으로 공개한다.",
    "연구진은 Tesseract와 PostgreSQL을 이용해 文書를 검색할 수 있게 만들었다.",
    "이 사업의 目的은 地方 行政 기록을 RAG 방식으로 찾는 것이다.",
    "經濟 統計는 해마다 3월에 발표되며, 2022년 성장률은 2.6%였다.",
]
MIXED_TABLE = [["구분", "2022年", "2023年", "2024年"], ["利用者 수(명)", "4,081", "261", "5,090"]]
CHINESE = [
    "丰禾一号是临江农业科学院培育的杂交水稻品种。",
    "在区域试验中，丰禾一号的平均亩产为六百公斤。",
    "该品种适合在长江中下游地区种植。",
]
CHINESE_TABLE = [["项目", "2021年", "2022年", "2023年"], ["职工人数", "9,929", "4,004", "1,869"]]


def english_page() -> Page:
    """English paragraph lines and a table with figures, in DejaVu Sans."""
    return render(ENGLISH, font(DEJAVU, 23), ENGLISH_TABLE)


def korean_page() -> Page:
    """Korean lines and a table, in Noto Sans CJK KR."""
    return render(KOREAN, font(NOTO_CJK, 23, NOTO_FACE["ko"]), KOREAN_TABLE)


def mixed_page() -> Page:
    """Korean lines with Hanja and Latin words, and a table, in Noto Sans CJK KR."""
    return render(MIXED, font(NOTO_CJK, 23, NOTO_FACE["ko"]), MIXED_TABLE)


def chinese_page() -> Page:
    """Chinese lines and a table, in Noto Sans CJK SC."""
    return render(CHINESE, font(NOTO_CJK, 23, NOTO_FACE["zh"]), CHINESE_TABLE)


#: A paragraph justified across the text width (1005 px): the spaces of its lines stretched to 0.3,
#: 1.15 and 1.9 ems (7, 26 and 44 px); its last line is set with plain spaces.
JUSTIFIED = [
    "Output rose at both of the plants this year, as the new kilns came into service in spring",
    "and the board now expects them to lift output further at full speed,",
    "while the orders booked for next spring are already higher",
    "than in any year before.",
]
#: A table without rules: a label and two figures per row, the figures set right in wide columns.
CELLS_TABLE = [
    ["Plant", "2022", "2023"],
    ["Northern kilns", "4,210", "3,980"],
    ["Southern kilns", "2,870", "1,945"],
    ["Total output", "7,080", "5,925"],
]
CELLS_RIGHT_EDGES = (MARGIN + 560, MARGIN + 820)


def cells_page() -> Page:
    """The :data:`JUSTIFIED` paragraph, then :data:`CELLS_TABLE`, in DejaVu Sans; ``lines`` holds
    where each line of the paragraph and each cell of the table was drawn."""
    face = font(DEJAVU, 23)
    image = Image.new("RGB", PAGE, "white")
    draw = ImageDraw.Draw(image)
    drawn: dict[str, Box] = {}
    width = PAGE[0] - 2 * MARGIN
    y = 120
    for number, line in enumerate(JUSTIFIED):
        words = line.split()
        widths = [draw.textlength(word, font=face) for word in words]
        last = number == len(JUSTIFIED) - 1
        gap = draw.textlength(" ", font=face) if last else (width - sum(widths)) / (len(words) - 1)
        x = float(MARGIN)
        boxes = []
        for word, word_width in zip(words, widths):
            boxes.append(draw.textbbox((x, y), word, font=face))
            draw.text((x, y), word, font=face, fill=(20, 20, 20))
            x += word_width + gap
        left, top = boxes[0][0], min(box[1] for box in boxes)
        right, bottom = boxes[-1][2], max(box[3] for box in boxes)
        drawn[line] = (round(left), round(top), round(right - left), round(bottom - top))
        y += int(face.size * 1.6)
    y += 40
    for row in CELLS_TABLE:
        places = [(float(MARGIN), row[0])]
        places += [(right - draw.textlength(cell, font=face), cell) for right, cell in zip(CELLS_RIGHT_EDGES, row[1:])]
        for x, cell in places:
            left, top, right, bottom = draw.textbbox((x, y), cell, font=face)
            draw.text((x, y), cell, font=face, fill=(20, 20, 20))
            drawn[cell] = (round(left), round(top), round(right - left), round(bottom - top))
        y += 40
    return Page(image, drawn)


def inside(box: Box, outer: Box, slack: int = 12) -> bool:
    """Whether ``box`` lies within ``outer`` grown by ``slack`` pixels on every side."""
    x, y, w, h = box
    ox, oy, ow, oh = outer
    return ox - slack <= x and oy - slack <= y and x + w <= ox + ow + slack and y + h <= oy + oh + slack
