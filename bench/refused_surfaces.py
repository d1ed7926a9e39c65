"""A refused follow-up through every surface's real client (issue 44): does any claim kb refused reach the reader?

Each conversation (default: the issue's, "Which TCP port does Heliograph listen on?" then "And since which
version?") is asked first with ``kb ask --json --explain`` to learn what the model wrote (a refused turn's
``sentences`` are the claims kb withdrew), then through each surface as its reader gets it:

* ``chat``: ``kb chat`` under a pseudo-terminal, both turns typed at its prompt;
* ``ask``: ``kb ask`` then ``kb ask --continue``, each under a pseudo-terminal;
* ``llm``: simonw's ``llm -m kb`` then ``llm -c`` (a temporary ``LLM_USER_PATH``), and its log;
* ``v1``: the ``openai`` package streaming ``/v1/chat/completions`` with the conversation so far;
* ``threads``: ``POST /threads?stream=1`` then ``/threads/{id}/ask?stream=1``, the Server-Sent Events the page reads;
* ``mcp``: ``kb mcp`` over stdio through the official SDK, the follow-up with the ``thread_id``.

A *leak* is a withdrawn claim found in what a surface showed for that turn (markers and blanks ignored). Each turn
also records the seconds to the first text and to the end. Needs a running ``kb serve`` over the same knowledge base.

    .venv/bin/kb --kb /tmp/kbC ingest fixtures/corpus
    .venv/bin/kb --kb /tmp/kbC serve --port 8777 &
    .venv/bin/python bench/refused_surfaces.py --kb /tmp/kbC --serve http://127.0.0.1:8777 --out /tmp/refused.json
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam

BIN = Path(sys.executable).parent
ISSUE = ["Which TCP port does Heliograph listen on?", "And since which version?"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MARKERS = re.compile(r"\[\[\d+\]\]\[kb-\d+\]|\[#\d+\]")
Shown = list[tuple[str, float | None, float]]  # per turn: the text shown, first text at (s), done at (s)


def plain(text: str) -> str:
    """``text`` as compared: no markers, lower case, blanks collapsed, no final full stop."""
    return " ".join(MARKERS.sub("", text).lower().split()).rstrip(" .")


def terminal_text(raw: str) -> str:
    """What a terminal leaves on screen: escapes dropped, a line rewritten after ``\\r`` kept as rewritten."""
    lines = ANSI.sub("", raw).replace("\r\n", "\n").split("\n")
    return "\n".join(line.rsplit("\r", 1)[-1] for line in lines)


def under_pty(
    argv: list[str], prompt: str | None, lines: list[str], timeout_s: float = 1800
) -> list[tuple[float, str]]:
    """Run ``argv`` on a pseudo-terminal, typing each of ``lines`` at ``prompt`` (then Ctrl-D): (seconds, text) read."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    began, pending, since = time.monotonic(), list(lines), 0
    read: list[tuple[float, str]] = []
    typing = prompt is not None
    while time.monotonic() - began < timeout_s:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                data = os.read(fd, 65536).decode("utf-8", "replace")
            except OSError:
                data = ""
            if not data:
                break
            read.append((time.monotonic() - began, data))
        seen = "".join(text for _, text in read)
        if typing and prompt is not None and seen[since:].endswith(prompt):
            typing = bool(pending)  # the last prompt gets Ctrl-D
            os.write(fd, (pending.pop(0) + "\n").encode() if pending else b"\x04")
            since = len(seen)
    os.waitpid(pid, 0)
    return read


def first_answer_text(read: list[tuple[float, str]], after: float) -> float | None:
    """Seconds after ``after`` to the first piece of an answer (not the model's loading bar, nor "searched for")."""
    for t, piece in read:
        shown = terminal_text(piece).strip()
        if t > after and shown and not shown.startswith(("loading the model", "searched for")):
            return t - after
    return None


