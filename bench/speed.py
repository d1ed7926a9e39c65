"""Answer speed, side by side: a baseline revision of kb and this checkout, run alternately in one run.

Every measurement runs in a child process, once per tree, alternating (baseline, this, baseline,
this, ...), so both see the same machine at the same moment. The baseline is a git worktree of
``--baseline`` (default ``HEAD~1``) put first on the child's PYTHONPATH; "this" is the checkout
as installed. What is measured, with the embedded default model:

* **fixtures, warm**: the 15 fixture questions in one process after a warm-up question;
* **clapnq-tune**: ``--clapnq`` questions (seed 7) in one process: whole answer p50 / p95, first
  token, decode tokens a second on grounded answers; on grounded answers, the whole answer's p50 and the first
  text shown (the first text ``on_token`` is given: what a front end shows; a revision that streams checked
  sentences shows its first when that sentence is checked);
* **conversations**: the first ``--turns`` turns of ``--conversations`` MT-RAG tune conversations
  (``kb_core.ask_in_thread``): first turns against follow-ups (rewrite and answer);
* **a new process**: ``kb ask`` on one fixture question, wall time, against the same question
  warm in process; **the very first ask**: the same with an empty model cache (the model is
  joined again); ``kb doctor``: wall time. Each ``--repeats`` times; medians are shown.

It also says whether the two trees gave the same answers (text, citations, refusals). The table
is printed and written, with every raw figure, to bench/out/speed-<label>.json.

    python bench/speed.py --baseline HEAD~1 --label preload
    python bench/speed.py --clapnq 0 --conversations 0 --repeats 3     # the quick part only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
DATASETS = REPO.parent / "shared" / "datasets"
FIXTURES = REPO / "fixtures" / "corpus"
ONE_QUESTION = "When was Heliograph 2.3.0 released?"
KB = "import sys; from kb_core.cli.main import main; sys.exit(main())"  # the kb command of the tree on sys.path
SETS = {"fixtures": FIXTURES, "clapnq": DATASETS / "clapnq-tune" / "docs", "mtrag": DATASETS / "mtrag-tune" / "docs"}


# -- the child: runs inside the tree being measured (kb_core comes from its PYTHONPATH) -------------


def child(task: dict[str, Any]) -> dict[str, Any]:
    """Run one measurement in this process and return its raw figures."""
    from kb_core.answers.pipeline import AskOptions, ask
    from kb_core.app import KnowledgeBase
    from kb_core.config import load_config

    began = time.perf_counter()
    with KnowledgeBase(load_config(kb_dir=Path(task["kb"]), environ={})) as kb:
        if task["kind"] == "conversations":
            from kb_core.conversations.converse import ask_in_thread

            turns = []
            for conversation in task["conversations"]:
                thread = None
                for position, question in enumerate(conversation):
                    turn = ask_in_thread(kb, question, thread, AskOptions())
                    thread = turn.thread_id
                    turns.append({"position": position, "rewrite_ms": turn.rewrite_ms, **_figures(turn.answer)})
            return {"turns": turns, "process_s": time.perf_counter() - began}
        answers = []
        for index, question in enumerate(task["questions"]):
            shown = _FirstShown()
            answer = ask(kb, question, AskOptions(), on_token=shown)
            first_shown = {"first_shown_ms": shown.at_ms}
            answers.append({"warm_up": index < task.get("warm_up", 0), **_figures(answer), **first_shown})
    return {"answers": answers, "process_s": time.perf_counter() - began, "peak_rss_mb": _peak_rss_mb()}


class _FirstShown:
    """An ``on_token`` that notes when the first text reached it (what a reader sees first), in ms from its making."""

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.at_ms: float | None = None

    def __call__(self, text: str) -> None:
        if text and self.at_ms is None:
            self.at_ms = (time.perf_counter() - self.began) * 1000


def _figures(answer: Any) -> dict[str, Any]:
    usage = answer.usage
    return {
        "latency_ms": usage.latency_ms,
        "first_token_ms": usage.first_token_ms,
        "check_ms": usage.check_ms,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "grounded": answer.grounded,
        "text": answer.answer,
        "citations": [c.ref for c in answer.citations],
        "refusal": answer.refusal_reason,
    }


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- the parent: trees, children, the table -------------------------------------------------------


def tree_environment(tree: Path | None) -> dict[str, str]:
    """The environment of a child that imports kb from ``tree`` (None: this checkout, as installed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KB_") and k != "PYTHONPATH"}
    if tree is not None:
        roots = [tree, *sorted(p for p in (tree / "plugins").iterdir() if p.is_dir()), tree / "examples" / "kb-org"]
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in roots)
        env["KB_LOAD_PLUGINS"] = ",".join(_entry_points(roots))  # not the plugins only this checkout has
    return env


