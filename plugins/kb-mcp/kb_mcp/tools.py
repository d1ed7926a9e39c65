"""What the MCP tools do, as plain library calls over one open knowledge base.

Each method returns a :class:`Reply`: a schema version and a payload that
:func:`kb_core.commands.envelope` turns into exactly what the matching ``kb ... --json`` command prints,
plus the text shown to the model. Mistakes raise :class:`kb_core.KbError` with the CLI's own
one-line message; :mod:`kb_mcp.server` turns them into MCP tool errors. The calls go through kb_core's
answer service over the one open knowledge base (:meth:`kb_core.service.AnswerService.over`), which
takes them one at a time (the SDK runs synchronous tools on worker threads) and queues questions
for the model as every front end's are.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import attrs

import kb_core
from kb_core.bounds import LIST_LIMIT, K
from kb_core.commands import TEXT_PARSERS, check_path, dumps, envelope, stored_file, stored_lines
from kb_core.plugin.stores import current_access
from kb_core.service import AnswerService, people
from kb_mcp.folders import IngestFolders
from kb_mcp.inbox import Inbox

TARGET_CHARS = kb_core.LIMITS.path_chars + 48  # a stored path and a line span: #L<digits>-L<digits>
THREAD_ID_CHARS = 64  # kb's ids are thr_ and 12 hex digits; anything much longer is not one


@attrs.frozen
class Reply:
    """A tool's result: ``envelope(schema_version, payload)``, and the text for the model."""

    schema_version: str
    payload: Any
    text: str | None = None  # None: the JSON text of the envelope, as `--json` prints it

    def envelope(self) -> dict[str, Any]:
        """The versioned JSON document (structured content of the tool result)."""
        return envelope(self.schema_version, self.payload)

    def content_text(self) -> str:
        """The text content of the tool result."""
        return self.text if self.text is not None else dumps(self.schema_version, self.payload)


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text.strip())


def _check_length(value: str, what: str, limit: int) -> str:
    """``value`` when at most ``limit`` characters long, else a one-line KbError (nothing is looked up)."""
    if len(value) > limit:
        raise kb_core.KbError(f"the {what} is {len(value)} characters long; at most {limit} are accepted")
    return value


def _check_path(value: str, what: str, limit: int) -> str:
    """``value`` when at most ``limit`` characters long, valid Unicode and without NUL (kb_core's check of what
    reaches a store query), else its one line."""
    return check_path(_check_length(value, what, limit), what, chars=limit)


def _check_k(k: int | None) -> None:
    """A ``k`` within ``kb_core.bounds.K`` (None: not given), else its one line."""
    if k is not None:
        K.check(k, "k")


def _thread_id(value: str) -> str:
    """A thread id as given, trimmed: bounded and not empty (whether it exists is looked up later)."""
    wanted = _check_path(value, "thread_id", THREAD_ID_CHARS).strip()
    if not wanted:
        raise kb_core.KbError(
            "the thread_id is empty", hint="leave it out to start a new thread, or pass the one an earlier ask returned"
        )
    return wanted


def asked_in_thread(turn: kb_core.Turn) -> dict[str, Any]:
    """The ``ask.v1`` payload of a turn: its answer's ``answer.v1`` fields, then the turn's own (without ``answer``)."""
    fields = envelope("turn.v1", turn)
    answer = fields.pop("answer")
    del fields["schema_version"]
    return {**answer, **fields}


