"""A follow-up made standalone before retrieval: "Which port does it listen on?" searched on its own.

A question that needs no context (the first of a thread, or one that names what it is about)
is searched as asked. One that leans on the turns before it (a pronoun, "the same", a bare
"what about ...", very few words) is completed from them, by one of two methods:

``model``          the language model names what the question refers to, with a short bounded
                   prompt (the earlier questions, the last answer's opening, the question; at
                   most :data:`TOPIC_MAX_TOKENS` tokens back), and kb appends it to the question:
                   "Which port does it listen on? (the Heliograph daemon)".
``previous_turn``  no model: the content words of the previous turn's standalone question
                   that the question lacks are appended to it.

>>> leans_on_context("Which port does it listen on?")
True
>>> leans_on_context("Which port does the Heliograph daemon listen on?")
False
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import attrs
import regex

from kb_core.answers.streaming import elapsed_ms, stream_answer
from kb_core.extend.contracts import LanguageModel
from kb_core.limits import LIMITS, CheckedText
from kb_core.types import STANDALONE_METHODS, GenerateRequest, StandaloneMethod

#: How a question is made standalone, by name (``[conversations] standalone``, ``kb eval conversations --method``).
METHODS = STANDALONE_METHODS
#: The most tokens the model may write when it names what a follow-up refers to.
TOPIC_MAX_TOKENS = 16
#: The characters of the last answer the model is shown (its opening names the topic).
ANSWER_CHARS = 240
#: Questions of at most this many words lean on the turns before them.
SHORT_QUESTION_WORDS = 4

_LEANING = regex.compile(
    r"\b(?:it|its|it's|they|them|their|theirs|this|that|these|those|he|him|his|she|her|hers|there|"
    r"the same|such|above|former|latter|one|ones|else|other|others|another|also|too|either|neither)\b"
    r"|^\W*(?:and|or|but|so|what about|how about|then|why not)\b"
    r"|그것|그거|이것|이거|거기|그는|그녀|그들|같은|他|她|它|他们|她们|它们|这个|那个|这些|那些|该|其",
    regex.IGNORECASE,
)
_WORD = regex.compile(r"[\p{L}\p{N}][\p{L}\p{N}'-]*")
_STOPWORDS = frozenset(
    "a an the of to in on at by for with from about as and or but if then so than that this these those it its "
    "is are was were be been being do does did have has had can could should would will may might must shall "
    "what which who whom whose where when how why i me my we our you your he she they them their there here "
    "not no yes any some all more most other such same also too very just only into over under again".split()
)

TOPIC_SYSTEM = (
    "You read the end of a conversation and name what the user's last question is about. "
    "Reply with only a short noun phrase (at most eight words) taken from the conversation, no sentence."
)


@attrs.frozen
class EarlierTurn:
    """What a rewrite sees of a turn before: the question kb searched with, and the answer's text."""

    question: str
    answer: str = ""


@attrs.frozen
class Standalone:
    """The question kb searches with, how it was made, and what making it cost."""

    question: CheckedText
    method: StandaloneMethod
    ms: float = 0.0
    prompt_tokens: int = 0


def leans_on_context(question: str) -> bool:
    """Whether ``question`` refers to something said before (a pronoun, "the same", a bare follow-up)."""
    return bool(_LEANING.search(question)) or len(_WORD.findall(question)) <= SHORT_QUESTION_WORDS


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its topic (no stopwords), in order, each once."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text):
        if word.lower() not in _STOPWORDS and not _LEANING.fullmatch(word):
            seen.setdefault(word.lower(), None)
    return list(seen)


def standalone(
    question: CheckedText,
    earlier: Sequence[EarlierTurn],
    method: StandaloneMethod,
    language_model: Callable[[], LanguageModel] | None = None,
) -> Standalone:
    """``question`` made searchable on its own from the ``earlier`` turns (oldest first) by ``method``.

    The first question of a thread, a question that does not lean on the turns before it, and
    every question under ``as_asked`` are searched as asked. ``question`` arrives checked
    (:func:`~kb_core.limits.check_text`, where it was asked), and the question made stays so.
    """
    if method == "as_asked" or not earlier or not leans_on_context(question):
        return Standalone(question, "as_asked")
    if method == "previous_turn":
        asked = {w.lower() for w in content_words(question)}
        missing = [w for w in content_words(earlier[-1].question) if w not in asked]
        return Standalone(_completed(question, " ".join(missing)), "previous_turn")
    if language_model is None:
        raise ValueError("the model method needs a language model")
    began = time.perf_counter()
    llm = language_model()
    request = GenerateRequest(
        system=TOPIC_SYSTEM,
        user=topic_prompt(question, earlier),
        stop=("\n",),
        max_tokens=TOPIC_MAX_TOKENS,
        temperature=0.0,
        seed=0,
    )
    text, done, _, _ = stream_answer(llm, request, None, began)
    topic = _clean_topic(text) if done.finish_reason != "error" else ""
    return Standalone(_completed(question, topic), "model", elapsed_ms(began), done.prompt_tokens)


def topic_prompt(question: str, earlier: Sequence[EarlierTurn]) -> str:
    """The user message asking what ``question`` refers to: the last two questions, the last answer's opening."""
    lines = [f"User: {turn.question}" for turn in earlier[-2:]]
    last_answer = " ".join(earlier[-1].answer.split())[:ANSWER_CHARS]
    if last_answer:
        lines.append(f"Assistant: {last_answer}")
    lines.append(f"User: {question}")
    return "\n".join(lines) + "\n\nWhat is the last question about?"


def _clean_topic(text: str) -> str:
    """The model's noun phrase without quotes, a closing full stop or a lead-in like "The topic is", and without
    what no question may hold (NUL, a lone surrogate: :func:`~kb_core.limits.check_text`)."""
    topic = regex.sub(
        r"^(?:the )?(?:last )?(?:question|topic)(?: is)?(?: about)?\s*:?\s*", "", text.strip(), flags=regex.I
    )
    return regex.sub(r"[\x00\p{Cs}]", "", topic).strip(" \"'`*.").strip()[:120]


def _completed(question: CheckedText, topic: str) -> CheckedText:
    """``question`` with ``topic`` after it in brackets, unless the question holds every word of it already.

    The topic is cut at a word so that the whole stays within ``LIMITS.query_chars``: checked text still.
    """
    asked = {w.lower() for w in content_words(question)}
    if not topic or all(w in asked for w in content_words(topic)):
        return question
    room = LIMITS.query_chars - len(question) - len(" ()")  # the question arrives checked (stripped)
    if len(topic) > room:
        cut = topic[: max(room, 0) + 1]
        topic = cut.rsplit(" ", 1)[0].strip() if " " in cut else ""
    return CheckedText(f"{question} ({topic})") if topic else question
