"""Commands that manage the knowledge base: init, ingest, list, inspect, rm, reindex, doctor,
plugins and config show. Each is a thin wrapper over a library function."""

from __future__ import annotations

from pathlib import Path

import click

from kb_core.cli.base import Session, emit, json_option, pass_session, terminal_progress
from kb_core.config import effective_values
from kb_core.errors import EXIT_NO_RESULT, EXIT_PARTIAL, EXIT_UNHEALTHY
from kb_core.extend.options import listed
from kb_core.extend.registry import registry
from kb_core.ingest.index_sync import rebuild_index
from kb_core.ingest.language_fit import ingest_notice
from kb_core.ingest.pipeline import IngestReport, ingest_paths, remove_documents, writer_lock
from kb_core.ingest.source import normalise
from kb_core.maintenance import doctor_report, init_kb, inspect_target, moment_lines
from kb_core.storage.moments import is_moment
from kb_core.storage.regions import LOW_CONFIDENCE, chunk_ocr_lines, ocr_summary, page_count
from kb_core.terminal import shown
from kb_core.types import Citation, Document


@click.command("init")
@json_option
@pass_session
def init_command(session: Session, as_json: bool) -> None:
    """Create an empty knowledge base (the directory of --kb / KB_HOME)."""
    info = init_kb(session.kb(create=True))
    emit(as_json, "init.v1", info, lambda: click.echo(f"knowledge base ready at {info['kb_dir']}"))


def _print_report(report: IngestReport) -> None:
    """The summary on stdout; each failed file, warning and skipped index on stderr."""
    click.echo(
        f"added {len(report.added)}, updated {len(report.updated)}, unchanged {report.unchanged}, "
        f"removed {len(report.removed)}, failed {len(report.failed)}"
        f"  ({report.documents} documents, {report.chunks} chunks, {report.took_ms / 1000:.1f} s)"
    )
    for problem in report.failed:
        click.echo(f"  failed: {shown(problem.path)}: {shown(problem.reason)}", err=True)
    for note in report.warnings:
        click.echo(f"  warning: {shown(note.path)}: {shown(note.reason)}", err=True)
    for result in report.indexes:
        if result.skipped_reason:
            click.echo(f"  index {result.index} not updated: {shown(result.skipped_reason)}", err=True)
    broken = report.answers.stale + report.answers.unverifiable if report.answers else 0
    if broken:
        click.echo(f"{broken} saved answer(s) no longer hold: kb answers list --stale")


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--follow-symlinks/--no-follow-symlinks",
    default=None,
    help="Follow symbolic links that lead outside the folder (default: [ingest] follow_symlinks, off).",
)
@click.option(
    "--repoint",
    is_flag=True,
    help="Make these folders the source of documents stored from another folder (a moved or copied folder).",
)
@click.option(
    "--retry-failed",
    is_flag=True,
    help="Take again the files set aside after crashing every ingest worker that took them (a shared store:"
    " PostgreSQL); other failed files are tried again by every ingest.",
)
@json_option
@pass_session
def ingest_command(
    session: Session,
    paths: tuple[Path, ...],
    follow_symlinks: bool | None,
    repoint: bool,
    retry_failed: bool,
    as_json: bool,
) -> int:
    """Add or update the documents under PATHS (files or folders); remove those that disappeared.

    Exit code 4 when the run finished but some files failed (each is listed on stderr).
    """
    with terminal_progress(enabled=not as_json) as progress:
        report = ingest_paths(
            session.kb(create=True),
            list(paths),
            progress,
            follow_symlinks=follow_symlinks,
            repoint=repoint,
            retry_failed=retry_failed,
        )
    emit(as_json, "ingest_report.v1", report, lambda: _print_report(report))
    ingest_notice(session.kb())  # on stderr, when the embedder does not model the corpus's languages
    return EXIT_PARTIAL if report.failed else 0


@click.command("list")
@click.option("--prefix", default="", help="Only documents whose path starts with this.")
@json_option
@pass_session
def list_command(session: Session, prefix: str, as_json: bool) -> int:
    """List the stored documents."""
    documents = session.kb().store.list_documents(normalise(prefix))

    def human() -> None:
        for doc in documents:
            click.echo(f"{shown(doc.path)}\t{doc.chunk_count} chunks\t{shown(doc.title)}")

    emit(as_json, "document_list.v1", {"documents": documents}, human)
    return 0 if documents else EXIT_NO_RESULT


