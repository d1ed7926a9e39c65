"""``kb chat`` and ``kb threads list|show|delete``: follow-up questions in threads, kept in the store."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import click

from kb_core.answers.pipeline import AskOptions
from kb_core.app import KnowledgeBase
from kb_core.bounds import LIST_LIMIT
from kb_core.cli.asking import chosen_thread, echoing, print_outcome, print_sources, searched_printer, streamed_text
from kb_core.cli.base import Session, emit, error_line, json_option, pass_session, terminal_progress
from kb_core.cli.options import Bounded, backend_option, input_file, out_option
from kb_core.conversations import METHODS, StandaloneMethod
from kb_core.errors import EXIT_NO_RESULT, KbError, NotFoundError
from kb_core.storage.threads import delete_thread, list_threads, stored_thread
from kb_core.terminal import shortened, shown
from kb_core.types import Answer

if TYPE_CHECKING:
    from kb_core.evaluation.conversations import AnswerTurns

CHAT_HELP = (
    'Ask a question; follow-ups may lean on the turns before ("and since which version?").\n'
    "/sources  the passages the last answer cited    /new      start a new thread\n"
    "/threads  the threads kept, newest first          /quit     leave (or Ctrl-D)\n"
    "Ctrl-C stops an answer being written and keeps the conversation."
)


@click.command("chat")
@click.option("--thread", "thread_id", metavar="ID", help="Go on with the thread ID (see 'kb threads list').")
@click.option("--continue", "continue_last", is_flag=True, help="Go on with the last thread.")
@pass_session
def chat_command(session: Session, thread_id: str | None, continue_last: bool) -> None:
    """Talk with your notes: ask, then ask follow-ups; every answer is checked like 'kb ask'.

    Answers stream as they are written; the arrow keys recall earlier questions; /help lists the
    commands. The conversation is kept as a thread ('kb threads').
    """
    from kb_core.service import AnswerService

    kb = session.kb(create=False)
    service = AnswerService.over(kb)  # (kb's local paths are the user's own: shown)
    current = chosen_thread(kb, thread_id, continue_last)
    if sys.stdin.isatty():
        import readline  # noqa: F401 - gives input() line editing and history with the arrow keys
    click.echo(CHAT_HELP if current is None else f"continuing thread {current} (/help for the commands)")
    last: Answer | None = None
    while True:
        try:
            line = input("\nyou> ").strip()
        except EOFError:
            click.echo()
            return
        except KeyboardInterrupt:
            click.echo()
            continue
        if not line:
            continue
        command = line.lower()
        if command in ("/quit", "/exit"):
            return
        if command == "/new":
            current, last = None, None
            click.echo("a new thread starts with your next question")
            continue
        if command in CHAT_COMMANDS:
            CHAT_COMMANDS[command](kb, last)
            continue
        if re.fullmatch(r"/\w+", command):  # a mistyped command is not a question for the model
            click.echo(f"unknown command {shortened(line, 40)} (/help lists the commands)", err=True)
            continue
        pieces: list[str] = []
        on_token = echoing(pieces)
        try:
            with terminal_progress() as progress:
                kb.progress = progress
                searched = searched_printer(line)
                turn = service.ask_in_thread(line, current, AskOptions(), on_token, on_standalone=searched)
        except KeyboardInterrupt:
            click.echo(click.style("\n(stopped; nothing kept. Ask again or go on.)", fg="yellow"))
            continue
        except KbError as exc:
            click.echo(error_line(exc), err=True)
            if isinstance(exc, NotFoundError):  # the thread was deleted meanwhile
                current, last = None, None
                click.echo("a new thread starts with your next question")
            continue
        current, last = turn.thread_id, turn.answer
        print_outcome(turn.answer, streamed_text(turn.answer, pieces))


def _print_threads(kb: KnowledgeBase, limit: int | None) -> None:
    for t in list_threads(kb.store, limit):
        click.echo(f"{t.thread_id}  {t.updated_at}  {t.turns:>3} turn(s)  {shortened(t.first_question, 80)}")


#: What ``kb chat`` does with a command line: given the knowledge base and the last answer.
CHAT_COMMANDS: dict[str, Callable[[KnowledgeBase, Answer | None], None]] = {
    "/help": lambda _kb, _last: click.echo(CHAT_HELP),
    "/sources": lambda _kb, last: print_sources(last),
    "/threads": lambda kb, _last: _print_threads(kb, 10),
}


@click.group("threads")
def threads_group() -> None:
    """See and delete the conversations kb keeps ('kb chat', 'kb ask --continue')."""


@threads_group.command("list")
@click.option("--limit", type=Bounded(LIST_LIMIT), help="Only the N most recent.")
@json_option
@pass_session
def threads_list_command(session: Session, limit: int | None, as_json: bool) -> int:
    """List threads, the most recently continued first, with their id, turns and first question."""
    kb = session.kb(create=False)
    threads = list_threads(kb.store, limit)
    emit(as_json, "thread_list.v1", {"threads": threads}, lambda: _print_threads(kb, limit))
    return 0 if threads else EXIT_NO_RESULT


@threads_group.command("show")
@click.argument("thread_id")
@json_option
@pass_session
def threads_show_command(session: Session, thread_id: str, as_json: bool) -> None:
    """Show a thread: each question as asked, what kb searched for, and the answer with its sources."""
    shown_thread = stored_thread(session.kb(create=False).store, thread_id.strip())

    def human() -> None:
        click.echo(f"{shown_thread.thread_id}  started {shown_thread.created_at}")
        for t in shown_thread.turns:
            click.echo(f"\n{t.position}. {shown(t.asked)}")
            if t.standalone.strip() != t.asked.strip():  # searched with the question as checked (stripped)
                click.echo(click.style(f"   searched for: {shown(t.standalone)}", dim=True))
            click.echo(f"   {shown(str(t.answer['answer']))}")
            for c in t.answer["citations"]:
                click.echo(f"     [#{c['marker']}] {shown(str(c['ref']))}")
            outcome = "grounded" if t.answer["grounded"] else f"refused ({t.answer['refusal_reason']})"
            click.echo(click.style(f"   {outcome}", dim=True))

    emit(as_json, "thread.v1", shown_thread, human)


@threads_group.command("delete")
@click.argument("thread_id")
@json_option
@pass_session
def threads_delete_command(session: Session, thread_id: str, as_json: bool) -> None:
    """Delete a thread with its turns and their stored answers."""
    deleted = delete_thread(session.kb().store, thread_id.strip())
    emit(
        as_json,
        "thread_deleted.v1",
        {"thread_id": thread_id.strip(), "turns": deleted},
        lambda: click.echo(f"deleted thread {shown(thread_id.strip())} ({deleted} turn(s))"),
    )


COMMANDS = (chat_command, threads_group)


@click.command("conversations")
@input_file("--set", "set_file", "Conversation set: JSONL, one conversation a line (docs/evaluation.md).")
@out_option("Write report.json here.")
@click.option("--no-answers", is_flag=True, help="Retrieval only: no answers, the rewrites alone use the model.")
@click.option("--ask-reference", is_flag=True, help="Ask the set's reference rewrites as single questions.")
@click.option(
    "--answer-turns",
    type=click.Choice(["all", "answerable", "unanswerable"]),
    default="all",
    help="Ask only these turns (the others are made standalone and searched).",
)
@click.option("--method", type=click.Choice(list(METHODS)), help="How follow-ups are made standalone.")
@click.option("--limit", type=Bounded(LIST_LIMIT), help="Only the first N conversations.")
@backend_option()
@json_option
@pass_session
def eval_conversations_command(
    session: Session,
    set_file: Path,
    out_dir: Path | None,
    no_answers: bool,
    ask_reference: bool,
    answer_turns: AnswerTurns,
    method: StandaloneMethod | None,
    limit: int | None,
    backend: str | None,
    as_json: bool,
) -> None:
    """Ask every conversation turn by turn; report Recall@5 asked / standalone / reference and answers."""
    from kb_core.evaluation.conversation_sets import load_conversation_set
    from kb_core.evaluation.conversations import evaluate_conversations

    conversations = load_conversation_set(set_file)[:limit]
    with terminal_progress(enabled=not as_json) as progress:
        report = evaluate_conversations(
            session.kb(create=False),
            conversations,
            AskOptions(backend=backend),
            method=method,
            answers=not no_answers,
            answer_turns=answer_turns,
            ask_reference=ask_reference,
            set_file=set_file,
            out_dir=out_dir,
            progress=progress,
        )

    def human() -> None:
        m = report.metrics
        click.echo(f"{m.conversations} conversations, {m.turns} turns, run {report.run_id}, {report.method}")
        for name, value in attrs.asdict(m).items():
            click.echo(f"  {name:<34} {'n/a' if value is None else value}")
        click.echo(f"report: {report.report_path}")

    emit(as_json, "conversation_report.v1", report, human)


EVAL_COMMANDS = (eval_conversations_command,)