def _entry_points(roots: list[Path]) -> list[str]:
    """The names of the ``kb`` entry points the distributions under ``roots`` declare."""
    import tomllib

    names: list[str] = []
    for root in roots:
        project = root / "pyproject.toml"
        if project.is_file():
            declared = tomllib.loads(project.read_text(encoding="utf-8")).get("project", {})
            names += declared.get("entry-points", {}).get("kb", {})
    return names


def run_child(tree: Path | None, task: dict[str, Any]) -> dict[str, Any]:
    """``task`` measured in a new process importing kb from ``tree``."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(task, handle)
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", handle.name],
            env=tree_environment(tree) | task.get("env", {}),
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(handle.name)
    if done.returncode != 0:
        raise SystemExit(f"the child failed ({task['kind']}): {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def run_kb(tree: Path | None, args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of ``kb ARGS`` in a new process importing kb from ``tree``."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", KB, *args],
        env=tree_environment(tree) | env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - began
    if done.returncode not in (0, 1):  # 1: a refusal
        raise SystemExit(f"kb {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return wall


def worktree(revision: str) -> Path:
    """A detached worktree of ``revision`` under bench/out (made once)."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", revision], capture_output=True, text=True)
    sha = commit.stdout.strip()
    if commit.returncode != 0 or not sha:
        raise SystemExit(f"not a revision: {revision}")
    target = OUT / f"tree-{sha[:10]}"
    if not target.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(target), sha], check=True)
    return target


def knowledge_base(name: str, trees: dict[str, Path | None]) -> dict[str | None, Path]:
    """The set's documents ingested by each tree into bench/out/kb-speed-<name>-<tree> (a tree may not open a
    knowledge base a newer kb wrote), by the tree's path as a string (None: this checkout)."""
    made: dict[str | None, Path] = {}
    for label, tree in trees.items():
        target = OUT / f"kb-speed-{name}-{label}"
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", KB, "--kb", str(target), "ingest", str(SETS[name]), "--json"],
            env=tree_environment(tree),
            capture_output=True,
            check=True,
        )
        print(f"  ingest {name} ({label}): {time.perf_counter() - began:.1f} s", flush=True)
        made[None if tree is None else str(tree)] = target
    return made


def _on(kbs: dict[str | None, Path], task: dict[str, Any]) -> Callable[[Path | None], Any]:
    """A measurement of ``task`` in a tree's child, over that tree's own knowledge base."""
    return lambda tree: run_child(tree, {**task, "kb": str(kbs[None if tree is None else str(tree)])})


