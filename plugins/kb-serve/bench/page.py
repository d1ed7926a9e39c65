"""The browser page's targets, measured in Debian's Chromium (Playwright): weight, first token, opening a citation.

1. **Page weight**: the bytes of the HTML, CSS and JavaScript the page loads (target: under 150 KB,
   uncompressed).
2. **First token on the page**: for each question, the time the server hands the first ``token``
   event to uvicorn (an ASGI wrapper records ``time.time()``), against the time the page has put
   it into the DOM (``performance.mark("kb:first-token")``, read as ``timeOrigin + startTime``).
   The two clocks are the same wall clock; their offset is measured too (a round trip to the page)
   and taken out. Target: under 50 ms on loopback.
3. **Opening a citation in a 5,000-line document**: a search hit in a 5,000-line note is clicked;
   the page's ``performance.measure("kb:open")`` spans the click to the cited lines shown,
   highlighted and scrolled to: fetching the text (cold: a fresh page) or not (warm). Target: under 100 ms.

The server is the kb-serve app under a real uvicorn on 127.0.0.1, over the fixture corpus ingested
into a temporary knowledge base, with a model that writes a token every ``--pace`` ms (it measures
the page and the server, not a model)::

    python plugins/kb-serve/bench/page.py [--questions 20] [--opens 10] [--pace 20]
"""

from __future__ import annotations

import os
import sys

# The bench folder holds concurrent.py, the stdlib's `concurrent`: keep it off the import path (asyncio imports it).
if sys.path and os.path.realpath(sys.path[0]) == os.path.dirname(os.path.realpath(__file__)):
    sys.path.pop(0)

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from kb_core import KnowledgeBase, ingest_paths, load_config
from kb_core.plugin import Done, GenerateRequest, StreamEvent, Token, hookimpl
from kb_core.testing import ScriptedLanguageModel, load_registry
from kb_serve import ServeSettings, create_app
from kb_serve.running import bind
from kb_serve.webpage import load_assets

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "fixtures" / "corpus"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LONG_LINES = 5000
QUESTION = "At what wind speed does Heliograph move the panels to the stow angle?"


class PacedModel(ScriptedLanguageModel):
    """Writes ``tokens`` words, one every ``pace_s`` seconds, then a citation."""

    def __init__(self, tokens: int, pace_s: float) -> None:
        super().__init__(("unused",))
        self.tokens, self.pace_s = tokens, pace_s

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]:
        """The paced tokens."""
        for i in range(self.tokens):
            time.sleep(self.pace_s)
            yield Token(" wind" if i else "Wind")
        yield Token(" [#1]")
        yield Done("stop", 0, self.tokens + 1)


class PacedPlugin:
    """Registers :class:`PacedModel` as the ``scripted`` backend."""

    def __init__(self, tokens: int, pace_s: float) -> None:
        self.tokens, self.pace_s = tokens, pace_s

    @hookimpl
    def register_language_models(self, register: Callable[..., None]) -> None:
        """Register ``scripted``."""
        register("scripted", lambda _ctx: PacedModel(self.tokens, self.pace_s))


class SendTimes:
    """ASGI wrapper: the wall-clock time each question's stream (``/threads``, ``/ask/stream``) first sends a
    ``token`` event."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.first_token: list[float] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        asking = scope.get("path") == "/ask/stream" or str(scope.get("path", "")).startswith("/threads")
        if scope["type"] != "http" or scope.get("method") != "POST" or not asking:
            await self.app(scope, receive, send)
            return
        seen = False

        async def timed(message: Any) -> None:
            nonlocal seen
            if not seen and message["type"] == "http.response.body" and b"event: token" in message.get("body", b""):
                seen = True
                self.first_token.append(time.time() * 1000)
            await send(message)

        await self.app(scope, receive, timed)


def serve(kb_dir: Path, tokens: int, pace_s: float) -> tuple[str, SendTimes, uvicorn.Server]:
    """The app under uvicorn in a thread over ``kb_dir``."""
    registry = load_registry(extra_plugins=[("paced-llm", PacedPlugin(tokens, pace_s))])
    config = load_config(kb_dir=kb_dir, overrides={"models.llm.backend": "scripted"}, environ={})
    app = SendTimes(create_app(config, ServeSettings(), registry))
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", app, server


def summary(values: list[float]) -> str:
    """p50 / p95 / max of ``values`` (ms)."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):6.1f}  p95 {p95:6.1f}  max {ordered[-1]:6.1f} ms  (n={len(ordered)})"


