"""Measure an embedder's similarity floor for one language, from on-topic and off-topic questions.

For a retrieval set in one language, embeds a sample of questions (as queries) and passages (as
documents: the relevant ones plus random others, ``--passages`` in all), and off-topic questions
in the same language (``--off-topic FILE``, one per line: questions the passages cannot answer).
It prints the cosine similarity of

* unrelated question/passage pairs (typical unrelated text),
* each on-topic question's relevant passage (what the top hit of an answerable question looks like),
* each off-topic question's best passage (what the top hit of an unanswerable question looks like),

The floor is the median similarity of unrelated pairs (independent of corpus size), so that
``(s - floor) / (1 - floor)`` means the same in every language. As a check it also prints the
floor that would put the vector gate (``[rag] score_gates.vector``, 0.35) midway between the
off-topic p90 and the on-topic p10 of this sample (which depends on how many passages compete).
The embedders' ``similarity_floors`` in ``kb_core/builtin/embedders/`` come from these runs (the off-topic
questions used are in ``bench/data/``).

    python bench/embedder_floors.py --embedder minilm --data ../shared/datasets/scifact \
        --off-topic bench/data/off_topic_en.txt
    python bench/embedder_floors.py --embedder multilingual --data ../shared/datasets/cmrc2018-tune \
        --off-topic bench/data/off_topic_zh.txt
    python bench/embedder_floors.py --embedder multilingual --paragraphs tests/data/ko_paragraphs.jsonl \
        --off-topic bench/data/off_topic_ko.txt
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

import numpy as np

from kb_core.config import Config
from kb_core.extend.contracts import FactoryContext
from kb_core.extend.registry import load_registry


def load_beir(data: Path) -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    """Passages (id -> title + text), questions (id -> text) and relevant passages per question."""
    passages = {}
    with (data / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            passages[str(row["_id"])] = f"{row.get('title', '')}\n{row['text']}".strip()
    questions = {}
    with (data / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            questions[str(row.get("id", row.get("_id")))] = row["text"]
    relevant: dict[str, set[str]] = {}
    for line in (data / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, pid, grade = line.split("\t")[:3]
        if int(grade) > 0:
            relevant.setdefault(qid, set()).add(pid)
    questions = {q: t for q, t in questions.items() if q in relevant}
    return passages, questions, relevant


def load_paragraphs(path: Path) -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    """The same from a JSONL of ``{"id", "title", "text", "questions": [...]}`` paragraphs."""
    passages, questions, relevant = {}, {}, {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        passages[row["id"]] = f"{row['title']}\n{row['text']}"
        for i, question in enumerate(row["questions"]):
            questions[f"{row['id']}-{i}"] = question
            relevant[f"{row['id']}-{i}"] = {row["id"]}
    return passages, questions, relevant


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="minilm")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", type=Path, help="a BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv)")
    source.add_argument("--paragraphs", type=Path, help="a JSONL of paragraphs with their questions")
    parser.add_argument("--off-topic", type=Path, required=True, help="off-topic questions, one per line")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--passages", type=int, default=400)
    args = parser.parse_args()

    passages, questions, relevant = load_beir(args.data) if args.data else load_paragraphs(args.paragraphs)
    rng = random.Random(15)
    qids = rng.sample(sorted(questions), min(args.questions, len(questions)))
    wanted = {p for q in qids for p in relevant[q] if p in passages}
    others = sorted(set(passages) - wanted)
    pids = sorted(wanted) + rng.sample(others, max(0, min(args.passages - len(wanted), len(others))))

    config = Config()
    config.models.embedding.name = args.embedder
    embedder = load_registry().get("embedders", args.embedder).factory(FactoryContext(config))
    docs = np.asarray(embedder.embed_documents([passages[p] for p in pids]), dtype=np.float32)
    queries = np.asarray([embedder.embed_query(questions[q]) for q in qids], dtype=np.float32)
    offs = [line.strip() for line in args.off_topic.read_text(encoding="utf-8").splitlines() if line.strip()]
    off_vectors = np.asarray([embedder.embed_query(text) for text in offs], dtype=np.float32)
    sims = queries @ docs.T
    unrelated, relevant_best = [], []
    for i, qid in enumerate(qids):
        mask = np.array([p in relevant[qid] for p in pids])
        unrelated.extend(sims[i][~mask].tolist())
        relevant_best.append(float(sims[i][mask].max()))
    off_best = (off_vectors @ docs.T).max(axis=1).tolist()
    print(f"{args.embedder}: {len(qids)} questions and {len(offs)} off-topic ones x {len(pids)} passages")
    for label, values in (
        ("unrelated pairs", unrelated),
        ("on-topic: relevant passage", relevant_best),
        ("off-topic: best passage", off_best),
    ):
        print(
            f"  {label:<28} p10 {pct(values, 10):.3f}  median {statistics.median(values):.3f}"
            f"  p90 {pct(values, 90):.3f}"
        )
    gate = Config().rag.gate("vector")
    at_gate = (pct(off_best, 90) + pct(relevant_best, 10)) / 2
    floor = (at_gate - gate) / (1 - gate)
    print(
        f"  floor (median of unrelated pairs): {statistics.median(unrelated):.2f}; check: the gate {gate} midway"
        f" between off-topic p90 and on-topic p10 ({at_gate:.3f}) would need floor {floor:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
