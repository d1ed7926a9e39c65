"""Computed answers: the model writes the computation, kb evaluates it and checks every operand.

For a question whose answer must be worked out from numbers (:func:`~kb_core.answers.computation.
asks_for_computation`), the model is asked for one line, ``CALC: <expression> [#n]``, over numbers copied
from the passages: writing a short expression is what a small coder model does well, adding numbers up in
prose what it does worst. kb then

1. evaluates the expression exactly (:func:`~kb_core.answers.computation.check_computation`: no ``eval``,
   bounded), every operand a number written in a packed passage;
2. checks that the computation performs the operation the question's words ask for
   (:mod:`~kb_core.answers.operations`: a "change" is not a percentage) and that each operand sits where the
   question points, its row, its period's column or its sentence (:mod:`~kb_core.answers.operand_places`);
3. writes the answer itself, the result with its working and the passages cited
   (``-94 (680 - 774) [#1]``), so that the number kb vouches for is the one it computed.

The model may reply ``CALC: none`` when the passages hold no numbers to compute with, or restate one number
(``CALC: 98,725``, the passage states the figure): the question then takes the ordinary path. Any other failure
is a refusal with reason ``computation`` and the checker's code as ``refusal_detail`` (``operand_not_found``,
``operand_off_question``, ``operation_off_question``, ``expression_unparsed``, ``division_by_zero``, ...).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction

import attrs

from kb_core.answers.amounts import amount_unit
from kb_core.answers.citations import cited_markers
from kb_core.answers.computation import Computation, ComputationRefusal, check_computation
from kb_core.answers.counted import threshold_count
from kb_core.answers.numbers import Call, read_numbers
from kb_core.answers.operand_places import named_rows, names_no_row, operands_problem, rival_documents
from kb_core.answers.operations import operation_problem, unlike_terms
from kb_core.answers.restated import StatedResult, stated_as
from kb_core.answers.streaming import TokenCallback, elapsed_ms, stream_answer
from kb_core.answers.tables import stored_rows
from kb_core.answers.validation import Verdict
from kb_core.errors import Cancelled
from kb_core.extend.contracts import LanguageModel
from kb_core.types import (
    Answer,
    ComputedAnswer,
    ComputedOperand,
    GenerateRequest,
    RenderedPrompt,
    SentenceSupport,
    TokenUsage,
)

log = logging.getLogger(__name__)

#: What a refused computation says (the note says why).
REFUSAL = "Insufficient evidence: kb could not work the answer out from numbers written in the passages."

SYSTEM = (
    "You compute answers from numbered passages. Never do arithmetic yourself: write the calculation for a "
    "calculator. Reply with exactly one line:\n"
    "CALC: <expression> [#n]\n"
    "where <expression> uses only numbers copied exactly as written in passage n (from the row and column the "
    "question names), + - * / and parentheses, and sum(), avg(), min(), max(), count(). A change is new - old; "
    "a percentage change is (new - old) / old * 100; a share is part / whole * 100. "
    "If the passages do not hold the numbers, reply: CALC: none"
)

#: Worked examples shown before the question (the same for every question, so a backend may cache them).
EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "[#1] reports/a.pdf > Revenue\nRevenue: 2019 = 1,571.7; 2018 = 1,337.7\n"
        "Costs: 2019 = (420.5); 2018 = (398.0)\n\n"
        "Rows the question names:\n[#1] Revenue: 2019 = 1,571.7; 2018 = 1,337.7\n\n"
        "Question: By how much did revenue change from 2018 to 2019?",
        "CALC: 1,571.7 - 1,337.7 [#1]",
    ),
    (
        "[#1] reports/b.pdf > Staff\nHeadcount: 2019 = 120; 2018 = 95; 2017 = 88\n"
        "Offices: 2019 = 4; 2018 = 3; 2017 = 3\n\n"
        "Rows the question names:\n[#1] Headcount: 2019 = 120; 2018 = 95; 2017 = 88\n\n"
        "Question: What was the percentage change in headcount between 2018 and 2019?",
        "CALC: (120 - 95) / 95 * 100 [#1]",
    ),
    (
        "[#1] reports/c.pdf > Assets\nCash amounted to $12.4 million and receivables to $30.1 million in 2019.\n\n"
        "Question: What was the average of cash and receivables in 2019?",
        "CALC: avg(12.4, 30.1) [#1]",
    ),
)

#: Heads the rows kb found that the question names (its words are their label's), before the question.
ROWS_HEADING = "Rows the question names:"
MAX_TOKENS = 96  # one line of computation
_REPLY = re.compile(r"CALC\s*:\s*(?P<expression>.*)", re.IGNORECASE)
_NONE = re.compile(r"^\s*(?:none|n/?a|-)?\s*\.?\s*$", re.IGNORECASE)
_MARKERS = re.compile(r"\s*(?:\[\s*#?\s*\d+\s*\]\s*)+\.?\s*$")


@attrs.frozen
class Reply:
    """What the model wrote: the ``expression``, the passages it cited, and the result it ``stated`` after an
    ``=`` ('' when none: it is not asked for one)."""

    expression: str
    markers: tuple[int, ...]
    stated: str = ""


def user_text(entries: Sequence[str], question: str, rows: Sequence[tuple[int, str]] = ()) -> str:
    """The user message: the packed entries, the table ``rows`` that fit the question best (their passage's marker
    and the row as the model reads it), then the question (as :data:`EXAMPLES` show them)."""
    pointed = "".join(f"\n[#{marker}] {row}" for marker, row in rows)
    pointer = f"\n\n{ROWS_HEADING}{pointed}" if rows else ""
    return "\n\n".join(entries) + pointer + f"\n\nQuestion: {question}"


def request(user: str, *, temperature: float, seed: int | None) -> GenerateRequest:
    """The model's request for ``user`` (the packed passages and the question, as the answer prompt has them)."""
    return GenerateRequest(
        system=SYSTEM,
        user=user,
        stop=("\n",),
        max_tokens=MAX_TOKENS,
        temperature=temperature,
        seed=seed,
        examples=EXAMPLES,
    )


