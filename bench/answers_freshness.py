"""Re-checking saved answers when notes change: the cost after an ingest, and of a whole check.

    python bench/answers_freshness.py [--documents 5000] [--answers 10000] [--changed 10]

Builds a store of record with ``--documents`` Markdown-like documents (two chunks each) and
``--answers`` stored answers citing them (one or two citations each, recorded as kb records
them), then changes ``--changed`` documents (a line inserted above the cited text in half of
them, a cited figure changed in the other half) and times:

1. the re-check an ingest runs after changing them (only the answers citing those documents are
   read: the count is printed), against the targets of under 1 s;
2. ``kb answers check`` over every stored answer (documents whose content is unchanged since a
   citation was checked are not read again), against under 5 s;
3. the same whole check right after, when nothing changed.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kb_core.storage.cited import recheck_documents
from kb_core.storage.freshness import fingerprint
from kb_core.storage.store import StoreOfRecord, now_iso
from kb_core.types import Chunk, Document


def _document(path: str, lines: list[str]) -> tuple[Document, list[Chunk]]:
    """A document of ``lines`` with two chunks: lines 1-4 and 6-9 (line 5 is blank)."""
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    spans = [(1, 4), (6, len(lines))]
    chunks = []
    for ordinal, (start, end) in enumerate(spans):
        text = "\n".join(lines[start - 1 : end])
        chunk_id = hashlib.sha1(f"{path}:{ordinal}:{text}".encode()).hexdigest()[:16]
        chunks.append(Chunk(chunk_id, path, ordinal, text, hashlib.sha256(text.encode()).hexdigest(), start, end))
    return Document(path, digest, 100, path, "markdown", "notes"), chunks


def _lines(n: int, port: int) -> list[str]:
    return [f"# Service {n}", "", f"Service {n} listens on port {port}.", f"It logs to host-{n}.", ""] + [
        "## Operations",
        "",
        f"Backups of service {n} run at {n % 24:02d}:00.",
        f"Owner: team {n % 17}.",
    ]


def build(store: StoreOfRecord, documents: int, answers: int, rng: random.Random) -> list[str]:
    """Fill ``store``; return the document paths."""
    paths = [f"notes/service-{n:05d}.md" for n in range(documents)]
    with store.transaction():
        for n, path in enumerate(paths):
            document, chunks = _document(path, _lines(n, 8000 + n))
            store.replace_document(document, chunks)
    chunks_of = {c.chunk_id: c for c in store.chunks_of(paths)}
    by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks_of.values():
        by_doc.setdefault(chunk.doc_path, []).append(chunk)
    hashes = store.document_hashes_of(paths)
    answer_rows, citation_rows = [], []
    for a in range(answers):
        answer_id = f"ans_{a:016x}"
        answer_rows.append((answer_id, now_iso(), f"question {a}", "an answer [#1]", 1, "rag-v5"))
        for marker, chunk in enumerate(rng.sample(by_doc[rng.choice(paths)], rng.choice((1, 2))), start=1):
            citation_rows.append(
                (answer_id, marker, chunk.chunk_id, chunk.doc_path, chunk.start_line, chunk.end_line, chunk.text)
                + (fingerprint(chunk.text), hashes[chunk.doc_path], "valid", now_iso())
            )
    with store.transaction():
        store.conn.executemany(
            "INSERT INTO answers (answer_id, created_at, question, answer, grounded, prompt_template_version)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            answer_rows,
        )
        store.conn.executemany(
            "INSERT INTO answer_citations (answer_id, marker, chunk_id, doc_path, start_line, end_line, cited_text,"
            " fingerprint, doc_hash, state, checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            citation_rows,
        )
    return paths


def change(store: StoreOfRecord, paths: list[str]) -> None:
    """Insert a line above the text in the first half of ``paths``; change a figure in the rest."""
    with store.transaction():
        for i, path in enumerate(paths):
            n = int(path.split("-")[1].split(".")[0])
            lines = _lines(n, 8000 + n)
            if i < len(paths) // 2:
                lines = ["Moved here from the wiki.", "", *lines]
                document, chunks = _document(path, lines)
                chunks = [  # the chunker's spans, two lines lower
                    Chunk(c.chunk_id, c.doc_path, c.ordinal, c.text, c.content_hash, c.start_line + 2, c.end_line + 2)
                    for c in _document(path, lines[2:])[1]
                ]
            else:
                lines[2] = lines[2].replace(str(8000 + n), str(9000 + n))
                document, chunks = _document(path, lines)
            store.replace_document(document, chunks)


def main() -> None:
    """Print the timings and counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--answers", type=int, default=10000)
    parser.add_argument("--changed", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        store = StoreOfRecord(Path(tmp) / "kb")
        began = time.perf_counter()
        paths = build(store, args.documents, args.answers, rng)
        rows = store.conn.execute("SELECT count(*) FROM answer_citations").fetchone()[0]
        print(
            f"built {args.documents} documents, {args.answers} answers, {rows} citations in "
            f"{time.perf_counter() - began:.1f} s"
        )
        changed = rng.sample(paths, args.changed)
        change(store, changed)
        marks = ",".join("?" * len(changed))
        citing = store.conn.execute(
            f"SELECT count(*), count(DISTINCT answer_id) FROM answer_citations WHERE doc_path IN ({marks})", changed
        ).fetchone()
        report = recheck_documents(store, changed)
        print(
            f"after an ingest changing {args.changed} documents: {report.took_ms:.1f} ms (target < 1000 ms);"
            f" read {citing[0]} citations of {citing[1]} answers of {args.answers};"
            f" {report.valid} valid, {report.reanchored} re-anchored, {report.stale} stale"
        )
        report = recheck_documents(store)
        print(
            f"kb answers check over all {report.answers_checked} answers: {report.took_ms:.1f} ms (target < 5000 ms);"
            f" {report.valid} valid, {report.reanchored} re-anchored, {report.stale} stale"
        )
        report = recheck_documents(store)
        print(f"the same check again, nothing changed: {report.took_ms:.1f} ms")
        store.close()


if __name__ == "__main__":
    main()
