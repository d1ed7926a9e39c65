"""kb serve's OpenAI-compatible /v1 against kb's own routes, with the embedded real model, on the fixtures set.

For each question of ``fixtures/golden/answers.jsonl`` (the set ``bench/answers.py --set fixtures`` uses):

1. **First token.** The ``openai`` client streams ``/v1/chat/completions``; kb's own ``POST /ask?stream=1``
   streams the same question. For each, the client's wait for the first visible text, less the time
   kb's pipeline took to its first token (``usage.first_token_ms`` of the answer the stream ends
   with: retrieval and the model, which differ run to run), is what the route adds (HTTP, parsing,
   thread lookup, the stream's rewriting, the client's own parsing). Target: the openai route adds
   at most 50 ms more than ``/ask``; reported as p50/p95 of the difference. The two run in turn,
   each question in alternating order, over one keep-alive connection each.
2. **Parsed with the openai package's own types.** Every chunk of the stream and the whole
   completion validate as ``ChatCompletionChunk`` / ``ChatCompletion`` (pydantic, strictly).
3. **The same answer as ``kb ask --json``.** ``kb ask --json`` (a subprocess, the same knowledge
   base and configuration) and ``/v1`` (streamed, and whole) give the same text and citations in
   ``answer.v1`` (the ``kb`` field), and the message is made from it (``kb_core.service.markdown.message``;
   a stream's after a rule when kb's checks changed what it streamed).

The server is the kb-serve app under a real uvicorn on 127.0.0.1 over the fixture corpus ingested
into a temporary knowledge base, with the default configuration (an empty config file)::

    python plugins/kb-serve/bench/openai_compat.py [--limit 15] [--backend llamacpp] [--json]
"""

from __future__ import annotations

import os
import sys

# The bench folder holds concurrent.py, the stdlib's `concurrent`: keep it off the import path (asyncio imports it).
if sys.path and os.path.realpath(sys.path[0]) == os.path.dirname(os.path.realpath(__file__)):
    sys.path.pop(0)

import argparse
import json
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

import httpx
import openai
import uvicorn
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from kb_core import KnowledgeBase, ingest_paths, load_config
from kb_core.service import markdown
from kb_serve import ServeSettings, create_app
from kb_serve.client import iter_sse
from kb_serve.running import bind

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "fixtures" / "corpus"
GOLDEN = REPO / "fixtures" / "golden" / "answers.jsonl"
TARGET_MS = 50.0
KB = str(Path(sys.executable).parent / "kb")  # the kb of this environment


def serve(config_file: Path, kb_dir: Path, backend: str) -> tuple[str, uvicorn.Server]:
    """The app under uvicorn in a thread over ``kb_dir``."""
    config = load_config(config_path=config_file, kb_dir=kb_dir, overrides={"models.llm.backend": backend}, environ={})
    app = create_app(config, ServeSettings(ask_wait_s=3600))
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


def ask_stream(http: httpx.Client, question: str) -> tuple[float, dict[str, Any]]:
    """kb's ``/ask?stream=1``: (ms to the first visible token, the answer.v1 its stream ends with)."""
    began, first = time.perf_counter(), None
    answer: dict[str, Any] = {}
    with http.stream("POST", "/ask", params={"stream": "1"}, json={"question": question}) as reply:
        reply.raise_for_status()
        for name, data in iter_sse(reply.iter_lines()):
            if name == "token" and first is None and data["text"].strip():
                first = time.perf_counter()
            elif name == "answer":
                answer = data
            elif name == "error":
                raise RuntimeError(data)
    return ((first or time.perf_counter()) - began) * 1000, answer


