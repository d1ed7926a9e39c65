"""Generated text through every entry point of kb: how many inputs were answered, refused, or broke something.

Ingests the repository's fixture corpus into a temporary knowledge base (the installed default engines), then
sends ``--count`` generated inputs to each entry point, one after another:

- ``cli``: kb's command line in this process (``kb_core.cli.main.main``, as the tests call it): ``search``,
  ``search --path``, ``search --mode``, ``ask`` (the scripted model), ``inspect``, ``threads show``, ``answers
  show``, ``list --prefix``;
- ``serve``: a real ``kb serve`` (a subprocess on a free loopback port, the scripted model of kb_core.testing):
  ``POST /ask``, ``/ask/stream``, ``/threads``, ``/threads/{id}/ask`` with JSON bodies (and bodies that are not
  UTF-8 or not JSON), ``GET /search`` (``q``, ``path``, ``mode``), ``/documents``, ``/documents/{path}``,
  ``/threads/{id}``;
- ``mcp``: a real ``kb mcp`` over stdio, spoken to in raw lines: ``tools/call`` of every tool with the text in
  one argument, lines of random bytes, and JSON of any shape (each followed by a ``ping`` that must be answered).

The text: lone surrogates, NUL, bidirectional controls, random bytes decoded as Python decodes an argument
(surrogateescape), any code point, words of the corpus, and now and then 4,001 to 1,000,000 characters::

    python bench/fuzz_inputs.py [--count 10000] [--seed 1] [--timeout 60] [--only cli,serve,mcp] [--json]

Outcomes per entry point: ``ok`` (an answer or no result: exit 0/1, HTTP 2xx, an MCP result, silence for a
notification), ``usage_error`` (exit 2 in one line; HTTP 4xx in the documented ``{"error", "hint"}`` shape; an
MCP tool error line ``kb: error: ...`` or JSON-RPC -32700/-32600/-32601/-32602), ``5xx`` (HTTP 5xx or an
``internal error`` stream event; MCP -32603 or the SDK's ``Error executing tool``), ``exit_70`` (the CLI's
internal error), ``hang`` (nothing within ``--timeout`` seconds; kb serve or kb mcp is then restarted), ``other``
(anything else, e.g. a 4xx in another shape; the first few are listed). Target: 0 in 5xx, exit_70 and hang.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, Any
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "corpus"
KB = str(Path(sys.executable).parent / "kb")
ENTRY_POINTS = ("cli", "serve", "mcp")
OUTCOMES = ("ok", "usage_error", "5xx", "exit_70", "hang", "other")
#: The scripted language model of kb_core.testing ("ok [#1]" to every request), loaded as a plugin.
SCRIPTED = "kb_core.testing.language_models:ScriptedPlugin"
PIECES = [
    "\ud800", "\udfff", "\udcff", "\udc80", "\x00", "\u202e", "\u2066", "\u200b", "\ufeff", "\ufffe", "\u2028",
    "wind", "Heliograph", "backups", "stow angle", "release", " ", "\n", "\t", "é", "e\u0301", "한국어", "中文",
    "😀", "*", "?", "[", "]", "[!", "/", "..", "#L1-L2", "\\", '"', "'", "%", "{", "}", "notes/", ".md",
]  # fmt: skip
MAX_OTHERS = 5


def text(rng: random.Random) -> str:
    """One generated text."""
    kind = rng.random()
    if kind < 0.01:
        return rng.choice(["x", "é", "\udc80", " ", "\x00", "wind "]) * rng.choice([4001, 10**5, 10**6])
    if kind < 0.15:  # bytes as Python decodes an argument or a line: those that are not UTF-8 become surrogates
        return os.fsdecode(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 24))))
    if kind < 0.35:
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(0, 24)))
    return "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 8)))


class Tally:
    """The outcomes of an entry point's inputs, and a note on each of the first MAX_OTHERS that went wrong."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.others: list[str] = []

    def add(self, outcome: str, note: str = "") -> None:
        """Count one input's ``outcome``; keep ``note`` (what the input was and got) while there is room."""
        self.outcomes[outcome] += 1
        if note and len(self.others) < MAX_OTHERS:
            self.others.append(note)


# -- the command line, in this process ---------------------------------------------------------------


class Hung(BaseException):
    """Raised by the alarm in a CLI call that outlives the timeout (not an Exception: kb must not catch it)."""