class KbTools:
    """The seven tools over one knowledge base (opened by the caller, closed by the caller).

    ``ingest`` reads files only inside ``ingest_folders`` (:mod:`kb_mcp.folders`); every check of an
    agent's input runs before anything is read or written.
    """

    def __init__(
        self, kb: kb_core.KnowledgeBase, backend: str | None = None, ingest_folders: IngestFolders | None = None
    ) -> None:
        self.kb = kb
        self.backend = backend
        self.inbox = Inbox(kb)
        self.ingest_folders = ingest_folders or IngestFolders()  # none: only text is ingested
        self.service = AnswerService.over(kb)

    def close_if_idle(self) -> bool:
        """Close the knowledge base unless a call is running (then False); no call runs after it."""
        return self.service.close_if_idle()

    def search(self, query: str, mode: str | None = None, k: int | None = None, path: str | None = None) -> Reply:
        """Hits with citations and scores in [0, 1] (``search_response.v1``)."""
        kb_core.check_text(query, "query")
        kb_core.check_mode(mode)
        _check_k(k)
        if path is not None:
            kb_core.check_path_glob(path)
        cfg = self.kb.config.search
        request = kb_core.SearchQuery(text=query, k=k or cfg.default_k, mode=mode or cfg.mode, path_glob=path)
        response = self.service.read(lambda kb: kb_core.search(kb, request))
        return Reply("search_response.v1", response)

    def ask(self, question: str, mode: str | None = None, k: int | None = None, thread_id: str | None = None) -> Reply:
        """A grounded answer with citations, or a refusal with its reason, as a turn of a thread (``ask.v1``).

        Without ``thread_id`` the question starts a new thread; with one it is a follow-up, made
        standalone from the turns before it (:func:`kb_core.ask_in_thread`). The result is
        ``answer.v1``'s fields plus the turn's: ``thread_id``, ``position``, ``asked``, ``standalone``
        (what kb searched with), ``method``, ``rewrite_ms`` and ``rewrite_prompt_tokens``.
        """
        kb_core.check_text(question, "question")
        kb_core.check_mode(mode)
        _check_k(k)
        wanted = None if thread_id is None else _thread_id(thread_id)
        options = kb_core.AskOptions(k=k, mode=mode, backend=self.backend)
        if wanted is not None:
            self.service.read(lambda _kb: self._stored_thread(wanted))  # an unknown id: refused before asking
        turn = self.service.ask_in_thread(question, wanted, options)  # (a person's thread and answer: theirs)
        return Reply("ask.v1", asked_in_thread(turn))

    def threads(self, thread_id: str | None = None, limit: int = 20) -> Reply:
        """The most recently continued threads (``thread_list.v1``), or one thread's turns (``thread.v1``)."""
        if thread_id is not None:
            wanted = _thread_id(thread_id)
            return Reply("thread.v1", self.service.read(lambda _kb: self._stored_thread(wanted)))
        chosen = LIST_LIMIT.check(limit, "limit")
        threads = self.service.read(lambda kb: people.own_threads(kb, chosen))  # (a person's own)
        return Reply("thread_list.v1", {"threads": threads})

    def _stored_thread(self, thread_id: str) -> Any:
        """The stored thread ``thread_id``; a NotFoundError that tells an agent what to pass instead (a person's
        own threads only: another's is absent)."""

        def missing() -> kb_core.NotFoundError:
            return kb_core.NotFoundError(
                f"no thread with id {thread_id!r}",
                hint="pass the thread_id an earlier ask returned (the threads tool lists them),"
                " or leave it out to start a new thread",
            )

        people.check_owner(self.kb, "thread", thread_id, missing)
        try:
            return kb_core.stored_thread(self.kb.store, thread_id)
        except kb_core.NotFoundError:
            raise missing() from None

    def list_documents(self, prefix: str = "") -> Reply:
        """Stored documents whose path starts with ``prefix`` (``document_list.v1``)."""
        _check_path(prefix, "prefix", kb_core.LIMITS.path_chars)
        wanted = _nfc(prefix) if prefix else ""
        documents = self.service.read(lambda kb: people.readable_documents(kb, wanted))  # (a person's: theirs)
        return Reply("document_list.v1", {"documents": documents})

    def answers(self, answer_id: str | None = None, stale: bool = False, limit: int = 20) -> Reply:
        """One stored answer with its citations as they stand now (``stored_answer.v1``), or the newest
        stored answers with whether each still holds (``answer_history.v1``; ``stale``: only those that do not)."""
        if answer_id:
            wanted = _check_path(answer_id, "answer_id", 64).strip()
            return Reply("stored_answer.v1", self.service.read(lambda kb: _own_answer(kb, wanted)))
        chosen = LIST_LIMIT.check(limit, "limit")
        found, total = self.service.read(lambda kb: people.own_answers(kb, chosen, stale_only=stale))
        return Reply("answer_history.v1", {"answers": found, "total": total})

    def fetch(self, target: str) -> Reply:
        """The verbatim text of a citation (``path#L12-L34``), a chunk id or a whole document (``fetch.v1``)."""
        wanted = _nfc(_check_path(target, "target", TARGET_CHARS))
        if not wanted:
            raise kb_core.KbError(
                "the target is empty", hint="give a citation (notes/a.md#L12-L34), a chunk id or a document path"
            )
        return self.service.read(lambda _kb: self._fetch(wanted))

    def _fetch(self, wanted: str) -> Reply:
        """What :meth:`fetch` returns for a checked target (called holding the knowledge base)."""
        try:
            kind, value = kb_core.inspect_target(self.kb, wanted)
        except kb_core.NotFoundError:
            return self._fetch_lines(wanted)
        if not people.may_read(value.doc_path if kind == "chunk" else value[0].path):
            return self._fetch_lines(wanted)  # (a person's: outside their grants, as absent)
        if kind == "chunk":
            chunk = value
            return _fetched(
                wanted,
                chunk.doc_path,
                chunk.start_line,
                chunk.end_line,
                chunk.text,
                chunk_id=chunk.chunk_id,
                source="chunk",
            )
        document, chunks = value
        text, source = self._document_text(document, chunks)
        return _fetched(wanted, document.path, 1, max(1, len(text.splitlines())), text, source=source)

    def _fetch_lines(self, target: str) -> Reply:
        """A citation whose line span is not one chunk's: those lines of its document."""
        try:
            citation = kb_core.Citation.parse(target)
        except ValueError:
            citation = None
        document = self.kb.store.get_document(citation.path) if citation else None
        if citation is None or document is None or not people.may_read(document.path):
            raise kb_core.NotFoundError(f"no document, chunk id or citation matches {target!r}", hint="see 'kb list'")
        text, source = self._document_text(document, self.kb.store.chunks_of([document.path]))
        lines = text.splitlines()
        if not 1 <= citation.start_line <= citation.end_line <= len(lines):
            raise kb_core.NotFoundError(
                f"lines {citation.start_line}-{citation.end_line} are outside {document.path} ({len(lines)} lines)",
                hint=f"fetch {document.path} to see all of it",
            )
        piece = "\n".join(lines[citation.start_line - 1 : citation.end_line])
        return _fetched(target, document.path, citation.start_line, citation.end_line, piece, source=source)

    def _document_text(self, document: kb_core.Document, chunks: list[kb_core.Chunk]) -> tuple[str, str]:
        """The document as ingested: its file when a text parser read it and it is unchanged (same hash),
        else its text rebuilt from its chunks.

        Only the core's text parsers (:data:`TEXT_PARSERS`) cite the file's own lines; a PDF, a Word
        or Excel file, a scan or a document of any plugin's parser is never its file's bytes (even
        when they decode): its lines are those of the text kb parsed from it, which its chunks hold
        (``stored_lines``)."""
        if document.parser in TEXT_PARSERS:
            try:  # (its file only while it is exactly what was ingested)
                return stored_file(document, follow_symlinks=True).decode("utf-8").removeprefix("\ufeff"), "file"
            except (kb_core.KbError, UnicodeDecodeError):
                pass
        lines, _exact = stored_lines(chunks)
        return "\n".join(line or "" for line in lines), "chunks"

    def ingest(self, path: str | None = None, text: str | None = None, name: str | None = None) -> Reply:
        """Ingest a file or folder, or store ``text`` as the document ``name`` (``ingest_report.v1``)."""
        if (path is None) == (text is None):
            raise kb_core.KbError(
                "give either path (a file or folder to ingest) or text with a name",
                hint='e.g. {"path": "/home/me/notes"} or {"text": "...", "name": "a.md"}',
            )

        access = current_access()
        if access is not None and path is not None:
            raise kb_core.KbError(
                f"{access.person!r} may not ingest files on the server's machine",
                hint='send the text with a name instead: {"text": "...", "name": "notes/a.md"}',
            )

        def work(kb: kb_core.KnowledgeBase) -> kb_core.IngestReport:
            if path is not None:
                return kb_core.ingest_paths(kb, [self.ingest_folders.check(path)])
            return _as_seen(kb, self.inbox.store(name or "", text or ""))

        report = self.service.write(work)
        return Reply("ingest_report.v1", report)