def read_reply(raw: str) -> Reply | None:
    """The computation in the model's reply; None when it wrote none (``CALC: none``, or no ``CALC:`` line)."""
    match = _REPLY.search(raw)
    if match is None:
        return None
    line = match.group("expression").replace("`", " ").strip()
    markers = cited_markers(line)
    expression, _, stated = _MARKERS.sub("", line).strip().partition("=")
    if _NONE.match(expression):
        return None
    return Reply(expression.strip(), markers, stated.strip())


def computed(
    reply: Reply,
    passages: Mapping[int, str],
    question: str,
    documents: Mapping[int, str] | None = None,
    beside: Mapping[int, str] | None = None,
) -> tuple[ComputedAnswer, str] | ComputationRefusal | None:
    """The checked computation of ``reply`` over ``passages`` and the answer's text, or why it is refused; None
    when it only restates one number of the passages (:func:`restates_one_number`: the passage states the answer).
    ``documents`` names each passage's document: another document with a row that fits the question as well
    makes the question ambiguous (refused, both named), since it does not say which report it means. A sentence
    of ``passages`` or ``beside`` (retrieved passages the model did not read) in an operand's document that
    states the result as the report rounds it is said and cited (:mod:`kb_core.answers.restated`)."""
    passages = {marker: stored_rows(text) for marker, text in passages.items()}  # a Markdown table's rows too
    done = check_computation(reply.expression, passages, question=question)
    if isinstance(done, ComputationRefusal):
        return done
    if restates_one_number(done):
        return None
    if reply.stated and not _states(reply.stated, done):
        shown = reply.stated[:40]
        return ComputationRefusal(
            reply.expression,
            "result_mismatch",
            f"the model stated {shown}, but the computation gives {done.result_text()}",
        )
    tree = done.tree
    percents = [None if o.source == "constant" else o.percent for o in done.operands]
    operation = None if tree is None else operation_problem(question, tree) or unlike_terms(tree, percents)
    if operation is not None:
        return ComputationRefusal(reply.expression, "operation_off_question", operation)
    placed = None if tree is None else operands_problem(done, tree, passages, question)
    if placed is not None:
        return ComputationRefusal(reply.expression, "operand_off_question", placed)
    ambiguous = _ambiguity(done, passages, documents or {}, question)
    if ambiguous is not None:
        return ComputationRefusal(reply.expression, "ambiguous_source", ambiguous)
    markers = _markers_of(done, reply.markers)
    currency, scale = amount_unit(done, passages, documents or {})
    result = done.result_text(currency or None, scale)
    text = f"{result} ({done.working}) {''.join(f'[#{m}]' for m in markers)}"
    also = stated_as(done, scale, {**passages, **(beside or {})}, question, documents or {})
    if also is not None:  # the report's own figure for it, rounded: said, and cited
        text += f", stated as {also.number.text} [#{also.marker}]"
    return _record(done, markers, result, also), text