class Captured(io.StringIO):
    """A captured stream with a file descriptor (faulthandler, which kb enables, asks for one): stderr's."""

    def fileno(self) -> int:
        return sys.__stderr__.fileno() if sys.__stderr__ is not None else 2


def cli_args(rng: random.Random, kb_dir: Path) -> list[str]:
    """A command line with one generated text in it."""
    value = text(rng)
    kb = ["--kb", str(kb_dir)]
    return rng.choice(
        [
            [*kb, "search", value, "--mode", "lexical"],
            [*kb, "search", "wind", "--mode", "lexical", "--path", value],
            [*kb, "--backend", "scripted", "ask", value, "--mode", "lexical"],
            [*kb, "inspect", value],
            [*kb, "threads", "show", value],
            [*kb, "answers", "show", value],
            [*kb, "list", "--prefix", value],
            [*kb, "search", "wind", "--mode", value],
        ]
    )


def run_cli(count: int, rng: random.Random, kb_dir: Path, timeout: float) -> Tally:
    """``count`` in-process calls of ``main``: outcomes, and the first calls of no known outcome."""
    from kb_core.cli.main import main

    tally = Tally()

    def alarm(_signum: int, _frame: FrameType | None) -> None:
        raise Hung

    previous = signal.signal(signal.SIGALRM, alarm)
    try:
        for _ in range(count):
            args = cli_args(rng, kb_dir)
            err = Captured()
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                with contextlib.redirect_stdout(Captured()), contextlib.redirect_stderr(err):
                    code = main(args)
            except Hung:
                tally.add("hang")
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            lines = err.getvalue()
            if code in (0, 1):
                tally.add("ok")
            elif code == 2 and lines.count("\n") == 1 and lines.startswith("kb: error: "):
                tally.add("usage_error")
            else:
                note = f"exit {code}: {ascii(args[2:])[:120]}: {lines.strip()[:200]}"
                tally.add("exit_70" if code == 70 else "other", note)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return tally


# -- kb serve ------------------------------------------------------------------------------------


