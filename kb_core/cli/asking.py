"""What ``kb ask`` and ``kb chat`` share: the thread asked in, the answer echoed as it streams, what kb
searched for, and the outcome printed after it (sources or refusal, ``--explain``'s trace)."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import click

from kb_core.answers.prompts import RAG_V1, TEMPLATES
from kb_core.app import KnowledgeBase
from kb_core.conversations import Standalone
from kb_core.errors import KbError
from kb_core.output import envelope
from kb_core.service import words
from kb_core.storage.regions import LOW_CONFIDENCE_NOTE, rests_on_low_confidence
from kb_core.storage.threads import existing_thread, last_thread
from kb_core.terminal import shown
from kb_core.types import Answer, AnswerCitation, ComputedAnswer


def dim(text: str) -> str:
    """``text`` styled dim (what kb says about an answer, beside the answer)."""
    return click.style(text, dim=True)


def chosen_thread(kb: KnowledgeBase, thread_id: str | None, continue_last: bool) -> str | None:
    """The thread named by ``--thread ID`` or ``--continue`` (the last one), checked; None for a new one."""
    if thread_id is not None and continue_last:
        raise KbError("give --thread ID or --continue, not both")
    if thread_id is not None:
        return existing_thread(kb.store, thread_id.strip())
    if continue_last:
        last = last_thread(kb.store)
        if last is None:
            raise KbError("there is no thread to continue yet", hint="ask without --continue to start one")
        return last
    return None


def echoing(pieces: list[str]) -> Callable[[str], None]:
    """A token callback that prints the answer as it comes and keeps its pieces."""

    def on_token(text: str) -> None:
        pieces.append(text)
        click.echo(text, nl=False)

    return on_token


def streamed_text(answer: Answer, pieces: list[str]) -> str | None:
    """The text the model streamed for ``answer`` (None when no model was asked: a refusal by retrieval)."""
    asked = answer.model is not None and answer.refusal_reason not in ("no_chunks", "score_gate")
    return "".join(pieces) if asked else None


def searched_printer(asked: str) -> Callable[[Standalone], None]:
    """A callback that prints what kb searches for, before the answer streams, when it differs from ``asked``."""

    def print_searched(searched: Standalone) -> None:
        if searched.question.strip() != asked.strip():
            how = "completed by the model" if searched.method == "model" else "completed from the previous turn"
            click.echo(click.style(f"searched for: {shown(searched.question)}  ({how})", dim=True))

    return print_searched


def print_sources(answer: Answer | None) -> None:
    """The passages an answer cited (or the nearest candidates of a refusal)."""
    if answer is None:
        click.echo("nothing asked yet in this thread")
        return
    listed = answer.citations or answer.candidates
    click.echo(words.say("sources") if answer.citations else words.say("nothing_cited"))
    for c in listed:
        marker = f"[#{c.marker}] " if c.marker is not None else ""
        click.echo(f"  {marker}{_source(c)}")


def print_outcome(answer: Answer, streamed: str | None) -> None:
    """After the answer's text (``streamed``, if it was): sources and verdict, or refusal reason and candidates,
    in the answer service's words (:mod:`kb_core.service.words`)."""
    said = envelope("answer.v1", answer)
    if not answer.grounded:  # a refusal: kb's own words only, never the model's text it refused
        own = words.own_text(said)
        if own:
            click.echo(own if streamed is None else f"\n{own}")
    elif streamed is None:
        click.echo(answer.answer)
    else:
        click.echo()
        if streamed.strip() != answer.answer:  # citations repaired, sentences dropped, verdict withheld
            click.echo(dim(words.say("as_checked") + " ") + answer.answer)
    if answer.grounded:
        click.echo()
        click.echo(click.style(words.say("sources"), bold=True))
        for c in answer.citations:
            click.echo(f"  [#{c.marker}] {_source(c)}")
        verdict = click.style(words.say("grounded"), fg="green")
        stated = words.verdict_sentence(said)
        if stated:
            verdict += " " + stated
        if rests_on_low_confidence(answer.citations):
            verdict += click.style(f"; {LOW_CONFIDENCE_NOTE}", fg="yellow")
    else:
        verdict = click.style(words.refusal_line(said), fg="yellow")
        if words.lists_candidates(said):
            click.echo()
            click.echo(click.style(words.candidates_heading(said), bold=True))
            for c in answer.candidates:
                click.echo(f"  {_source(c)}")
    ignored = words.ignored_note([f"[#{m}]" for m in answer.ignored_instructions])
    if ignored:
        click.echo(click.style(ignored, fg="yellow"))
    usage = answer.usage
    timing = f"{usage.latency_ms / 1000:.1f} s"
    if usage.first_token_ms is not None:
        timing += f", first token {usage.first_token_ms / 1000:.1f} s"
    model = f"{answer.model.id}, " if answer.model else ""
    click.echo()
    click.echo(verdict + dim(f"  [{model}{answer.prompt_template_version}, {timing}]"))


