"""Running a hostile input and judging what came back: an internal error, a 5xx, a hang, too much memory.

Every run has a time limit (:data:`TIME_LIMIT_S`): an in-process command runs in a thread, a process is
killed; a process also runs under an address-space limit (:data:`MEMORY_LIMIT_BYTES`, ``RLIMIT_AS``).
"""

from __future__ import annotations

import faulthandler
import json
import os
import resource
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

#: The longest any one input may take before it counts as a hang.
TIME_LIMIT_S = 30.0
#: The most address space a process may take (2 GB) before it counts as unbounded memory.
MEMORY_LIMIT_BYTES = 2 * 1024**3
#: The kinds of failure, in the order they are reported.
KINDS = ("exit_70", "5xx", "jsonrpc_internal", "hang", "memory", "crash")
_MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")


@attrs.frozen
class Outcome:
    """What one input got: ``failure`` is one of :data:`KINDS` (None when kb answered or refused it),
    ``detail`` what it said (an exit code and its first line, a status and its body)."""

    failure: str | None
    detail: str = ""

    @property
    def ok(self) -> bool:
        """Whether kb answered or refused the input as it should."""
        return self.failure is None


def judge_exit(code: int | None, stderr: str) -> Outcome:
    """A command's outcome from its exit code (None: it did not end, negative: a signal) and error output."""
    first = next((line for line in stderr.splitlines() if line.strip()), "")
    detail = f"exit {code}: {first[:300]}"
    if code is None:
        return Outcome("hang", detail)
    if any(sign in stderr for sign in _MEMORY_SIGNS):
        return Outcome("memory", detail)
    if code == 70 or "internal error" in stderr:
        return Outcome("exit_70", detail)
    if code < 0 and code != -signal.SIGPIPE:
        return Outcome("crash", f"killed by signal {-code}: {first[:300]}")
    if "Traceback (most recent call last)" in stderr:
        return Outcome("crash", f"traceback: {stderr.strip().splitlines()[-1][:300]}")
    return Outcome(None, detail)


def judge_http(status: int, content_type: str, text: str) -> Outcome:
    """A reply's outcome: a 5xx, or a stream that reports an internal error, is a failure."""
    detail = f"{status}: {text[:300]}"
    if status >= 500:
        return Outcome("5xx", detail)
    if content_type.startswith("text/event-stream") and ('"internal error"' in text or '"server_error"' in text):
        return Outcome("5xx", f"{status} stream: {text[-300:]}")
    return Outcome(None, detail)


def judge_jsonrpc(reply: Mapping[str, Any]) -> Outcome:
    """A JSON-RPC reply's outcome: -32603 (internal error), or a tool error that is not kb's one line, fails."""
    detail = json.dumps(reply)[:300]
    error = reply.get("error")
    if isinstance(error, dict):
        return Outcome("jsonrpc_internal" if error.get("code") == -32603 else None, detail)
    result = reply.get("result", {})
    if isinstance(result, dict) and result.get("isError"):
        content = result.get("content") or [{}]
        line = str(content[0].get("text", "")) if isinstance(content[0], dict) else ""
        if not line.startswith("kb: error: ") or "internal error" in line:
            return Outcome("jsonrpc_internal", detail)
    return Outcome(None, detail)


def run_in_process(
    main: Callable[[list[str]], int],
    args: Sequence[str],
    env: Mapping[str, str | None] | None = None,
    stdin: bytes = b"",
    time_limit: float = TIME_LIMIT_S,
) -> Outcome:
    """``main(args)`` (``kb_core.cli.main.main``) in a thread, its streams captured and ``env`` set as click's
    ``CliRunner`` does; a hang when it outlives ``time_limit`` (the thread is left to end by itself)."""
    from click.testing import CliRunner

    result: list[int] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            result.append(main(list(args)))
        except BaseException as exc:  # noqa: BLE001 (what escapes main is the finding)
            failed.append(exc)

    if not faulthandler.is_enabled():  # on the real stderr: kb enables it on whatever stderr is, and captured has no fd
        faulthandler.enable(all_threads=True)
    runner = CliRunner()
    with runner.isolation(input=stdin, env=dict(env or {})) as streams:
        thread = threading.Thread(target=target, daemon=True, name="kb-hostile")
        thread.start()
        thread.join(time_limit)
        err = streams[1].getvalue().decode("utf-8", "replace")
    if thread.is_alive():
        return judge_exit(None, err)
    if failed:
        exc = failed[0]
        code = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 70
        return judge_exit(code, f"{err}\nescaped main: {type(exc).__name__}: {exc}"[-2000:])
    return judge_exit(result[0], err)