def _own_answer(kb: kb_core.KnowledgeBase, answer_id: str) -> kb_core.StoredAnswerNow:
    """The stored answer ``answer_id`` as the asker may see it: a person's own only (another's is absent), its
    citations' current text only where they can still read it."""

    def missing() -> kb_core.NotFoundError:  # (kb_core.stored_answer's own, for an id that names none)
        return kb_core.NotFoundError(f"no stored answer with id {answer_id[:40]!r}", hint="see 'kb answers list'")

    people.check_owner(kb, "answer", answer_id, missing)
    found = kb_core.stored_answer(kb.store, answer_id)
    return attrs.evolve(found, citations=tuple(people.shown_citation(c) for c in found.citations))


def _as_seen(kb: kb_core.KnowledgeBase, report: kb_core.IngestReport) -> kb_core.IngestReport:
    """An inbox ingest's report as the asker may see it: a person is told of the documents they may read and of
    their own answers only."""
    if current_access() is None:
        return report
    readable = people.may_read
    return people.own_recheck(
        kb,
        attrs.evolve(
            report,
            added=[p for p in report.added if readable(p)],
            updated=[p for p in report.updated if readable(p)],
            removed=[p for p in report.removed if readable(p)],
            failed=[w for w in report.failed if readable(w.path)],
            warnings=[w for w in report.warnings if readable(w.path)],
        ),
    )


def _fetched(
    target: str, path: str, start: int, end: int, text: str, *, source: str, chunk_id: str | None = None
) -> Reply:
    payload = {
        "target": target,
        "path": path,
        "citation": f"{path}#L{start}-L{end}",
        "start_line": start,
        "end_line": end,
        "chunk_id": chunk_id,
        "source": source,
        "text": text,
    }
    return Reply("fetch.v1", payload, text=text)
