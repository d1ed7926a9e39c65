"""Limits on what a document may cost to read, from ``[backends.documents]`` in kb's configuration.

```toml
[backends.documents]
max_bytes = 100000000            # a PDF or DOCX larger than this is refused (kb's own max_file_bytes applies first)
max_pages = 2000                 # a PDF with more pages is refused
max_chars_per_page = 200000      # text beyond this on one page is dropped, with a warning
max_docx_inflated_bytes = 50000000   # total uncompressed size of the .docx parts kb reads
max_docx_ratio = 200             # uncompressed/compressed size of any part; more looks like a zip bomb
max_docx_entries = 5000          # members in the .docx archive
max_ocr_pixels = 40000000        # a page image read by OCR (a scanned PDF page rendered, a photo) at most
notebook_outputs = true          # read the text outputs of a notebook's code cells (.ipynb)
```

A scanned PDF page is rendered at fewer pixels to stay under ``max_ocr_pixels``, and a JPEG over
it decoded at a half, a quarter or an eighth of its size; another image file over it is refused
before it is decoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kb_core.plugin.options import Option, checked_options

SECTION = "documents"
#: The most any limit may be set to: 2^40 (a terabyte, a trillion pixels; far above what a machine reads).
MOST = 2**40

#: The options of ``[backends.documents]``, declared to kb (``register_options``): kb checks them at start.
OPTIONS: dict[str, Option] = {
    "max_bytes": Option.whole(1, MOST, 100_000_000, "a PDF or DOCX larger than this many bytes is refused"),
    "max_pages": Option.whole(1, MOST, 2000, "a PDF or TIFF with more pages is refused"),
    "max_chars_per_page": Option.whole(
        1, MOST, 200_000, "characters read per page; the rest is dropped with a warning"
    ),
    "max_docx_inflated_bytes": Option.whole(1, MOST, 50_000_000, "total uncompressed size of the .docx parts kb reads"),
    "max_docx_ratio": Option.whole(
        1, MOST, 200, "uncompressed/compressed size of any part read; more looks like a zip bomb"
    ),
    "max_docx_entries": Option.whole(1, MOST, 5000, "members in the .docx archive"),
    "max_ocr_pixels": Option.whole(
        1, MOST, 40_000_000, "pixels of a page image read by OCR (scans rendered and JPEGs decoded smaller)"
    ),
    "notebook_outputs": Option.flag(True, "read the text outputs of a notebook's code cells (images never)"),
}


@attrs.frozen
class Limits:
    """What kb-documents reads at most, and whether it reads notebooks' outputs (:data:`OPTIONS` says what each is)."""

    max_bytes: int = OPTIONS["max_bytes"].default
    max_pages: int = OPTIONS["max_pages"].default
    max_chars_per_page: int = OPTIONS["max_chars_per_page"].default
    max_docx_inflated_bytes: int = OPTIONS["max_docx_inflated_bytes"].default
    max_docx_ratio: int = OPTIONS["max_docx_ratio"].default
    max_docx_entries: int = OPTIONS["max_docx_entries"].default
    max_ocr_pixels: int = OPTIONS["max_ocr_pixels"].default
    notebook_outputs: bool = OPTIONS["notebook_outputs"].default

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Limits:
        """Limits from the ``[backends.documents]`` table; an unknown key or a bad value is a one-line ConfigError."""
        return cls(**checked_options(SECTION, OPTIONS, options))

    @classmethod
    def from_config(cls, config: object) -> Limits:
        """Limits from a kb Config (defaults when it has no ``[backends.documents]`` table)."""
        options = getattr(config, "backend_options", None)
        return cls.from_options(options(SECTION) if callable(options) else {})
