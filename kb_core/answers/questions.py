"""What kind of question is asked, and which verdict opens an answer.

:func:`kind_of` decides it once, when an answer starts, as one :class:`QuestionKind`: the
question's script (the template in its language), whether it is answered by yes or no (the top
document is packed whole, the verdict opens the answer and is recorded) and whether it asks to
choose between two things (answered like a yes/no question, without a verdict). Patterns use the
``regex`` package, for Unicode scripts.

>>> kind_of("Is Wellington in the north or south island?")
QuestionKind(script='latin', yes_no=True, choice=True, lists=False)
>>> kind_of("List every region whose sales rose in 2019.").lists
True
"""

from __future__ import annotations

from typing import Literal

import attrs
import regex

from kb_core.writing_systems import dominant_script, script_profile

#: The scripts kb has templates for: Korean, Chinese (or Japanese), and the rest.
QuestionScript = Literal["hangul", "han", "latin"]


@attrs.frozen
class QuestionKind:
    """What kind of question was asked, decided once per answer by :func:`kind_of`."""

    script: QuestionScript
    yes_no: bool  # answered by yes or no: the top document is packed whole and the verdict recorded
    choice: bool  # asks to choose ("... north or south island?"): a yes/no answer opens with no verdict
    lists: bool = False  # asks for every item of a list ("list every ..."): the top document is read whole

    @property
    def wants_verdict(self) -> bool:
        """Whether the answer should open with a verdict ("Yes."/"No.")."""
        return self.yes_no and not self.choice


def kind_of(question: str) -> QuestionKind:
    """The kind of ``question``."""
    script = question_script(question)
    return QuestionKind(script, _is_yes_no(question, script), is_choice_question(question), asks_for_every(question))


def question_script(question: str) -> QuestionScript:
    """``hangul``, ``han`` (Chinese or Japanese) or ``latin``: the script most of the question's words are in."""
    script = dominant_script(script_profile(question))
    return "hangul" if script == "hangul" else "han" if script in ("han", "kana") else "latin"


_AUXILIARY_EN = r"(?:is|are|was|were|do|does|did|can|could|should|would|will|has|have|had|may|might|must|shall)"
_WH_WORD_EN = r"(?:what|which|who|whom|whose|where|when|how|why)"
_YES_NO_EN = regex.compile(
    rf"(?:^|[:;,—–-]\s*|\b(?:and|or|but)\s+){_AUXILIARY_EN}\b(?!\s*(?:not\s+)?{_WH_WORD_EN}\b)", regex.IGNORECASE
)
_WH_EN = regex.compile(rf"\b{_WH_WORD_EN}\b", regex.IGNORECASE)
# "Are people who ... at risk?", "Does X help when ...?": opening with a verb and its subject, any later
# wh-word is a relative one. Not "Can you tell me how ...?", a wh-question asked politely.
_OPENS_YES_NO_EN = regex.compile(rf"^\W*{_AUXILIARY_EN}\s+(?!(?:not\s+)?(?:you|{_WH_WORD_EN})\b)\w", regex.IGNORECASE)
_YES_NO_KO = regex.compile(r"(?:까|나요|니|가요|죠|지요|ㅂ니까)\s*\??\s*$")
_WH_KO = regex.compile(r"언제|어디|누구|무엇|뭐|왜|어떻게|몇|얼마|어느|무슨|어떤")
_YES_NO_ZH = regex.compile(r"[吗嗎么麼]\s*[？?]?\s*$|是否|是不是|有没有|有沒有|能否|可否|会不会|會不會")
_WH_ZH = regex.compile(r"什么|什麼|谁|誰|哪|何|几|幾|多少|怎么|怎麼|为什么|為什麼|如何")


def is_yes_no_question(question: str) -> bool:
    """True for a question answered by yes or no ("Is X ...?", "X: is it safe?", "...입니까?", "...吗？")."""
    return _is_yes_no(question, question_script(question))


def _is_yes_no(question: str, script: QuestionScript) -> bool:
    if script == "hangul":
        return bool(_YES_NO_KO.search(question)) and not _WH_KO.search(question)
    if script == "han":
        return bool(_YES_NO_ZH.search(question)) and not _WH_ZH.search(question)
    # "Is X ...?", "X: is it safe?", or a question mark with no wh-word ("Fournier's gangrene: still dangerous?")
    asked = question.strip()
    if _OPENS_YES_NO_EN.match(asked):
        return True
    return (bool(_YES_NO_EN.search(asked)) or asked.endswith("?")) and not _WH_EN.search(asked)


# A short question ending "... north or south island?" asks to choose ("... or not?" does not); in a
# long one the "or" is more often inside a noun phrase ("... measured by a physician or a nurse?").
# "list every/all ...", "name each ...", "which are all the ...", "all the X that/whose ...", "every X with ..."
_EVERY_EN = regex.compile(
    r"\b(?:list|name|enumerate|give|show)\s+(?:me\s+)?(?:every|all|each)\b"
    r"|\b(?:what|which)\s+(?:are|were)\s+all\b"
    r"|\b(?:all|every|each)\s+(?:the\s+|of\s+the\s+)?(?:\w+\s+){1,3}?(?:that|which|whose|with|where)\b",
    regex.IGNORECASE,
)
_EVERY_KO = regex.compile(r"모든|전부|목록")
_EVERY_ZH = regex.compile(r"所有|全部|列出")


def asks_for_every(question: str) -> bool:
    """Whether ``question`` asks for every item of a list ("List every region whose sales rose"), whose answer
    reads its document whole, not the retrieved share of its rows."""
    return any(pattern.search(question) for pattern in (_EVERY_EN, _EVERY_KO, _EVERY_ZH))


_CHOICE_EN = regex.compile(r"\bor\s+(?!not\b)\w+(?:\s+\w+)?\W*$", regex.IGNORECASE)
_CHOICE_MAX_WORDS = 12


def is_choice_question(question: str) -> bool:
    """True for a short English question that asks to choose ("Is it in the north or south island?").

    It is answered like a yes/no question (from the top document, restating the question) but
    without a verdict: "Yes." does not answer it.
    """
    asked = question.strip()
    return bool(_CHOICE_EN.search(asked)) and len(asked.split()) <= _CHOICE_MAX_WORDS


_VERDICTS = (
    ("mixed", regex.compile(r"^\W*(?:mixed evidence|the evidence is mixed|근거가 엇갈|证据不一)", regex.IGNORECASE)),
    ("yes", regex.compile(r"^\W*(?:yes\b|예\b|네\b|是[。，,.的]|是$)", regex.IGNORECASE)),
    ("no", regex.compile(r"^\W*(?:no\b|아니(?:요|오)\b|否|不是)", regex.IGNORECASE)),
)


def verdict_of(answer: str) -> str | None:
    """``yes``, ``no`` or ``mixed`` when the answer opens with that verdict, else None."""
    for name, pattern in _VERDICTS:
        if pattern.search(answer):
            return name
    return None