def limit_memory(limit: int = MEMORY_LIMIT_BYTES) -> Callable[[], None]:
    """A ``preexec_fn`` that caps the child's address space at ``limit`` bytes."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def runnable(args: Sequence[str]) -> bool:
    """Whether ``args`` can be a process's arguments (no NUL; surrogates only as undecodable bytes; none past
    Linux's 128 KiB for one argument, which the system refuses with E2BIG before kb runs)."""
    try:
        return all("\x00" not in a and b"\x00" not in (raw := os.fsencode(a)) and len(raw) < 131_072 for a in args)
    except UnicodeEncodeError:
        return False


def run_process(
    argv: Sequence[str],
    env: Mapping[str, str],
    stdin: bytes = b"",
    time_limit: float = TIME_LIMIT_S,
    memory_limit: int = MEMORY_LIMIT_BYTES,
) -> Outcome:
    """``argv`` as a process under ``memory_limit``; killed (a hang) after ``time_limit`` seconds."""
    try:
        done = subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            env=dict(env),
            timeout=time_limit,
            preexec_fn=limit_memory(memory_limit),  # noqa: PLW1509 (no threads start before it runs)
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return judge_exit(None, (exc.stderr or b"").decode("utf-8", "replace"))
    return judge_exit(done.returncode, done.stderr.decode("utf-8", "replace"))


class McpLines:
    """A real ``kb mcp`` over stdio (under the memory limit), spoken to in raw lines: :meth:`send` one message
    (or a line that is not one) and judge the replies; a message unanswered within the time limit is a hang."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], time_limit: float = TIME_LIMIT_S) -> None:
        self.time_limit = time_limit
        self.process = subprocess.Popen(
            list(argv),
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            preexec_fn=limit_memory(),  # noqa: PLW1509 (no threads start before it runs)
        )
        self.pending = b""
        self.next_id = 0
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}
        if self._ask({"jsonrpc": "2.0", "method": "initialize", "params": hello}) is None:
            raise RuntimeError("kb mcp did not answer initialize")
        self._write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def tools(self) -> list[dict[str, Any]]:
        """The tools ``tools/list`` describes."""
        reply = self._ask({"jsonrpc": "2.0", "method": "tools/list", "params": {}})
        return list((reply or {}).get("result", {}).get("tools", []))

    def send(self, message: Mapping[str, Any] | bytes) -> Outcome:
        """Send ``message`` (a request, given an id here; bytes: a line as is, then a ``ping``) and judge it."""
        if isinstance(message, bytes):
            self._write(message)
            replies = self._until({"jsonrpc": "2.0", "method": "ping"})
        else:
            replies = self._until(dict(message))
        if replies is None:
            return Outcome("hang", f"no reply to {str(message)[:300]}")
        judged = [judge_jsonrpc(reply) for reply in replies]
        return next((outcome for outcome in judged if not outcome.ok), Outcome(None, ""))

    def close(self) -> None:
        """End the process."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()

    def _write(self, line: bytes) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass

    def _ask(self, message: dict[str, Any]) -> dict[str, Any] | None:
        replies = self._until(message)
        return replies[-1] if replies else None

    def _until(self, message: dict[str, Any]) -> list[dict[str, Any]] | None:
        """Send ``message`` with a new id; every reply up to its own (None: none within the time limit)."""
        self.next_id += 1
        self._write(json.dumps({**message, "id": self.next_id}, allow_nan=True).encode("utf-8", "surrogatepass"))
        replies: list[dict[str, Any]] = []
        while (reply := self._receive()) is not None:
            replies.append(reply)
            if reply.get("id") == self.next_id:
                return replies
        return None

    def _receive(self) -> dict[str, Any] | None:
        stdout = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + self.time_limit
        while b"\n" not in self.pending:
            ready, _, _ = select.select([stdout.fileno()], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(stdout.fileno(), 1 << 16) if ready else b""
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        try:
            value = json.loads(line)
        except ValueError:
            return {"error": {"code": -32603, "message": f"not JSON on stdout: {line[:200]!r}"}}
        return value if isinstance(value, dict) else {"result": value}