def _source(citation: AnswerCitation) -> str:
    """``notes/a.md#L3-L9  (score 0.71)``; for OCR'd text also its page and region, and its confidence; for a
    recording also its moment (``talk.mp3#t=00:12:03,00:12:41``)."""
    line = f"{shown(citation.ref)}  (score {citation.score:.2f})"
    region = citation.region
    if region is not None:
        path = shown(citation.citation.path)
        read = f"read by OCR, confidence {region.confidence:.2f}" + (", low" if region.low else "")
        line += f"  {path}#{region.fragment()}  ({read})"
    if citation.moment is not None:  # a recording: when it is said, as a link plays it (talk.mp3#t=…)
        line += f"  {shown(citation.citation.path)}#{citation.moment.fragment()}"
    return line


def print_computation(computation: ComputedAnswer) -> None:
    """The computation behind a computed answer: as the model wrote it, each operand and where it is, the result."""
    worked_out = words.say("worked_out", working=shown(computation.working), result=computation.result)
    author = "kb" if computation.written_by == "kb" else "the model"
    click.echo(dim(f"── {worked_out} ({author} wrote {shown(computation.expression)})"))
    for operand in computation.operands:
        where = words.operand_place(attrs.asdict(operand), f"[#{operand.marker}]")
        click.echo(dim(f"  {shown(operand.literal):>14}  {where}"))
    if computation.stated is not None:
        stated = computation.stated
        line = words.say("stated_as", number=shown(stated.literal), marker=f"[#{stated.marker}]", line=stated.line)
        click.echo(dim(f"  {line}"))


def print_explain(answer: Answer) -> None:
    """The retrieval trace and the exact prompt the model was given (``--explain``)."""
    r = answer.retrieval
    click.echo(
        dim(
            f"── retrieval {r.trace_id}: {r.mode}, k={r.k}, gate {r.score_gate:.2f}, "
            f"{r.chunks_returned} returned, {r.chunks_used} packed, {r.took_ms:.0f} ms"
        )
    )
    for hit in answer.trace:
        click.echo(dim(f"  {hit.rank:>2}. {hit.score:.3f}  {shown(str(hit.citation))}  ({hit.retriever})"))
    if answer.prompt is not None:
        click.echo(dim(f"── prompt {answer.prompt_template_version}: system"))
        click.echo(dim(answer.prompt.system))
        if TEMPLATES.get(answer.prompt_template_version, RAG_V1).examples:
            click.echo(
                dim(f"── then the worked examples of {answer.prompt_template_version} (fixed), then the user message")
            )
        click.echo(dim("── prompt: user"))
        click.echo(dim(answer.prompt.user))
        if answer.prompt.grammar:
            click.echo(dim("── grammar (constrained generation)"))
            click.echo(dim(answer.prompt.grammar))
    if answer.sentences:
        click.echo(dim("── sentences, as kb checked them"))
        for s in answer.sentences:
            support = "" if s.support is None else f" {s.support:.0%}"
            backed = "".join(f"[#{m}]" for m in s.supported_by) or "nothing"
            how = "kb attributed" if s.attributed else "cited"
            status = (
                f"supported by {backed} ({how}){support}"
                if s.supported_by
                else ("needs no support" if s.kind != "claim" else f"UNSUPPORTED{support}")
            )
            click.echo(dim(f"  {s.kind:<15} {status}: {s.text}"))
    if answer.computation is not None:
        print_computation(answer.computation)
    if answer.answer_check is not None:
        click.echo(
            dim(f"── answer check: the model gives {answer.answer_check:.2f} that the passages state the answer")
        )
