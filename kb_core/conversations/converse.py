"""Asking in a thread: the follow-up made standalone, the turns before it shown, the turn kept.

>>> from kb_core.conversations import EarlierTurn
>>> history_block([EarlierTurn("What does the daemon do?", "It serves maps [#1].")], 96, lambda t: len(t.split()))
'[Earlier in this conversation; not evidence]\\nQ: What does the daemon do?\\nA: It serves maps.'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from kb_core.answers.pipeline import AskOptions, kb_pipeline
from kb_core.answers.streaming import TokenCallback
from kb_core.conversations.standalone import METHODS, EarlierTurn, Standalone, StandaloneMethod, standalone
from kb_core.errors import KbError
from kb_core.limits import CheckedText, check_text
from kb_core.retrieval.access import asking_person
from kb_core.storage.threads import add_turn, stored_thread
from kb_core.types import Answer

if TYPE_CHECKING:
    from kb_core.app import KnowledgeBase

_MARKERS = re.compile(r"\s*\[#\d+\]")
HISTORY_HEADER = "[Earlier in this conversation; not evidence]"


@attrs.frozen
class Turn:
    """One question asked in a thread and its answer (``turn.v1``): what was searched and what it cost."""

    thread_id: str
    position: int
    asked: str
    standalone: str
    method: StandaloneMethod
    rewrite_ms: float
    rewrite_prompt_tokens: int
    answer: Answer


def history_block(earlier: Sequence[EarlierTurn], budget: int, count_tokens: Callable[[str], int]) -> str:
    """The turns before a follow-up as the model sees them, newest kept first, within ``budget`` tokens.

    Each turn is its question and answer without citation markers (their passages are not
    shown again: a turn cites only what was packed for it). Empty when nothing fits.
    """
    kept: list[str] = []
    used = count_tokens(HISTORY_HEADER)
    for turn in reversed(earlier):
        words = _MARKERS.sub("", turn.answer).split()
        while True:  # the whole answer, else as many of its first words as fit, else the question alone
            lines = f"Q: {turn.question}" + (f"\nA: {' '.join(words)}" if words else "")
            cost = count_tokens("\n" + lines)  # with the line break that joins it
            if used + cost <= budget or not words:
                break
            words = words[: min(len(words) - 1, len(words) * (budget - used) // cost)]
        if used + cost > budget:
            break
        kept.insert(0, lines)
        used += cost
    return "\n".join([HISTORY_HEADER, *kept]) if kept else ""


def ask_following(
    kb: KnowledgeBase,
    question: CheckedText,
    earlier: Sequence[EarlierTurn],
    options: AskOptions = AskOptions(),
    on_token: TokenCallback | None = None,
    method: StandaloneMethod | None = None,
    on_standalone: Callable[[Standalone], None] | None = None,
    *,
    save: bool = True,
) -> tuple[Standalone, Answer]:
    """Answer ``question`` as a follow-up of the ``earlier`` turns (oldest first): made standalone, then asked.

    The answer is checked like any single question's (a follow-up the notes do not answer is
    refused); it is stored with the standalone question, which reads on its own. ``question``
    arrives checked (:func:`~kb_core.limits.check_text`, in :func:`ask_in_thread` or by the caller).
    ``on_standalone`` hears what kb will search with before retrieval starts. ``save=False``: the
    answer is not saved here (:func:`ask_in_thread` saves it with its turn).
    """
    method = method or configured_method(kb)
    llm = lambda: kb.language_model(options.backend)  # noqa: E731 - loaded only when a rewrite or an answer needs it
    searched = standalone(question, earlier, method, llm)
    if on_standalone is not None:
        on_standalone(searched)
    history = ""
    budget = kb.config.conversations.history_tokens
    if earlier and budget > 0:
        history = history_block(earlier, budget, llm().count_tokens)
    answer = kb_pipeline(kb, options.backend).ask(searched.question, options, on_token, history, save=save)
    return searched, answer


def ask_in_thread(
    kb: KnowledgeBase,
    question: str,
    thread_id: str | None = None,
    options: AskOptions = AskOptions(),
    on_token: TokenCallback | None = None,
    on_standalone: Callable[[Standalone], None] | None = None,
) -> Turn:
    """Ask ``question`` in the thread ``thread_id`` (a new thread when None) and keep the turn.

    The question is checked here, once (:func:`~kb_core.limits.check_text`): a mistake is one KbError line.
    ``on_token`` hears the answer as it is written; ``on_standalone`` what kb searches with, first.
    """
    checked = check_text(question, "question")
    earlier: list[EarlierTurn] = []
    if thread_id is not None:
        turns = stored_thread(kb.store, thread_id).turns  # a refusal's text says nothing of the topic
        earlier = [
            EarlierTurn(t.standalone, str(t.answer["answer"]) if t.answer.get("grounded") else "") for t in turns
        ]
    searched, answer = ask_following(kb, checked, earlier, options, on_token, on_standalone=on_standalone, save=False)
    thread_id, position = add_turn(  # the answer is saved with its turn; a thread exists once it has one
        kb.store,
        thread_id,
        question,
        searched.question,
        searched.method,
        answer,
        searched.ms,
        searched.prompt_tokens,
        owner=asking_person(),  # a person's new thread and answer are theirs, in the turn's transaction
    )
    return Turn(
        thread_id, position, question, searched.question, searched.method, searched.ms, searched.prompt_tokens, answer
    )


def configured_method(kb: KnowledgeBase) -> StandaloneMethod:
    """How ``kb``'s configuration makes follow-ups standalone (``[conversations] standalone``), checked."""
    chosen = kb.config.conversations.standalone
    for method in METHODS:
        if chosen == method:
            return method
    raise KbError(f"unknown [conversations] standalone {chosen!r}", hint=f"use one of: {', '.join(METHODS)}")
