"""Commands for answers: `kb ask`, `kb eval answers` and `kb eval compare`."""

from __future__ import annotations

from pathlib import Path

import click

from kb_core.answers.again import AskedAgain, changes_since
from kb_core.bounds import SEED, TEMPERATURE
from kb_core.cli.asking import (
    chosen_thread,
    dim,
    echoing,
    print_explain,
    print_outcome,
    searched_printer,
    streamed_text,
)
from kb_core.cli.base import Session, emit, json_option, pass_session, terminal_progress
from kb_core.cli.checks import K_RANGE
from kb_core.cli.options import Bounded, backend_option, constrained_option, input_file, mode_option, out_option
from kb_core.crashes import last_crash
from kb_core.errors import EXIT_NO_RESULT, KbError
from kb_core.storage.answers import stored_answer


@click.command("ask")
@click.argument("question", required=False)
@click.option("--again", "again_id", metavar="ID", help="Ask a stored question again and show what changed.")
@click.option("--continue", "continue_last", is_flag=True, help="Ask a follow-up in the last thread.")
@click.option("--thread", "thread_id", metavar="ID", help="Ask a follow-up in the thread ID ('kb threads list').")
@backend_option("Language model backend for this question (default: [models.llm] backend).")
@click.option("--k", "k", type=K_RANGE, help="Chunks to retrieve (at least [search] default_k).")
@mode_option("Retrieval mode (default: [search] mode, normally hybrid).")
@click.option("--temperature", type=Bounded(TEMPERATURE), help="Sampling temperature (default: config, 0).")
@click.option("--seed", type=Bounded(SEED), help="Sampling seed (default: [models.llm] seed).")
@click.option("--explain", is_flag=True, help="Show the retrieval trace and the exact prompt; keep the packed chunks.")
@constrained_option("Let the model cite only markers that exist (GBNF grammar; llamacpp). Default: [rag] constrained.")
@json_option
@pass_session
def ask_command(
    session: Session,
    question: str | None,
    again_id: str | None,
    continue_last: bool,
    thread_id: str | None,
    backend: str | None,
    k: int | None,
    mode: str | None,
    temperature: float | None,
    seed: int | None,
    explain: bool,
    constrained: bool | None,
    as_json: bool,
) -> int:
    """Answer QUESTION from the knowledge base, citing the passages used (path#L12-L34).

    The answer streams as it is generated. It is grounded only when every [#n] it cites is a
    passage it was given and kb finds every claim in it in a packed passage (--explain shows
    each sentence's support); otherwise, or when nothing relevant is found, kb refuses and says
    why. Exit code 1 for a refusal.

    Each question starts a thread: --continue (the last thread) and --thread ID ask a follow-up
    ("and since which version?"), which kb makes a question that reads on its own from the turns
    before; it says what it searched for.
    """
    from kb_core.answers.pipeline import AskOptions
    from kb_core.service import AnswerService

    crashed = last_crash()
    if crashed:
        click.echo(f"kb: warning: {crashed}", err=True)
    options = AskOptions(
        k=k, mode=mode, temperature=temperature, seed=seed, explain=explain, constrained=constrained, backend=backend
    )
    pieces: list[str] = []
    on_token = echoing(pieces)
    kb = session.kb(create=False)
    if (question is None) == (again_id is None):
        raise KbError("give a QUESTION or --again ID (one of them)", hint="see 'kb answers list' for stored ids")
    if again_id and (continue_last or thread_id):
        raise KbError("--again asks a stored question alone: leave out --continue and --thread")
    in_thread = continue_last or thread_id is not None
    current = chosen_thread(kb, thread_id, continue_last) if in_thread else None
    previous = stored_answer(kb.store, again_id.strip()) if again_id else None
    asked = previous.question if previous else str(question)
    turn = None
    service = AnswerService.over(kb)  # (kb's local paths are the user's own: shown)
    with terminal_progress() as progress:  # joining and loading a model the first time
        kb.progress = progress
        if previous is None:  # a question starts a thread that --continue goes on with
            searched = None if as_json or not in_thread else searched_printer(asked)
            turn = service.ask_in_thread(asked, current, options, None if as_json else on_token, on_standalone=searched)
            answer = turn.answer
        else:
            answer = service.ask(asked, options, None if as_json else on_token)

    def human() -> None:
        print_outcome(answer, streamed_text(answer, pieces))
        if turn is not None and in_thread:
            click.echo(dim(f"thread {turn.thread_id}, turn {turn.position}"))
        if explain:
            print_explain(answer)
        if previous is not None:
            changes = again.changes
            click.echo(
                "\n" + ("changed since " + previous.created_at + ":" if changes else "the same answer as before")
            )
            for change in changes:
                click.echo(f"  - {change}")

    if turn is not None and in_thread:
        emit(as_json, "turn.v1", turn, human)
    elif previous is None:
        emit(as_json, "answer.v1", answer, human)
    else:
        again = AskedAgain(previous, answer, changes_since(previous, answer))
        emit(as_json, "answer_again.v1", again, human)
    return 0 if answer.grounded else EXIT_NO_RESULT


