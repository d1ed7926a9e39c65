"""Do follow-up questions get easier to search when words of the earlier turns are added? (No model.)

A first measurement for conversations (issue "Follow-up questions"): on the mtrag-tune conversations,
Recall@5 of a plain BM25 (standard library, k1=1.2, b=0.75, lowercased ``\\w+`` tokens over title and
text: the dataset README's baseline) for each answerable or partial turn searched

- as asked, and as the set's reference rewrite;
- with the content words of the previous question added (always, or only when the question
  is short or leans on the history: at most 3 content words, or a pronoun such as "it");
- with the words of the title of the passage the previous question found first.

    python bench/lexical_rewrites.py

The set lives beside the checkout in shared/datasets; kb itself knows nothing of it.
"""

from __future__ import annotations

import collections
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

SET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "mtrag-tune"
STOP = set(
    "a an the of to in on for and or is are was were be been do does did what which who whom whose when where "
    "why how it its this that these those they them their there here i you he she we me my your his her our us "
    "can could would should will shall may might must have has had not no yes with about from by as at into than "
    "then so if but also any some more most much many very just only other such same own both each few all "
    "please tell know want like get got ok okay thanks thank".split()
)
LEANING = set("it its they them their this that these those he she his her there such".split())


def words(text: str) -> list[str]:
    """Lowercased ``\\w+`` tokens."""
    return re.findall(r"\w+", text.lower())


def content(text: str) -> list[str]:
    """The words that carry content: not stop words, longer than two letters."""
    return [w for w in words(text) if w not in STOP and len(w) > 2]


class BM25:
    """Okapi BM25 over the passages (title + text)."""

    def __init__(self, passages: list[dict[str, str]]) -> None:
        self.ids = [p["_id"] for p in passages]
        tokens = [words(p["title"] + " " + p["text"]) for p in passages]
        self.lengths = [len(t) for t in tokens]
        self.average = sum(self.lengths) / len(tokens)
        self.counts = [collections.Counter(t) for t in tokens]
        frequency = collections.Counter(w for t in tokens for w in set(t))
        n = len(tokens)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in frequency.items()}

    def search(self, query: str, k: int = 5) -> list[str]:
        """The ids of the ``k`` best passages."""
        terms = words(query)
        scores = []
        for counts, length in zip(self.counts, self.lengths, strict=True):
            norm = 1.2 * (0.25 + 0.75 * length / self.average)
            scores.append(sum(self.idf[w] * counts[w] * 2.2 / (counts[w] + norm) for w in terms if w in counts))
        best = sorted(range(len(scores)), key=lambda i: -scores[i])[:k]
        return [self.ids[i] for i in best]


def main() -> None:
    passages = [json.loads(line) for line in (SET / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    title = {p["_id"]: p["title"] for p in passages}
    bm25 = BM25(passages)
    conversations = [
        json.loads(line) for line in (SET / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
    ]

    def leans(question: str) -> bool:
        return len(content(question)) <= 3 or any(w in LEANING for w in words(question))

    def added(question: str, extra: list[str]) -> str:
        asked = set(words(question))
        return " ".join([question, *(w for w in extra if w not in asked)])

    ways: dict[str, Callable[[str, dict, str | None], str]] = {
        "as asked": lambda q, turn, prev: q,
        "reference rewrite": lambda q, turn, prev: turn["rewrite"] or q,
        "+ previous question, always": lambda q, turn, prev: added(q, content(prev)) if prev else q,
        "+ previous question, when leaning": lambda q, turn, prev: added(q, content(prev)) if prev and leans(q) else q,
    }
    recall: dict[str, list[float]] = collections.defaultdict(list)
    for conversation in conversations:
        previous: str | None = None
        previous_top: str | None = None
        for turn in conversation["turns"]:
            question, relevant = turn["question"], set(turn["doc_ids"])
            if turn["answerability"] in ("answerable", "partial") and relevant:
                for name, way in ways.items():
                    found = bm25.search(way(question, turn, previous))
                    recall[name].append(len(set(found) & relevant) / len(relevant))
                titled = added(question, content(title[previous_top])) if previous_top and leans(question) else question
                found = bm25.search(titled)
                recall["+ title of the previous top passage, when leaning"].append(
                    len(set(found) & relevant) / len(relevant)
                )
            previous, previous_top = question, bm25.search(question, 1)[0]
    for name, values in recall.items():
        print(f"{name:<52} Recall@5 {sum(values) / len(values):.3f}  ({len(values)} turns)")


if __name__ == "__main__":
    main()
