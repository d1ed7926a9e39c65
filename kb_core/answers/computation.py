"""A computation the model writes over numbers from the passages, evaluated exactly, every operand checked.

The model writes ONE expression; kb evaluates it (its own tokenizer and recursive-descent parser, never
``eval``) over exact fractions and checks that every operand is a number written in a passage:

- numbers in any form :func:`~kb_core.answers.numbers.read_numbers` reads, copied as written:
  ``1,571.7``, ``$12.5``, ``12.5%`` (the value 12.5, remembered as a percent), ``1.2 million`` (the
  scale word is not multiplied), ``(1,234)`` (a lone unsigned number in round brackets is a negative,
  as reports write it; ``(-1,234)`` or ``(1 + 2)`` are brackets). A comma followed by exactly three
  digits continues a number: separate arguments with ``", "`` (``sum(100,200)`` is one hundred thousand two hundred);
- ``+ - * /`` (also ``− – × ÷``), round or square brackets, unary minus, and the functions
  ``sum``, ``avg`` (``average``, ``mean``), ``min``, ``max``, ``abs`` and ``count``: the number of its
  arguments, where an argument that is a comparison (``22.1 > 20``; ``>``, ``<``, ``>=``, ``<=``, ``≥``,
  ``≤``, allowed only there) counts when it is true.

Signs are matched by magnitude: an operand matches a passage number of the same absolute value
(``1234``, ``-1234`` and ``(1,234)`` all match ``(1,234)`` or ``1,234``), because the sign is the
formula's (a report writes a fall as ``(1,234)`` or as "fell by 1,234"). ``12.5`` matches ``12.5%``;
``1571.70`` matches ``1,571.7``. A number written in the question matches too (``count(x > 20)`` for "how
many years exceeded 20%"), but at least one operand must come from a passage. Constants of a formula
need no passage: ``100``, ``1`` and ``0`` anywhere (``(a - b) / b * 100``, ``a / b - 1``, ``0 - a`` for a
value a table leaves empty), and a whole ``n`` from 2 to 12 dividing a sum of exactly ``n`` terms (an average
written out: ``(a + b + c) / 3``, ``((a - b) + (c - d)) / 2``); a bracket counts as one term.

>>> done = check_computation("1,571.7 - 1337.7", {1: "Revenue | 1,571.7 | 1,337.7"})
>>> format_working(done)
'234.0 (1,571.7 - 1,337.7)'
>>> check_computation("1/0", {1: "1"}).reason
'division_by_zero'
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Literal

import attrs
import regex

from kb_core.answers.numbers import (
    Binary,
    Call,
    Compare,
    ExpressionError,
    Negative,
    Node,
    Number,
    RefusalReason,
    WrittenNumber,
    evaluate,
    format_number,
    parse,
    read_numbers,
    terms,
    walk,
)
from kb_core.answers.questions import kind_of
from kb_core.bounds import COMPUTATION_CHARS, NUMBER_DIGITS

__all__ = [
    "Computation",
    "ComputationRefusal",
    "Operand",
    "Place",
    "RefusalReason",
    "asks_for_computation",
    "check_computation",
    "format_working",
]

Source = Literal["passage", "question", "constant"]
_MAX_DIVISOR = 12  # the most terms an average written out as (a + b + ...) / n may have


@attrs.frozen
class Place:
    """Where an operand is written: the passage's number (``[#n]``), the 1-based line in it, the text there, and
    its offset in the passage's text."""

    passage: int
    line: int
    text: str
    offset: int = 0


@attrs.frozen
class Operand:
    """A number of the expression: the ``literal`` as the model wrote it, its ``value`` (``(1,234)`` is -1234),
    whether it is a ``percent``, where it comes from (``source``), the first passage and line that hold it
    (None for the question or a constant), every place that does, and the ``decimals`` it is written with."""

    literal: str
    value: Fraction
    percent: bool
    source: Source
    passage: int | None = None
    line: int | None = None
    places: tuple[Place, ...] = ()
    decimals: int = 0
    shown: str = ""  # as the working shows it: the passage's digits (1,571.7), a % when it is a percent


@attrs.frozen
class Computation:
    """A checked computation: the ``expression`` as written, its ``operands``, the exact ``result``, the
    ``decimals`` the operands suggest, whether the result is a ``percent``, and the ``working`` (the
    expression with each operand as its passage writes it)."""

    expression: str
    operands: tuple[Operand, ...]
    result: Fraction
    decimals: int
    percent: bool
    working: str
    tree: Node | None = attrs.field(default=None, eq=False, repr=False)  # as parsed: what it computes

    def result_text(self, unit: str | None = None, scale: str = "") -> str:
        """The result rounded to :attr:`decimals`, with thousands separators, a currency sign (``$``) before it
        or a unit after it (``%``; None: ``%`` when the result is a percent), then the ``scale`` word."""
        unit = ("%" if self.percent else "") if unit is None else unit.strip()
        text = format_number(self.result, self.decimals)
        if unit and unit in "$€£¥":
            text = f"-{unit}{text[1:]}" if text.startswith("-") else f"{unit}{text}"
        elif unit:
            text += unit if unit == "%" else f" {unit}"
        return f"{text} {scale.strip()}" if scale.strip() else text