def openai_stream(client: openai.OpenAI, question: str) -> tuple[float, str, dict[str, Any], int]:
    """The openai client's stream: (ms to the first content, the content, the ``kb`` field, chunks that failed to
    validate strictly as ChatCompletionChunk)."""
    began, first = time.perf_counter(), None
    messages: list[Any] = [{"role": "user", "content": question}]
    stream = client.chat.completions.create(model="kb", messages=messages, stream=True)
    pieces: list[str] = []
    answer: dict[str, Any] = {}
    invalid = 0
    for chunk in stream:
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter()
        raw = chunk.to_dict()
        invalid += not _valid(ChatCompletionChunk, raw)
        if chunk.choices:
            pieces.append(chunk.choices[0].delta.content or "")
        answer = cast(dict[str, Any], raw.get("kb", answer))
    return ((first or time.perf_counter()) - began) * 1000, "".join(pieces), answer, invalid


def _valid(model: Any, data: dict[str, Any]) -> bool:
    try:
        model.model_validate(data, strict=False)
    except Exception as exc:  # pydantic's ValidationError, and anything else the types refuse
        print(f"  does not parse as {model.__name__}: {exc}", file=sys.stderr)
        return False
    return True


def openai_whole(client: openai.OpenAI, question: str) -> tuple[str, dict[str, Any], bool]:
    """The openai client's whole completion: (the content, the ``kb`` field, whether it validates as ChatCompletion)."""
    messages: list[Any] = [{"role": "user", "content": question}]
    completion = client.chat.completions.create(model="kb", messages=messages)
    raw = completion.to_dict()
    answer = cast(dict[str, Any], raw["kb"])  # (kb's own field: the types keep it as an extra)
    return completion.choices[0].message.content or "", answer, _valid(ChatCompletion, raw)


def kb_ask_json(config_file: Path, kb_dir: Path, backend: str, question: str) -> dict[str, Any]:
    """``kb ask --json`` in a subprocess (exit 1 is a refusal, still an answer)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KB_HOME", "KB_CONFIG") and "__" not in k}
    command = [KB, "--config", str(config_file), "--kb", str(kb_dir), "--backend", backend, "ask", "--json", question]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"kb ask failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return dict(json.loads(done.stdout))


def same_answer(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same text, verdict and citations (marker, chunk, lines) in two answer.v1."""

    def key(answer: dict[str, Any]) -> Any:
        cited = [(c["marker"], c["chunk_id"], c["ref"]) for c in answer["citations"]]
        return answer["answer"], answer["grounded"], answer["refusal_reason"], cited

    return bool(key(a) == key(b))


def made_from(content: str, answer: dict[str, Any], base: str) -> bool:
    """Whether ``content`` is the message kb makes of ``answer`` (whole, or after a streamed text and a rule)."""
    return markdown.is_reply(content, answer)


