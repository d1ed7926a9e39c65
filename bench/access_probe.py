"""Issue 45's access target: generated requests on every route of one real ``kb serve``, by people with and
without grants, and what reached someone outside their grants (target: nothing).

The server is the kb-serve app under a real uvicorn on 127.0.0.1, over the fixture corpus plus folders that
share a start with, or differ only in case or a LIKE wildcard from, the granted ones, and two scans read by a
scripted OCR engine; its language model is kb_core.testing's scripted one (it answers extractively, so an
answer quotes the passages retrieval found: a passage outside the grants would show). Four people: ann, bob
and cho with different read and write grants, dee with none; calls are also sent with no token and a wrong
one. What is checked after each request is kb-serve's tests' ``kb_serve_probe`` (plugins/kb-serve/tests)::

    python bench/access_probe.py --requests 1000 --seed 7              # SQLite
    python bench/access_probe.py --requests 1000 --seed 7 --postgres   # PostgreSQL (pgserver, or --postgres-url)

It prints the requests made per route, the violations found and the wall time, and writes the same JSON to
bench/out/access_probe.json (access_probe_postgres.json on PostgreSQL).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import uvicorn

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins" / "kb-serve" / "tests"))  # the probe lives with kb-serve's tests

from common import add_store_arguments, store_overrides  # noqa: E402 - bench/'s own module
from kb_serve_probe import OPERATOR, SCRIPT, SERVER_OVERRIDES, prepare, probe, server_plugins  # noqa: E402

from kb_core import KnowledgeBase, ingest_paths, load_config  # noqa: E402
from kb_core.testing import ScriptedPlugin, load_registry  # noqa: E402
from kb_serve import ServeSettings, create_app  # noqa: E402
from kb_serve.running import bind  # noqa: E402

CORPUS = REPO / "fixtures" / "corpus"
OUT = REPO / "bench" / "out"


@contextmanager
def serving(kb_dir: Path, overrides: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """A real uvicorn (in a thread, on a free port) serving ``kb_dir``: its URL and the app's service."""
    plugins = [("scripted-llm", ScriptedPlugin(SCRIPT)), *server_plugins()]
    keys = {"models.llm.backend": "scripted", **SERVER_OVERRIDES, **overrides}
    config = load_config(kb_dir=kb_dir, overrides=keys, environ={})
    app = create_app(config, ServeSettings(token=OPERATOR), load_registry(extra_plugins=plugins))
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not server.started:
        raise SystemExit("uvicorn did not start")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", app.state.service
    finally:
        server.should_exit = True
        thread.join(30)


def run(requests: int, seed: int, overrides: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Ingest the corpus into a knowledge base in ``folder``, serve it, and probe it."""
    kb_dir = folder / "kb"
    began = time.perf_counter()
    with KnowledgeBase(load_config(kb_dir=kb_dir, overrides=overrides, environ={})) as kb:
        ingest_paths(kb, [CORPUS])
    with serving(kb_dir, overrides) as (url, service):
        tokens = prepare(service, folder / "extra")
        setup_s = time.perf_counter() - began
        found, took = probe(url, tokens, kb_dir / "uploads", seed, requests)
    store = overrides.get("store.backend", "sqlite")
    return {"store": store, "seed": seed, "setup_s": round(setup_s, 1), **found.summary(took)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    add_store_arguments(parser)
    args = parser.parse_args()
    with ExitStack() as stack:
        overrides = stack.enter_context(store_overrides(args, "probe"))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kb-access-probe-")))
        result = run(args.requests, args.seed, overrides, folder)
    OUT.mkdir(parents=True, exist_ok=True)
    name = "access_probe_postgres.json" if overrides else "access_probe.json"
    (OUT / name).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for route, count in result["per_route"].items():
        print(f"{count:6d}  {route}")
    figures = f"{result['violations']} violations, {len(result['server_errors'])} server errors"
    print(
        f"{result['requests']} requests ({result['helper_requests']} more to check them) on {result['store']}, "
        f"seed {args.seed}: {figures}, {result['wall_s']} s (setup {result['setup_s']} s)"
    )
    for violation in result["found"][:20]:
        print(
            f"  {violation['person']} {violation['method']} {violation['url'][:100]} -> {violation['status']}: "
            f"{'; '.join(violation['what'])[:300]}"
        )


if __name__ == "__main__":
    main()