@attrs.frozen
class ComputationRefusal:
    """Why a computation was refused (``reason``) and a one-line ``detail``."""

    expression: str
    reason: RefusalReason
    detail: str


def format_working(computation: Computation, unit: str | None = None, scale: str = "") -> str:
    """The result with its working: ``234.0 (1,571.7 - 1,337.7)``."""
    return f"{computation.result_text(unit, scale)} ({computation.working})"


def _constants(tree: Node) -> set[int]:
    """The operand indexes that are constants of the formula: a plain 100, 1 or 0, and a whole divisor n of a sum
    of exactly n terms."""
    found: set[int] = set()
    for node in walk(tree):
        if isinstance(node, Number) and _plain(node.number) and node.number.value in (0, 1, 100):
            found.add(node.index)
        elif isinstance(node, Binary) and node.op == "/" and isinstance(node.right, Number):
            divisor = node.right.number
            if (
                _plain(divisor)
                and divisor.value.denominator == 1
                and 2 <= divisor.value == terms(node.left) <= _MAX_DIVISOR
            ):
                found.add(node.right.index)
    return found


def _plain(number: WrittenNumber) -> bool:
    """A number written as a bare positive integer: ``100``, not ``100%``, ``$100``, ``(100)`` or ``100.0``."""
    return number.text == number.digits and number.decimals == 0 and "," not in number.digits


def _index(passages: Mapping[int, str]) -> dict[Fraction, list[tuple[int, WrittenNumber]]]:
    """Every number of the passages by its magnitude."""
    found: dict[Fraction, list[tuple[int, WrittenNumber]]] = {}
    for passage, text in passages.items():
        for number in read_numbers(text):
            found.setdefault(abs(number.value), []).append((passage, number))
    return found


def _operand(number: WrittenNumber, source: Source, held: list[tuple[int, WrittenNumber]]) -> Operand:
    places = tuple(Place(passage, written.line, written.text, written.start) for passage, written in held)
    first = held[0][1] if held else number
    digits = first.digits + ("%" if number.percent or first.percent else "")
    return Operand(
        literal=number.text,
        value=number.value,
        percent=number.percent or any(written.percent for _, written in held),
        source=source,
        passage=held[0][0] if held else None,
        line=first.line if held else None,
        places=places,
        decimals=max([number.decimals, *(written.decimals for _, written in held)]),
        shown=f"({digits})" if number.parenthesised else digits,
    )


def _operands(tree: Node, passages: Mapping[int, str], question: str) -> tuple[Operand, ...]:
    numbers = sorted((node for node in walk(tree) if isinstance(node, Number)), key=lambda node: node.index)
    if not numbers:
        raise ExpressionError("no_operands", "the computation has no number: write it over numbers from the passages")
    constants = _constants(tree)
    in_passages, in_question = _index(passages), _index({0: question})
    found: list[Operand] = []
    for node in numbers:
        number, magnitude = node.number, abs(node.number.value)
        if node.index in constants:
            found.append(_operand(number, "constant", []))
        elif magnitude in in_passages:
            found.append(_operand(number, "passage", in_passages[magnitude]))
        elif magnitude in in_question:
            found.append(attrs.evolve(_operand(number, "question", []), percent=number.percent))
        else:
            raise ExpressionError(
                "operand_not_found", f"{number.text} is in none of the passages: copy each number from one"
            )
    if not any(operand.source == "passage" for operand in found):
        raise ExpressionError("no_operands", "no number of the computation is from a passage")
    return tuple(found)


def _percent(node: Node, operands: tuple[Operand, ...]) -> bool:
    """Whether ``node`` is a percent: a ratio times 100, or percents added, averaged or taken apart."""
    if isinstance(node, Number):
        return operands[node.index].percent
    if isinstance(node, Negative):
        return _percent(node.child, operands)
    if isinstance(node, Call):
        return node.name != "count" and all(_percent(arg, operands) for arg in node.args)
    if not isinstance(node, Binary):
        return False
    constant = [
        isinstance(side, Number) and operands[side.index].source == "constant" for side in (node.left, node.right)
    ]
    if node.op == "*" and any(
        is_constant and isinstance(side, Number) and side.number.value == 100 and _divides(other)
        for is_constant, side, other in ((constant[0], node.left, node.right), (constant[1], node.right, node.left))
    ):
        return True
    if node.op in "+-":
        sides = [side for side, is_constant in zip((node.left, node.right), constant) if not is_constant]
        return bool(sides) and all(_percent(side, operands) for side in sides)
    kept = node.left if constant[1] else node.right if constant[0] and node.op == "*" else None
    return kept is not None and _percent(kept, operands)


