"""Hostile inputs at volume through every surface of kb: how many, and which got an internal error, a 5xx, a
JSON-RPC internal error, a hang over 30 s or a process over 2 GB.

The generators are :mod:`kb_core.testing.hostile`'s (``tests/test_hostile_inputs.py`` and kb-serve's
``test_hostile_http.py`` run the same ones, a few hundred examples). The knowledge base is the fixture
corpus on the test indexes; the model is the scripted one of ``kb_core.testing`` (robustness needs no real
model). Surfaces: ``cli`` (every command and option, in process), ``config`` (configuration files),
``env`` (``KB_*`` variables), ``ignore`` (``.kbignore`` lines), ``citations``, ``process`` (command lines as
real ``kb`` processes under 2 GB), ``http`` (every operation of ``kb serve``'s OpenAPI document, ``/v1``
included, against a real ``kb serve`` process), ``mcp`` (every tool of a real ``kb mcp``)::

    python bench/robustness.py [--examples 10000] [--seed 1] [--only cli,http] [--no-shrink]

Writes ``bench/out/robustness.json``; prints the count per surface, the failures by kind, and for each
class of failure (surface, kind, first words of the error) a minimal reproduction (hypothesis shrinks
the first example of each class, replaying the run with the same seed; ``--no-shrink``: the shortest seen).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from kb_core.cli.main import main
from kb_core.extend.registry import load_registry, reset_registry
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin
from kb_core.testing.hostile import (
    KINDS,
    McpLines,
    Outcome,
    Places,
    Request,
    citations,
    cli_arguments,
    config_files,
    environments,
    http_requests,
    ignore_lines,
    kb_commands,
    mcp_messages,
    run_in_process,
    run_process,
    runnable,
    send,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "corpus"
OUT = ROOT / "bench" / "out" / "robustness.json"
KB = str(Path(sys.executable).parent / "kb")
PLUGINS = "kb_core.testing.indexes:TestIndexesPlugin,kb_core.testing.language_models:ScriptedPlugin"
#: Each surface's share of ``--examples`` (a process costs a second or more: fewer of them).
SHARES = {
    "cli": 0.315,
    "config": 0.13,
    "env": 0.08,
    "ignore": 0.08,
    "citations": 0.12,
    "process": 0.005,
    "http": 0.22,
    "mcp": 0.05,
}
COMMANDS = [["config", "show"], ["search", "wind"], ["list"], ["ask", "why?"], ["inspect", "notes/CHANGELOG.txt"]]


class Bench:
    """The knowledge base, the sandbox, the environments, and the servers of one run."""

    def __init__(self, folder: Path) -> None:
        reset_registry(
            load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin()), ("scripted", ScriptedPlugin())])
        )
        self.folder = folder
        config = folder / "config.toml"
        config.write_text("", encoding="utf-8")
        self.env: dict[str, str | None] = {
            "KB_INDEXES__ENABLED": '["test-lexical"]',
            "KB_PLUGIN_MODULES": None,
            "KB_HOME": None,
            "KB_CONFIG": str(config),
        }
        self.pristine = folder / "pristine"
        outcome = run_in_process(main, ["--kb", str(self.pristine), "ingest", str(CORPUS)], env=self.env)
        if not outcome.ok:
            raise SystemExit(f"the corpus did not ingest: {outcome.detail}")
        (folder / "sandbox").mkdir()
        documents = tuple(str(p.relative_to(CORPUS)) for p in sorted(CORPUS.rglob("*")) if p.is_file())
        notes = shutil.copytree(CORPUS / "notes", folder / "notes")  # a copy: a generated --kb may name the folder
        self.places = Places(folder / "sandbox", folder / "kb", documents, (notes,))
        self.restore()
        base = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
        self.process_env = base | {
            "KB_PLUGIN_MODULES": PLUGINS,
            "KB_INDEXES__ENABLED": '["test-lexical"]',
            "KB_CONFIG": str(config),
        }
        self.server: subprocess.Popen[str] | None = None
        self.url = ""
        self.mcp: McpLines | None = None

    def restore(self) -> None:
        """The knowledge base as ingested (generated commands remove and purge)."""
        shutil.rmtree(self.places.kb_dir, ignore_errors=True)
        shutil.copytree(self.pristine, self.places.kb_dir)

    # -- the surfaces: each a strategy and the run of one example --------------------------------

    def surfaces(self) -> dict[str, tuple[st.SearchStrategy[Any], Callable[[Any], Outcome]]]:
        places = self.places
        return {
            "cli": (cli_arguments(places), lambda args: run_in_process(main, args, env=self.env)),
            "config": (st.tuples(config_files(), st.sampled_from(COMMANDS)), self.config),
            "env": (st.tuples(environments(places), st.sampled_from(COMMANDS)), self.environment),
            "ignore": (st.tuples(ignore_lines(), st.booleans()), self.ignore),
            "citations": (st.tuples(citations(places.documents), st.sampled_from(self.citing())), self.citation),
            "process": (
                cli_arguments(places).filter(runnable),
                lambda args: run_process([KB, *args], self.process_env),
            ),
            "http": (http_requests(self.openapi(), places.documents), self.request),
            "mcp": (st.deferred(lambda: mcp_messages(self.mcp_tools(), places.documents)), self.message),
        }

    def config(self, example: tuple[str, list[str]]) -> Outcome:
        text, command = example
        path = self.places.sandbox / "hostile.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        return run_in_process(
            main,
            ["--config", str(path), "--kb", str(self.places.kb_dir), "--backend", "scripted", *command],
            env=self.env,
        )

    def environment(self, example: tuple[dict[str, str], list[str]]) -> Outcome:
        env, command = example
        return run_in_process(
            main, ["--kb", str(self.places.kb_dir), "--backend", "scripted", *command], env={**self.env, **env}
        )

    def ignore(self, example: tuple[list[str], bool]) -> Outcome:
        lines, in_config = example
        folder, kb_dir, config = (self.places.sandbox / n for n in ("ignored", "ignored-kb", "ignore.toml"))
        for old in (folder, kb_dir):
            shutil.rmtree(old, ignore_errors=True)
        shutil.copytree(CORPUS / "notes", folder)
        config.write_text("", encoding="utf-8")
        if in_config:
            quoted = ", ".join(json.dumps(line) for line in lines)  # a JSON string is a TOML basic string
            config.write_text(f"[ingest]\nignore = [{quoted}]\n", encoding="utf-8", errors="surrogatepass")
        else:
            (folder / ".kbignore").write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
        return run_in_process(main, ["--config", str(config), "--kb", str(kb_dir), "ingest", str(folder)], env=self.env)

    def citing(self) -> list[list[str]]:
        names = {path[0] for path, _ in kb_commands()}
        return [[name] for name in ("inspect", "pages", "show") if name in names]

    def citation(self, example: tuple[str, list[str]]) -> Outcome:
        citation, command = example
        return run_in_process(main, ["--kb", str(self.places.kb_dir), *command, citation], env=self.env)

    def openapi(self) -> dict[str, Any]:
        from kb_serve.openapi import document

        return document()

    def request(self, request: Request) -> Outcome:
        if self.server is None or self.server.poll() is not None:
            self.start_server()
        outcome = send(self.url, request)
        if outcome.failure in ("hang", "crash"):
            self.stop_server()
        return outcome

    def start_server(self) -> None:
        kb_dir = self.folder / "served"
        if not kb_dir.exists():
            shutil.copytree(self.pristine, kb_dir)
        command = [KB, "--kb", str(kb_dir), "--backend", "scripted", "serve", "--port", "0", "--json"]
        self.server = subprocess.Popen(
            command, env=self.process_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.server.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "}\n":
            line = self.server.stdout.readline()
            if not line:
                raise SystemExit("kb serve did not start")
            lines.append(line)
        self.url = str(json.loads("".join(lines))["url"]).rstrip("/")

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.kill()
            self.server.communicate()
            self.server = None

    def mcp_tools(self) -> list[dict[str, Any]]:
        return self.mcp_client().tools()

    def mcp_client(self) -> McpLines:
        if self.mcp is None or self.mcp.process.poll() is not None:
            kb_dir = self.folder / "mcp"
            if not kb_dir.exists():
                shutil.copytree(self.pristine, kb_dir)
            self.mcp = McpLines([KB, "--kb", str(kb_dir), "--backend", "scripted", "mcp"], self.process_env)
        return self.mcp

    def message(self, message: dict[str, Any] | bytes) -> Outcome:
        outcome = self.mcp_client().send(message)
        if outcome.failure == "hang" and self.mcp is not None:
            self.mcp.close()
            self.mcp = None
        return outcome

    def close(self) -> None:
        self.stop_server()
        if self.mcp is not None:
            self.mcp.close()


def signature(surface: str, outcome: Outcome) -> str:
    """The class of a failure: its surface, kind and first words (numbers and quoted values dropped)."""
    words = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", outcome.detail)
    return f"{surface} {outcome.failure}: {words[:90]}"


def shown(example: Any) -> str:
    return str(example) if isinstance(example, Request) else ascii(example)


def run_surface(bench: Bench, surface: str, count: int, seed: int, shrink: bool) -> dict[str, Any]:
    """``count`` examples of ``surface``: the outcomes, and a minimal reproduction of each class of failure."""
    strategy, judge = bench.surfaces()[surface]
    kinds: Counter[str] = Counter()
    classes: dict[str, Any] = {}
    runs = [0]

    def record(example: Any) -> bool:
        runs[0] += 1
        if surface in ("cli", "citations") and runs[0] % 200 == 0:
            bench.restore()
        outcome = judge(example)
        kinds[outcome.failure or "ok"] += 1
        if not outcome.ok:
            key = signature(surface, outcome)
            seen = classes.get(key)
            if seen is None or len(shown(example)) < len(seen["example"]):
                classes[key] = {
                    "kind": outcome.failure,
                    "detail": outcome.detail[:400],
                    "example": shown(example),
                    "count": (seen or {}).get("count", 0) + 1,
                }
            else:
                seen["count"] += 1
        return False

    common = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck), max_examples=count)
    began = time.perf_counter()
    with contextlib.suppress(NoSuchExample):
        find(strategy, record, settings=settings(common, phases=[Phase.generate]), random=random.Random(seed))
    seconds = time.perf_counter() - began
    if shrink:
        for key, found in list(classes.items())[:8]:

            def same(example: Any, key: str = key) -> bool:
                return signature(surface, judge(example)) == key

            try:
                smallest = find(
                    strategy,
                    same,
                    settings=settings(common, phases=[Phase.generate, Phase.shrink]),
                    random=random.Random(seed),
                )
                found["example"] = shown(smallest)
            except NoSuchExample:
                pass
    return {
        "inputs": runs[0],
        **{k: kinds[k] for k in ("ok", *KINDS)},
        "seconds": round(seconds, 1),
        "failures": classes,
    }


def main_() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000, help="generated inputs in all (shared by SHARES)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default=",".join(SHARES), help="surfaces, comma-separated")
    parser.add_argument("--no-shrink", action="store_true", help="report the shortest failing input seen, unshrunk")
    args = parser.parse_args()
    only = [s for s in args.only.split(",") if s]
    if any(s not in SHARES for s in only) or args.examples < 1:
        parser.error(f"--only takes {', '.join(SHARES)}; --examples at least 1")
    total = sum(SHARES[s] for s in only)
    report: dict[str, Any] = {
        "examples": args.examples,
        "seed": args.seed,
        "time_limit_s": 30,
        "memory_limit_gb": 2,
        "surfaces": {},
    }
    with tempfile.TemporaryDirectory(prefix="kb-robustness-") as folder:
        bench = Bench(Path(folder))
        try:
            for surface in only:
                count = max(3, round(args.examples * SHARES[surface] / total))
                report["surfaces"][surface] = run_surface(bench, surface, count, args.seed, not args.no_shrink)
                row = report["surfaces"][surface]
                print(
                    f"{surface:<10} {row['inputs']:>6} inputs  "
                    + "  ".join(f"{k} {row[k]}" for k in ("ok", *KINDS))
                    + f"  {row['seconds']} s",
                    flush=True,
                )
        finally:
            bench.close()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
    totals = Counter({k: sum(r[k] for r in report["surfaces"].values()) for k in KINDS})
    print(
        f"{sum(r['inputs'] for r in report['surfaces'].values())} inputs; failures by kind: "
        + ", ".join(f"{k} {totals[k]}" for k in KINDS)
    )
    for row in report["surfaces"].values():
        for key, found in row["failures"].items():
            print(
                f"\n[{found['count']}x] {key}\n    input: {found['example'][:600]}\n    got:   {found['detail'][:300]}"
            )
    print(f"\nwritten: {OUT.relative_to(ROOT)}")
    return 1 if sum(totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main_())
