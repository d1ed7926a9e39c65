"""The Tantivy index: a :class:`kb_core.SearchIndex`: an index that is also a lexical retriever.

Files live in ``<ctx.directory>/index`` (Tantivy's own) next to ``kb-tantivy.json``, which records
the fingerprint the index was built with. Only one process may write at a time (Tantivy's
writer lock): the writer is taken on the first ``delete``/``upsert``/``clear`` of a batch and
released by ``commit`` (or ``close``, which discards uncommitted work). Readers never lock: a
search reloads the index to the last commit, so ``kb search`` works while an ingest runs.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tantivy
from tantivy import Occur, Query

from kb_core import Chunk, Citation, Hit, KbError, SearchQuery
from kb_core.plugin import IndexContext, Problem
from kb_core.plugin.options import checked_options
from kb_tantivy import analysis, scoring
from kb_tantivy.options import OPTIONS

SCHEMA_VERSION = 1
FINGERPRINT = f"tantivy-schema{SCHEMA_VERSION}:{analysis.ANALYZER_VERSION}"
FIX = "kb reindex --store tantivy"
META_FILE = "kb-tantivy.json"
WRITER_HEAP_BYTES = 64_000_000
WRITER_THREADS = 1
REGEX_META = set("\\.+*?()|[]{}^$#&-~")


def build_schema() -> tantivy.Schema:
    """The index schema: ids and paths as raw terms, analyzed body/heading/title, stored payload."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    sb.add_text_field("doc_path", stored=True, tokenizer_name="raw")
    for name in ("body", "heading", "title"):
        sb.add_text_field(name, stored=False, tokenizer_name=analysis.INDEX_TOKENIZER)
    sb.add_bytes_field("text", stored=True)
    sb.add_bytes_field("heading_path", stored=True)
    sb.add_integer_field("start_line", stored=True)
    sb.add_integer_field("end_line", stored=True)
    return sb.build()


def glob_regex(glob: str) -> str | None:
    """A Tantivy regex matching exactly what ``fnmatchcase(path, glob)`` matches, or None.

    Only ``*`` and ``?`` are translated; a glob with a character class returns None and is
    applied by filtering instead.
    """
    if "[" in glob:
        return None
    parts = []
    for char in glob:
        if char == "*":
            parts.append("(?s:.)*")
        elif char == "?":
            parts.append("(?s:.)")
        else:
            parts.append("\\" + char if char in REGEX_META else char)
    return "".join(parts)


def prefix_regex(prefixes: tuple[str, ...]) -> str:
    """A Tantivy regex matching exactly the paths that start with one of ``prefixes`` (at least one)."""
    escaped = ("".join("\\" + c if c in REGEX_META else c for c in prefix) for prefix in prefixes)
    return "(?:" + "|".join(escaped) + ")(?s:.)*"


