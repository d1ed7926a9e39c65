"""Print what the kb-ollama client costs per streamed token, against a bare read of the same stream.

Both runs read the same ``/api/chat`` stream from the kit's fake chat server
(``kb_core.testing.serve_chat``, in this process), so the server's share is the same; the ratio is the client's overhead
(JSON parsing, validation, events). Also prints ``count_tokens`` latency, uncached and cached.

    python plugins/kb-ollama/bench/bench_stream.py [TOKENS]
"""

from __future__ import annotations

import http.client
import json
import sys
import time

from kb_core import Config
from kb_core.plugin import GenerateRequest
from kb_core.testing import FakeChatServer, serve_chat
from kb_ollama.model import make_model


def bare_read(port: int, body: dict) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("POST", "/api/chat", body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    lines = sum(1 for _ in iter(response.readline, b""))
    conn.close()
    return lines


def best_of(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with serve_chat() as fake:
        measure(fake, tokens)


def measure(fake: FakeChatServer, tokens: int) -> None:
    """Time the client against the bare read on ``fake``'s stream of ``tokens`` pieces."""
    fake.reply = [f" tok{i}" for i in range(tokens)]
    config = Config()
    model = make_model(config, {"url": fake.url, "model": fake.model}, environ={})
    request = GenerateRequest(system="s", user="u", max_tokens=tokens + 1)
    port = int(fake.url.rsplit(":", 1)[1])
    body = {
        "model": fake.model,
        "messages": [{"role": "user", "content": "u"}],
        "stream": True,
        "options": {"num_predict": tokens + 1},
    }
    model.facts()

    baseline = best_of(3, lambda: bare_read(port, body))
    client = best_of(3, lambda: sum(1 for _ in model.generate_stream(request)))
    print(f"stream of {tokens} tokens over loopback (best of 3)")
    print(f"  bare http.client readline: {baseline * 1e3:8.1f} ms  {baseline / tokens * 1e6:6.1f} us/token")
    print(f"  kb-ollama generate_stream: {client * 1e3:8.1f} ms  {client / tokens * 1e6:6.1f} us/token")
    print(f"  ratio client/bare: {client / baseline:.2f}")

    texts = [f"passage number {i} about the colour of the sky" for i in range(200)]
    uncached = best_of(1, lambda: [model.count_tokens(t) for t in texts])
    cached = best_of(1, lambda: [model.count_tokens(t) for t in texts])
    print(
        f"count_tokens, 200 texts: uncached {uncached / 200 * 1e3:.2f} ms/text (one /api/generate each, "
        f"fake server), cached {cached / 200 * 1e6:.2f} us/text"
    )


if __name__ == "__main__":
    main()