def clapnq_questions(limit: int, seed: int = 7) -> list[str]:
    """The same sample as bench/answers.py --set clapnq --limit N --seed 7."""
    sys.path.insert(0, str(REPO / "bench"))
    from answers import golden_file

    path = golden_file("clapnq", limit, seed)
    return [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def mtrag_conversations(count: int, turns: int) -> list[list[str]]:
    """The first ``turns`` questions of the first ``count`` MT-RAG tune conversations."""
    lines = (DATASETS / "mtrag-tune" / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
    return [[t["question"] for t in json.loads(line)["turns"][:turns]] for line in lines[:count]]


# -- measuring, side by side ---------------------------------------------------------------------


def side_by_side(trees: dict[str, Path | None], repeats: int, measure: Any) -> dict[str, list[Any]]:
    """``measure(tree)`` ``repeats`` times per tree, the trees alternating."""
    results: dict[str, list[Any]] = {name: [] for name in trees}
    for _ in range(repeats):
        for name, tree in trees.items():
            results[name].append(measure(tree))
    return results


def answer_rows(label: str, runs: list[dict[str, Any]]) -> dict[str, float]:
    """The figures of one tree's answers (warm-ups left out)."""
    answers = [a for run in runs for a in run["answers"] if not a["warm_up"]]
    whole = [a["latency_ms"] / 1000 for a in answers]
    first = [a["first_token_ms"] / 1000 for a in answers if a["first_token_ms"] is not None]
    grounded = [a for a in answers if a["grounded"]]
    shown = [a["first_shown_ms"] / 1000 for a in grounded if a.get("first_shown_ms") is not None]
    rates = [
        (a["completion_tokens"] - 1) / ((a["latency_ms"] - a["first_token_ms"] - (a["check_ms"] or 0)) / 1000)
        for a in answers
        if a["grounded"] and a["first_token_ms"] and a["completion_tokens"] > 1
    ]
    return {
        f"{label} whole answer p50 (s)": statistics.median(whole),
        f"{label} whole answer p95 (s)": _p95(whole),
        f"{label} first token p50 (s)": statistics.median(first) if first else float("nan"),
        f"{label} grounded: whole answer p50 (s)": statistics.median(a["latency_ms"] / 1000 for a in grounded)
        if grounded
        else float("nan"),
        f"{label} grounded: first text shown p50 (s)": statistics.median(shown) if shown else float("nan"),
        f"{label} decode tokens/s, grounded (p50)": statistics.median(rates) if rates else float("nan"),
        f"{label} peak RSS (MB)": max(run["peak_rss_mb"] for run in runs),
    }


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def same_answers(runs: dict[str, list[dict[str, Any]]], key: str = "answers") -> str:
    """How many answers the trees' first runs share (text, citations, refusal)."""
    first = [[(a["text"], a["citations"], a["refusal"]) for a in run[0][key]] for run in runs.values()]
    same = sum(1 for pair in zip(*first, strict=True) if len(set(map(json.dumps, pair))) == 1)
    return f"{same}/{len(first[0])}"


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every measurement, side by side; the table's rows by tree, and the raw runs."""
    trees: dict[str, Path | None] = {"baseline": worktree(args.baseline), "this": None}
    rows: dict[str, dict[str, float | str]] = {name: {} for name in trees}
    raw: dict[str, Any] = {}
    fixtures = knowledge_base("fixtures", trees)
    golden = REPO / "fixtures" / "golden" / "answers.jsonl"
    questions = [json.loads(x)["question"] for x in golden.read_text(encoding="utf-8").splitlines() if x.strip()]
    task = {"kind": "answers", "questions": [ONE_QUESTION, *questions], "warm_up": 1}
    print("fixtures, warm ...", flush=True)
    raw["fixtures"] = side_by_side(trees, 1, _on(fixtures, task))
    for name in trees:
        rows[name].update(answer_rows("fixtures", raw["fixtures"][name]))
    rows["this"]["fixtures same answers"] = same_answers(raw["fixtures"])
    one = {"kind": "answers", "questions": [ONE_QUESTION] * 3, "warm_up": 1}
    print("one question: warm, a new process, the very first, kb doctor ...", flush=True)
    raw["warm_one"] = side_by_side(trees, 1, _on(fixtures, one))

    def ask(tree: Path | None) -> list[str]:
        return ["--kb", str(fixtures[None if tree is None else str(tree)]), "ask", ONE_QUESTION, "--json"]

    raw["new_process"] = side_by_side(trees, args.repeats, lambda tree: run_kb(tree, ask(tree), {}))

    def very_first(tree: Path | None) -> float:
        with tempfile.TemporaryDirectory() as cache:
            return run_kb(tree, ask(tree), {"KB_MODEL_CACHE": cache})

    raw["very_first"] = side_by_side(trees, args.repeats, very_first)
    raw["doctor"] = side_by_side(trees, args.repeats, lambda tree: run_kb(tree, [*ask(tree)[:2], "doctor"], {}))
    for name in trees:
        warm = statistics.median(a["latency_ms"] / 1000 for a in raw["warm_one"][name][0]["answers"][1:])
        new = statistics.median(raw["new_process"][name])
        first = statistics.median(raw["very_first"][name])
        rows[name].update(
            {
                "one question warm, in process (s)": warm,
                "a new process's kb ask (s)": new,
                "  ratio to warm": new / warm,
                "the very first kb ask, empty model cache (s)": first,
                "  ratio to a new process": first / new,
                "kb doctor (s)": statistics.median(raw["doctor"][name]),
            }
        )
    if args.clapnq:
        clapnq = knowledge_base("clapnq", trees)
        task = {"kind": "answers", "questions": [ONE_QUESTION, *clapnq_questions(args.clapnq)], "warm_up": 1}
        print(f"clapnq-tune {args.clapnq} ...", flush=True)
        raw["clapnq"] = side_by_side(trees, 1, _on(clapnq, task))
        for name in trees:
            rows[name].update(answer_rows("clapnq", raw["clapnq"][name]))
        rows["this"]["clapnq same answers"] = same_answers(raw["clapnq"])
    if args.conversations:
        mtrag = knowledge_base("mtrag", trees)
        task = {"kind": "conversations", "conversations": mtrag_conversations(args.conversations, args.turns)}
        print(f"conversations {args.conversations} x {args.turns} turns ...", flush=True)
        raw["conversations"] = side_by_side(trees, 1, _on(mtrag, task))
        for name in trees:
            turns = raw["conversations"][name][0]["turns"]
            opening = [t["latency_ms"] / 1000 for t in turns if t["position"] == 0]
            follow = [(t["latency_ms"] + t["rewrite_ms"]) / 1000 for t in turns if t["position"] > 0]
            rows[name]["conversation first turn p50 (s)"] = statistics.median(opening)
            rows[name]["follow-up, rewrite + answer p50 (s)"] = statistics.median(follow)
        rows["this"]["conversations same answers"] = same_answers(raw["conversations"], "turns")
    return {"rows": rows, "raw": raw}


def machine() -> str:
    """The machine, named: CPU model, cores, Python."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def table(rows: dict[str, dict[str, float | str]], baseline: str) -> str:
    """The Markdown table: each figure for the baseline, this checkout, and this / baseline."""
    lines = [f"| figure | baseline ({baseline}) | this | this / baseline |", "|---|---|---|---|"]
    for key in rows["this"]:
        now, before = rows["this"][key], rows["baseline"].get(key, "")
        if isinstance(now, float) and isinstance(before, float):
            lines.append(f"| {key} | {before:.2f} | {now:.2f} | {now / before:.2f} |")
        else:
            lines.append(f"| {key} | {before} | {now} | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", default="HEAD~1", help="the revision to compare with (default HEAD~1)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each new-process figure (medians)")
    parser.add_argument("--clapnq", type=int, default=40, help="clapnq-tune questions (0: none)")
    parser.add_argument("--conversations", type=int, default=3, help="MT-RAG tune conversations (0: none)")
    parser.add_argument("--turns", type=int, default=4, help="turns of each conversation")
    parser.add_argument("--label", default="run")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(Path(args.child).read_text(encoding="utf-8")))))
        return
    print(f"machine: {machine()}; baseline {args.baseline}", flush=True)
    measured = measure(args)
    shown = table(measured["rows"], args.baseline)
    print(shown)
    target = OUT / f"speed-{args.label}.json"
    target.write_text(json.dumps({"machine": machine(), "baseline": args.baseline, **measured}, indent=1))
    print(f"written: {target}")


if __name__ == "__main__":
    main()