class TantivyIndex:
    """BM25 search over chunks with English stemming and CJK bigrams; scores in [0, 1]."""

    mode = "lexical"
    fingerprint = FINGERPRINT

    def __init__(self, ctx: IndexContext) -> None:
        options = checked_options("tantivy", OPTIONS, ctx.config.backend_options("tantivy"), ctx.config.sources)
        self.name = ctx.name
        self.directory = Path(ctx.directory)
        self.index_dir = self.directory / "index"
        self.store = ctx.store
        self.heading_boost = float(options["heading_boost"])
        self.title_boost = float(options["title_boost"])
        self.lock_timeout_s = float(options["lock_timeout_s"])
        self.schema = build_schema()
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._read_only_copy: Path | None = None  # see _readable_dir

    # -- opening ------------------------------------------------------------------------------

    def _stored_fingerprint(self) -> str | None:
        try:
            return str(json.loads((self.directory / META_FILE).read_text(encoding="utf-8"))["fingerprint"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _exists(self) -> bool:
        return self.index_dir.is_dir() and tantivy.Index.exists(str(self.index_dir))

    def _open_existing(self) -> tantivy.Index:
        """The index on disk; KbError when it is unreadable or was built with another fingerprint."""
        if self._index is None:
            if self._stored_fingerprint() != FINGERPRINT:
                raise KbError(
                    f"the tantivy index at {self.index_dir} was built by another version", hint=f"run '{FIX}'"
                )
            try:
                self._index = tantivy.Index.open(str(self._readable_dir()))
            except (OSError, ValueError) as exc:
                raise KbError(
                    f"the tantivy index at {self.index_dir} is unreadable: {exc}", hint=f"run '{FIX}'"
                ) from None
        return self._index

    def _readable_dir(self) -> Path:
        """The index folder, or a private read-only copy of it when kb may not write there.

        Tantivy takes a lock file beside the index even to read it, so on read-only media (or a
        knowledge base owned by another user) it searches a copy in a temporary folder instead.
        """
        if os.access(self.index_dir, os.W_OK):
            return self.index_dir
        copy = Path(tempfile.mkdtemp(prefix="kb-tantivy-ro-")) / "index"
        shutil.copytree(self.index_dir, copy, copy_function=shutil.copyfile)  # file modes not copied
        for folder in (copy, *(p for p in copy.rglob("*") if p.is_dir())):
            folder.chmod(0o700)  # copytree copies folder modes: make the copy ours to lock
        self._read_only_copy = copy.parent
        return copy

    def _create(self) -> tantivy.Index:
        """A new, empty index (whatever was in the directory is removed)."""
        self._release_writer()
        self._index = None
        shutil.rmtree(self.index_dir, ignore_errors=True)
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self._index = tantivy.Index(self.schema, path=str(self.index_dir), reuse=False)
        (self.directory / META_FILE).write_text(json.dumps({"fingerprint": FINGERPRINT}) + "\n", encoding="utf-8")
        return self._index

    def _readable(self) -> bool:
        """Whether the index exists, has the current fingerprint and opens."""
        try:
            return self._exists() and self._open_existing() is not None
        except KbError:
            return False

    def _open_for_writing(self) -> tantivy.Index:
        return self._open_existing() if self._exists() else self._create()

    # -- the writer ---------------------------------------------------------------------------

    def _take_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            index = self._open_for_writing()
            deadline = time.monotonic() + self.lock_timeout_s
            while self._writer is None:
                try:
                    self._writer = index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=WRITER_THREADS)
                except ValueError as exc:
                    if "LockBusy" not in str(exc) or time.monotonic() > deadline:
                        raise KbError(
                            f"cannot write the tantivy index at {self.index_dir}: another kb process is writing it",
                            hint="wait for the other ingest to finish and run again",
                        ) from None
                    time.sleep(0.1)
        return self._writer

    def _release_writer(self) -> None:
        """Drop the writer (and Tantivy's lock), discarding anything not committed."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.rollback()
            writer.wait_merging_threads()

    # -- Index ----------------------------------------------------------------------------------

    def delete(self, doc_paths: Sequence[str]) -> None:
        """Remove every chunk of the given documents (durable at ``commit``)."""
        if not doc_paths:
            return
        writer = self._take_writer()
        for path in doc_paths:
            writer.delete_documents_by_term("doc_path", path)

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Add chunks, replacing any indexed chunk with the same id (durable at ``commit``)."""
        if not chunks:
            return
        writer = self._take_writer()
        titles: dict[str, str] = {}
        for chunk in chunks:
            if chunk.doc_path not in titles:
                document = self.store.get_document(chunk.doc_path)
                titles[chunk.doc_path] = document.title if document else ""
            writer.delete_documents_by_term("chunk_id", chunk.chunk_id)
            writer.add_document(self._to_document(chunk, titles[chunk.doc_path]))

    @staticmethod
    def _to_document(chunk: Chunk, title: str) -> tantivy.Document:
        return tantivy.Document(
            chunk_id=chunk.chunk_id,
            doc_path=chunk.doc_path,
            body=analysis.spread_cjk(chunk.text),
            heading=analysis.spread_cjk(" / ".join(chunk.heading_path)),
            title=analysis.spread_cjk(title),
            text=chunk.text.encode("utf-8"),
            heading_path=json.dumps(list(chunk.heading_path), ensure_ascii=False).encode("utf-8"),
            start_line=chunk.start_line,
            end_line=chunk.end_line,
        )

    def commit(self) -> None:
        """Make every change since the last commit durable and visible, then release the writer."""
        if self._writer is None:
            return
        writer, self._writer = self._writer, None
        writer.commit()
        writer.wait_merging_threads()
        self._open_existing().reload()

    def clear(self) -> None:
        """Empty the index. A readable, current index is emptied at ``commit``; a missing,
        unreadable or outdated one is recreated empty at once."""
        if self._readable():
            self._take_writer().delete_all_documents()
        else:
            self._create()

    def count(self) -> int:
        """How many chunks the index holds (as of the last commit)."""
        if not self._exists():
            return 0
        index = self._open_existing()
        index.reload()
        return int(index.searcher().num_docs)

    def check(self) -> list[Problem]:
        """Health problems of the index, each with the command that fixes it."""
        if not self._exists():
            return [Problem(self.name, f"the tantivy index at {self.index_dir} is missing", FIX)]
        try:
            indexed = self.count()
        except KbError as exc:
            return [Problem(self.name, exc.message, FIX)]
        applied_seq, recorded = self.store.index_state(self.name)
        expected = self.store.count_chunks()
        if recorded and applied_seq == self.store.last_seq() and indexed != expected:
            return [
                Problem(self.name, f"the tantivy index holds {indexed} chunks, the store of record {expected}", FIX)
            ]
        return []

    def close(self) -> None:
        """Release the writer (discarding uncommitted changes) and the index."""
        self._release_writer()
        self._index = None
        if self._read_only_copy is not None:
            shutil.rmtree(self._read_only_copy, ignore_errors=True)
            self._read_only_copy = None

    # -- Retriever --------------------------------------------------------------------------------

    def search(self, query: SearchQuery) -> list[Hit]:
        """The ``query.k`` best chunks by BM25, restricted to documents matching ``query.path_glob``
        (``fnmatchcase``; None or empty means every document)."""
        terms = analysis.query_terms(query.text)
        if not terms or query.k <= 0 or not self._exists():
            return []
        index = self._open_existing()
        index.reload()
        searcher = index.searcher()
        mass = scoring.evidence_mass((searcher.doc_freq("body", t) for t in terms), searcher.num_docs)
        found = self._collect(searcher, terms, query)
        snippet_terms = terms if query.snippets else None
        return [
            self._to_hit(searcher, raw, address, rank, mass, snippet_terms)
            for rank, (raw, address) in enumerate(found, 1)
        ]

    def snippet(self, query: SearchQuery, text: str) -> str:
        """The excerpt of ``text`` around the densest group of ``query``'s terms (:class:`SnippetMaker`)."""
        return analysis.make_snippet(text, analysis.query_terms(query.text))

    def _text_query(self, terms: list[str]) -> Query:
        clauses: list[tuple[Occur, Query]] = []
        for term in terms:
            clauses.append((Occur.Should, Query.term_query(self.schema, "body", term)))
            for field, boost in (("heading", self.heading_boost), ("title", self.title_boost)):
                if boost > 0:
                    clauses.append((Occur.Should, Query.boost_query(Query.term_query(self.schema, field, term), boost)))
        return Query.boolean_query(clauses)

    def _collect(self, searcher: Any, terms: list[str], query: SearchQuery) -> list[tuple[float, Any]]:
        """(raw score, address) of the best hits that match the path glob and lie under the path prefixes (the
        asker's grants), best first. Both are clauses of the query itself, so ``k`` matching hits come back
        whenever there are ``k``; one Tantivy cannot build is applied by filtering, widening until ``k``."""
        text_query = self._text_query(terms)
        glob, prefixes = query.path_glob, query.path_prefixes
        if prefixes is not None and not prefixes:
            return []  # no grant: nothing to find
        if not glob and prefixes is None:
            return list(searcher.search(text_query, query.k, count=False).hits)
        musts: list[tuple[Occur, Query]] = [(Occur.Must, text_query)]
        glob_filter = self._path_filter(glob_regex(glob)) if glob else None
        prefix_filter = self._path_filter(prefix_regex(prefixes)) if prefixes is not None else None
        musts += [(Occur.Must, f) for f in (glob_filter, prefix_filter) if f is not None]
        text_query = Query.boolean_query(musts)
        exact = (not glob or glob_filter is not None) and (prefixes is None or prefix_filter is not None)
        limit = query.k if exact else query.k * 10

        def wanted(path: str) -> bool:
            return (not glob or fnmatch.fnmatchcase(path, glob)) and (
                prefixes is None or any(path.startswith(p) for p in prefixes)
            )

        while True:
            hits = list(searcher.search(text_query, limit, count=False).hits)
            kept = [(s, a) for s, a in hits if wanted(searcher.doc(a).get_first("doc_path"))]
            if len(kept) >= query.k or len(hits) < limit:
                return kept[: query.k]
            limit *= 4

    def _path_filter(self, regex: str | None) -> Query | None:
        """A query matching the paths ``regex`` (of :func:`glob_regex` or :func:`prefix_regex`) matches, or None:
        the filter is then applied by filtering (a glob's character class, or an automaton Tantivy refuses to
        build: a few hundred non-ASCII characters)."""
        if regex is None:
            return None
        try:
            return Query.boost_query(Query.regex_query(self.schema, "doc_path", regex), 0.0)
        except ValueError:  # RegexQueryError: Compiled regex exceeds size limit of 1000 states
            return None

    def _to_hit(
        self, searcher: Any, raw: float, address: Any, rank: int, mass: float, snippet_terms: list[str] | None
    ) -> Hit:
        """The hit at ``address``; its snippet only when ``snippet_terms`` are given."""
        doc = searcher.doc(address)
        path = doc.get_first("doc_path")
        return Hit(
            chunk_id=doc.get_first("chunk_id"),
            doc_path=path,
            score=scoring.normalize(raw, mass),
            rank=rank,
            citation=Citation(path, int(doc.get_first("start_line")), int(doc.get_first("end_line"))),
            heading_path=tuple(json.loads(doc.get_first("heading_path").decode("utf-8"))),
            snippet=analysis.make_snippet(doc.get_first("text").decode("utf-8"), snippet_terms)
            if snippet_terms
            else "",
            retriever="tantivy",
            raw_score=float(raw),
        )
