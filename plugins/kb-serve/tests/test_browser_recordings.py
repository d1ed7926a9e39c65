"""The page in a real browser, over a recording: an answer's citation of it shows its moment, and its button
plays the recording from the moment's start and pauses at its end (kb-audio's heron.ogg, heard by a
scripted transcriber: kb_serve_recordings.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kb_serve_recordings import start_with_recording
from playwright.sync_api import expect

pytestmark = pytest.mark.slow
pytest.importorskip("kb_audio", reason="kb-audio (recordings) is not installed")

PLAYER = "#answer li.source audio.moment-player"


def test_a_citation_of_a_recording_plays_it_from_its_moment_to_its_end(
    start_server: Callable[..., Any], open_tab: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = start_with_recording(start_server, monkeypatch, tmp_path / "folder")
    tab = open_tab(server)
    tab.goto()
    tab.ask("When is the next inspection of the heron pump planned?")
    expect(tab.page.locator("#answer .verdict")).to_contain_text("Grounded")
    moment = tab.page.locator("#answer li.source .moment").first
    fragment = moment.get_attribute("data-fragment") or ""
    start_text, end_text = fragment.removeprefix("t=").split(",")
    start, end = (sum(int(p) * 60**i for i, p in enumerate(reversed(t.split(":")))) for t in (start_text, end_text))
    assert 0 <= start < end <= 17, fragment
    expect(moment.locator("button.moment-play")).to_contain_text(f"{start_text}–{end_text}")

    moment.locator("button.moment-play").click()
    tab.page.wait_for_selector(f"{PLAYER}[data-started]")
    assert tab.page.evaluate(f"document.querySelector('{PLAYER}').currentTime") >= start
    assert tab.page.locator(PLAYER).first.is_visible()
    tab.page.wait_for_selector(f"{PLAYER}[data-stopped]", state="attached", timeout=60_000)  # played to the end
    at, paused, duration = tab.page.evaluate(
        f"((p) => [p.currentTime, p.paused, p.duration])(document.querySelector('{PLAYER}'))"
    )
    assert paused is True and min(end, duration) - 0.5 <= at < end + 1.5, (at, end, duration)
    assert any("/recordings/talks/heron-pump.ogg" in r.url for r in tab.requests)
    tab.check_clean()
