"""Load on two ``kb serve`` processes sharing one PostgreSQL schema (issue 45's load target).

Two servers, each on its own knowledge base folder, one schema, kb-tantivy only, the scripted model
(``kb_core.testing``), with ``fixtures/corpus`` ingested first. Then ``--clients`` threads (50) each send
``--requests`` requests (20), spread over both servers in turn: a search, a question (``POST /ask``), an upload
of a new document of the client's own (``POST /documents``), a thread (started, then followed up on either
server). A 503 "the language model is busy" (the ask queue full) is counted apart and the request sent again;
any other status outside 2xx, or a failed connection, is an error.

Afterwards, from the store through kb-postgres's Python API: every upload stored exactly once (one write in
the feed each, its chunks whole) and found by a search on both servers; every answer and thread turn a client
was given stored once, none more, each thread's turns in order. One JSON object of figures.

    python plugins/kb-postgres/bench/bench_load.py [--clients 50] [--requests 20] [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import httpx
from bench_checks import KB, Server, anomalies, load_average, opened_store, serve_environment, store_figures
from kb_postgres.testing import postgres_server

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
QUESTIONS = ("How are backups verified?", "What does the Heliograph daemon do?", "How is tea brewed?")
SEARCHES = ("backup", "heliograph", "tomatoes", "release", "compost")
BUSY = "language model is busy"


@attrs.define
class Client:
    """What one client sent and was given."""

    number: int
    uploads: list[str] = attrs.field(factory=list)  # stored paths
    words: dict[str, str] = attrs.field(factory=dict)  # path -> its own word
    answers: list[str] = attrs.field(factory=list)  # answer ids of /ask
    thread: str = ""
    turns: list[str] = attrs.field(factory=list)  # answer ids of the thread's turns, in order
    statuses: Counter[str] = attrs.field(factory=Counter)
    busy: int = 0
    errors: list[str] = attrs.field(factory=list)
    took: list[float] = attrs.field(factory=list)


def send(client: Client, http: httpx.Client, method: str, url: str, **options: Any) -> dict[str, Any] | None:
    """One request (sent again after each 503 of a full ask queue); its JSON body, or None after an error."""
    began = time.perf_counter()
    while True:
        try:
            response = http.request(method, url, **options)
        except httpx.HTTPError as exc:
            client.errors.append(f"{method} {url}: {type(exc).__name__}: {exc}")
            return None
        client.statuses[str(response.status_code)] += 1
        if response.status_code == 503 and BUSY in response.text:
            client.busy += 1
            time.sleep(float(response.headers.get("Retry-After", "1")))
            continue
        client.took.append(time.perf_counter() - began)
        if not response.is_success:
            client.errors.append(f"{method} {url}: {response.status_code} {response.text[:200]}")
            return None
        body: dict[str, Any] = response.json()
        return body


def one_request(client: Client, http: httpx.Client, servers: list[str], number: int) -> None:
    """The client's ``number``-th request: its kind goes round, and each kind goes to each server in turn."""
    server = servers[(client.number + number + number // 4) % len(servers)]
    kind = (client.number + number) % 4
    if kind == 0:
        query = SEARCHES[number % len(SEARCHES)]
        send(client, http, "GET", f"{server}/search", params={"q": query, "mode": "lexical", "k": 5})
    elif kind == 1:
        answer = send(client, http, "POST", f"{server}/ask", json={"question": QUESTIONS[number % len(QUESTIONS)]})
        if answer is not None:
            client.answers.append(str(answer["answer_id"]))
    elif kind == 2:
        word = f"loadword{client.number:03d}r{number:02d}{uuid.uuid4().hex[:6]}"
        name = f"load/client{client.number:03d}/note{number:02d}.md"
        text = f"# Upload {number} of client {client.number}\n\nThis note alone holds the word {word}.\n"
        files = {"file": (name, text.encode(), "text/markdown")}
        if send(client, http, "POST", f"{server}/documents", files=files) is not None:
            client.uploads.append(name)
            client.words[name] = word
    else:
        path = f"{server}/threads/{client.thread}/ask" if client.thread else f"{server}/threads"
        question = "And how often?" if client.thread else QUESTIONS[client.number % len(QUESTIONS)]
        turn = send(client, http, "POST", path, json={"question": question})
        if turn is not None:
            client.thread = str(turn["thread_id"])
            client.turns.append(str(turn["answer"]["answer_id"]))


def run_client(client: Client, servers: list[str], requests: int, start: threading.Barrier) -> None:
    with httpx.Client(timeout=900) as http:
        start.wait()
        for number in range(requests):
            one_request(client, http, servers, number)


def found_on(servers: list[str], clients: list[Client]) -> dict[str, int]:
    """For each server, how many uploads a lexical search of their own word finds (as their only document)."""
    found = {}
    with httpx.Client(timeout=300) as http:
        for server in servers:
            hits = 0
            for client in clients:
                for path, word in client.words.items():
                    response = http.get(f"{server}/search", params={"q": word, "mode": "lexical", "k": 5})
                    paths = {hit["doc_path"] for hit in response.json()["hits"]} if response.is_success else set()
                    hits += paths == {path}
            found[server] = hits
    return found


def ledger_figures(url: str, schema: str, folder: Path, clients: list[Client]) -> dict[str, Any]:
    """Documents, answers and turns in the store against what the clients were given."""
    with opened_store(url, schema, folder) as store:
        documents = store_figures(store)
        stored_paths = [document.path for document in store.list_documents()]
        entries, total = store.answer_entries(None)
        stored_answers = Counter(entry.answer_id for entry in entries)
        given = [a for c in clients for a in c.answers] + [t for c in clients for t in c.turns]
        turns_wrong = []
        for client in clients:
            if client.thread:
                stored = store.turns_of(client.thread)
                if [turn.answer_id for turn in stored] != client.turns or [t.position for t in stored] != list(
                    range(1, len(stored) + 1)
                ):
                    turns_wrong.append(client.thread)
        threads = store.thread_summaries(None)
    uploads = [path for client in clients for path in client.uploads]
    return {
        "store": documents,
        "uploads_given": len(uploads),
        "uploads_stored": sum(1 for path in uploads if path in stored_paths),
        "uploads_missing": sorted(set(uploads) - set(stored_paths))[:10],
        "answers_given": len(given),
        "answers_stored": total,
        "answers_lost": sorted(set(given) - set(stored_answers))[:10],
        "answers_not_given": len(set(stored_answers) - set(given)),
        "answers_twice": sorted(a for a, n in stored_answers.items() if n > 1)[:10],
        "threads_given": sum(1 for c in clients if c.thread),
        "threads_stored": len(threads),
        "turns_given": sum(len(c.turns) for c in clients),
        "turns_stored": sum(summary.turns for summary in threads),
        "threads_with_wrong_turns": turns_wrong[:10],
    }


def main() -> None:
    """Start the servers, load them, check the store; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="an existing PostgreSQL server (default: one pgserver starts)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    with postgres_server(args.url or "", prefix="kb-bench-pg-") as url:
        work = Path(tempfile.mkdtemp(prefix="kb-bench-load-"))
        schema = f"bench_{uuid.uuid4().hex[:10]}"
        env = serve_environment(url, schema)
        servers: list[Server] = []
        try:
            ingest = [KB, "--kb", str(work / "kb-a"), "ingest", str(CORPUS)]
            subprocess.run(ingest, env=env, check=True, stdout=subprocess.DEVNULL)
            with opened_store(url, schema, work / "kb-check") as store:
                corpus = store.count_documents()
            servers = [Server(work / name, env) for name in ("kb-a", "kb-b")]
            urls = [server.url for server in servers]
            clients = [Client(number) for number in range(args.clients)]
            start = threading.Barrier(len(clients))
            threads = [threading.Thread(target=run_client, args=(c, urls, args.requests, start)) for c in clients]
            load_before = load_average()
            began = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            took = time.perf_counter() - began
            found = found_on(urls, clients)
            figures = ledger_figures(url, schema, work / "kb-check", clients)
            uploads = figures["uploads_given"]
            problems = anomalies(figures["store"], corpus + uploads)
            statuses: Counter[str] = sum((c.statuses for c in clients), Counter())
            latencies = sorted(t for c in clients for t in c.took)
            report = {
                "clients": args.clients,
                "requests_each": args.requests,
                "seconds": round(took, 1),
                "requests_answered": len(latencies),
                "per_second": round(len(latencies) / took, 1),
                "latency_p50_s": round(latencies[len(latencies) // 2], 3) if latencies else None,
                "latency_p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 3) if latencies else None,
                "statuses": dict(sorted(statuses.items())),
                "errors": sum(len(c.errors) for c in clients),
                "error_examples": [e for c in clients for e in c.errors][:5],
                "busy_503_retried": sum(c.busy for c in clients),
                "corpus_documents": corpus,
                "uploads_found_by_search": {f"server_{i + 1}": found[u] for i, u in enumerate(urls)},
                **figures,
                "store_anomalies": problems,
                "server_tracebacks": [server.tracebacks() for server in servers],
                "load_average_before": load_before,
                "load_average_after": load_average(),
            }
            print(json.dumps(report, indent=1))
        finally:
            for server in servers:
                server.stop()
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
