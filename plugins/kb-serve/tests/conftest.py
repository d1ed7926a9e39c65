"""A real uvicorn serving the kb-serve app on 127.0.0.1 (a free port, in a thread) over a copy of an ingested corpus.

The knowledge base is the repository's fixture corpus, ingested once per session with the real
default embedder and indexes, and copied for every server, so tests may change it. The language
model is ``kb_core.testing``'s scripted one (the only fake: a real model cannot run in tests);
it answers extractively, one word per token, from the evidence retrieval really found. A
``.gated`` parser lets a test hold an ingest in progress.
"""

from __future__ import annotations

import gc
import json
import logging
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import uvicorn

from kb_core import KnowledgeBase, ingest_paths, load_config
from kb_core.plugin import Block, Done, GenerateRequest, ParsedDocument, StreamEvent, Token, hookimpl
from kb_core.testing import ScriptedLanguageModel, ScriptedPlugin, extractive, load_registry
from kb_serve import ServeSettings, create_app
from kb_serve.running import bind

sys.path.insert(0, str(Path(__file__).parent))  # the tests' helpers (kb_serve_scans.py)

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "fixtures" / "corpus"
START_TIMEOUT_S = 60.0


class GatedParser:
    """A parser for ``.gated`` files that waits for the test to open the gate (an ingest held in progress)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def parse(self, text: str, path: str) -> ParsedDocument:
        """Signal the test, wait for it, then parse the text as one paragraph."""
        self.gate.entered.set()
        self.gate.opened.wait(30)
        lines = text.splitlines() or [""]
        return ParsedDocument(title=path, blocks=(Block(text=text, start_line=1, end_line=len(lines)),))


@attrs.define
class Gate:
    """The test's handle on :class:`GatedParser`."""

    entered: threading.Event = attrs.field(factory=threading.Event)
    opened: threading.Event = attrs.field(factory=threading.Event)

    @hookimpl
    def register_parsers(self, register: Callable[..., None]) -> None:
        """Register the ``gated`` parser for ``.gated`` files."""
        register("gated", lambda _config: GatedParser(self), extensions=(".gated",))


#: The longest a paced model waits for a test to open ``hold`` or ``resume`` (a limit against hangs: tests open them).
HOLD_S = 120.0


class PacedModel(ScriptedLanguageModel):
    """A model that yields its tokens one at a time, ``pace_s`` apart, once ``hold`` is open.

    (The scripted model makes its whole list before the first token; this one generates as it goes,
    so a test sees where a stopped generation stopped.)
    """

    def __init__(self, plugin: PacedPlugin) -> None:
        super().__init__(("unused",))
        self.plugin = plugin

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]:
        """Wait for ``hold``, then yield the tokens (pausing after ``pause_after``); ``closed`` is set at the end."""
        plugin = self.plugin
        self.requests.append(request)
        plugin.generations += 1
        plugin.started.set()
        words = plugin.script(request) if plugin.script is not None else None
        try:
            plugin.hold.wait(HOLD_S)
            count = plugin.tokens if words is None else len(words)
            for i in range(count):
                if i == plugin.pause_after:
                    plugin.paused.set()
                    plugin.resume.wait(HOLD_S)
                time.sleep(plugin.pace_s)
                plugin.yielded += 1
                yield Token(words[i] if words is not None else " wind" if i else "Wind")
            if words is None:
                yield Token(" [#1]")
            yield Done("stop", 0, count + 1)
        finally:
            plugin.closed.set()


@attrs.define
class PacedPlugin:
    """Registers the ``scripted`` backend as a :class:`PacedModel`, and counts what it generates.

    ``script``: the tokens of a request (as :func:`extractive`) instead of ``tokens`` words "wind";
    ``pause_after``: after that many tokens, set ``paused`` and wait for ``resume``.
    """

    tokens: int = 20
    pace_s: float = 0.01
    script: Callable[[GenerateRequest], list[str]] | None = None
    pause_after: int = -1
    paused: threading.Event = attrs.field(factory=threading.Event)
    resume: threading.Event = attrs.field(factory=threading.Event)
    hold: threading.Event = attrs.field(factory=threading.Event)
    started: threading.Event = attrs.field(factory=threading.Event)
    closed: threading.Event = attrs.field(factory=threading.Event)
    generations: int = 0
    yielded: int = 0

    def __attrs_post_init__(self) -> None:
        self.hold.set()

    @hookimpl
    def register_language_models(self, register: Callable[..., None]) -> None:
        """Register ``scripted``."""
        register("scripted", lambda _ctx: PacedModel(self))


