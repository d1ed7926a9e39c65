"""``kb answers list|show|check|purge``: the questions kb keeps, whether their answers still hold, and deleting them."""

from __future__ import annotations

import datetime

import click

from kb_core.bounds import LIST_LIMIT
from kb_core.cli.base import Session, emit, json_option, pass_session
from kb_core.cli.options import Bounded
from kb_core.errors import EXIT_NO_RESULT, KbError
from kb_core.ingest.pipeline import writer_lock
from kb_core.storage.answers import list_answers, purge_answers, stored_answer
from kb_core.storage.cited import CitationNow, recheck_documents
from kb_core.terminal import shortened, shown


@click.group("answers")
def answers_group() -> None:
    """See and delete the questions and answers kb keeps (every 'kb ask' is stored)."""


@answers_group.command("list")
@click.option("--limit", type=Bounded(LIST_LIMIT), help="Only the newest N.")
@click.option("--stale", is_flag=True, help="Only the answers whose citations no longer hold.")
@json_option
@pass_session
def answers_list_command(session: Session, limit: int | None, stale: bool, as_json: bool) -> int:
    """List stored questions, newest first, with their id and outcome (and 'stale' when the notes changed)."""
    answers, total = list_answers(session.kb().store, limit, stale_only=stale)

    def human() -> None:
        for a in answers:
            outcome = f"grounded, {a.state}" if a.grounded and a.state != "valid" else "grounded"
            outcome = outcome if a.grounded else f"refused:{a.refusal_reason or '-'}"
            click.echo(f"{a.answer_id}  {a.created_at}  {outcome:<22} {shortened(a.question, 100)}")
        click.echo(
            f"{len(answers)} of {total} stored answer(s); delete with 'kb answers purge ID...' or --all", err=True
        )

    emit(as_json, "answer_history.v1", {"answers": answers, "total": total}, human)
    return 0 if answers else EXIT_NO_RESULT


@answers_group.command("show")
@click.argument("answer_id")
@json_option
@pass_session
def answers_show_command(session: Session, answer_id: str, as_json: bool) -> None:
    """Show a stored answer with its citations as they stand now (moved, or broken and how)."""
    stored = stored_answer(session.kb(create=False).store, answer_id.strip())

    def human() -> None:
        click.echo(f"{stored.answer_id}  {stored.created_at}  {shown(stored.question)}\n")
        click.echo(shown(stored.answer))
        click.echo("")
        for c in stored.citations:
            click.echo(f"  [#{c.marker}] {shown(c.path)}#L{c.start_line}-L{c.end_line}  {_described(c)}")
            if c.state == "stale" and c.reason == "changed":
                click.echo(f"        was: {shortened(c.cited_text or '', 160)}")
                click.echo(f"        now: {shortened(c.now_text or '(those lines are gone)', 160)}")
        click.echo(stored.state or f"refused: {stored.refusal_reason}")

    emit(as_json, "stored_answer.v1", stored, human)


@answers_group.command("check")
@json_option
@pass_session
def answers_check_command(session: Session, as_json: bool) -> int:
    """Re-check every stored answer's citations against the documents as they are now.

    Exit code 1 when some answer no longer holds.
    """
    kb = session.kb(create=False)
    with writer_lock(kb):
        report = recheck_documents(kb.store)

    def human() -> None:
        for answer in report.stale_answers:
            click.echo(f"{answer.answer_id}  {answer.state}  {shortened(answer.question, 80)}")
            for c in answer.citations:
                click.echo(f"    [#{c.marker}] {shown(c.path)}#L{c.start_line}-L{c.end_line}  {_described(c)}")
        click.echo(
            f"{report.answers_checked} answer(s) checked: {report.valid} valid, {report.reanchored} re-anchored,"
            f" {report.stale} stale, {report.unverifiable} unverifiable ({report.took_ms / 1000:.2f} s)"
        )

    emit(as_json, "answers_check.v1", report, human)
    return EXIT_NO_RESULT if report.stale or report.unverifiable else 0


def _described(citation: CitationNow) -> str:
    """A citation's state in words."""
    return {
        "valid": "holds",
        "reanchored": "holds (the text moved to these lines)",
        "unverifiable": "unverifiable: stored before kb kept cited text, and its passage is gone",
        "unchecked": "not checked yet: run 'kb answers check'",
    }.get(citation.state) or {
        "removed": "stale: the document was removed",
        "changed": "stale: the cited text changed",
        "ambiguous": "stale: the cited text left its lines and now stands in several places",
    }.get(citation.reason, "stale")


@answers_group.command("purge")
@click.argument("ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Delete every stored question and answer.")
@click.option("--before", help="Delete those stored before this date (YYYY-MM-DD).")
@json_option
@pass_session
def answers_purge_command(
    session: Session, ids: tuple[str, ...], everything: bool, before: str | None, as_json: bool
) -> None:
    """Delete stored questions and answers: by ID, --before a date, or --all."""
    chosen = sum(bool(x) for x in (ids, everything, before))
    if chosen != 1:
        raise KbError(
            "say what to purge: answer ids, --before YYYY-MM-DD, or --all (exactly one)", hint="see 'kb answers list'"
        )
    day = None if before is None else parse_day(before)
    deleted = purge_answers(session.kb().store, ids, before=day, everything=everything)
    emit(
        as_json,
        "answers_purged.v1",
        {"purged": len(deleted), "answer_ids": deleted},
        lambda: click.echo(
            f"purged {len(deleted)} stored answer(s){'' if deleted else ' (none matched)'}"
            + (f": {shown(', '.join(deleted[:5]))}{' …' if len(deleted) > 5 else ''}" if deleted else "")
        ),
    )


def parse_day(text: str) -> datetime.date:
    """The calendar day ``text`` names (YYYY-MM-DD); a one-line KbError for anything else (2026-13-45)."""
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%d").date()
    except ValueError:
        raise KbError(f"--before wants a real date like 2026-01-31, got {shortened(text, 40)}") from None


COMMANDS = (answers_group,)
