"""Computed answers replayed: the model's computations captured once, kb's checks re-run on them offline.

A change to how kb checks a computation (kb_core.answers.operations, operand_places, computed) does not change
what the model writes, only what kb accepts; re-asking 60 questions costs an hour on 2 cores, replaying them a
second. ``capture`` asks tatqa-tune's number questions (bench/tatqa.py's sample of a seed, over
bench/out/kb-tatqa-<kind>, which bench/tatqa_numbers.py ingests) with ``[rag] computations`` on, and keeps, per
question, the passages the model read (by marker, with their documents), its raw ``CALC:`` reply and kb's final
answer. ``replay`` runs :func:`kb_core.answers.computed.computed` of the current tree on each capture and scores
it as the set's README says (right: the gold number stated, the expected document cited; a grounded answer
without it is a wrong number kb vouched for); a question the model answered with ``CALC: none`` keeps the
captured answer of the ordinary path. Figures are the same as re-asking only while the prompt is unchanged
(the rows kb points out come from the checks' own word rules: re-capture after changing them)::

    python bench/computation_replay.py capture --kind born-digital --limit 60 --seed 7 --out bench/out/calc-60-7.jsonl
    python bench/computation_replay.py replay bench/out/calc-60-7.jsonl [--show]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kb_core.answers import computed  # noqa: E402
from kb_core.answers.computation import ComputationRefusal  # noqa: E402
from kb_core.answers.stated import can_be_stated  # noqa: E402
from kb_core.answers.tables import holds_table, stored_rows  # noqa: E402
from kb_core.evaluation.numbers import states_number  # noqa: E402

# isort: split
import tatqa  # noqa: E402 - bench/ is the script's folder


def capture(
    kind: str, limit: int, seed: int, out: Path, spans: bool = False, ids: frozenset[str] = frozenset()
) -> None:
    """Ask the sample with computations on; write one JSON line per question (what the model read and wrote).
    ``spans``: the span questions' sample instead, only those kb would compute, each asked on the ordinary path
    too (kept as ``ordinary_answer``), so that a replay can tell what the computed path costs them. ``ids``: only
    these questions of the sample (none: all)."""
    from kb_core.answers.computation import asks_for_computation
    from kb_core.answers.pipeline import AskOptions, kb_pipeline
    from kb_core.app import KnowledgeBase
    from kb_core.config import load_config

    golden, _ = tatqa.sample(kind if spans else f"numbers-{kind}", limit, seed)
    rows = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [row for row in rows if not spans or asks_for_computation(row["question"])]
    rows = [row for row in rows if not ids or row["id"] in ids]
    environ = {**os.environ, "KB_RAG__COMPUTATIONS": "true"}
    kb = KnowledgeBase(load_config(kb_dir=tatqa.OUT / f"kb-tatqa-{kind}", environ=environ))
    ordinary = KnowledgeBase(load_config(kb_dir=tatqa.OUT / f"kb-tatqa-{kind}", environ={}))
    seen: dict[str, Any] = {}
    work_out, stream = computed.work_out, computed.stream_answer

    def spy_work_out(llm: Any, entries: Any, question: str, passages: Any, *args: Any, **kwargs: Any) -> Any:
        seen.update(passages={str(m): text for m, text in passages.items()})
        return work_out(llm, entries, question, passages, *args, **kwargs)

    def spy_stream(*args: Any) -> Any:
        done = stream(*args)
        seen["raw"] = done[0]
        return done

    computed.work_out, computed.stream_answer = spy_work_out, spy_stream  # type: ignore[assignment]
    try:
        pipeline = kb_pipeline(kb)
        with out.open("w", encoding="utf-8") as file:
            for number, row in enumerate(rows, 1):
                seen.clear()
                answer = pipeline.ask(row["question"], AskOptions(explain=True))
                cited = sorted({c.citation.path for c in answer.citations}) if answer.grounded else []
                documents = {str(p.marker): p.ref.split("#")[0] for p in answer.packed}
                record = {**row, "captured": dict(seen), "documents": documents, "kb_answer": answer.answer}
                record["computation"] = answer.computation is not None  # False: answered on the ordinary path
                if spans:
                    plain = kb_pipeline(ordinary).ask(row["question"], AskOptions())
                    plain_cited = sorted({c.citation.path for c in plain.citations}) if plain.grounded else []
                    record.update(ordinary_answer=plain.answer, ordinary_grounded=plain.grounded)
                    record.update(ordinary_cited=plain_cited)
                file.write(json.dumps({**record, "grounded": answer.grounded, "cited": cited}) + "\n")
                print(f"  {number}/{len(rows)}", file=sys.stderr, flush=True)
    finally:
        kb.close()
        ordinary.close()


def outcome(row: dict[str, Any]) -> tuple[str, str]:
    """How the current checks answer a captured question: (right | wrong | refused | ..., refusal detail). A span
    question (no number as its answer) is right when the answer holds every ``must_contain`` string."""
    expected = row["expected_docs"][0]
    spans = "ordinary_answer" in row

    def right(text: str, cited: Any) -> bool:
        if spans:
            return expected in cited and all(s.casefold() in text.casefold() for s in row["must_contain"])
        return expected in cited and states_number(text, float(row["answer"]), row["scale"])

    passages = {int(m): text for m, text in (row["captured"] or {}).get("passages", {}).items()}
    # the pipeline asks for no answer in words that could not be kept (a computation over tables, no line stating it)
    unstatable = any(map(holds_table, passages.values())) and not can_be_stated(row["question"], passages)

    def ordinary() -> tuple[str, str]:
        prefix = "ordinary_" if spans else ""
        text = row[f"{prefix}answer" if spans else "kb_answer"]
        grounded, cited = row[f"{prefix}grounded"], row[f"{prefix}cited"]
        if not grounded or unstatable:
            return "ordinary refused", ""
        return ("ordinary right" if right(text, cited) else "ordinary wrong"), ""

    documents = {int(m): path for m, path in row["documents"].items()}
    rows = {m: stored_rows(text) for m, text in passages.items()}
    own = computed.counted_by_kb(row["question"], passages, rows, documents, 0.0)  # as work_out does, first
    if own is not None and own.record is not None:
        return ("right" if right(own.verdict.text, {documents[m] for m in own.record.markers}) else "wrong"), ""
    reply = computed.read_reply(row["captured"].get("raw", "")) if row["captured"] else None
    if reply is None:  # CALC: none, or no computed path: the ordinary answer as captured
        return ordinary()
    done = computed.computed(reply, passages, row["question"], documents)
    if done is None:  # one number restated: the ordinary path's answer (captured for span questions only)
        return ordinary() if spans else ("stated, ordinary answer not captured", "")
    if isinstance(done, ComputationRefusal):  # the ordinary path then answers, kept when it states the number
        if row["grounded"] and not row.get("computation", True) and not unstatable:
            return ("fallback right" if right(row["kb_answer"], row["cited"]) else "fallback wrong"), ""
        return "refused", done.reason
    record, text = done
    return ("right" if right(text, {documents[m] for m in record.markers}) else "wrong"), ""


def replay(path: Path, show: bool) -> dict[str, Any]:
    """The captured questions through the current checks: outcomes, by whether the expected document was read."""
    outcomes: Counter[str] = Counter()
    details: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if "ordinary_answer" in row:  # a span question: how the ordinary path alone answered it, for comparison
            plain = {**row, "captured": {}}
            outcomes[f"off: {outcome(plain)[0].removeprefix('ordinary ')}"] += 1
        else:
            try:
                float(row["answer"])
            except ValueError:
                outcomes["not a number (skipped)"] += 1
                continue
        result, detail = outcome(row)
        read = row["expected_docs"][0] in row["documents"].values()
        outcomes[result] += 1
        outcomes[f"{result}, expected document {'read' if read else 'not read'}"] += 1
        details[detail] += bool(detail)
        if show and result in ("wrong", "ordinary wrong"):
            print(f"  {result}: {row['question']} (gold {row['derivation'].strip()})", file=sys.stderr)
    total = sum(n for key, n in outcomes.items() if "," not in key and "skipped" not in key and ":" not in key)
    right = outcomes["right"] + outcomes["ordinary right"] + outcomes["fallback right"]
    wrong = outcomes["wrong"] + outcomes["ordinary wrong"] + outcomes["fallback wrong"]
    return {
        "questions": total,
        "right": f"{right}/{total}",
        "grounded_wrong_number": f"{wrong}/{total}",
        "outcomes": dict(sorted(outcomes.items())),
        "refusal_details": dict(sorted((k, v) for k, v in details.items() if v)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    asked = commands.add_parser("capture", help="ask the sample and keep what the model read and wrote")
    asked.add_argument("--kind", choices=tatqa.KINDS, default="born-digital")
    asked.add_argument("--limit", type=int, default=60)
    asked.add_argument("--seed", type=int, default=7)
    asked.add_argument("--out", type=Path, required=True)
    asked.add_argument("--spans", action="store_true", help="the span questions kb would compute, both paths")
    asked.add_argument("--ids", type=Path, help="a file of question ids, one a line: ask only these")
    replayed = commands.add_parser("replay", help="re-run the current checks on a capture")
    replayed.add_argument("capture", type=Path)
    replayed.add_argument("--show", action="store_true", help="print each wrong number's question")
    args = parser.parse_args()
    if args.command == "capture":
        ids = frozenset(args.ids.read_text(encoding="utf-8").split()) if args.ids else frozenset()
        capture(args.kind, args.limit, args.seed, args.out, args.spans, ids)
    else:
        print(json.dumps(replay(args.capture, args.show), indent=2))


if __name__ == "__main__":
    main()