class Collecting(logging.Handler):
    """A log handler that keeps every record."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keep ``record``."""
        self.records.append(record)


@attrs.define
class Running:
    """A server running in a thread: its base URL, app, knowledge base folder and test hooks."""

    url: str
    kb_dir: Path
    app: Any
    server: uvicorn.Server
    thread: threading.Thread
    gate: Gate
    llm: Any  # the language-model plugin: a ScriptedPlugin unless the test gave its own
    token: str | None = None

    def client(self, **kwargs: Any) -> httpx.Client:
        """An HTTP client for this server (with the bearer token when one is set)."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0, **kwargs)

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for it."""
        self.server.should_exit = True
        self.thread.join(20)


@pytest.fixture
def serve_json() -> Callable[[subprocess.Popen[str]], dict[str, Any]]:
    """Reads what ``kb serve --json`` prints once it listens (``serve.v1``) from the process's stdout."""

    def read(process: subprocess.Popen[str]) -> dict[str, Any]:
        assert process.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "}\n":
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else "no output"
            lines.append(line)
        return dict(json.loads("".join(lines)))

    return read


@pytest.fixture
def embedded_model() -> None:
    """Skips the test, saying why, unless the llamacpp plugin and its embedded default model are installed."""
    pytest.importorskip("kb_llamacpp", reason="the llamacpp plugin is not installed")
    from kb_core import ModelUnavailableError
    from kb_llamacpp import default_model_path

    try:
        default_model_path()
    except ModelUnavailableError as exc:
        pytest.skip(f"the embedded default model is not installed: {exc.message}")


@pytest.fixture
def extractive_script() -> Callable[[GenerateRequest], list[str]]:
    """:func:`extractive` (the scripted model's answer), for tests that build their own model."""
    return extractive


@pytest.fixture
def paced_llm() -> Callable[..., PacedPlugin]:
    """Factory of :class:`PacedPlugin` (pass it to ``start_server(llm=...)``)."""
    return PacedPlugin


@pytest.fixture
def server_log() -> Iterator[Callable[[], list[logging.LogRecord]]]:
    """Call it after starting a server (uvicorn resets its loggers on start): the records of kb_serve
    (INFO and up) and of uvicorn (WARNING and up) from then on."""
    handler = Collecting()
    names = ("kb_serve", "uvicorn", "uvicorn.error")
    level = logging.getLogger("kb_serve").level

    def attach() -> list[logging.LogRecord]:
        logging.getLogger("kb_serve").setLevel(logging.INFO)
        for name in names:
            logging.getLogger(name).addHandler(handler)
        return handler.records

    yield attach
    logging.getLogger("kb_serve").setLevel(level)
    for name in names:
        logging.getLogger(name).removeHandler(handler)


