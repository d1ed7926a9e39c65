"""Pure helpers on raw page images (no Tesseract): turning a page upright, mapping boxes back, CJK spacing.

Images are 8-bit RGB rows, top to bottom, 3 bytes a pixel and no padding (``kb_core.plugin.OcrImage``).
Turns are counter-clockwise, in quarter turns of 90 degrees, as Tesseract's orientation detection
reports a page turned *clockwise* by ``orient_deg``: turning it back counter-clockwise by the same
angle sets it upright.
"""

from __future__ import annotations

import re

#: Hangul (syllables, jamo), Han ideographs and kana: the ranges kb_core.writing_systems uses.
CJK = (
    "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
    "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
)
#: CJK punctuation and full-width forms (``。``, ``，``, ``（``): joined to CJK text like letters.
CJK_PUNCTUATION = "\u3001-\u303f\uff01-\uff60"
_CJK_GAP = re.compile(f"(?<=[{CJK}{CJK_PUNCTUATION}])\\s+(?=[{CJK}{CJK_PUNCTUATION}])")

Box = tuple[int, int, int, int]


def join_cjk(text: str) -> str:
    """``text`` without the whitespace Tesseract puts between two CJK characters or CJK punctuation
    (``가 람`` -> ``가람``, ``品种 。`` -> ``品种。``)."""
    return _CJK_GAP.sub("", text)


def turn(pixels: bytes, width: int, height: int, quarters: int) -> tuple[bytes, int, int]:
    """The RGB image turned counter-clockwise by ``quarters`` x 90 degrees, and its new width and height."""
    quarters %= 4
    if quarters == 0:
        return pixels, width, height
    if quarters == 2:
        backwards = pixels[::-1]  # pixels in reverse order, each one's channels reversed too
        out = bytearray(len(pixels))
        out[0::3], out[1::3], out[2::3] = backwards[2::3], backwards[1::3], backwards[0::3]
        return bytes(out), width, height
    stride = width * 3
    rows = []
    # A quarter turn counter-clockwise makes the last column the first row (read top to bottom);
    # three quarters make the first column the first row (read bottom to top).
    columns = range(width - 1, -1, -1) if quarters == 1 else range(width)
    for x in columns:
        row = bytearray(height * 3)
        for channel in range(3):
            values = pixels[x * 3 + channel :: stride]
            row[channel::3] = values if quarters == 1 else values[::-1]
        rows.append(row)
    return b"".join(rows), height, width


def box_back(box: Box, width: int, height: int, quarters: int) -> Box:
    """An ``(x, y, w, h)`` box on the image turned by ``quarters`` (see :func:`turn`) mapped onto
    the original ``width`` x ``height`` image."""
    x, y, w, h = box
    quarters %= 4
    if quarters == 1:  # original (ox, oy) went to (oy, width - 1 - ox)
        return width - y - h, x, h, w
    if quarters == 2:
        return width - x - w, height - y - h, w, h
    if quarters == 3:  # original (ox, oy) went to (height - 1 - oy, ox)
        return y, height - x - w, h, w
    return box


def clamp_box(x0: int, y0: int, x1: int, y1: int, width: int, height: int) -> Box:
    """The corners ``(x0, y0)``-``(x1, y1)`` as ``(x, y, w, h)`` inside a ``width`` x ``height`` image."""
    left, top = min(max(x0, 0), width), min(max(y0, 0), height)
    right, bottom = min(max(x1, left), width), min(max(y1, top), height)
    return left, top, right - left, bottom - top
