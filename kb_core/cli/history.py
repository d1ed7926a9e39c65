"""``kb answers list`` and ``kb answers purge``: the questions kb keeps, and deleting them."""

from __future__ import annotations

import datetime

import click

from kb_core.cli.base import Session, emit, json_option, pass_session
from kb_core.errors import EXIT_NO_RESULT, KbError
from kb_core.storage.answers import list_answers, purge_answers
from kb_core.terminal import shortened, shown


@click.group("answers")
def answers_group() -> None:
    """See and delete the questions and answers kb keeps (every 'kb ask' is stored)."""


@answers_group.command("list")
@click.option("--limit", type=click.IntRange(min=1), help="Only the newest N.")
@json_option
@pass_session
def answers_list_command(session: Session, limit: int | None, as_json: bool) -> int:
    """List stored questions, newest first, with their id and outcome."""
    answers, total = list_answers(session.kb().store, limit)

    def human() -> None:
        for a in answers:
            outcome = "grounded" if a.grounded else f"refused:{a.refusal_reason or '-'}"
            click.echo(f"{a.answer_id}  {a.created_at}  {outcome:<22} {shortened(a.question, 100)}")
        click.echo(
            f"{len(answers)} of {total} stored answer(s); delete with 'kb answers purge ID...' or --all", err=True
        )

    emit(as_json, "answer_history.v1", {"answers": answers, "total": total}, human)
    return 0 if answers else EXIT_NO_RESULT


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