def split_turns(read: list[tuple[float, str]], prompt: str, turns: int) -> Shown:
    """Per turn of a ``kb chat`` transcript: what appeared between its question and the next prompt."""
    text = "".join(piece for _, piece in read)
    ends, total = [], 0
    for t, piece in read:
        total += len(piece)
        ends.append((total, t))
    at = lambda offset: next(t for end, t in ends if end >= offset)  # noqa: E731 - when offset was read
    starts = [m.end() for m in re.finditer(re.escape(prompt), text)]
    shown: Shown = []
    for n in range(turns):
        begin = starts[n] if n < len(starts) else len(text)
        end = starts[n + 1] if n + 1 < len(starts) else len(text)
        part = text[begin:end].split("\n", 1)[-1]  # after the echoed question
        asked = at(begin + len(text[begin:end]) - len(part))
        later = [(t, piece) for t, piece in read if t >= asked and t <= at(end)]
        shown.append((terminal_text(part), first_answer_text(later, asked), at(end) - asked))
    return shown


def via_chat(kb: list[str], turns: list[str]) -> Shown:
    prompt = "you> "
    return split_turns(under_pty([*kb, "chat"], prompt, turns), prompt, len(turns))


def via_ask(kb: list[str], turns: list[str]) -> Shown:
    shown: Shown = []
    for n, question in enumerate(turns):
        read = under_pty([*kb, "ask", *(["--continue"] if n else []), question], None, [])
        text = terminal_text("".join(piece for _, piece in read))
        shown.append((text, first_answer_text(read, 0.0), read[-1][0] if read else 0.0))
    return shown


def via_llm(serve: str, turns: list[str]) -> Shown:
    home = tempfile.mkdtemp(prefix="llm-home-")
    Path(home, "extra-openai-models.yaml").write_text(f'- model_id: kb\n  model_name: kb\n  api_base: "{serve}/v1"\n')
    os.environ["LLM_USER_PATH"] = home
    shown: Shown = []
    for n, question in enumerate(turns):
        read = under_pty([str(BIN / "llm"), *(["-c"] if n else ["-m", "kb"]), question], None, [])
        text = terminal_text("".join(piece for _, piece in read))
        shown.append((text, read[0][0] if read else None, read[-1][0] if read else 0.0))
    log = subprocess.run([str(BIN / "llm"), "logs", "-n", "0", "--json"], capture_output=True, text=True, check=True)
    responses = [entry["response"] for entry in json.loads(log.stdout)]
    return [(f"{text}\n{logged}", first, done) for (text, first, done), logged in zip(shown, responses, strict=False)]


def via_v1(serve: str, turns: list[str]) -> Shown:
    client = OpenAI(base_url=f"{serve}/v1", api_key=os.environ.get("KB_SERVE_TOKEN", "none"))
    messages: list[ChatCompletionMessageParam] = []
    shown: Shown = []
    for question in turns:
        messages.append({"role": "user", "content": question})
        began, first, text = time.monotonic(), None, ""
        for chunk in client.chat.completions.create(model="kb", messages=messages, stream=True):
            for choice in chunk.choices:
                if choice.delta.content and choice.delta.content.strip() and first is None:
                    first = time.monotonic() - began
                text += choice.delta.content or ""
        shown.append((text, first, time.monotonic() - began))
        messages.append({"role": "assistant", "content": text})
    return shown


def via_threads(serve: str, turns: list[str]) -> Shown:
    shown: Shown = []
    thread = None
    with httpx.Client(timeout=1800, headers={"Origin": serve}) as http:
        for question in turns:
            path = "/threads?stream=1" if thread is None else f"/threads/{thread}/ask?stream=1"
            began, first, text, event = time.monotonic(), None, "", ""
            with http.stream("POST", serve + path, json={"question": question}) as response:
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: ") and event == "token":
                        first = first if first is not None else time.monotonic() - began
                        text += json.loads(line[6:])["text"]
                    elif line.startswith("data: ") and event == "turn":
                        turn = json.loads(line[6:])
                        thread = turn["thread_id"]
                        text += "\n" + json.dumps(turn["answer"], ensure_ascii=False)  # what the page is given
            shown.append((text, first, time.monotonic() - began))
    return shown