@contextlib.contextmanager
def serving(kb_dir: Path, env: dict[str, str]) -> Iterator[str]:
    """``kb serve`` on a free loopback port (``--port 0``) with the scripted model; its URL."""
    command = [KB, "--kb", str(kb_dir), "--backend", "scripted", "serve", "--port", "0", "--json"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "}\n":
            line = process.stdout.readline()
            if not line:
                raise SystemExit("kb serve did not start")
            lines.append(line)
        yield str(json.loads("".join(lines))["url"]).rstrip("/")
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve_request(rng: random.Random, thread_id: str) -> tuple[str, str, bytes | None]:
    """(method, path, body) of one request with one generated text in it."""
    value = text(rng)
    in_url = quote(value[:5000].encode("utf-8", "surrogatepass"), safe="")  # httpx takes URLs up to 64 KiB
    posts = ["/ask", "/ask?stream=1", "/ask/stream", "/threads", f"/threads/{thread_id}/ask"]
    kind = rng.random()
    if kind < 0.45:
        return "POST", rng.choice(posts), json.dumps({"question": value}).encode()  # a surrogate as \\udxxx
    if kind < 0.5:
        field = rng.choice(["mode", "backend", value[:40] or "x"])
        body = json.dumps({"question": "How fast is the wind at the stow angle?", field: value}).encode()
        return "POST", rng.choice(posts), body
    if kind < 0.55:  # not UTF-8, not JSON, or cut short
        raw = value[:40].encode("utf-8", "surrogatepass")  # a surrogate as the bytes CESU-8 would write
        if rng.random() < 0.5:
            raw = bytes(rng.randrange(256) for _ in range(16))
        body = b'{"question": "' + raw + b'"}'
        return "POST", rng.choice(posts), body[: rng.randrange(1, len(body) + 1)]
    gets = [
        f"/search?q={in_url}",
        f"/search?q=wind&path={in_url}",
        f"/search?q=wind&mode={in_url}",
        f"/documents?prefix={in_url}",
        f"/documents/{in_url or 'x'}",
        f"/threads/{in_url or 'x'}",
        f"/answers/{in_url or 'x'}",
    ]
    return "GET", rng.choice(gets), None


def classify_http(reply: httpx.Response) -> str:
    """The outcome of one reply."""
    if reply.status_code >= 500:
        return "5xx"
    if reply.status_code >= 400:
        try:
            body = reply.json()
        except ValueError:
            return "other"
        shaped = isinstance(body, dict) and set(body) == {"error", "hint"} and "\n" not in reply.text
        return "usage_error" if shaped else "other"
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        for line in reply.text.splitlines():
            if line.startswith("data:") and '"error":"internal error"' in line:
                return "5xx"
    return "ok"


def run_serve(count: int, rng: random.Random, kb_dir: Path, env: dict[str, str], timeout: float) -> Tally:
    """``count`` requests to a real kb serve (restarted after a hang)."""
    tally = Tally()
    done = 0
    while done < count:
        with serving(kb_dir, env) as url, httpx.Client(base_url=url, timeout=timeout) as http:
            first = http.post("/threads", json={"question": "At what wind speed does Heliograph stow the panels?"})
            thread_id = first.json()["thread_id"]
            while done < count:
                method, path, body = serve_request(rng, thread_id)
                done += 1
                try:
                    reply = http.request(method, path, content=body, headers={"Content-Type": "application/json"})
                except httpx.TimeoutException:
                    tally.add("hang")
                    break  # a new server for what is left
                except httpx.TransportError as exc:  # the connection dropped: the server may have died
                    tally.add("other", f"{method} {ascii(path)[:120]} {ascii(body)[:120]}: {type(exc).__name__} {exc}")
                    break
                outcome = classify_http(reply)
                if outcome in ("ok", "usage_error"):
                    tally.add(outcome)
                else:
                    tally.add(
                        outcome,
                        f"{method} {ascii(path)[:120]} {ascii(body)[:120]}: {reply.status_code} {reply.text[:200]}",
                    )
    return tally


# -- kb mcp over stdio ---------------------------------------------------------------------------


class McpLines:
    """``kb --backend scripted mcp`` over stdio, spoken to in raw lines."""

    def __init__(self, kb_dir: Path, env: dict[str, str]) -> None:
        command = [KB, "--kb", str(kb_dir), "--backend", "scripted", "mcp"]
        self.process = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.pending = b""
        self.next_id = 0

    def write(self, line: bytes) -> None:
        stdin: IO[bytes] | None = self.process.stdin
        assert stdin is not None
        stdin.write(line + b"\n")
        stdin.flush()

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None after ``timeout`` seconds of silence."""
        stdout = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            ready, _, _ = select.select([stdout.fileno()], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(stdout.fileno(), 1 << 16) if ready else b""
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return dict(json.loads(line))

    def request(self, method: str, params: dict[str, Any]) -> bytes:
        self.next_id += 1
        return json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


def mcp_line(rng: random.Random, client: McpLines) -> tuple[bytes, bool]:
    """One line and whether it is a request of the client's (answered with its id) or junk (then a ping)."""
    value = text(rng)
    kind = rng.random()
    if kind < 0.1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 60))).replace(b"\n", b" "), False
    if kind < 0.2:
        shape = rng.choice([[value], {"id": value}, {"jsonrpc": "2.0", "method": value}, value, None, 1.5])
        return json.dumps(shape).encode(), False
    tool, arguments = rng.choice(
        [
            ("search", {"query": value}),
            ("search", {"query": "wind", "path": value}),
            ("ask", {"question": value}),
            ("ask", {"question": "How fast is the wind?", "thread_id": value}),
            ("fetch", {"target": value}),
            ("list_documents", {"prefix": value}),
            ("threads", {"thread_id": value}),
            ("answers", {"answer_id": value}),
            ("ingest", {"text": "# Note\n\nFuzzed.\n", "name": value}),
            ("ingest", {"text": value[:2000], "name": "fuzzed.md"}),
        ]
    )
    return client.request("tools/call", {"name": tool, "arguments": arguments}), True


def classify_mcp(reply: dict[str, Any]) -> str:
    """The outcome of one reply."""
    if "error" in reply:
        return "usage_error" if reply["error"].get("code") in (-32700, -32600, -32601, -32602) else "5xx"
    result = reply.get("result", {})
    if not result.get("isError"):
        return "ok"
    line = str(result["content"][0]["text"])
    return "usage_error" if line.startswith("kb: error: ") and "\n" not in line else "5xx"


