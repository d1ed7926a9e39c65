"""Helpers for kb-mcp's tests: notes to ingest, a real ``kb mcp`` subprocess driven by the MCP SDK's own
client, the real ``kb`` CLI, and the shipped JSON Schemas."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).parent
KB = str(Path(sys.executable).parent / "kb")
NOTES = {
    "heliograph.md": "# Heliograph\n\nHeliograph 2.3.0 was released on 12 March 2024.\nIt adds mirror calibration.\n",
    "ops/backups.md": "# Backups\n\nBackups are verified every Sunday by restoring them to a scratch disk.\n\n"
    "## Retention\n\nDaily backups are kept for 35 days.\n",
    "ops/oncall.md": "# On call\n\nThe on-call engineer carries the pager from Monday 09:00 for one week.\n",
}
T = TypeVar("T")


def write_notes(folder: Path, notes: dict[str, str] = NOTES) -> Path:
    """Write ``notes`` (relative path -> text) under ``folder``."""
    for relative, text in notes.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")
    return folder


def scripted_plugin_path(folder: Path) -> str:
    """A PYTHONPATH that makes the test-only plugin ``kb_mcp_test_backend`` look installed (group ``kb``)."""
    dist = folder / "kb_mcp_test_backend-0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kb-mcp-test-backend\nVersion: 0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[kb]\nscripted-llm = kb_mcp_test_backend\n", encoding="utf-8")
    return os.pathsep.join([str(folder), str(HERE)])


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a ``kb mcp`` subprocess: this test's isolated config and data dirs."""
    env = {
        name: os.environ[name] for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "HOME", "PATH") if name in os.environ
    }
    return {**env, **(extra or {})}


def with_server(
    kb_dir: Path, scenario: Callable[[ClientSession], Awaitable[T]], *args: str, env: dict[str, str] | None = None
) -> T:
    """Start ``kb --kb KB_DIR [args] mcp`` over stdio, run ``scenario`` with an initialised session."""

    async def main() -> T:
        params = StdioServerParameters(command=KB, args=["--kb", str(kb_dir), *args, "mcp"], env=server_env(env))
        with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 (opened once, before any I/O is awaited)
            async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await scenario(session)

    return anyio.run(main)


def run_kb(kb_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``kb`` CLI on ``kb_dir``."""
    return subprocess.run(
        [KB, "--kb", str(kb_dir), *args], check=False, capture_output=True, text=True, env=server_env(), timeout=120
    )


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of ``name`` shipped with kb_core or kb_mcp."""
    from importlib import resources

    for package in ("kb_core.schemas", "kb_mcp.schemas"):
        path = resources.files(package).joinpath(f"{name}.json")
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    raise LookupError(name)


def without_timings(value: Any) -> Any:
    """``value`` with every timing field (``took_ms``, ``*_ms``) dropped, to compare two runs."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not k.endswith("_ms") and k != "trace_id"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value