def restates_one_number(done: Computation) -> bool:
    """Whether ``done`` works nothing out: one number of the passages, alone or with constants (``98,725``,
    ``29% - 0``). The passage states the answer ("interest income rose by $16.9 million"), so the question
    takes the ordinary path, whose checks are made for stated answers."""
    return not _is_count(done) and sum(operand.source == "passage" for operand in done.operands) < 2


def _is_count(done: Computation) -> bool:
    return isinstance(done.tree, Call) and done.tree.name == "count"


@attrs.frozen
class WorkedOut:
    """A computed answer's ``verdict`` (grounded, or refused with reason ``computation``), its ``record`` (None
    when refused), the model's ``usage``, the ``prompt`` it was given and why its stream ended (no prompt and no
    reason when kb wrote the computation itself)."""

    verdict: Verdict
    record: ComputedAnswer | None
    usage: TokenUsage
    prompt: RenderedPrompt | None
    finish_reason: str | None


def work_out(
    llm: LanguageModel,
    entries: Sequence[str],
    question: str,
    passages: Mapping[int, str],
    documents: Mapping[int, str],
    *,
    temperature: float,
    seed: int | None,
    started: float,
    beside: Mapping[int, str] | None = None,
) -> WorkedOut | None:
    """Ask ``llm`` for the computation over the packed ``entries`` and check it against ``passages`` (their text
    by marker, instructions removed; ``documents`` their paths, and those of ``beside``, passages it did not read
    that may state the result: :func:`computed`); None when it writes none (``CALC: none``, or no
    ``CALC:`` line). A count of periods over a threshold kb writes itself, and asks the model only when its own
    is refused (:mod:`kb_core.answers.counted`)."""
    rows = {m: stored_rows(t) for m, t in passages.items()}
    own = counted_by_kb(question, passages, rows, documents, started)
    if own is not None:
        return own
    user = user_text(entries, question, named_rows(rows, question))
    raw, done, first_token_ms, generation_ms = stream_answer(
        llm, request(user, temperature=temperature, seed=seed), None, started
    )
    reply = read_reply(raw) if done.finish_reason != "error" else None
    if reply is None:
        return None
    outcome = computed(reply, passages, question, documents, beside)
    if outcome is None:
        return None
    if isinstance(outcome, ComputationRefusal):
        note = f"the computation {outcome.expression[:80]!r} was refused: {outcome.detail}"
        verdict = Verdict(
            grounded=False, refusal_reason="computation", note=note, text=REFUSAL, refusal_detail=outcome.reason
        )
        record = None
    else:
        record, text = outcome
        verdict = verdict_of(record, text)
    usage = TokenUsage(
        prompt_tokens=done.prompt_tokens,
        completion_tokens=done.completion_tokens,
        latency_ms=elapsed_ms(started),
        first_token_ms=first_token_ms,
        generation_ms=generation_ms,
        cached_prompt_tokens=done.cached_tokens,
    )
    return WorkedOut(verdict, record, usage, RenderedPrompt(SYSTEM, user, None), done.finish_reason)


