"""Time to first token against llama.cpp's own prefill of the same tokens, question by question.

For each question kb's time to first token (search, packing, prompt, restoring the cached
prefix, prefill, the first decoded token) is set beside llama.cpp's own prompt-evaluation time
for that answer, read from its performance counters (``llama_perf_context``) when the first
token arrives, so the judge's later prefill is not counted. The ratio is what kb adds around
llama.cpp's prefill.

    python bench/first_token.py --kb DIR --golden bench/out/golden-pubmedqa-40-7.jsonl --limit 12
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kb_core.answers.pipeline import AskOptions, ask
from kb_core.app import KnowledgeBase
from kb_core.config import load_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kb", required=True, type=Path)
    parser.add_argument("--golden", required=True, type=Path)
    parser.add_argument("--limit", type=int, default=12)
    args = parser.parse_args()
    import llama_cpp

    questions = [json.loads(line)["question"] for line in args.golden.read_text(encoding="utf-8").splitlines()]
    with KnowledgeBase(load_config(kb_dir=args.kb)) as kb:
        llm: Any = kb.language_model()
        ask(kb, questions[0], AskOptions())  # load the model and the cached prefix first
        ratios = []
        print("first token ms  llama.cpp prefill ms  prefill tokens  ratio")
        for question in questions[: args.limit]:
            context = llm._load()._ctx.ctx
            llama_cpp.llama_perf_context_reset(context)
            at_first: list[Any] = []

            def first(_text: str, at_first: list[Any] = at_first, context: Any = context) -> None:
                if not at_first:
                    at_first.append(llama_cpp.llama_perf_context(context))

            answer = ask(kb, question, AskOptions(), first)
            if not at_first or answer.usage.first_token_ms is None:
                continue  # refused before the model was asked
            perf = at_first[0]
            ratio = answer.usage.first_token_ms / perf.t_p_eval_ms
            ratios.append(ratio)
            print(f"{answer.usage.first_token_ms:13.0f}  {perf.t_p_eval_ms:20.0f}  {perf.n_p_eval:14d}  {ratio:5.2f}")
        print(f"p50 ratio {statistics.median(ratios):.2f} over {len(ratios)} answers (max {max(ratios):.2f})")


if __name__ == "__main__":
    main()