def spread(values: list[float]) -> dict[str, float]:
    """p50, p95 and max of ``values``."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1), "max": round(ordered[-1], 1)}


def measure(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Ingest, serve, ask every question through both routes and kb ask; the report."""
    config_file, kb_dir = folder / "config.toml", folder / "kb"
    config_file.write_text("", encoding="utf-8")  # the defaults, for the server and kb ask alike
    with KnowledgeBase(load_config(config_path=config_file, kb_dir=kb_dir, environ={})) as kb:
        ingest_paths(kb, [CORPUS])
    lines = [json.loads(x) for x in GOLDEN.read_text(encoding="utf-8").splitlines() if x.strip()]
    questions = lines[: args.limit] if args.limit else lines
    url, server = serve(config_file, kb_dir, args.backend)
    rows: list[dict[str, Any]] = []
    try:
        http = httpx.Client(base_url=url, timeout=900)
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="loopback", max_retries=0, timeout=900)
        ask_stream(http, "What is Heliograph?")  # warm: the model loaded, the connections open
        openai_stream(client, "What is Heliograph?")
        for i, item in enumerate(questions):
            question = item["question"]
            if i % 2:
                oa_ms, content, streamed, invalid = openai_stream(client, question)
                ask_ms, own = ask_stream(http, question)
            else:
                ask_ms, own = ask_stream(http, question)
                oa_ms, content, streamed, invalid = openai_stream(client, question)
            whole_content, whole, whole_valid = openai_whole(client, question)
            direct = kb_ask_json(config_file, kb_dir, args.backend, question)
            ask_added = ask_ms - (own["usage"]["first_token_ms"] or 0)
            oa_added = oa_ms - (streamed["usage"]["first_token_ms"] or 0)
            row = {
                "id": item["id"],
                "grounded": direct["grounded"],
                "ask_first_ms": round(ask_ms, 1),
                "openai_first_ms": round(oa_ms, 1),
                "ask_added_ms": round(ask_added, 1),
                "openai_added_ms": round(oa_added, 1),
                "difference_ms": round(oa_added - ask_added, 1),
                "parsed": invalid == 0 and whole_valid,
                "same_as_kb_ask": same_answer(streamed, direct) and same_answer(whole, direct),
                "made_from_answer": made_from(content, streamed, url) and made_from(whole_content, whole, url),
            }
            rows.append(row)
            print(
                f"  {row['id']:<16} {'grounded' if row['grounded'] else 'refused ':<9} first token: /ask"
                f" {ask_ms:8.1f} ms, /v1 {oa_ms:8.1f} ms; added {ask_added:6.1f} / {oa_added:6.1f} ms;"
                f" parsed {row['parsed']}, same as kb ask {row['same_as_kb_ask']},"
                f" made from it {row['made_from_answer']}",
                file=sys.stderr,
            )
        http.close()
        client.close()
    finally:
        server.should_exit = True
    return {
        "questions": len(rows),
        "backend": args.backend,
        "difference_ms": spread([r["difference_ms"] for r in rows]),
        "ask_added_ms": spread([r["ask_added_ms"] for r in rows]),
        "openai_added_ms": spread([r["openai_added_ms"] for r in rows]),
        "target_ms": TARGET_MS,
        "parsed": sum(r["parsed"] for r in rows),
        "same_as_kb_ask": sum(r["same_as_kb_ask"] for r in rows),
        "made_from_answer": sum(r["made_from_answer"] for r in rows),
        "rows": rows,
    }


def table(report: dict[str, Any]) -> None:
    """The report as a table."""
    n = report["questions"]
    print(
        f"\n{'question':<18}{'kb':<10}{'/ask first':>12}{'/v1 first':>12}{'added /ask':>12}{'added /v1':>11}{'diff':>8}"
    )
    for r in report["rows"]:
        kind = "grounded" if r["grounded"] else "refused"
        print(
            f"{r['id']:<18}{kind:<10}{r['ask_first_ms']:>10.1f}ms{r['openai_first_ms']:>10.1f}ms"
            f"{r['ask_added_ms']:>10.1f}ms{r['openai_added_ms']:>9.1f}ms{r['difference_ms']:>6.1f}ms"
        )
    d = report["difference_ms"]
    verdict = "met" if d["p95"] <= TARGET_MS else "NOT met"
    print(
        f"\nfirst token, what /v1 adds over /ask: p50 {d['p50']} ms, p95 {d['p95']} ms, max {d['max']} ms"
        f"  (target <= {TARGET_MS:g} ms: {verdict})"
    )
    print(
        f"what each route adds to kb's own first token: /ask p50 {report['ask_added_ms']['p50']} ms,"
        f" /v1 p50 {report['openai_added_ms']['p50']} ms"
    )
    print(f"parsed with the openai package's types: {report['parsed']}/{n}")
    print(f"same text and citations as kb ask --json (streamed and whole): {report['same_as_kb_ask']}/{n}")
    print(f"message made from the kb field's answer.v1: {report['made_from_answer']}/{n}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("--limit", type=int, default=0, help="the first N questions (0: all)")
    parser.add_argument("--backend", default="llamacpp", help="the language-model backend (default: the embedded one)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        report = measure(args, Path(folder))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        table(report)
    n = report["questions"]
    ok = report["parsed"] == report["same_as_kb_ask"] == report["made_from_answer"] == n
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