def counted_by_kb(
    question: str, passages: Mapping[int, str], rows: Mapping[int, str], documents: Mapping[int, str], started: float
) -> WorkedOut | None:
    """The checked count kb writes itself (:func:`~kb_core.answers.counted.threshold_count` over ``rows``, the
    ``passages`` as :func:`~kb_core.answers.tables.stored_rows` gives them), or None when it writes none or the
    checks refuse it."""
    written = threshold_count(question, rows)
    if written is None:
        return None
    expression, marker = written
    outcome = computed(Reply(expression, (marker,), ""), passages, question, documents)
    if outcome is None or isinstance(outcome, ComputationRefusal):
        log.info("kb's own count %r was refused; the model is asked", expression[:80])
        return None
    record, text = outcome
    usage = TokenUsage(latency_ms=elapsed_ms(started))
    return WorkedOut(verdict_of(record, text), attrs.evolve(record, written_by="kb"), usage, None, None)


def verdict_of(record: ComputedAnswer, text: str) -> Verdict:
    """The grounded verdict of a checked computation: one claim, backed by the passages that hold its operands."""
    stated = () if record.stated is None or record.stated.marker is None else (record.stated.marker,)
    cited = tuple(dict.fromkeys((*record.markers, *stated)))  # the passage that states it rounded, too
    sentence = SentenceSupport(text, "claim", cited=cited, supported_by=cited, support=1.0)
    return Verdict(grounded=True, cited=cited, text=text, sentences=(sentence,))


def show(answer: Answer, on_token: TokenCallback | None) -> None:
    """Give a grounded computed answer's text to ``on_token`` (a refusal's is the answer's own, shown after)."""
    if on_token is None or not answer.grounded:
        return
    try:
        on_token(answer.answer)
    except Cancelled:
        raise
    except Exception as exc:  # a closed terminal: the answer is kept all the same
        log.info("token callback failed (%s)", exc)


def _ambiguity(
    done: Computation, passages: Mapping[int, str], documents: Mapping[int, str], question: str
) -> str | None:
    """Why the question does not say which document's table it is about, or None: another document's row fits it
    as well, or it names no row in particular ("the total") and the passages come from several documents."""
    used = sorted({documents.get(o.passage, "") for o in done.operands if o.passage is not None})
    others = rival_documents(done, passages, documents, question)
    if not others and names_no_row(question):
        others = sorted(set(documents.values()) - set(used))
    if not others:
        return None
    named = ", ".join([*used, *others][:4])
    return f"the question fits the tables of several documents ({named}): say which one it is about"


def _states(stated: str, done: Computation) -> bool:
    """Whether the number ``stated`` is the computation's result, as rounded to the decimals it is written with."""
    numbers = read_numbers(stated)
    if len(numbers) != 1:
        return False
    value = numbers[0].value
    tolerance = Fraction(1, 2 * 10 ** numbers[0].decimals)
    return abs(abs(value) - abs(done.result)) <= tolerance


def _markers_of(done: Computation, cited: tuple[int, ...]) -> tuple[int, ...]:
    """The passages the answer cites: those that hold its operands, the model's own first among them."""
    holding = {o.passage for o in done.operands if o.passage is not None}
    ordered = [m for m in cited if m in holding] + sorted(holding - set(cited))
    return tuple(dict.fromkeys(ordered))


def _record(done: Computation, markers: tuple[int, ...], result: str, also: StatedResult | None) -> ComputedAnswer:
    operands = tuple(
        ComputedOperand(o.literal, _value_text(o.value), o.source, marker=o.passage, line=o.line) for o in done.operands
    )
    stated = None
    if also is not None:
        number = also.number
        stated = ComputedOperand(number.text, _value_text(number.value), "passage", also.marker, also.line)
    return ComputedAnswer(done.expression, done.working, result, operands, markers, stated=stated)


def _value_text(value: Fraction) -> str:
    return str(value) if value.denominator == 1 else f"{float(value):.6g}"