def run_mcp(count: int, rng: random.Random, kb_dir: Path, env: dict[str, str], timeout: float) -> Tally:
    """``count`` lines to a real kb mcp over stdio (restarted after a hang)."""
    tally = Tally()
    done = 0
    while done < count:
        client = McpLines(kb_dir, env)
        try:
            client.write(
                client.request(
                    "initialize",
                    {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "fuzz", "version": "0"},
                    },
                )
            )
            if client.receive(timeout) is None:
                raise SystemExit("kb mcp did not answer initialize")
            client.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
            while done < count:
                line, is_request = mcp_line(rng, client)
                done += 1
                client.write(line)
                if is_request:
                    wanted = client.next_id
                else:  # junk: whatever it gets, then the ping's reply
                    client.write(client.request("ping", {}))
                    wanted = client.next_id
                replies: list[dict[str, Any]] = []
                while (reply := client.receive(timeout)) is not None:
                    replies.append(reply)
                    if reply.get("id") == wanted:
                        break
                if reply is None:
                    tally.add("hang", f"hang: {ascii(line)[:200]}")
                    break  # a new server for what is left
                if not is_request:
                    replies.pop()  # the ping's
                judged = [classify_mcp(r) for r in replies] or ["ok"]  # junk that is a notification: silence
                outcome = "5xx" if "5xx" in judged else judged[0]
                tally.add(outcome, f"{ascii(line)[:200]}: {json.dumps(replies)[:200]}" if outcome == "5xx" else "")
        finally:
            client.close()
    return tally


# -- the run -------------------------------------------------------------------------------------


def prepare(folder: Path) -> tuple[Path, dict[str, str]]:
    """The corpus ingested into ``folder/kb``; the environment of every kb process (no user configuration)."""
    config = folder / "config.toml"
    config.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
    env |= {"KB_CONFIG": str(config), "KB_PLUGIN_MODULES": SCRIPTED}
    kb_dir = folder / "kb"
    subprocess.run([KB, "--kb", str(kb_dir), "ingest", str(CORPUS)], env=env, check=True, stdout=subprocess.DEVNULL)
    return kb_dir, env


def run(count: int, seed: int, timeout: float, only: list[str]) -> dict[str, Any]:
    """Every chosen entry point, ``count`` inputs each: the report."""
    report: dict[str, Any] = {"count": count, "seed": seed, "timeout_s": timeout, "entry_points": {}}
    with tempfile.TemporaryDirectory(prefix="kb-fuzz-") as folder:
        kb_dir, env = prepare(Path(folder))
        runners: dict[str, Callable[[random.Random], Tally]] = {
            "cli": lambda rng: run_cli(count, rng, kb_dir, timeout),
            "serve": lambda rng: run_serve(count, rng, kb_dir, env, timeout),
            "mcp": lambda rng: run_mcp(count, rng, kb_dir, env, timeout),
        }
        saved = {name: value for name, value in os.environ.items() if name.startswith("KB_")}
        for name in saved:
            del os.environ[name]
        os.environ.update({name: value for name, value in env.items() if name.startswith("KB_")})  # as the processes
        try:
            for name in only:
                began = time.perf_counter()
                tally = runners[name](random.Random(f"{seed}-{name}"))
                report["entry_points"][name] = {
                    "inputs": sum(tally.outcomes.values()),
                    **{outcome: tally.outcomes[outcome] for outcome in OUTCOMES},
                    "seconds": round(time.perf_counter() - began, 1),
                    "first_others": tally.others,
                }
        finally:
            for name in [name for name in os.environ if name.startswith("KB_")]:
                del os.environ[name]
            os.environ.update(saved)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000, help="inputs per entry point")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds without a reply that count as a hang")
    parser.add_argument("--only", default=",".join(ENTRY_POINTS), help="entry points, comma-separated")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    only = [name for name in args.only.split(",") if name]
    if any(name not in ENTRY_POINTS for name in only) or args.count < 1:
        parser.error(f"--only takes {', '.join(ENTRY_POINTS)}; --count at least 1")
    report = run(args.count, args.seed, args.timeout, only)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{args.count} generated inputs per entry point (seed {args.seed}, hang after {args.timeout:g} s)")
        print(f"{'entry point':<12}" + "".join(f"{o:>12}" for o in (*OUTCOMES, "seconds")))
        for name, row in report["entry_points"].items():
            print(f"{name:<12}" + "".join(f"{row[o]:>12}" for o in (*OUTCOMES, "seconds")))
            for other in row["first_others"]:
                print(f"    {other}")
    bad = sum(row[o] for row in report["entry_points"].values() for o in ("5xx", "exit_70", "hang"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
