"""Concurrent clients against a real `kb serve`: p50/p95 latency and errors for search and ask.

By default it ingests the repository's fixture corpus into a temporary knowledge base and starts
a server in a subprocess on 127.0.0.1 (uvicorn, as `kb serve` runs it), then runs ``--clients``
search clients and ``--ask-clients`` ask clients at once for ``--seconds``. Questions are those
of ``fixtures/golden/answers.jsonl``, repeated (the server caches query vectors), or with
``--unique`` each made a text never seen before (every search embeds its query)::

    python plugins/kb-serve/bench/concurrent.py [--clients 8] [--ask-clients 2] [--seconds 20] [--unique]

Asks need a language model. ``--backend scripted`` (default here) uses kb_core.testing's scripted
model, which measures the server (queueing, streaming, one generation at a time) and not a model;
``--backend llamacpp`` runs the real one (its venv must have llama-cpp-python). ``--url URL``
(with ``--token``) measures a server you started yourself instead.
"""

from __future__ import annotations

import os
import sys

# This file's name is the stdlib's `concurrent`: keep its folder off the import path (asyncio imports it).
if sys.path and os.path.realpath(sys.path[0]) == os.path.dirname(os.path.realpath(__file__)):
    sys.path.pop(0)

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "fixtures" / "corpus"
GOLDEN = REPO / "fixtures" / "golden" / "answers.jsonl"

SERVE_SCRIPTED = """
import sys, uvicorn
from kb_core import load_config
from kb_core.testing import ScriptedPlugin, load_registry
from kb_serve import ServeSettings, create_app

def extractive(request):
    entry = request.user.split("[#1]", 1)[1].split("\\n\\n")[0]
    words = entry.split("\\n", 1)[-1].split()
    return [w if i == 0 else " " + w for i, w in enumerate(words)] + [" [#1]"]

kb_dir, port = sys.argv[1], int(sys.argv[2])
registry = load_registry(extra_plugins=[("scripted-llm", ScriptedPlugin(extractive))])
config = load_config(kb_dir=kb_dir, overrides={"models.llm.backend": "scripted"})
app = create_app(config, ServeSettings(port=port, ask_queue=16), registry)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(kb_dir: Path, backend: str) -> tuple[subprocess.Popen[bytes], str]:
    """Ingest the corpus into ``kb_dir`` and start a server over it; returns the process and its URL."""
    kb = [str(Path(sys.executable).parent / "kb"), "--kb", str(kb_dir)]
    subprocess.run([*kb, "ingest", str(CORPUS), "--json"], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    if backend == "scripted":
        command = [sys.executable, "-c", SERVE_SCRIPTED, str(kb_dir), str(port)]
    else:
        command = [*kb, "--backend", backend, "serve", "--port", str(port), "--ask-queue", "16"]
    process = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the server did not start")


async def client(
    kind: str,
    http: httpx.AsyncClient,
    questions: list[str],
    until: float,
    offset: int,
    results: dict[str, list[float]],
    errors: dict[str, list[str]],
    unique: bool = False,
) -> None:
    """Send requests of ``kind`` one after another until ``until``; record latencies (ms) and errors."""
    position = offset
    while time.monotonic() < until:
        question = questions[position % len(questions)]
        if unique:  # a text never seen before: no cached query vector
            question = f"{question} (variant {offset}-{position})"
        position += 1
        began = time.perf_counter()
        try:
            if kind == "search":
                reply = await http.get("/search", params={"q": question, "k": 10})
                ok = reply.status_code == 200 and reply.json()["schema_version"] == "search_response.v1"
            else:
                reply = await http.post("/ask", json={"question": question})
                ok = reply.status_code == 200 and reply.json()["schema_version"] == "answer.v1"
        except (httpx.HTTPError, json.JSONDecodeError, KeyError) as exc:
            errors[kind].append(f"{type(exc).__name__}: {exc}")
            continue
        elapsed = (time.perf_counter() - began) * 1000
        if ok:
            results[kind].append(elapsed)
        else:
            errors[kind].append(f"{reply.status_code}: {reply.text[:120]}")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else float("nan")


async def run(
    url: str, token: str | None, clients: int, ask_clients: int, seconds: float, unique: bool
) -> dict[str, Any]:
    questions = [json.loads(line)["question"] for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx.Limits(max_connections=clients + ask_clients + 2)
    results: dict[str, list[float]] = {"search": [], "ask": []}
    errors: dict[str, list[str]] = {"search": [], "ask": []}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=600, limits=limits) as http:
        for question in questions[:3]:  # warm up: first searches, first model load
            await http.get("/search", params={"q": question})
        if ask_clients:
            await http.post("/ask", json={"question": questions[0]})
        until = time.monotonic() + seconds
        tasks = [client("search", http, questions, until, i, results, errors, unique) for i in range(clients)]
        tasks += [client("ask", http, questions, until, 100 + i, results, errors, unique) for i in range(ask_clients)]
        began = time.perf_counter()
        await asyncio.gather(*tasks)
        took = time.perf_counter() - began
    report: dict[str, Any] = {
        "url": url,
        "clients": clients,
        "ask_clients": ask_clients,
        "unique_queries": unique,
        "seconds": round(took, 1),
    }
    for kind, values in results.items():
        report[kind] = {
            "requests": len(values),
            "errors": len(errors[kind]),
            "p50_ms": round(statistics.median(values), 1) if values else None,
            "p95_ms": round(percentile(values, 0.95), 1) if values else None,
            "max_ms": round(max(values), 1) if values else None,
            "per_s": round(len(values) / took, 1),
            "first_errors": errors[kind][:3],
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent search clients")
    parser.add_argument("--ask-clients", type=int, default=2, help="concurrent ask clients")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--backend", default="scripted", help="scripted (server only) or a real one: llamacpp")
    parser.add_argument("--url", help="measure this running server instead of starting one")
    parser.add_argument("--token", default=os.environ.get("KB_SERVE_TOKEN"))
    parser.add_argument("--unique", action="store_true", help="make every query a new text (no cached query vectors)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    process = None
    with tempfile.TemporaryDirectory(prefix="kb-serve-bench-") as folder:
        url = args.url
        if url is None:
            process, url = start_server(Path(folder) / "kb", args.backend)
        try:
            report = asyncio.run(run(url, args.token, args.clients, args.ask_clients, args.seconds, args.unique))
        finally:
            if process is not None:
                process.terminate()
                process.wait(30)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    queries = "every query new" if args.unique else "the golden questions, repeated"
    print(f"{report['clients']} search + {report['ask_clients']} ask clients for {report['seconds']} s ({queries})")
    for kind in ("search", "ask"):
        r = report[kind]
        print(
            f"  {kind:6} {r['requests']:6} ok  {r['errors']:3} errors  p50 {r['p50_ms']} ms  p95 {r['p95_ms']} ms"
            f"  max {r['max_ms']} ms  {r['per_s']}/s"
        )
        for error in r["first_errors"]:
            print(f"         error: {error}")


if __name__ == "__main__":
    main()
