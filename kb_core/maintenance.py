"""Library functions behind ``kb init``, ``kb inspect`` and ``kb doctor``."""

from __future__ import annotations

import re
import shlex
from typing import Any

import attrs

from kb_core.app import KnowledgeBase
from kb_core.crashes import last_crash, probe_generation
from kb_core.errors import KbError, NotFoundError
from kb_core.extend.options import summaries
from kb_core.extend.record_store import RecordStore, SharedRecordStore
from kb_core.ingest.index_sync import index_problems
from kb_core.ingest.language_fit import mismatch_problem
from kb_core.storage.moments import is_moment, lines_at, parse_moment
from kb_core.types import Citation, CitationError, Problem


@attrs.frozen
class Check:
    """One thing ``kb doctor`` looked at."""

    component: str
    ok: bool
    detail: str


@attrs.frozen
class DoctorReport:
    """The health of a knowledge base and its engines (``doctor.v1``)."""

    kb_dir: str
    checks: list[Check]
    problems: list[Problem]
    healthy: bool


def init_kb(kb: KnowledgeBase) -> dict[str, Any]:
    """Create the knowledge base directory and store of record (idempotent)."""
    return {"kb_dir": str(kb.directory), "schema": kb.store.schema_version, "documents": kb.store.count_documents()}


#: Paths of set-aside files one doctor problem names.
MOST_SHOWN = 5

_CITATION_SHAPED = re.compile(r"#(?:L-?\d|(?:page|slide|chapter|cell)=)")


def inspect_target(kb: KnowledgeBase, target: str) -> tuple[str, Any]:
    """Resolve ``target`` to ("document", (doc, chunks)) or ("chunk", chunk)."""
    document = kb.store.get_document(target)
    if document is not None:
        return "document", (document, kb.store.chunks_of([document.path]))
    found = kb.store.get_chunks([target])
    if found:
        return "chunk", found[target]
    if is_moment(target):  # a recording's moment (talk.mp3#t=00:00:06,00:00:12): the chunk of its first line
        cited = moment_lines(kb, target)
        for chunk in kb.store.chunks_of([cited.path]):
            if chunk.start_line <= cited.start_line <= chunk.end_line:
                return "chunk", chunk
    try:
        citation = Citation.parse(target)
    except ValueError:
        if _CITATION_SHAPED.search(target):  # a citation out of bounds says so; any other name is not found
            raise
        citation = None
    if citation is not None:
        for chunk in kb.store.chunks_of([citation.path]):
            if (chunk.start_line, chunk.end_line) == (citation.start_line, citation.end_line):
                return "chunk", chunk
    raise NotFoundError(f"no document, chunk id or citation matches {target!r}", hint="see 'kb list'")


def moment_lines(kb: KnowledgeBase, target: str) -> Citation:
    """The lines of a recording's transcript a citation by moment (``talk.mp3#t=00:00:06,00:00:12``) spans: a
    CitationError when it is malformed or the recording has no such moment, a NotFoundError without the document."""
    moment = parse_moment(target)
    document = kb.store.get_document(moment.path)
    if document is None:
        raise NotFoundError(f"no document at {moment.path!r}", hint="see 'kb list'")
    if not document.metadata.get("moments"):
        raise CitationError(
            f"{moment.path!r} holds no moments: it is no recording, or was transcribed by an older kb-audio",
            hint=f"cite its lines ({moment.path}#L1-L2), or run kb ingest on its folder again",
        )
    found = lines_at(document.metadata, moment.start, moment.end)
    if found is None:
        raise CitationError(
            f"{target.rpartition('#')[2]} starts after the end of {moment.path!r}",
            hint=f"kb inspect {moment.path} shows how long it is (duration_seconds)",
        )
    return Citation(moment.path, *found)


def set_aside_problems(store: RecordStore) -> list[Problem]:
    """A problem for each folder with files a shared store's ingest queue set aside (they crashed its workers)."""
    if not isinstance(store, SharedRecordStore):
        return []
    by_root: dict[str, list[str]] = {}
    for item in store.files_set_aside():
        by_root.setdefault(item.root, []).append(item.path)
    return [
        Problem(
            "store",
            f"{len(paths)} file(s) of {root} set aside: every ingest worker that took them stopped in them (a parser"
            f" that crashes its process?): {', '.join(paths[:MOST_SHOWN])}{', …' if len(paths) > MOST_SHOWN else ''}",
            f"kb ingest --retry-failed {shlex.quote(root)} (after upgrading the parser), or add them to .kbignore",
        )
        for root, paths in by_root.items()
    ]


def _component_check(component: str, probe: Any) -> tuple[Check, list[Problem]]:
    """Run ``probe()`` (which returns a detail string and problems) and turn failures into problems."""
    try:
        detail, problems = probe()
    except KbError as exc:
        return Check(component, False, str(exc)), [Problem(component, exc.message, exc.hint)]
    return Check(component, not problems, detail), problems


def doctor_report(kb: KnowledgeBase, *, generate: bool = True) -> DoctorReport:
    """Check the store, the plugins, the models and the indexes.

    ``generate``: also run a short generation with the language model in a child process, so that a
    model that crashes the process is reported (one problem naming the backend, model and fix).
    """
    checks: list[Check] = []
    problems: list[Problem] = []

    opened: list[RecordStore] = []

    def store() -> tuple[str, list[Problem]]:
        opened.append(kb.store)  # (a store that cannot be opened raises its one line here)
        found = kb.store.check() + set_aside_problems(kb.store)
        return f"schema {kb.store.schema_version}, {kb.store.count_documents()} documents", found

    def embedder() -> tuple[str, list[Problem]]:
        model = kb.embedder()
        model.count_tokens(["probe"])
        languages = getattr(model, "languages", "") or "languages not declared"
        detail = f"{kb.config.models.embedding.name} ({model.model_ref.id}, {languages}, max {model.max_tokens} tokens)"
        mismatch = mismatch_problem(kb)
        return detail, [mismatch] if mismatch else []

    def language_model() -> tuple[str, list[Problem]]:
        backend = kb.config.models.llm.backend
        model = kb.language_model()
        found = list(model.check())
        crashed = last_crash()
        if crashed:
            found.append(Problem("language model", crashed, "run 'kb doctor' again after changing the model settings"))
        if generate and not found:
            hint = str(getattr(model, "crash_hint", ""))  # an engine that can crash says what to try
            problem = probe_generation(kb.config, backend, model.model_ref, hint)
            found += [problem] if problem else []
        return f"{backend} ({model.model_ref.id})", found

    def indexes() -> tuple[str, list[Problem]]:
        names = kb.enabled_index_names()
        return ", ".join(names) or "none enabled", index_problems(kb)

    def ocr() -> tuple[str, list[Problem]]:
        engine, missing = kb.ocr()
        if engine is None:
            return missing, []  # optional: scans and photos are then refused one by one, with this line
        return f"{kb.config.ingest.ocr} ({engine.identity}; reads {', '.join(engine.languages())})", []

    for component, probe in (
        ("store", store),
        ("embedder", embedder),
        ("language model", language_model),
        ("indexes", indexes),
        ("ocr", ocr),
    ):
        if component == "indexes" and not opened:  # the store's one problem says why; not repeated here
            checks.append(Check(component, False, "not checked: the store could not be opened"))
            continue
        check, found = _component_check(component, probe)
        checks.append(check)
        problems.extend(found)
    checks += [Check(table, True, detail) for table, detail in summaries(kb.config, kb.registry.options)]
    return DoctorReport(str(kb.directory), checks, problems, healthy=not problems)