@click.command("answers")
@input_file("--golden", "golden_file", "Golden set: JSONL with question, answerable, expected_docs, must_contain.")
@out_option("Write report.json here (default: <kb>/eval/answers-<run id>).")
@backend_option()
@mode_option("Retrieval mode (default: [search] mode).")
@constrained_option("Constrained generation (default: [rag] constrained).")
@json_option
@pass_session
def eval_answers_command(
    session: Session,
    golden_file: Path,
    out_dir: Path | None,
    backend: str | None,
    mode: str | None,
    constrained: bool | None,
    as_json: bool,
) -> None:
    """Ask every golden question; report grounded rate, correct refusals, citation precision, latency."""
    from kb_core.answers.pipeline import AskOptions
    from kb_core.evaluation.answers import evaluate_answers
    from kb_core.evaluation.golden import load_golden

    golden = load_golden(golden_file)
    options = AskOptions(mode=mode, constrained=constrained, backend=backend)
    with terminal_progress(enabled=not as_json) as progress:
        report = evaluate_answers(
            session.kb(create=False), golden, options, golden_file=golden_file, out_dir=out_dir, progress=progress
        )

    def human() -> None:
        m = report.metrics
        click.echo(
            f"{m.questions} questions ({m.answerable} answerable), run {report.run_id}, "
            f"{report.model.id if report.model else '-'}{', constrained' if report.constrained else ''}"
        )
        for name, value in m.rates().items():
            shown = "n/a" if value is None else f"{value:.3f}"
            click.echo(f"  {name:<24} {shown}")
        click.echo(f"  {'latency p50 / p95':<24} {m.latency_ms_p50 / 1000:.1f} s / {m.latency_ms_p95 / 1000:.1f} s")
        v = m.verdicts
        if v.labelled:
            click.echo(
                f"  {'verdicts':<24} {v.stated} stated of {v.labelled} ({v.right} right, precision "
                f"{'n/a' if v.precision is None else f'{v.precision:.3f}'}), {v.withheld} withheld"
            )
            curve = ", ".join(f"{p.threshold:.2f}: {p.precision or 0:.2f}@{p.coverage or 0:.2f}" for p in v.curve[::4])
            click.echo(f"  {'confidence: precision@coverage':<24} {curve}")
        for r in report.results:
            mark = "ok " if r.correct else "BAD"
            outcome = "grounded" if r.grounded else f"refused:{r.refusal_reason}"
            click.echo(f"  {mark} {r.id:<10} {outcome:<26} {r.question[:60]}")
        click.echo(f"report: {report.report_path}")
        if report.verdict_plot:
            click.echo(f"risk-coverage plot: {report.verdict_plot}")
        elif v.labelled:
            click.echo("no risk-coverage plot: pip install 'kb-core[evaluation]' (matplotlib) to draw it")

    emit(as_json, "answer_report.v1", report, human)


@click.command("compare")
@click.argument("baseline", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("candidate", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
def eval_compare_command(baseline: Path, candidate: Path, as_json: bool) -> None:
    """Print the metric deltas from report BASELINE to report CANDIDATE (report.json files)."""
    from kb_core.evaluation.compare import compare_reports

    comparison = compare_reports(baseline, candidate)

    def human() -> None:
        click.echo(f"{comparison.schema}: {comparison.baseline} -> {comparison.candidate}")
        click.echo(f"  {'metric':<32} {'baseline':>10} {'candidate':>10} {'delta':>10}")
        for d in comparison.deltas:
            a = "n/a" if d.baseline is None else f"{d.baseline:.4f}"
            b = "n/a" if d.candidate is None else f"{d.candidate:.4f}"
            delta = "" if d.delta is None else f"{d.delta:+.4f}"
            click.echo(f"  {d.metric:<32} {a:>10} {b:>10} {delta:>10}")

    emit(as_json, "report_compare.v1", comparison, human)


COMMANDS = (ask_command,)
EVAL_COMMANDS = (eval_answers_command, eval_compare_command)
