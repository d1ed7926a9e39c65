"""What every test folder of this repository shares (tests/, plugins/*/tests, examples/): the marker
``needs_ocr_data``.

A test that reads pages with the real OCR engine (kb-tesseract with Debian's language data, and the
fonts its test pages are drawn in) is marked ``@pytest.mark.needs_ocr_data``; without them it is
skipped, and the run ends with one line saying how to run those tests (``bash scripts/install-ocr``).
Nothing else in the suite may depend on that data: a test of ``kb doctor`` or of an ingest states
its OCR setting (a scripted engine, or ``[ingest] ocr = "off"``).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

MARKER = "needs_ocr_data"
#: How to install what the marked tests need (Tesseract's eng, osd, Hangul, HanS and HanT data, and the fonts).
INSTALL_OCR = "bash scripts/install-ocr"
#: The fonts kb-tesseract's and kb-serve's test pages are drawn in (installed by scripts/install-ocr).
TEST_FONTS = (
    Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
    Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"),
)
SKIP_PREFIX = "OCR data is not installed"


@functools.cache
def ocr_data_missing() -> str | None:
    """Why the real OCR engine cannot read here (one line), or None when it can."""
    try:
        from kb_tesseract import Settings
    except ImportError:
        return "kb-tesseract is not installed"
    from kb_core import KbError

    try:
        settings = Settings.from_options({})
    except KbError as exc:
        return exc.message
    if settings.missing:
        return f"Tesseract's {', '.join(settings.missing)} data is missing"
    fonts = [str(font) for font in TEST_FONTS if not font.exists()]
    return f"the test fonts {', '.join(fonts)} are missing" if fonts else None


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker."""
    config.addinivalue_line(
        "markers", f"{MARKER}: reads pages with kb-tesseract and Debian's Tesseract data ({INSTALL_OCR})"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a marked test when the OCR data is absent."""
    if item.get_closest_marker(MARKER) is not None:
        why = ocr_data_missing()
        if why is not None:
            pytest.skip(f"{SKIP_PREFIX} ({why}); to run this test: {INSTALL_OCR}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line when OCR tests were skipped, saying how to run them."""
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and SKIP_PREFIX in str(report.longrepr[2])
    ]
    if skipped:
        why = ocr_data_missing() or "see the skip reasons (-rs)"
        tests = "1 OCR test" if len(skipped) == 1 else f"{len(skipped)} OCR tests"
        terminalreporter.write_line(f"{tests} skipped: {SKIP_PREFIX} ({why}); to run them: {INSTALL_OCR}")
