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
```

A scanned PDF page is rendered at fewer pixels to stay under ``max_ocr_pixels``, and a JPEG over
it decoded at a half, a quarter or an eighth of its size; another image file over it is refused
before it is decoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kb_core import ConfigError

SECTION = "documents"


@attrs.frozen
class Limits:
    """What kb-documents reads at most (see the module docstring for the configuration keys)."""

    max_bytes: int = 100_000_000
    max_pages: int = 2000
    max_chars_per_page: int = 200_000
    max_docx_inflated_bytes: int = 50_000_000
    max_docx_ratio: int = 200
    max_docx_entries: int = 5000
    max_ocr_pixels: int = 40_000_000

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Limits:
        """Limits from the ``[backends.documents]`` table; unknown keys or bad values are a ConfigError."""
        known = {f.name for f in attrs.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(
                f"unknown key(s) in [backends.{SECTION}]: {', '.join(unknown)}",
                hint=f"known keys: {', '.join(sorted(known))}",
            )
        values: dict[str, int] = {}
        for key, value in options.items():
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"[backends.{SECTION}] {key} must be a positive integer, not {value!r}")
            values[key] = value
        return cls(**values)

    @classmethod
    def from_config(cls, config: object) -> Limits:
        """Limits from a kb Config (defaults when it has no ``[backends.documents]`` table)."""
        options = getattr(config, "backend_options", None)
        return cls.from_options(options(SECTION) if callable(options) else {})
