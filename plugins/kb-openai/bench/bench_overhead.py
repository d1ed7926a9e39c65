"""Per-token cost of the openai backend (a llama.cpp server over loopback) versus in-process llama.cpp.

Same GGUF (the model kb-llamacpp ships), same prompt, greedy decoding, the same number of threads.
For each backend it runs the prompt ``--runs`` times and reports the median of

* time to the first token (prompt evaluation plus, for the server, the HTTP round trip);
* decode time per token after the first: ``(total - first) / (tokens - 1)``.

The server is llama-cpp-python's, run as ``python -m kb_llamacpp.server`` (safe on AMX CPUs); the
in-process side is
kb-llamacpp's ``LlamaCppModel``, run in a subprocess of the same interpreter (``--python``, default
``$KB_LLAMA_SERVER_PYTHON``), which must have llama-cpp-python[server] and kb-llamacpp. Only one of
the two runs at a time. Run under the heavy-job lock::

    flock /tmp/kb-heavy.lock python plugins/kb-openai/bench/bench_overhead.py \
        --python /work/main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from kb_core import Config
from kb_core.plugin import Done, GenerateRequest, Token
from kb_openai.model import make_model

SYSTEM = "You are a helpful assistant."
USER = "Explain in a few sentences why the sky is blue."

IN_PROCESS = """
import json, statistics, sys, time
from kb_core import Config
from kb_core.plugin import Done, FactoryContext, GenerateRequest, Token
from kb_llamacpp import make_model
config = Config()
config.models.llm.threads = int(sys.argv[1])
config.models.llm.context_tokens = 2048
model = make_model(FactoryContext(config))
request = GenerateRequest(system=sys.argv[2], user=sys.argv[3], max_tokens=int(sys.argv[4]), temperature=0.0, seed=1)
rows = []
for _ in range(int(sys.argv[5]) + 1):  # the first run loads the model and is dropped
    start = time.perf_counter(); first = None; tokens = 0
    for event in model.generate_stream(request):
        if isinstance(event, Token) and first is None:
            first = time.perf_counter() - start
        if isinstance(event, Done):
            tokens = event.completion_tokens
    rows.append((first, time.perf_counter() - start, tokens))
print(json.dumps(rows[1:]))
"""


def summarise(rows: list[tuple[float, float, int]]) -> tuple[float, float, int]:
    """Median first-token seconds, median decode seconds per token, and the token count."""
    first = statistics.median(r[0] for r in rows)
    per_token = statistics.median((r[1] - r[0]) / max(1, r[2] - 1) for r in rows)
    return first, per_token, rows[0][2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def worktree_env() -> dict[str, str]:
    """The environment that makes the other interpreter import this checkout's kb_core and kb_llamacpp."""
    root = Path(__file__).resolve().parents[3]
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(root / "plugins" / "kb-llamacpp")]))


def gguf_path(python: str) -> Path:
    code = "from kb_llamacpp import default_model_path; print(default_model_path())"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, env=worktree_env(), cwd="/")
    return Path(done.stdout.strip())


def run_server(python: str, gguf: Path, threads: int, max_tokens: int, runs: int) -> list[tuple[float, float, int]]:
    port = free_port()
    command = [
        python,
        "-m",
        "kb_llamacpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        "bench",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        str(threads),
        "--verbose",
        "false",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit("the llama.cpp server did not start") from None
                time.sleep(0.5)
        config = Config()
        model = make_model(config, {"url": url}, environ={})
        request = GenerateRequest(system=SYSTEM, user=USER, max_tokens=max_tokens, temperature=0.0, seed=1)
        rows = []
        for _ in range(runs + 1):  # the first run warms the server and is dropped
            start, first, tokens = time.perf_counter(), None, 0
            for event in model.generate_stream(request):
                if isinstance(event, Token) and first is None:
                    first = time.perf_counter() - start
                if isinstance(event, Done):
                    if event.error:
                        raise SystemExit(event.error)
                    tokens = event.completion_tokens
            rows.append((first or 0.0, time.perf_counter() - start, tokens))
        return rows[1:]
    finally:
        process.terminate()
        process.wait(15)


def run_in_process(python: str, threads: int, max_tokens: int, runs: int) -> list[tuple[float, float, int]]:
    env = worktree_env()
    args = [python, "-c", IN_PROCESS, str(threads), SYSTEM, USER, str(max_tokens), str(runs)]
    out = subprocess.run(args, capture_output=True, text=True, check=True, env=env, cwd="/").stdout
    return [tuple(r) for r in json.loads(out.strip().splitlines()[-1])]  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=os.environ.get("KB_LLAMA_SERVER_PYTHON") or sys.executable)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    gguf = gguf_path(args.python)
    print(f"model {gguf.name}, {args.threads} threads, {args.max_tokens} tokens max, median of {args.runs} runs")
    results = {
        "in-process llama.cpp (kb-llamacpp)": summarise(
            run_in_process(args.python, args.threads, args.max_tokens, args.runs)
        ),
        "openai backend -> llama.cpp server": summarise(
            run_server(args.python, gguf, args.threads, args.max_tokens, args.runs)
        ),
    }
    for name, (first, per_token, tokens) in results.items():
        print(f"{name:38s} first token {first * 1000:7.1f} ms   {per_token * 1000:6.2f} ms/token   ({tokens} tokens)")
    (_, local, _), (_, remote, _) = results.values()
    print(
        f"ratio server/in-process per token: {remote / local:.3f}  (overhead {1000 * (remote - local):+.2f} ms/token)"
    )


if __name__ == "__main__":
    main()