@click.command("inspect")
@click.argument("target")
@json_option
@pass_session
def inspect_command(session: Session, target: str, as_json: bool) -> None:
    """Show a document (by path) or a chunk (by id or citation path#L12-L34, as kb prints it: also
    path#page=2&L12-L34 and path#page=2&xywh=x,y,w,h&L12-L34; a recording's moment, path#t=00:00:06,00:00:12,
    shows the chunk of the lines said then)."""
    kb, wanted = session.kb(), normalise(target)
    said = None  # a recording's moment: the lines that span it
    if "#" in wanted and kb.store.get_document(wanted) is None:  # a citation: a bad one says what is wrong
        if is_moment(wanted):
            said = moment_lines(kb, wanted)
        else:
            Citation.parse(wanted, lambda path: _page_count(kb.store.get_document(path)))
    kind, value = inspect_target(kb, wanted)
    if kind == "document":
        document, chunks = value

        def human() -> None:
            click.echo(f"{shown(document.path)}  ({shown(document.title)})")
            click.echo(f"  parser {document.parser}, {document.size} bytes, sha256 {document.content_hash[:16]}…")
            for key, item in sorted(document.metadata.items()):
                click.echo(f"  {shown(key)}: {shown(ocr_summary(document.metadata) if key == 'ocr' else item)}")
            for chunk in chunks:
                heading = shown(" > ".join(chunk.heading_path))
                click.echo(f"  [{chunk.chunk_id}] {shown(chunk.citation)}  {chunk.token_count} tokens  {heading}")

        emit(as_json, "document.v1", {"document": document, "chunks": chunks}, human)
    else:
        chunk = value
        heading = shown(" > ".join(chunk.heading_path))
        store = session.kb().store
        document = store.get_document(chunk.doc_path)
        read = []
        if document is not None and document.metadata.get("ocr"):  # (the document's chunks only then)
            read = chunk_ocr_lines(document.metadata, chunk, store.chunks_of([chunk.doc_path]))

        def human_chunk() -> None:
            if said is not None:
                click.echo(f"{shown(wanted)} is said in {shown(str(said))}")
            click.echo(f"{shown(chunk.citation)}  [{chunk.chunk_id}]  {heading}\n\n{chunk.text}")
            if read:
                click.echo(f"\nread by OCR (page, confidence; under {LOW_CONFIDENCE} marked low):")
            for item in read:
                low = "  low" if item["low"] else ""
                click.echo(f"  L{item['line']}  p{item['page']}  {item['confidence']:.2f}{low}  {shown(item['text'])}")

        emit(as_json, "chunk.v1", {"chunk": chunk, "citation": str(chunk.citation), "ocr_lines": read}, human_chunk)


def _page_count(document: Document | None) -> int | None:
    """How many pages ``document`` has (None: there is no such document)."""
    return None if document is None else page_count(document.metadata)


@click.command("rm")
@click.argument("paths", nargs=-1, required=True)
@json_option
@pass_session
def rm_command(session: Session, paths: tuple[str, ...], as_json: bool) -> None:
    """Remove documents by stored path (a path ending in '/' removes a whole folder)."""
    removed = remove_documents(session.kb(), list(paths))
    emit(as_json, "removed.v1", {"removed": removed}, lambda: click.echo(f"removed {len(removed)} document(s)"))


@click.command("reindex")
@click.option("--store", "stores", multiple=True, help="Only this index (repeatable); default: every enabled one.")
@json_option
@pass_session
def reindex_command(session: Session, stores: tuple[str, ...], as_json: bool) -> None:
    """Rebuild indexes from the store of record alone."""
    kb = session.kb()
    names = list(stores) or kb.enabled_index_names()
    with terminal_progress(enabled=not as_json) as progress, writer_lock(kb):
        results = [rebuild_index(kb, name, progress) for name in names]
    emit(
        as_json,
        "reindex.v1",
        {"indexes": results},
        lambda: click.echo("\n".join(f"rebuilt {r.index}: {r.chunks} chunks" for r in results)),
    )


@click.command("doctor")
@click.option(
    "--no-generate", is_flag=True, help="Skip the short generation with the language model (run in a child process)."
)
@json_option
@pass_session
def doctor_command(session: Session, no_generate: bool, as_json: bool) -> int:
    """Check plugins, models and index consistency; each problem comes with the command that fixes it.

    A short generation runs in a child process, so a model that crashes the process is found too.
    """
    report = doctor_report(session.kb(), generate=not no_generate)

    def human() -> None:
        for check in report.checks:
            click.echo(f"{'ok  ' if check.ok else 'FAIL'} {check.component}: {check.detail}")
        for problem in report.problems:
            click.echo(
                f"  problem: {problem.component}: {problem.message}" + (f"  -> {problem.fix}" if problem.fix else "")
            )
        click.echo("healthy" if report.healthy else f"{len(report.problems)} problem(s)")

    emit(as_json, "doctor.v1", report, human)
    return 0 if report.healthy else EXIT_UNHEALTHY


@click.command("plugins")
@json_option
def plugins_command(as_json: bool) -> None:
    """List installed plugins, their distributions and versions, and what each registers."""
    plugins = registry().plugins

    def human() -> None:
        for plugin in plugins:
            provides = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in sorted(plugin.provides.items()))
            click.echo(f"{plugin.name}\t{plugin.distribution} {plugin.version}\t{provides}")

    emit(as_json, "plugins.v1", {"plugins": plugins}, human)


@click.command("show")
@json_option
@pass_session
def config_show_command(session: Session, as_json: bool) -> None:
    """Print the effective configuration and where each value came from."""
    rows = listed(effective_values(session.config), session.config, registry().options)  # plugins' options too
    values = [{"key": k, "value": v, "source": s} for k, v, s in rows]

    def human() -> None:
        for item in values:
            click.echo(f"{item['key']} = {shown(repr(item['value']))}  ({shown(item['source'])})")

    emit(as_json, "config.v1", {"values": values}, human)


COMMANDS = (
    init_command,
    ingest_command,
    list_command,
    inspect_command,
    rm_command,
    reindex_command,
    doctor_command,
    plugins_command,
)
CONFIG_COMMANDS = (config_show_command,)