@pytest.fixture(scope="session")
def corpus_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture corpus ingested into a knowledge base (once per session; copy it before changing it)."""
    folder = tmp_path_factory.mktemp("corpus-kb") / "kb"
    with KnowledgeBase(load_config(kb_dir=folder, environ={})) as kb:
        ingest_paths(kb, [CORPUS])
    return folder


@pytest.fixture
def start_server(corpus_kb: Path, tmp_path: Path) -> Iterator[Callable[..., Running]]:
    """Factory: a real uvicorn on 127.0.0.1 over a fresh copy of the corpus KB (``**settings``: ServeSettings;
    ``llm``: a plugin registering the ``scripted`` backend, instead of a ScriptedPlugin of ``script``;
    ``backend``: another installed backend, e.g. ``llamacpp`` for the embedded model; ``plugins``: more
    in-process plugins as (name, plugin); ``overrides``: configuration keys, as ``{"ingest.ocr": "scripted"}``;
    ``kb_dir``: the folder of a server started before, to serve it again, as after a restart)."""
    running: list[Running] = []

    def start(
        script: Any = extractive,
        llm: Any = None,
        backend: str = "scripted",
        plugins: Sequence[tuple[str, object]] = (),
        overrides: dict[str, Any] | None = None,
        kb_dir: Path | None = None,
        **settings: Any,
    ) -> Running:
        if kb_dir is None:
            kb_dir = tmp_path / f"kb{len(running)}"
            shutil.copytree(corpus_kb, kb_dir)
        gate, llm = Gate(), llm if llm is not None else ScriptedPlugin(script)
        registry = load_registry(extra_plugins=[("scripted-llm", llm), ("gated-parser", gate), *plugins])
        keys = {"models.llm.backend": backend, **(overrides or {})}
        config = load_config(kb_dir=kb_dir, overrides=keys, environ={})
        app = create_app(config, ServeSettings(**settings), registry)
        sock = bind("127.0.0.1", 0)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        handle = Running(
            f"http://127.0.0.1:{sock.getsockname()[1]}", kb_dir, app, server, thread, gate, llm, settings.get("token")
        )
        running.append(handle)
        thread.join(0.05)
        deadline = threading.Event()
        for _ in range(int(START_TIMEOUT_S / 0.05)):
            if server.started or not thread.is_alive():
                break
            deadline.wait(0.05)
        assert server.started, "uvicorn did not start"
        return handle

    yield start
    for handle in running:
        handle.gate.opened.set()
        handle.stop()
    running.clear()
    gc.collect()  # a server's knowledge base (and model) sits in reference cycles: free it now (4.7 GB a worker)


# -- the browser (tests marked slow; they skip when Debian's Chromium is not installed) ----------

CHROMIUM = Path("/usr/bin/chromium")
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
#: Runs before the page's own scripts (Playwright injects it past the CSP): records CSP violations.
CSP_WATCH = (
    "window.__cspViolations = [];"
    "document.addEventListener('securitypolicyviolation',"
    " (e) => window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));"
)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's Chromium (``/usr/bin/chromium``) driven by Playwright; skips when it is not installed."""
    if not CHROMIUM.exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (bash scripts/install-browser installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=60_000)
        try:
            yield browser
        finally:
            browser.close()


@attrs.define
class Tab:
    """A browser tab on a running server, with every request it made, the dialogs it opened, its errors."""

    page: Any
    server: Running
    requests: list[Any] = attrs.field(factory=list)
    dialogs: list[str] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)

    def goto(self, path: str = "/") -> None:
        """Open ``path`` of the server and wait for the page to have asked the server for its status."""
        self.page.goto(self.server.url + path)
        self.page.wait_for_selector("#health:not(:empty)")  # (wait_for_function would eval: the CSP forbids it)

    def ask(self, question: str) -> None:
        """Type ``question`` and press Ask."""
        self.page.fill("#question", question)
        self.page.click("#ask-button")

    def open_from(self, link: Any) -> None:
        """Click ``link`` and wait until the viewer has shown what it opens (the page sets ``data-ready``)."""
        opened = int(self.page.get_attribute("#viewer", "data-ready") or 0)
        link.click()
        self.page.wait_for_selector(f"#viewer[data-ready='{opened + 1}']", state="attached")

    def foreign_requests(self) -> list[str]:
        """The URLs the page requested from anywhere but the server (a ``blob:`` URL the page made is its origin's)."""
        origin = self.server.url
        own = (origin + "/", "blob:" + origin + "/")
        return [r.url for r in self.requests if not (r.url == origin or r.url.startswith(own))]

    def check_clean(self) -> None:
        """Nothing went elsewhere, no dialog opened, no script error, no CSP violation."""
        assert self.foreign_requests() == []
        assert self.dialogs == []
        assert self.errors == []
        assert self.page.evaluate("window.__cspViolations") == []


@pytest.fixture
def open_tab(chromium: Any) -> Iterator[Callable[..., Tab]]:
    """Factory: a new tab (in its own browser context: its own sessionStorage) on a running server."""
    contexts: list[Any] = []

    def make(server: Running, width: int = 1280, height: int = 800) -> Tab:
        context = chromium.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        requests: list[Any] = []
        context.on("request", lambda request: requests.append(request))  # of every page the context opens
        context.add_init_script(CSP_WATCH)
        page = context.new_page()
        page.set_default_timeout(30_000)
        tab = Tab(page, server, requests)
        page.on("dialog", lambda dialog: (tab.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda error: tab.errors.append(str(error)))
        return tab

    yield make
    for context in contexts:
        context.close()
