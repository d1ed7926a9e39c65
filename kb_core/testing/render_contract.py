"""The contract of a parser that renders pages to show (a :class:`~kb_core.extend.contracts.PageRenderer`).

Subclass :class:`PageRendererContract` with a ``renderer`` fixture (the parser, made with the limit
it is tested under), ``samples`` (real files and their page counts) and the limits it promises::

    class TestScanRenderer(PageRendererContract):
        samples = ((scan_bytes, 2),)
        max_pixels = 500_000  # the renderer is made with this pixel limit

        @pytest.fixture
        def renderer(self):
            return ScanParser(max_pixels=500_000)
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.errors import KbError
from kb_core.extend.contracts import PageRenderer, RenderedPage

PNG = b"\x89PNG\r\n\x1a\n"
#: The JPEG markers that start a frame (and state its size): SOF0-SOF15 but DHT, JPG and DAC.
JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
#: Pages of a sample rendered by the contract, at most.
PAGES_CHECKED = 4


def stated_size(data: bytes, media_type: str) -> tuple[int, int] | None:
    """The width and height a PNG's or a JPEG's header states; None when it states none."""
    if media_type == "image/png" and data.startswith(PNG) and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if media_type == "image/jpeg" and data.startswith(b"\xff\xd8"):
        at = 2
        while at + 9 <= len(data) and data[at] == 0xFF:
            marker, length = data[at + 1], struct.unpack(">H", data[at + 2 : at + 4])[0]
            if marker in JPEG_FRAMES:
                height, width = struct.unpack(">HH", data[at + 5 : at + 9])
                return width, height
            at += 2 + length
    return None


def check_rendered(shown: RenderedPage, max_side: int, max_pixels: int | None = None) -> None:
    """Assert that ``shown`` is a PNG or JPEG of the size it says, its long side within ``max_side`` and its
    pixels within ``max_pixels`` (when given)."""
    assert isinstance(shown, RenderedPage)
    assert shown.media_type in ("image/png", "image/jpeg"), shown.media_type
    assert stated_size(shown.data, shown.media_type) == (shown.width, shown.height), "the size it says it is"
    assert min(shown.width, shown.height) >= 1 and max(shown.width, shown.height) <= max_side
    assert max_pixels is None or shown.width * shown.height <= max_pixels


def fails_in_one_line(error: KbError) -> None:
    """Assert that ``error`` says what went wrong in one line."""
    assert error.message.strip() and "\n" not in error.message


class PageRendererContract:
    """What a parser that renders pages must do. Provide a ``renderer`` fixture and ``samples``: (file bytes,
    number of pages) pairs. ``max_pixels``: the pixel limit the fixture's renderer is made with (every page
    it renders is within it); ``over_limit``: a file it must refuse as over its limit (None: it scales
    any page down instead)."""

    samples: Sequence[tuple[bytes, int]] = ()
    sample_path: str = "docs/sample.bin"
    max_side: int = 1600
    max_pixels: int | None = None
    over_limit: bytes | None = None

    @pytest.fixture
    def renderer(self) -> Any:
        """The parser under test (it has ``render_page``)."""
        raise NotImplementedError("define a 'renderer' fixture in your PageRendererContract subclass")

    def _render(self, renderer: Any, data: bytes, page: int, max_side: int | None = None) -> RenderedPage:
        shown = renderer.render_page(data, self.sample_path, page, max_side=max_side or self.max_side)
        assert isinstance(shown, RenderedPage)
        return shown

    def test_it_renders_pages(self, renderer: Any) -> None:
        assert isinstance(renderer, PageRenderer)
        assert self.samples, "give at least one sample file"

    def test_every_page_is_an_image_within_the_limits(self, renderer: Any) -> None:
        for data, pages in self.samples:
            for page in range(1, min(pages, PAGES_CHECKED) + 1):
                shown = self._render(renderer, data, page)
                check_rendered(shown, self.max_side, self.max_pixels)

    def test_a_smaller_long_side_gives_a_smaller_image(self, renderer: Any) -> None:
        data, _ = self.samples[0]
        check_rendered(self._render(renderer, data, 1, max_side=120), 120, self.max_pixels)

    def test_a_page_it_does_not_have_is_one_line(self, renderer: Any) -> None:
        for data, pages in self.samples:
            for page in (0, pages + 1):
                with pytest.raises(KbError) as caught:
                    self._render(renderer, data, page)
                fails_in_one_line(caught.value)

    def test_a_file_over_its_limit_is_refused_in_one_line(self, renderer: Any) -> None:
        if self.over_limit is None:
            pytest.skip("this renderer scales every page down to its limit: nothing is over it")
        with pytest.raises(KbError) as caught:
            self._render(renderer, self.over_limit, 1)
        fails_in_one_line(caught.value)

    def test_it_renders_the_same_when_pickled(self, renderer: Any) -> None:
        data, _ = self.samples[0]
        copy = pickle.loads(pickle.dumps(renderer))  # noqa: S301 - our own pickle (a front end's child process)
        assert self._render(copy, data, 1) == self._render(renderer, data, 1)

    @settings(
        max_examples=30,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(cut=st.floats(0, 1), flips=st.lists(st.integers(0, 2**31), max_size=8))
    def test_damaged_files_render_or_fail_in_one_line(self, renderer: Any, cut: float, flips: list[int]) -> None:
        for sample, _ in self.samples:
            damaged = bytearray(sample[: max(1, int(len(sample) * cut))])
            for flip in flips:
                damaged[flip % len(damaged)] ^= 0xFF
            try:
                shown = self._render(renderer, bytes(damaged), 1)
            except KbError as error:
                fails_in_one_line(error)
            else:
                check_rendered(shown, self.max_side, self.max_pixels)