def via_mcp(kb: list[str], turns: list[str]) -> Shown:
    async def run() -> Shown:
        shown: Shown = []
        params = StdioServerParameters(command=kb[0], args=[*kb[1:], "mcp"])
        with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 (opened once, before any I/O)
            async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                thread = None
                for question in turns:
                    began = time.monotonic()
                    arguments = {"question": question, **({"thread_id": thread} if thread else {})}
                    result = await session.call_tool("ask", arguments, read_timeout_seconds=1800)
                    data = getattr(result, "structured_content", None) or {}
                    thread = data.get("thread_id")
                    text = "\n".join(str(getattr(block, "text", "")) for block in getattr(result, "content", []))
                    shown.append((text, None, time.monotonic() - began))
        return shown

    return anyio.run(run)


def truth(kb: list[str], turns: list[str]) -> list[dict[str, Any]]:
    """Each turn's answer.v1 with ``--explain`` (a refused turn keeps the model's sentences there)."""
    found = []
    for n, question in enumerate(turns):
        args = [*kb, "ask", "--json", "--explain", *(["--continue"] if n else []), question]
        out = json.loads(subprocess.run(args, capture_output=True, text=True, check=False).stdout)
        found.append(out.get("answer", out) if out.get("schema_version") == "turn.v1" else out)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", required=True, type=Path)
    parser.add_argument("--serve", required=True, help="the running kb serve over the same knowledge base")
    parser.add_argument("--conversations", type=Path, help='JSONL, one {"turns": [question, follow-up, ...]} a line')
    parser.add_argument("--surfaces", default="chat,ask,llm,v1,threads,mcp")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    kb = [str(BIN / "kb"), "--kb", str(args.kb)]
    serve = args.serve.rstrip("/")
    if args.conversations:
        conversations = [json.loads(line)["turns"] for line in args.conversations.read_text().splitlines() if line]
    else:
        conversations = [ISSUE]
    surfaces: dict[str, Callable[[list[str]], Shown]] = {
        "chat": lambda turns: via_chat(kb, turns),
        "ask": lambda turns: via_ask(kb, turns),
        "llm": lambda turns: via_llm(serve, turns),
        "v1": lambda turns: via_v1(serve, turns),
        "threads": lambda turns: via_threads(serve, turns),
        "mcp": lambda turns: via_mcp(kb, turns),
    }
    report: list[dict[str, Any]] = []
    leaks = 0
    for turns in conversations:
        answers = truth(kb, turns)
        withdrawn = [[s["text"] for s in a.get("sentences") or []] if not a["grounded"] else [] for a in answers]
        for name in args.surfaces.split(","):
            for n, (text, first, done) in enumerate(surfaces[name](turns)):
                leaked = [claim for claim in withdrawn[n] if plain(claim) and plain(claim) in plain(text)]
                leaks += len(leaked)
                report.append(
                    {
                        "surface": name,
                        "turn": n + 1,
                        "question": turns[n],
                        "grounded": answers[n]["grounded"],
                        "withdrawn": withdrawn[n],
                        "leaked": leaked,
                        "first_text_s": first,
                        "done_s": done,
                        "shown": text,
                    }
                )
                first_s = "-" if first is None else f"{first:.1f}"
                print(
                    f"{name:8} turn {n + 1}  grounded={answers[n]['grounded']!s:5}  first {first_s:>6} s  "
                    f"done {done:6.1f} s  withdrawn {len(withdrawn[n])}  leaked {len(leaked)}"
                )
    args.out.write_text(json.dumps({"leaks": leaks, "turns": report}, indent=1, ensure_ascii=False))
    print(f"claims shown that kb withdrew: {leaks}  ({args.out})")


if __name__ == "__main__":
    main()