def clock_offset(page: Any) -> tuple[float, float]:
    """(page clock - Python clock, uncertainty) in ms: the best of 20 round trips."""
    best: tuple[float, float] | None = None
    for _ in range(20):
        before = time.time() * 1000
        seen = page.evaluate("performance.timeOrigin + performance.now()")
        after = time.time() * 1000
        estimate = (seen - (before + after) / 2, (after - before) / 2)
        if best is None or estimate[1] < best[1]:
            best = estimate
    assert best is not None
    return best


def weight() -> None:
    """Print the page's weight by kind of file."""
    kinds: dict[str, int] = {}
    for url, asset in load_assets().items():
        kind = "html" if url == "/" else url.rsplit(".", 1)[1]
        kinds[kind] = kinds.get(kind, 0) + len(asset.body)
    code = sum(v for k, v in kinds.items() if k in ("html", "css", "js"))
    parts = ", ".join(f"{k} {v / 1000:.1f} KB" for k, v in sorted(kinds.items()))
    print(f"page weight (HTML+CSS+JS, uncompressed): {code / 1000:.1f} KB  [{parts}]  target < 150 KB")


def first_tokens(page: Any, url: str, times: SendTimes, questions: int) -> None:
    """Ask ``questions`` times; print the first token's server-to-page delay."""
    page.goto(url + "/")
    page.wait_for_selector("#health:not(:empty)")
    offset, uncertainty = clock_offset(page)
    delays = []
    for _ in range(questions):
        page.evaluate("performance.clearMarks('kb:first-token')")
        sent_before = len(times.first_token)
        page.fill("#question", QUESTION)
        page.click("#ask-button")
        page.wait_for_selector("#answer .verdict")
        page.click("#new-thread")  # every question on its own, not a follow-up of the one before
        shown = page.evaluate("performance.timeOrigin + performance.getEntriesByName('kb:first-token')[0].startTime")
        assert len(times.first_token) == sent_before + 1
        delays.append(shown - offset - times.first_token[-1])
    print(f"first token, server send -> on the page: {summary(delays)}  target < 50 ms")
    print(f"  (page clock - server clock: {offset:+.1f} ms, +/- {uncertainty:.1f} ms, taken out)")


def long_document(url: str) -> None:
    """Upload a 5,000-line note whose line 4200 holds a unique word."""
    lines = [f"Line {n}: the orchard log notes rainfall, frost and pruning for row {n % 97}." for n in range(1, 5001)]
    lines[4199] = "Line 4200: the xylophone beetle was first seen here, on the north fence."
    body = ("\n".join(lines) + "\n").encode()
    reply = httpx.post(f"{url}/documents", files={"file": ("orchard-log.txt", body)}, timeout=300)
    reply.raise_for_status()


def opens(page: Any, url: str, count: int) -> None:
    """Open the 5,000-line note's citation ``count`` times, cold (new page) and warm; print the times."""
    cold: list[float] = []
    warm: list[float] = []
    for _ in range(count):
        page.goto(url + "/")
        page.click("#tab-search")
        page.fill("#search-q", "xylophone beetle")
        page.select_option("#search-mode", "lexical")
        page.click("#search-form button")
        hit = page.locator("#hits a.source-place").first
        hit.wait_for()
        for bucket in (cold, warm):
            page.evaluate("performance.clearMeasures('kb:open')")
            ready = int(page.evaluate("document.getElementById('viewer').dataset.ready || '0'"))
            hit.click()
            page.wait_for_selector(f"#viewer[data-ready='{ready + 1}']")
            bucket.append(page.evaluate("performance.getEntriesByName('kb:open')[0].duration"))
        assert page.locator("#viewer-lines .line.cited").count() >= 1
        assert page.locator("#viewer-lines .line").count() >= LONG_LINES
    print(f"open a citation, {LONG_LINES}-line note, cold (fetch + render + scroll): {summary(cold)}  target < 100 ms")
    print(f"open a citation, {LONG_LINES}-line note, warm (render + scroll):         {summary(warm)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--questions", type=int, default=20, help="questions asked for the first-token figure")
    parser.add_argument("--opens", type=int, default=10, help="citations opened (each cold, then warm)")
    parser.add_argument("--pace", type=float, default=20.0, help="ms between the model's tokens")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"no browser: {CHROMIUM} is missing (bash scripts/install-browser)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    weight()
    with tempfile.TemporaryDirectory() as folder:
        kb_dir = Path(folder) / "kb"
        with KnowledgeBase(load_config(kb_dir=kb_dir, environ={})) as kb:
            ingest_paths(kb, [CORPUS])
        url, times, server = serve(kb_dir, tokens=30, pace_s=args.pace / 1000)
        try:
            long_document(url)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                first_tokens(page, url, times, args.questions)
                opens(page, url, args.opens)
                browser.close()
        finally:
            server.should_exit = True
    return 0


if __name__ == "__main__":
    sys.exit(main())
