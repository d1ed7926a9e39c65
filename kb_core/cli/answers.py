"""Commands for answers: `kb ask`, `kb eval answers` and `kb eval compare`."""

from __future__ import annotations

from pathlib import Path

import click

from kb_core.answers.again import AskedAgain, changes_since
from kb_core.answers.prompts import RAG_V1, TEMPLATES
from kb_core.cli.base import Session, emit, json_option, pass_session, terminal_progress
from kb_core.cli.checks import K_RANGE, check_query
from kb_core.crashes import last_crash
from kb_core.errors import EXIT_NO_RESULT, KbError
from kb_core.storage.answers import stored_answer
from kb_core.terminal import shown
from kb_core.types import NOT_ANSWERED, SEARCH_MODES, Answer

MODE_CHOICE = click.Choice(list(SEARCH_MODES))


def _dim(text: str) -> str:
    return click.style(text, dim=True)


def _print_explain(answer: Answer) -> None:
    """The retrieval trace and the exact prompt the model was given."""
    r = answer.retrieval
    click.echo(
        _dim(
            f"── retrieval {r.trace_id}: {r.mode}, k={r.k}, gate {r.score_gate:.2f}, "
            f"{r.chunks_returned} returned, {r.chunks_used} packed, {r.took_ms:.0f} ms"
        )
    )
    for hit in answer.trace:
        click.echo(_dim(f"  {hit.rank:>2}. {hit.score:.3f}  {shown(str(hit.citation))}  ({hit.retriever})"))
    if answer.prompt is not None:
        click.echo(_dim(f"── prompt {answer.prompt_template_version}: system"))
        click.echo(_dim(answer.prompt.system))
        if TEMPLATES.get(answer.prompt_template_version, RAG_V1).examples:
            click.echo(
                _dim(f"── then the worked examples of {answer.prompt_template_version} (fixed), then the user message")
            )
        click.echo(_dim("── prompt: user"))
        click.echo(_dim(answer.prompt.user))
        if answer.prompt.grammar:
            click.echo(_dim("── grammar (constrained generation)"))
            click.echo(_dim(answer.prompt.grammar))
    if answer.sentences:
        click.echo(_dim("── sentences, as kb checked them"))
        for s in answer.sentences:
            support = "" if s.support is None else f" {s.support:.0%}"
            backed = "".join(f"[#{m}]" for m in s.supported_by) or "nothing"
            how = "kb attributed" if s.attributed else "cited"
            status = (
                f"supported by {backed} ({how}){support}"
                if s.supported_by
                else ("needs no support" if s.kind != "claim" else f"UNSUPPORTED{support}")
            )
            click.echo(_dim(f"  {s.kind:<15} {status}: {s.text}"))
    if answer.answer_check is not None:
        click.echo(
            _dim(f"── answer check: the model gives {answer.answer_check:.2f} that the passages state the answer")
        )


def _verdict_line(answer: Answer) -> str:
    """How kb stated a yes/no verdict: with its confidence, or why it withheld it."""
    sure = "unknown" if answer.verdict_confidence is None else f"{answer.verdict_confidence:.2f}"
    if answer.verdict_withheld:
        return f"; verdict withheld (the model said {answer.verdict}, confidence {sure}: the passages do not settle it)"
    return f"; verdict {answer.verdict} (confidence {sure})"


def streamed_text(answer: Answer, pieces: list[str]) -> str | None:
    """The text the model streamed for ``answer`` (None when no model was asked: a refusal by retrieval)."""
    asked = answer.model is not None and answer.refusal_reason not in ("no_chunks", "score_gate")
    return "".join(pieces) if asked else None


