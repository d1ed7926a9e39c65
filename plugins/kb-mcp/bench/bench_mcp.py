"""Print the round-trip latency (p50 / p95) of MCP ``search`` and ``fetch`` calls to a real ``kb mcp``.

Ingests the repository's fixture corpus (``fixtures/corpus``, or a folder given with --corpus)
into a temporary knowledge base, starts ``kb mcp`` over stdio with the MCP SDK's client, warms
it up with one call of each tool, then times N calls of each (queries cycled; each fetch asks
for the citation of a hit from the warm-up search). Times include JSON-RPC over the pipes,
argument validation and the kb library call.

    python plugins/kb-mcp/bench/bench_mcp.py [--calls N] [--mode hybrid|lexical|vector] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import kb_core

ROOT = Path(__file__).resolve().parents[3]
QUERIES = [
    "release process",
    "heliograph mirror calibration",
    "how are backups verified",
    "changelog 2.3.0",
    "on-call rotation",
    "database migration rollback",
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def measure(kb_dir: Path, calls: int, mode: str) -> dict[str, list[float]]:
    params = StdioServerParameters(command=str(Path(sys.executable).parent / "kb"), args=["--kb", str(kb_dir), "mcp"])
    timings: dict[str, list[float]] = {"search": [], "fetch": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        warm = await session.call_tool("search", {"query": QUERIES[0], "mode": mode, "k": 10})
        hits = (warm.structured_content or {}).get("hits", [])
        if not hits:
            raise SystemExit("the warm-up search found nothing; is the corpus empty?")
        citations = [f"{h['doc_path']}#L{h['citation']['start_line']}-L{h['citation']['end_line']}" for h in hits]
        await session.call_tool("fetch", {"target": citations[0]})
        for i in range(calls):
            started = time.perf_counter()
            result = await session.call_tool("search", {"query": QUERIES[i % len(QUERIES)], "mode": mode, "k": 10})
            timings["search"].append((time.perf_counter() - started) * 1000)
            assert not result.is_error
            started = time.perf_counter()
            result = await session.call_tool("fetch", {"target": citations[i % len(citations)]})
            timings["fetch"].append((time.perf_counter() - started) * 1000)
            assert not result.is_error
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--mode", default="hybrid", choices=["lexical", "vector", "hybrid"])
    parser.add_argument("--corpus", type=Path, default=ROOT / "fixtures" / "corpus")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        kb_dir = Path(folder) / "kb"
        with kb_core.open_kb(kb_dir=kb_dir) as kb:
            report = kb_core.ingest_paths(kb, [args.corpus])
        print(f"corpus {args.corpus}: {report.documents} documents, {report.chunks} chunks")
        timings = anyio.run(measure, kb_dir, args.calls, args.mode)
    for tool, values in timings.items():
        print(
            f"{tool:<7} {args.mode if tool == 'search' else '':<8} n={len(values):<4}"
            f" p50 {percentile(values, 0.5):7.2f} ms"
            f"  p95 {percentile(values, 0.95):7.2f} ms  mean {statistics.fmean(values):7.2f} ms"
        )


if __name__ == "__main__":
    main()
