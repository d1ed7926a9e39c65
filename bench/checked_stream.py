"""Only checked text is shown (issue 44, deliver 1): claims shown then withdrawn, per surface, and the time to the
first checked text against the whole answer's.

Each question is asked through each surface as a client reads it, and what the client saw before the answer was
done is compared with the finished answer: a *withdrawn claim* is streamed text that the finished answer does not
start with (a refusal after text, or text changed after it was shown). Surfaces:

* ``service``: ``kb_core.service.AnswerService`` in process, as ``kb ask``, ``kb chat`` and ``kb mcp`` run it
  (their ``on_token``);
* ``ask``, ``threads``: ``kb serve``'s ``POST /ask/stream`` and ``POST /threads?stream=1`` Server-Sent Events
  (``token`` events, then the final one);
* ``v1``: ``POST /v1/chat/completions`` with ``"stream": true`` (the content deltas, then the message).

The HTTP surfaces need a running ``kb serve`` over the same knowledge base (``--serve http://127.0.0.1:8765``).
Questions: a JSONL file with a ``question`` per line (default: fixtures/golden/answers.jsonl; for clapnq-tune 40,
seed 7, the set bench/answers.py writes), or ``--conversations N``: mtrag-tune's first N conversations with a
follow-up, each asked turn by turn in one thread per surface (``kb_core``'s thread in process, ``/threads`` and
its ``/threads/{id}/ask``, ``/v1`` with the earlier messages sent again), over bench/out/kb-mtrag (which
``python bench/conversations.py --no-answers --limit 1`` ingests).

    .venv/bin/kb --kb /tmp/kb-fixtures ingest fixtures/corpus
    .venv/bin/kb --kb /tmp/kb-fixtures serve --port 8765 &      # the embedded default model
    .venv/bin/python bench/checked_stream.py --kb /tmp/kb-fixtures --serve http://127.0.0.1:8765 \\
        --out bench/out/checked_stream.json

Run it on this revision and on the one before (``git worktree``) for the side-by-side figures; the first-checked-text
p50 (seconds from the question to the first text on screen) is compared with the whole answer's p50.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

import kb_core
from kb_core.commands import envelope
from kb_core.service import AnswerService, markdown

REPO = Path(__file__).resolve().parents[1]
Seen = tuple[str, float | None, float, dict[str, Any]]  # streamed text, first text at, done at, answer.v1


def withdrawn(streamed: str, answer: dict[str, Any]) -> bool:
    """Whether a client was shown text the finished answer withdrew (refused, or changed after it was shown)."""
    said = " ".join(streamed.split())
    if not said:
        return False
    return not answer["grounded"] or not " ".join(str(answer["answer"]).split()).startswith(said)


def via_service(service: AnswerService, question: str, thread: dict[str, Any] | None = None) -> Seen:
    """``question`` asked in process; ``thread`` (a conversation's state) keeps its thread id between turns."""
    pieces: list[str] = []
    began, first = time.perf_counter(), None

    def on_token(text: str) -> None:
        nonlocal first
        if text and first is None:
            first = time.perf_counter() - began
        pieces.append(text)

    turn = service.ask_in_thread(question, (thread or {}).get("id"), on_token=on_token)
    if thread is not None:
        thread["id"] = turn.thread_id
    return "".join(pieces), first, time.perf_counter() - began, envelope("answer.v1", turn.answer)


def _events(response: httpx.Response) -> Any:
    name = ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, line[6:]


def via_sse(http: httpx.Client, path: str, question: str, thread: dict[str, Any] | None = None) -> Seen:
    """``question`` through ``path``'s events; with ``thread`` (a conversation's state), a follow-up goes to
    ``/threads/{id}/ask`` once the first turn named the thread."""
    if thread is not None and thread.get("id"):
        path = f"/threads/{thread['id']}/ask?stream=1"
    pieces: list[str] = []
    began, first = time.perf_counter(), None
    answer: dict[str, Any] = {}
    with http.stream("POST", path, json={"question": question}, headers={"Accept": "text/event-stream"}) as reply:
        for name, data in _events(reply):
            if name == "token":
                first = first if first is not None else time.perf_counter() - began
                pieces.append(json.loads(data)["text"])
            elif name in ("answer", "turn"):
                made = json.loads(data)
                answer = made["answer"] if name == "turn" else made
                if name == "turn" and thread is not None:
                    thread["id"] = made["thread_id"]
    return "".join(pieces), first, time.perf_counter() - began, answer


def via_v1(http: httpx.Client, question: str, thread: dict[str, Any] | None = None) -> Seen:
    """The content deltas of a streamed completion: withdrawn when they are not exactly kb's message for the answer
    (before this issue, a refused or changed answer came after a rule, below the text it replaced). With ``thread``
    (a conversation's state) the earlier messages are sent again, as a chat client does."""
    pieces: list[str] = []
    began, first = time.perf_counter(), None
    answer: dict[str, Any] = {}
    earlier: list[dict[str, str]] = (thread or {}).setdefault("messages", []) if thread is not None else []
    body = {"model": "kb", "stream": True, "messages": [*earlier, {"role": "user", "content": question}]}
    with http.stream("POST", "/v1/chat/completions", json=body) as reply:
        for line in reply.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            answer = chunk.get("kb", answer)
            for choice in chunk.get("choices", []):
                text = choice.get("delta", {}).get("content") or ""
                if text:
                    first = first if first is not None or "kb" in chunk else time.perf_counter() - began
                    pieces.append(text)
    same = markdown.fingerprint("".join(pieces)) == markdown.fingerprint(markdown.message(answer, ""))
    if thread is not None:
        earlier += [{"role": "user", "content": question}, {"role": "assistant", "content": "".join(pieces)}]
    shown = "" if same else "".join(pieces)  # (withdrawn() reads any text here against the answer)
    return shown, first, time.perf_counter() - began, answer if same else {**answer, "grounded": False}


def conversations(limit: int) -> list[list[str]]:
    """The user turns of mtrag-tune's first ``limit`` conversations that have a follow-up (the dataset beside this
    checkout)."""
    data = REPO.parent / "shared" / "datasets" / "mtrag-tune" / "conversations.jsonl"
    found = [[t["question"] for t in json.loads(line)["turns"]] for line in data.read_text().splitlines() if line]
    return [turns for turns in found if len(turns) > 1][:limit]


def summary(rows: list[Seen]) -> dict[str, Any]:
    firsts = [first for _, first, _, a in rows if first is not None and a.get("grounded")]
    wholes = [done for _, _, done, a in rows if a.get("grounded")]
    return {
        "questions": len(rows),
        "grounded": sum(1 for *_, a in rows if a.get("grounded")),
        "withdrawn_claims": sum(1 for s, _, _, a in rows if withdrawn(s, a)),
        "first_checked_text_p50_s": round(statistics.median(firsts), 3) if firsts else None,
        "whole_answer_p50_s": round(statistics.median(wholes), 3) if wholes else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", required=True, help="the knowledge base folder (ingested)")
    parser.add_argument("--questions", type=Path, default=REPO / "fixtures/golden/answers.jsonl")
    parser.add_argument("--serve", help="a running kb serve over the same knowledge base, for /ask, /threads, /v1")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--conversations", type=int, default=0, help="instead: mtrag-tune's first N conversations, turn by turn"
    )
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines() if line.strip()]
    surfaces: dict[str, Callable[[str, dict[str, Any] | None], Seen]] = {}
    kb = kb_core.open_kb(kb_dir=args.kb, create=False)
    service = AnswerService.over(kb)
    surfaces["service"] = lambda q, t: via_service(service, q, t)
    if args.serve:
        http = httpx.Client(base_url=args.serve, timeout=600)
        if not args.conversations:  # /ask has no threads
            surfaces["ask"] = lambda q, t: via_sse(http, "/ask/stream", q, t)
        surfaces["threads"] = lambda q, t: via_sse(http, "/threads?stream=1", q, t)
        surfaces["v1"] = lambda q, t: via_v1(http, q, t)
    if args.conversations:  # every turn of each conversation in one thread per surface; follow-ups counted apart
        talks = conversations(args.conversations)
        report: dict[str, Any] = {}
        for name, ask in surfaces.items():
            rows: list[list[Seen]] = []
            for turns in talks:
                state: dict[str, Any] = {}  # this conversation's thread on this surface
                rows.append([ask(question, state) for question in turns])
            report[name] = summary([r for turns in rows for r in turns])
            report[name]["follow_ups"] = summary([r for turns in rows for r in turns[1:]])
    else:
        report = {name: summary([ask(q, None) for q in questions]) for name, ask in surfaces.items()}
    kb.close()
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
