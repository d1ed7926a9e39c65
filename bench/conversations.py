"""Conversations: MT-RAG's tune half asked turn by turn with ``kb eval conversations``.

Writes the set in kb's conversation-set format (bench/out/conversations-mtrag.jsonl: answerable
and partial turns are answerable, unanswerable ones are not, conversational ones are not
scored), ingests the closed corpus once into bench/out/kb-mtrag, then runs the evaluation.

    python bench/conversations.py --no-answers                    # retrieval: asked, standalone, reference
    python bench/conversations.py --method previous_turn --no-answers
    python bench/conversations.py --stride 4                      # answers too (minutes a conversation)
    python bench/conversations.py --stride 4 --ask-reference      # the yardstick: the set's rewrites asked alone
    python bench/conversations.py --stride 4 --offset 2           # another 14 conversations
    python bench/conversations.py --answer-turns unanswerable     # every unanswerable turn, refused or not
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kb_core.answers.pipeline import AskOptions
from kb_core.app import KnowledgeBase
from kb_core.config import load_config
from kb_core.evaluation.conversation_sets import load_conversation_set
from kb_core.evaluation.conversations import evaluate_conversations
from kb_core.ingest.pipeline import ingest_paths
from kb_core.output import dumps

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "mtrag-tune"
OUT = Path(__file__).resolve().parent / "out"
ANSWERABLE = {"answerable": True, "partial": True, "unanswerable": False, "conversational": None}


def set_file() -> Path:
    """The tune conversations in kb's conversation-set format."""
    target = OUT / "conversations-mtrag.jsonl"
    lines = []
    for line in (DATA / "conversations.jsonl").read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        turns = [
            {
                "question": t["question"],
                "answerable": ANSWERABLE[t["answerability"]],
                "expected_docs": t["doc_ids"],
                "reference_answer": t["answer"],
                "reference_rewrite": t["rewrite"],
            }
            for t in data["turns"]
        ]
        lines.append(json.dumps({"id": data["id"], "turns": turns}, ensure_ascii=False))
    OUT.mkdir(exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", default=None, help="model, previous_turn or as_asked (default: the config's)")
    parser.add_argument("--no-answers", action="store_true")
    parser.add_argument("--ask-reference", action="store_true")
    parser.add_argument("--answer-turns", default="all", choices=["all", "answerable", "unanswerable"])
    parser.add_argument("--limit", type=int, default=0, help="the first N conversations (0: all)")
    parser.add_argument("--stride", type=int, default=1, help="every Nth conversation (4: 14 across the domains)")
    parser.add_argument("--offset", type=int, default=0, help="start the stride at this conversation (0-based)")
    parser.add_argument("--history-tokens", type=int, default=None, help="[conversations] history_tokens")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    path = set_file()
    overrides = {} if args.history_tokens is None else {"conversations.history_tokens": args.history_tokens}
    kb = KnowledgeBase(load_config(kb_dir=OUT / "kb-mtrag", overrides=overrides, environ={}))
    began = time.perf_counter()
    report = ingest_paths(kb, [DATA / "docs"])
    print(f"ingest: {time.perf_counter() - began:.1f} s ({len(report.added)} added)")
    conversations = load_conversation_set(path)[args.offset :: args.stride][: args.limit or None]
    label = args.label or f"{args.method or 'default'}{'-answers' if not args.no_answers else ''}"
    result = evaluate_conversations(
        kb,
        conversations,
        AskOptions(),
        method=args.method,
        answers=not args.no_answers,
        answer_turns=args.answer_turns,
        ask_reference=args.ask_reference,
        set_file=path,
        out_dir=OUT / f"conversations-{label}",
        progress=lambda what, done, total: print(f"{what} {done}/{total}", flush=True) if done % 50 == 0 else None,
    )
    print()
    for name, value in json.loads(dumps("conversation_report.v1", result))["metrics"].items():
        print(f"  {name:<34} {value}")
    print(f"report: {result.report_path}")


if __name__ == "__main__":
    main()