def _divides(node: Node) -> bool:
    return any(
        isinstance(part, Binary) and part.op == "/" or isinstance(part, Call) and part.name == "avg"
        for part in walk(node)
    )


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def _render(node: Node, operands: tuple[Operand, ...]) -> str:
    """``node`` written back with each operand as its passage writes it."""
    if isinstance(node, Number):
        return operands[node.index].shown
    if isinstance(node, Negative):
        child = _render(node.child, operands)
        return f"-({child})" if isinstance(node.child, Binary) else f"-{child}"
    if isinstance(node, Call):
        return f"{node.name}({', '.join(_render(arg, operands) for arg in node.args)})"
    left, right = _render(node.left, operands), _render(node.right, operands)
    if isinstance(node, Compare):
        return f"{left} {node.op} {right}"
    if isinstance(node.left, Binary) and _PRECEDENCE[node.left.op] < _PRECEDENCE[node.op]:
        left = f"({left})"
    if isinstance(node.right, Binary) and (
        _PRECEDENCE[node.right.op] < _PRECEDENCE[node.op]
        or _PRECEDENCE[node.right.op] == _PRECEDENCE[node.op]
        and node.op in "-/"
    ):
        right = f"({right})"
    return f"{left} {node.op} {right}"


def check_computation(
    expression: str, passages: Mapping[int, str], *, question: str = ""
) -> Computation | ComputationRefusal:
    """``expression`` evaluated exactly, each operand found in ``passages`` (``{passage number: text}``) or the
    ``question``, or a refusal with its reason; never an exception."""
    try:
        if len(expression) > COMPUTATION_CHARS.high:
            raise ExpressionError(
                "too_large", f"more than {COMPUTATION_CHARS.high} characters: write a shorter computation"
            )
        tree = parse(expression)
        try:
            result = evaluate(tree)
        except ZeroDivisionError:
            raise ExpressionError("division_by_zero", "the computation divides by zero") from None
        if abs(result) >= 10**NUMBER_DIGITS.high:
            raise ExpressionError("too_large", f"the result has more than {NUMBER_DIGITS.high} digits")
        operands = _operands(tree, passages, question)
    except ExpressionError as refused:
        return ComputationRefusal(expression, refused.reason, refused.detail)
    counted = isinstance(tree, Call) and tree.name == "count"
    decimals = max([0, *(operand.decimals for operand in operands if operand.source != "constant")])
    if _divides(tree) and result.denominator != 1:
        decimals = max(decimals, 2)
    return Computation(
        expression=expression,
        operands=operands,
        result=result,
        decimals=0 if counted else min(decimals, 4),
        percent=_percent(tree, operands),
        working=_render(tree, operands),
        tree=tree,
    )


_COMPUTED = regex.compile(
    r"\b(?:"
    r"change[sd]?|difference|differ|increase[sd]?|decrease[sd]?|grow(?:th|n)?|decline[sd]?|fell|rose"
    r"|percentage|percent|ratio|proportion|share\s+of|fraction|portion"
    r"|(?<!weighted[\s-]+)average|sum|combined"
    r"|total(?=[^?]*\b(?:and|between|over|across|combined|for\s+all)\b|[^?]*\bfrom\s+\S+\s+to\b)"
    r"|how\s+much\s+(?:more|less|higher|lower|larger|smaller|greater|bigger)"
    r"|how\s+many(?=[^?]*\b(?:exceed|above|below|over|under|more than|less than|greater|higher|lower|at least|at most))"
    r"|how\s+many\s+(?:major\s+)?(?:types|kinds|categories|components|items|services|assumptions|periods|percent)"
    r"|in\s+how\s+many|by\s+how\s+much|how\s+many\s+times"
    r")\b",
    regex.IGNORECASE,
)
# A question that asks why or how, for the values as listed, or which one: answered by the passages' words.
_NOT_COMPUTED = regex.compile(
    r"^\W*(?:(?:in|for|from|at|during|over)\s+)?(?:which|why)\b|^\W*what\s+(?:years?|periods?)\b"
    r"|\b(?:why|reasons?|caused?|causes|led\s+to|lead\s+to|driven\s+by|respective(?:ly)?|calculated|definition)\b"
    r"|\bdue\s+to\W*$|\bdefined\s+as\b"
    r"|\bwhat\s+does\b.*\bmean\b",
    regex.IGNORECASE,
)


def asks_for_computation(question: str) -> bool:
    """Whether ``question`` asks for a number worked out from others (a change, a percentage or ratio, a sum or
    average, a count of rows meeting a condition), by its words; not a yes/no question, nor one asking why, which,
    or for values as listed ("... respectively"). English questions only."""
    if not _COMPUTED.search(question) or _NOT_COMPUTED.search(question):
        return False
    return not kind_of(question).yes_no