def print_outcome(answer: Answer, streamed: str | None) -> None:
    """After the answer's text (``streamed``, if it was): sources and verdict, or refusal reason and candidates."""
    if streamed is None:
        click.echo(answer.answer)
    else:
        click.echo()
        if streamed.strip() != answer.answer:  # citations repaired, sentences dropped, verdict withheld, withdrawn
            click.echo(_dim("As checked: ") + answer.answer)
    if answer.grounded:
        click.echo()
        click.echo(click.style("Sources:", bold=True))
        for c in answer.citations:
            click.echo(f"  [#{c.marker}] {shown(c.ref)}  (score {c.score:.2f})")
        verdict = click.style("grounded", fg="green")
        if answer.verdict in ("yes", "no"):
            verdict += _verdict_line(answer)
    else:
        verdict = click.style(f"refused ({answer.refusal_reason})", fg="yellow")
        if answer.note:
            verdict += f": {answer.note}"
        if answer.candidates and answer.refusal_reason != "score_gate":  # the gate's text lists them already
            click.echo()
            withdrawn = answer.refusal_detail == NOT_ANSWERED  # its candidates are what it cited
            click.echo(click.style("It cited:" if withdrawn else "Nearest candidates:", bold=True))
            for c in answer.candidates:
                click.echo(f"  {shown(c.ref)}  (score {c.score:.2f})")
    if answer.ignored_instructions:
        markers = ", ".join(f"[#{m}]" for m in answer.ignored_instructions)
        click.echo(
            click.style(
                f"Note: {markers} contains instructions addressed to the assistant; kb treated them "
                "as data and ignored them.",
                fg="yellow",
            )
        )
    usage = answer.usage
    timing = f"{usage.latency_ms / 1000:.1f} s"
    if usage.first_token_ms is not None:
        timing += f", first token {usage.first_token_ms / 1000:.1f} s"
    model = f"{answer.model.id}, " if answer.model else ""
    click.echo()
    click.echo(verdict + _dim(f"  [{model}{answer.prompt_template_version}, {timing}]"))


@click.command("ask")
@click.argument("question", callback=check_query, required=False)
@click.option("--again", "again_id", metavar="ID", help="Ask a stored question again and show what changed.")
@click.option("--continue", "continue_last", is_flag=True, help="Ask a follow-up in the last thread.")
@click.option("--thread", "thread_id", metavar="ID", help="Ask a follow-up in the thread ID ('kb threads list').")
@click.option("--backend", help="Language model backend for this question (default: [models.llm] backend).")
@click.option("--k", "k", type=K_RANGE, help="Chunks to retrieve (at least [search] default_k).")
@click.option("--mode", type=MODE_CHOICE, help="Retrieval mode (default: [search] mode, normally hybrid).")
@click.option("--temperature", type=click.FloatRange(min=0.0), help="Sampling temperature (default: config, 0).")
@click.option("--seed", type=int, help="Sampling seed (default: [models.llm] seed).")
@click.option("--explain", is_flag=True, help="Show the retrieval trace and the exact prompt; keep the packed chunks.")
@click.option(
    "--constrained/--unconstrained",
    default=None,
    help="Let the model cite only markers that exist (GBNF grammar; llamacpp). Default: [rag] constrained.",
)
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
    from kb_core.answers.pipeline import AskOptions, ask
    from kb_core.cli.threads import chosen_thread, echoing, searched_printer
    from kb_core.conversations import ask_in_thread

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
    with terminal_progress() as progress:  # joining and loading a model the first time
        kb.progress = progress
        if previous is None:  # a question starts a thread that --continue goes on with
            searched = None if as_json or not in_thread else searched_printer(asked)
            turn = ask_in_thread(kb, asked, current, options, None if as_json else on_token, searched)
            answer = turn.answer
        else:
            answer = ask(kb, asked, options, None if as_json else on_token)

    def human() -> None:
        print_outcome(answer, streamed_text(answer, pieces))
        if turn is not None and in_thread:
            click.echo(_dim(f"thread {turn.thread_id}, turn {turn.position}"))
        if explain:
            _print_explain(answer)
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
@click.option(
    "--golden",
    "golden_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Golden set: JSONL with question, answerable, expected_docs, must_contain.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write report.json here (default: <kb>/eval/answers-<run id>).",
)
@click.option("--backend", help="Language model backend (default: [models.llm] backend).")
@click.option("--mode", type=MODE_CHOICE, help="Retrieval mode (default: [search] mode).")
@click.option(
    "--constrained/--unconstrained", default=None, help="Constrained generation (default: [rag] constrained)."
)
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
